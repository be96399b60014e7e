"""One module per resource. Each exports:

- ``ROUTES: list[web.RouteDef]`` — listed in the route table, `hermes.server.routes`;
- ``OPENAPI_PATHS: dict[str, dict]`` — OpenAPI 3.1 path items for its routes (and
  optionally ``OPENAPI_SCHEMAS: dict[str, dict]`` for shared components), also listed
  there and assembled by `hermes.server.handlers.openapi.build_document`.

Handler modules import shared parts from `hermes.server.*`, never from each other.
"""

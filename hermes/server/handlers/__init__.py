"""One module per resource. Each exports:

- ``ROUTES: list[web.RouteDef]`` — collected by `hermes.server.routes`;
- ``OPENAPI_PATHS: dict[str, dict]`` — OpenAPI 3.1 path items for its routes (and
  optionally ``OPENAPI_SCHEMAS: dict[str, dict]`` for shared components), collected by
  `hermes.server.handlers.openapi`;
- optionally ``init_app(app: web.Application) -> None`` — called once by `create_app`
  before the app starts, to set module-owned ``web.AppKey`` state or cleanup contexts.
"""

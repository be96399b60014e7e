"""hermes's own REST resources: sessions, runs, health and the OpenAPI document.

Each handler module exports ``ROUTES: list[web.RouteDef]`` and ``OPENAPI_PATHS`` (OpenAPI
3.1 path items, optionally ``OPENAPI_SCHEMAS`` for shared components), listed in the
route table (`hermes.server.http.routes`) and assembled by
`hermes.server.rest.openapi.build_document`. `background_runs` is the HTTP side of the
run service (admission from a request, SSE following). Nothing here imports
`hermes.server.openai`.
"""

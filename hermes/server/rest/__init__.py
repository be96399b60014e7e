"""hermes's own REST resources: sessions, runs, health and the OpenAPI document.

Each handler module exports ``ROUTES: tuple[Route, ...]`` (`hermes.server.http.route`),
declared beside its handlers and gathered in the route table (`hermes.server.http.routes`);
the router and `/openapi.json` are both generated from it. `background_runs` is the HTTP side of the
run service (admission from a request, SSE following). Nothing here imports
`hermes.server.openai`.
"""

"""HTTP plumbing: the app factory, middleware, error mapping, request parsing, SSE,
lifecycle, app state, the route entry type (`route`), the route table (`routes`), the
request schemas (`schema`) and record schemas (`record_schema`).

The wire adapters (`hermes.server.openai`) and hermes's own resources
(`hermes.server.rest`) build on these; only the app factory and the route table
(`routes`) import those two packages, to assemble them.
"""

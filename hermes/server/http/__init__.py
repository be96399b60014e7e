"""HTTP plumbing: the app factory, middleware, error mapping, request parsing, SSE,
lifecycle, app state, the route table and the schema helpers.

The wire adapters (`hermes.server.openai`) and hermes's own resources
(`hermes.server.rest`) build on these; only the app factory and the route table
(`routes`) import those two packages, to assemble them.
"""

"""The OpenAI wire adapters: Chat Completions (`chat`), Responses (`responses`,
`responses_stream`, `response_objects`, `tool_items`), the models list (`models`) and
the turn plumbing they share (`turns`).

Each handler module exports ``ROUTES: tuple[Route, ...]`` for the route table
(`hermes.server.http.routes`). Nothing here imports `hermes.server.rest`.
"""

"""`hermes mcp serve`: hermes as an MCP server on stdio (a `chat` tool, the sessions as resources).

turns.py runs one hermes turn per `chat` call; resources.py offers the stored sessions as
Markdown resources; server.py wires both to the MCP SDK's low-level server on stdio.
"""

"""hermes as an Agent Client Protocol agent (`hermes acp`), on the protocol's own SDK.

- `server.py`: stdio (stdout kept for the protocol), the backend, the SDK's connection;
- `agent.py`: initialize and the session methods over the engine's turn handle;
- `updates.py`: turn events and stored transcripts as session updates;
- `client_host.py`: the editor's files (`fs/*`) and terminals (`terminal/*`) as the tools' host;
- `permission.py`: approvals as `session/request_permission`;
- `mcp.py`: the MCP servers a client names, as hermes server entries.

It imports the backend (hermes/backend.py) and the engine, never another front end (server, TUI, CLI).
"""

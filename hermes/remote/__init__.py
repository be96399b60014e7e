"""A remote `hermes serve` as a front end's backend: `hermes chat --server URL` and
`hermes sessions … --server URL`.

`RemoteClient` (client.py) is the HTTP client (aiohttp, timeouts everywhere, errors mapped
once); `RemoteSessions` (sessions.py) the session store over the sessions REST API;
`RemoteAgent` (agent.py) starts `RemoteTurn`s (turn.py) on the session chat stream, read
in the engine's own form (`?events=engine`: each frame is one event). Together they
offer what the local runtime offers a front end (`hermes.backend`), so the widgets do not
know which one they drive. This package imports the engine's types and the store's records,
never the server, the run service, the runtime or a storage backend.
"""

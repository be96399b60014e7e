"""The agent of a remote `hermes serve`, as a front end sees it: start a turn, stop it.

`RemoteAgent` has the part of the engine's `Agent` the TUI and `chat -q` use: `model`
(sent with every turn; None lets the server choose), `context_window`, `instructions`,
`tools`, `start(request)` (a `RemoteTurn`, whose events are the engine's event types) and
`compact`. What the server does not offer over HTTP is refused in one line
(`RemoteUnsupported`), never faked: `/compact`, local AGENTS.md discovery (the server
reads its own), local tools and MCP servers (the server's run).
"""

from __future__ import annotations

from hermes import api_paths
from hermes.agent.context import known_context_window
from hermes.agent.events import ContextCompacted
from hermes.agent.instructions import ProjectInstructions
from hermes.agent.model_choices import ModelListing
from hermes.agent.tools.base import ToolRegistry
from hermes.agent.types import TurnRequest
from hermes.errors import RemoteUnsupported
from hermes.extensions.skills import SkillCatalog
from hermes.remote.client import RemoteClient
from hermes.remote.turn import RemoteTurn

NOT_OFFERED = (
    "remote session: the server runs the tools, reads its own AGENTS.md and keeps the context; "
    "/undo, /redo and /diff act on the server's files; /compact and local AGENTS.md discovery "
    "are not offered over HTTP"
)
"""The one line that says what a remote session does not do."""


class RemoteAgent:
    """Turns on the server `client` talks to (see the module docstring)."""

    def __init__(self, client: RemoteClient, *, model: str | None = None, context_window: int | None = None) -> None:
        self.client = client
        self._model = model
        self._server_model: str | None = None
        """What the server answers with when no model is chosen (`load_server_model`)."""
        self._window = context_window
        self.tools = ToolRegistry()
        """No local tools: the server's run."""
        self.instructions: ProjectInstructions | None = None
        """No local AGENTS.md: the server reads its own."""
        self.skills: SkillCatalog | None = None
        """No local skills: the server's agent lists those of the server's folder."""

    @property
    def model(self) -> str:
        """The model chosen here (`-m`, `/model`), else the server's own, else ""."""
        return self._model or self._server_model or ""

    @model.setter
    def model(self, value: str) -> None:
        self._model = value or None

    async def load_server_model(self) -> None:
        """Ask the server which model answers (`GET /v1/models`), so a front end names it
        before the first turn. A server that does not say leaves it unknown."""
        data = await self.client.request("GET", api_paths.MODELS)
        models = data.get("data")
        if isinstance(models, list) and models and isinstance(models[0], dict):
            first = models[0]
            inner = first.get("hermes")
            named = inner.get("model") if isinstance(inner, dict) else None
            name = named or first.get("id")
            self._server_model = name if isinstance(name, str) and name else None

    @property
    def server(self) -> str:
        return self.client.base_url

    def context_window(self, model: str | None = None) -> int:
        return self._window or known_context_window(model or self.model)

    def start(self, request: TurnRequest) -> RemoteTurn:
        return RemoteTurn(self.client, request, model=self._model)

    async def list_models(self) -> list[ModelListing]:
        """The server's providers' models (its `/v1/models?choices=1`), for the model picker."""
        answer = await self.client.request("GET", api_paths.MODELS, params={"choices": "1"})
        listings: list[ModelListing] = []
        for entry in answer.get("data") or []:
            behind = entry.get("hermes") if isinstance(entry, dict) else None
            for choice in (behind or {}).get("choices") or []:
                if isinstance(choice, dict) and isinstance(choice.get("provider"), str):
                    models = tuple(m for m in choice.get("models") or [] if isinstance(m, str))
                    error = choice.get("error") if isinstance(choice.get("error"), str) else None
                    listings.append(ModelListing(choice["provider"], models, error))
        return listings

    async def compact(self, session_id: str, *, model: str | None = None) -> ContextCompacted | None:
        raise RemoteUnsupported("/compact is not offered over HTTP: the server compacts on its own when needed")

"""The OpenAI-compatible HTTP server (`hermes serve`).

`create_app(settings, ...)` (hermes/server/http/app.py) builds the aiohttp application.
Three layers over the run service (`hermes.runs`): HTTP plumbing in `hermes.server.http`
(route table `hermes.server.http.routes`, SSE writer `hermes.server.http.sse`), the OpenAI
wire adapters in `hermes.server.openai`, and hermes's own REST resources in
`hermes.server.rest`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.server.http.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    # Lazy, so importing a submodule (e.g. hermes.server.http.sse) does not build the route table.
    if name == "create_app":
        from hermes.server.http.app import create_app

        return create_app
    raise AttributeError(name)

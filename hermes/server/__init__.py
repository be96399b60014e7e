"""The OpenAI-compatible HTTP server (`hermes serve`).

`create_app(settings, ...)` (hermes/server/app.py) builds the aiohttp application;
routes live in `hermes.server.routes`, one handler module per resource under
`hermes.server.handlers`, the shared SSE writer in `hermes.server.sse`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hermes.server.app import create_app

__all__ = ["create_app"]


def __getattr__(name: str) -> Any:
    # Lazy, so importing a submodule (e.g. hermes.server.sse) does not build the route table.
    if name == "create_app":
        from hermes.server.app import create_app

        return create_app
    raise AttributeError(name)

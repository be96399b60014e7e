"""`hermes acp`: run hermes as an Agent Client Protocol agent on stdin/stdout (for editors).

    hermes acp                       # what Zed's `agent_servers` entry starts
    hermes acp -m gpt-4o --yolo

Nothing but the protocol is written to stdout; logs go to stderr.
"""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    app.command("acp")(acp)


def acp(
    model: str | None = typer.Option(None, "-m", "--model", help="Model name for this run."),
    yolo: bool = typer.Option(False, "--yolo", help="Approve every command that is not hard-blocked."),
) -> None:
    """Serve the Agent Client Protocol on stdio (Zed, JetBrains, Neovim, Emacs clients)."""
    from hermes.acp.server import run
    from hermes.cli._common import load_settings

    run(load_settings(model=model, yolo=yolo or None))

"""Layering of the remote backend (checked statically, every import statement).

`hermes.remote` imports the engine's types and the store's records only: no server, run
service, runtime, storage backend, front end or the backend that opens it. The TUI's
screens, widgets, controller and renderer import no backend of either kind (the protocols
of `hermes.backend` are what they drive); only the launcher opens one.
"""

from __future__ import annotations

from layering import PACKAGE, offending


def test_remote_imports_no_server_run_service_runtime_or_storage_backend() -> None:
    paths = sorted((PACKAGE / "remote").rglob("*.py"))
    forbidden = ("hermes.server", "hermes.runs", "hermes.runtime", "hermes.tui", "hermes.cli",
                 "hermes.store.sqlite", "hermes.store.postgres", "hermes.store.configured",
                 "hermes.backend")  # fmt: skip
    assert offending(paths, forbidden) == {}


def test_the_tui_widgets_do_not_know_which_backend_they_drive() -> None:
    tui = PACKAGE / "tui"
    paths = sorted(p for p in tui.rglob("*.py") if p.name not in ("launch.py",))
    assert offending(paths, ("hermes.remote", "hermes.runtime", "hermes.agent.engine")) == {}

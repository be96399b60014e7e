"""Layering of the engine, the runtime and the backend (checked statically, every import statement).

The engine (`hermes.agent`) imports no front end, no run service and not the runtime
built on it; the runtime (`hermes.runtime`) imports no front end and no run service: the
server opens it, and the CLI, the TUI and the ACP agent (`hermes.acp`) reach it only
through the one backend (`hermes.backend`), which opens the runtime or a remote server
(`hermes.remote`) and is imported by neither; the ACP agent imports no other front end.
"""

from __future__ import annotations

from layering import PACKAGE, imported_modules, offending

FRONT_ENDS = ("hermes.server", "hermes.tui", "hermes.cli", "hermes.runs", "hermes.acp")
"""(aiohttp is the providers' HTTP client in the engine; the server's web layer is hermes.server.)"""


def test_the_checker_sees_imports_inside_functions() -> None:
    source = (PACKAGE / "tui" / "launch.py").read_text(encoding="utf-8")
    assert "hermes.tui.app" in imported_modules(source, "hermes.tui.launch")


def test_the_engine_imports_no_front_end_run_service_or_runtime() -> None:
    paths = sorted((PACKAGE / "agent").rglob("*.py"))
    assert offending(paths, (*FRONT_ENDS, "hermes.runtime")) == {}


def test_the_runtime_imports_no_front_end_or_run_service() -> None:
    assert offending([PACKAGE / "runtime.py"], FRONT_ENDS) == {}


def test_the_acp_front_end_imports_no_other_front_end() -> None:
    paths = sorted((PACKAGE / "acp").rglob("*.py"))
    assert paths
    others = tuple(name for name in FRONT_ENDS if name != "hermes.acp")
    assert offending(paths, others) == {}


def test_the_backend_imports_no_front_end_and_nothing_below_imports_it() -> None:
    assert offending([PACKAGE / "backend.py"], FRONT_ENDS) == {}
    below = [PACKAGE / "runtime.py", *sorted((PACKAGE / "remote").rglob("*.py"))]
    below += sorted((PACKAGE / "agent").rglob("*.py"))
    assert offending(below, ("hermes.backend",)) == {}


def test_the_cli_tui_and_acp_open_local_or_remote_only_through_the_backend() -> None:
    paths = sorted(p for name in ("cli", "tui", "acp") for p in (PACKAGE / name).rglob("*.py"))
    assert offending(paths, ("hermes.runtime", "hermes.remote")) == {}
    backend = imported_modules((PACKAGE / "backend.py").read_text(encoding="utf-8"), "hermes.backend")
    assert {"hermes.runtime", "hermes.remote.agent", "hermes.remote.client", "hermes.remote.sessions"} <= backend

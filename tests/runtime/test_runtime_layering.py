"""Layering of the engine and the runtime (checked statically, every import statement).

The engine (`hermes.agent`) imports no front end, no run service and not the runtime
built on it; the runtime (`hermes.runtime`) imports no front end and no run service: the
server, the CLI and the TUI open it, never the other way round.
"""

from __future__ import annotations

import ast
from pathlib import Path

import hermes

PACKAGE = Path(hermes.__file__).parent
FRONT_ENDS = ("hermes.server", "hermes.tui", "hermes.cli", "hermes.runs")
"""(aiohttp is the providers' HTTP client in the engine; the server's web layer is hermes.server.)"""


def _absolute_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: relative import"
            found.add(node.module or "")
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _offending(paths: list[Path], forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    bad = {}
    for path in paths:
        hits = sorted(m for m in _absolute_imports(path) if any(m == f or m.startswith(f + ".") for f in forbidden))
        if hits:
            bad[str(path.relative_to(PACKAGE))] = hits
    return bad


def test_the_checker_sees_imports_inside_functions() -> None:
    assert "hermes.tui.app" in _absolute_imports(PACKAGE / "tui" / "launch.py")


def test_the_engine_imports_no_front_end_run_service_or_runtime() -> None:
    paths = sorted((PACKAGE / "agent").rglob("*.py"))
    assert _offending(paths, (*FRONT_ENDS, "hermes.runtime")) == {}


def test_the_runtime_imports_no_front_end_or_run_service() -> None:
    assert _offending([PACKAGE / "runtime.py"], FRONT_ENDS) == {}

"""Layering of the run service and the server's adapters (checked statically).

`hermes.runs` imports neither aiohttp nor a front end (`hermes.server`, `hermes.tui`,
`hermes.cli`); the OpenAI adapters (`hermes.server.openai`) and hermes's REST resources
(`hermes.server.rest`) do not import each other. Every import statement counts,
including ones inside functions and `if TYPE_CHECKING:` blocks.
"""

from __future__ import annotations

import ast
from pathlib import Path

import hermes

PACKAGE = Path(hermes.__file__).parent
ABOVE_THE_RUNS = ("aiohttp", "hermes.server", "hermes.tui", "hermes.cli")


def imported_modules(source: str, module: str) -> set[str]:
    """Every module `source` (the text of `module`) imports, relative imports resolved."""
    found: set[str] = set()
    package = module.rsplit(".", 1)[0]
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
                name = f"{base}.{node.module}" if node.module else base
            else:
                name = node.module or ""
            found.add(name)
            found.update(f"{name}.{alias.name}" for alias in node.names)
    return found


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def offending(folder: Path, forbidden: tuple[str, ...]) -> dict[str, list[str]]:
    bad: dict[str, list[str]] = {}
    paths = sorted(folder.rglob("*.py"))
    assert paths, folder
    for path in paths:
        name = module_name(path)
        hits = sorted(
            imported
            for imported in imported_modules(path.read_text(encoding="utf-8"), name)
            if any(imported == f or imported.startswith(f + ".") for f in forbidden)
        )
        if hits:
            bad[name] = hits
    return bad


def test_the_checker_sees_imports_inside_functions_and_type_checking_blocks(tmp_path: Path) -> None:
    source = (
        "from typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n"
        "    from aiohttp import web\n"
        "def later():\n"
        "    from hermes.server.http import state\n"
        "    import hermes.tui.app\n"
        "from ..cli import serve\n"
    )
    found = imported_modules(source, "hermes.runs.example")
    assert {"aiohttp", "hermes.server.http.state", "hermes.tui.app", "hermes.cli.serve"} <= found


def test_the_run_service_imports_neither_aiohttp_nor_a_front_end() -> None:
    assert offending(PACKAGE / "runs", ABOVE_THE_RUNS) == {}


def test_the_openai_adapters_do_not_import_the_rest_resources() -> None:
    assert offending(PACKAGE / "server" / "openai", ("hermes.server.rest",)) == {}


def test_the_rest_resources_do_not_import_the_openai_adapters() -> None:
    assert offending(PACKAGE / "server" / "rest", ("hermes.server.openai",)) == {}

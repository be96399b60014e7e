"""Layering of the run service and the server's adapters (checked statically).

`hermes.runs` imports neither aiohttp nor a front end (`hermes.server`, `hermes.tui`,
`hermes.cli`); the OpenAI adapters (`hermes.server.openai`) and hermes's REST resources
(`hermes.server.rest`) do not import each other. Every import statement counts,
including ones inside functions and `if TYPE_CHECKING:` blocks.
"""

from __future__ import annotations

from pathlib import Path

from layering import PACKAGE, imported_modules, offending

ABOVE_THE_RUNS = ("aiohttp", "hermes.server", "hermes.tui", "hermes.cli")


def _modules(folder: Path) -> list[Path]:
    paths = sorted(folder.rglob("*.py"))
    assert paths, folder
    return paths


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
    assert offending(_modules(PACKAGE / "runs"), ABOVE_THE_RUNS) == {}


def test_the_openai_adapters_do_not_import_the_rest_resources() -> None:
    assert offending(_modules(PACKAGE / "server" / "openai"), ("hermes.server.rest",)) == {}


def test_the_rest_resources_do_not_import_the_openai_adapters() -> None:
    assert offending(_modules(PACKAGE / "server" / "rest"), ("hermes.server.openai",)) == {}

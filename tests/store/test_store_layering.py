"""Layering: hermes/store imports nothing from the layers above it (checked statically).

Every import statement counts, including ones inside functions and `if TYPE_CHECKING:`
blocks, so an import hidden in a function body cannot slip through.
"""

from __future__ import annotations

import ast
import subprocess
import sys

import pytest
from layering import PACKAGE, imported_modules, module_name, offending

ABOVE_THE_STORE = ("hermes.agent", "hermes.runs", "hermes.server", "hermes.cli", "hermes.tui", "hermes.testing")


def test_the_checker_sees_every_kind_of_import() -> None:
    source = (
        "from __future__ import annotations\n"
        "import hermes.agent.types\n"
        "from hermes.server import app\n"
        "from hermes import cli\n"
        "from ..tui import widgets\n"
        "def later():\n"
        "    from hermes.testing.turns import x\n"
    )
    found = imported_modules(source, "hermes.store.example")
    assert {"hermes.agent.types", "hermes.server", "hermes.cli", "hermes.tui", "hermes.testing.turns"} <= found


def test_the_store_imports_nothing_from_the_layers_above() -> None:
    paths = sorted((PACKAGE / "store").rglob("*.py"))
    assert len(paths) >= 8
    assert offending(paths, ABOVE_THE_STORE) == {}


@pytest.mark.parametrize("name", ["messages.py", "ids.py"])
def test_shared_vocabularies_sit_below_every_layer(name: str) -> None:
    assert offending([PACKAGE / name], ("hermes",)) == {}


def test_importing_every_store_module_loads_no_agent_module() -> None:
    code = (
        "import sys\n"
        "import hermes.store, hermes.store.sqlite.assemble, hermes.store.rules.responses, hermes.store.rules.runs\n"
        "import hermes.store.rules.receipts, hermes.store.rules.leases\n"
        "print(sorted(m for m in sys.modules if m.startswith(('hermes.agent', 'hermes.server'))))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "[]"


BACKENDS = ("hermes.store.sqlite", "hermes.store.postgres")


@pytest.mark.parametrize("name", ["records.py", "api.py", "sql.py", "transcript.py"])
def test_the_interface_and_the_rules_import_no_backend(name: str) -> None:
    # The rules are written once: over the Executor and Dialect protocols, never a backend.
    assert offending([PACKAGE / "store" / name], BACKENDS) == {}


def test_the_rules_folder_imports_no_backend() -> None:
    # Every storage rule (sessions, turns, runs, receipts, leases, responses) is written once.
    paths = sorted((PACKAGE / "store" / "rules").glob("*.py"))
    assert len(paths) >= 15
    assert offending(paths, BACKENDS) == {}


@pytest.mark.parametrize(
    ("backend", "other"), [("sqlite", "hermes.store.postgres"), ("postgres", "hermes.store.sqlite")]
)
def test_a_backend_imports_nothing_from_the_other(backend: str, other: str) -> None:
    assert offending(sorted((PACKAGE / "store" / backend).rglob("*.py")), (other,)) == {}


def test_records_are_imported_from_the_records_module_only() -> None:
    import hermes.store.records as records

    names = set(records.__all__)
    bad: dict[str, list[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        name = module_name(path)
        if name == "hermes.store.records":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("hermes.store"):
                wrong = sorted(a.name for a in node.names if a.name in names and node.module != "hermes.store.records")
                if wrong:
                    bad.setdefault(name, []).extend(wrong)
    assert bad == {}

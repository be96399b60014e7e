"""The server's and the run service's module structure: no import cycles, no handler
borrowing another's privates.

The graph is read from the source (every ``import`` anywhere in a module, including
inside functions, where cycles used to hide; ``if TYPE_CHECKING:`` blocks excluded, they
never run), so the test fails on a cycle even when import order happens to work today.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import hermes.runs
import hermes.server

SERVER = Path(hermes.server.__file__).parent
RUNS = Path(hermes.runs.__file__).parent
PACKAGE = "hermes.server"
HANDLERS = {
    f"{PACKAGE}.openai.chat",
    f"{PACKAGE}.openai.models",
    f"{PACKAGE}.openai.responses",
    f"{PACKAGE}.openai.responses_stream",
    f"{PACKAGE}.rest.health",
    f"{PACKAGE}.rest.openapi",
    f"{PACKAGE}.rest.runs",
    f"{PACKAGE}.rest.session_files",
    f"{PACKAGE}.rest.sessions",
}
"""The modules that export ``ROUTES`` (listed in `hermes.server.http.routes`)."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(SERVER.parent.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _runtime_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node outside `if TYPE_CHECKING:` blocks."""
    out: list[ast.AST] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        out.append(node)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return out


def _imports(path: Path) -> list[tuple[str, list[str]]]:
    """(imported module, names taken from it) for each runtime import in `path`."""
    found: list[tuple[str, list[str]]] = []
    for node in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.extend((alias.name, []) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [alias.name for alias in node.names]
            found.append((node.module, names))
            # `from hermes.server.openai import chat` imports the submodule too
            found.extend((f"{node.module}.{name}", []) for name in names)
    return found


def _modules() -> dict[str, Path]:
    return {_module_name(path): path for folder in (SERVER, RUNS) for path in folder.rglob("*.py")}


def _targets(path: Path, modules: dict[str, Path]) -> set[str]:
    """Server and run-service modules `path` imports at run time (a package's own submodules import it
    implicitly; `from pkg import submodule` is an edge to the submodule only)."""
    name = _module_name(path)
    found = {target for target, _ in _imports(path) if target in modules}
    for target in list(found):
        if any(other.startswith(f"{target}.") for other in found):
            found.discard(target)
    return {target for target in found if target != name and not name.startswith(f"{target}.")}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _targets(path, modules) for name, path in modules.items()}


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def connect(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph[node]:
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return found


def test_the_graph_sees_the_server_modules():
    graph = _graph()
    assert f"{PACKAGE}.http.app" in graph
    assert f"{PACKAGE}.http.routes" in graph[f"{PACKAGE}.http.app"]
    assert f"{PACKAGE}.openai.chat" in graph[f"{PACKAGE}.http.routes"]
    assert "hermes.runs.registry" in graph[f"{PACKAGE}.http.state"]
    assert set(_modules()) >= HANDLERS


def test_a_planted_cycle_is_found():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_cycles_in_the_server():
    assert _cycles(_graph()) == []


def test_no_handler_imports_private_names_of_another_module():
    borrowed = []
    modules = _modules()
    for name in sorted(HANDLERS):
        path = modules[name]
        for module, names in _imports(path):
            if module.startswith((PACKAGE, "hermes.runs")):
                borrowed.extend(f"{path.name}: {module}.{name}" for name in names if name.startswith("_"))
    assert borrowed == []


def test_no_handler_reaches_into_another_handler_module():
    """Shared parts live outside the handler modules; a resource split over two files is the exception."""
    allowed = {(f"{PACKAGE}.openai.responses", f"{PACKAGE}.openai.responses_stream")}
    modules = _modules()
    crossings = []
    for name in sorted(HANDLERS):
        for module in _targets(modules[name], modules):
            if module in HANDLERS and (name, module) not in allowed:
                crossings.append(f"{name} -> {module}")
    assert crossings == []


# Each module is imported in a child forked from one interpreter that holds only the
# third-party libraries (no hermes module), so every child starts with no hermes module
# loaded, as a fresh interpreter would, without paying for the libraries fifty times.
_IMPORT_EACH = """
import importlib, os, sys, traceback
import aiohttp, multidict, yarl  # third-party only: never a hermes module
assert not [m for m in sys.modules if m == "hermes" or m.startswith("hermes.")]
failed = []
for name in sys.argv[1:]:
    pid = os.fork()
    if pid == 0:
        try:
            importlib.import_module(name)
        except BaseException:
            traceback.print_exc()
            sys.stderr.flush()
            os._exit(1)
        os._exit(0)
    if os.waitpid(pid, 0)[1] != 0:
        failed.append(name)
print("failed:", " ".join(failed))
"""


def test_every_server_module_imports_in_a_fresh_interpreter():
    names = sorted(_graph())
    proc = subprocess.run(
        [sys.executable, "-c", _IMPORT_EACH, *names], capture_output=True, text=True, timeout=90, check=False
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "failed:", f"{proc.stdout}{proc.stderr[-3000:]}"

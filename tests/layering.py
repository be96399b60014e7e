"""The one static import checker of the layering tests (tests/store, tests/runs, tests/runtime, tests/sandbox, …).

Every import statement counts, including ones inside functions and `if TYPE_CHECKING:`
blocks, so an import hidden in a function body cannot slip through.
"""

from __future__ import annotations

import ast
from pathlib import Path

import hermes

PACKAGE = Path(hermes.__file__).parent


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
            # `from hermes import agent` imports the module hermes.agent.
            found.update(f"{name}.{alias.name}" for alias in node.names)
    return found


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _within(name: str, packages: tuple[str, ...]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


def offending(
    paths: list[Path], forbidden: tuple[str, ...], allowed: tuple[str, ...] = ()
) -> dict[str, list[str]]:
    """Module name → the forbidden modules (or their submodules) it imports; empty when clean.
    A module inside `allowed` is never counted, so a package may forbid its parent but not itself."""
    bad: dict[str, list[str]] = {}
    for path in paths:
        name = module_name(path)
        hits = sorted(
            imported
            for imported in imported_modules(path.read_text(encoding="utf-8"), name)
            if _within(imported, forbidden) and not _within(imported, allowed)
        )
        if hits:
            bad[name] = hits
    return bad


# The module graph: circles and arrows that run back up the layers of DESIGN.md.
#
# An edge A -> B means a statement in A imports B (at the top, under TYPE_CHECKING or in a
# function: all count). `from pkg import sub` is an edge to the module `pkg.sub` when `sub` is
# a module, else to `pkg`; the implicit run of a parent package's `__init__` is not an edge
# (otherwise every package that re-exports one of its modules would be a circle).

LAYERS: dict[str, int] = {
    "hermes.__main__": 0, "hermes.cli": 0, "hermes.acp": 0, "hermes.server": 0, "hermes.testing": 0,
    "hermes.mcp_server": 0,
    "hermes.tui": 1, "hermes.progress_bar": 1, "hermes.transcript_markdown": 1,
    "hermes.backend": 2,
    "hermes.runtime": 3, "hermes.remote": 3,
    "hermes.runs": 4,
    "hermes.agent": 5, "hermes.checkpoints": 5,
    "hermes.store": 6,
    "hermes": 7, "hermes.config": 7, "hermes.errors": 7, "hermes.error_codes": 7, "hermes.ids": 7,
    "hermes.limits_config": 7, "hermes.mcp_config": 7, "hermes.messages": 7, "hermes.pricing": 7,
    "hermes.redact": 7, "hermes.api_paths": 7, "hermes.beneath": 7, "hermes.terminal_text": 7,
    "hermes.extensions": 6, "hermes.providers_config": 7, "hermes.web_search_config": 7,
    "hermes.attachment_blocks": 7, "hermes.lsp_config": 7, "hermes.config_prices": 7, "hermes.session_folder": 7,
    "hermes.turn_outcomes": 6, "hermes.hooks_config": 7,
}  # fmt: skip
"""Each folder or top-level module of hermes and its layer: an arrow may point to the same
layer or a larger number (DESIGN.md's "Layers": front ends 0, the TUI 1, the backend 2,
runtime and remote 3, the run service 4, the engine and checkpoints 5, the store 6, the
shared vocabularies 7)."""


def all_modules() -> dict[str, Path]:
    """Every module of hermes by its dotted name (a package by its own name)."""
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def module_edges(source: str, module: str, is_package: bool, modules: dict[str, Path]) -> set[str]:
    """The hermes modules the text `source` of `module` imports (any import statement)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".") if is_package else module.split(".")[:-1]
                parts = parts[: len(parts) - (node.level - 1)]
                base = ".".join([*parts, base] if base else parts)
            targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base for alias in node.names]
        else:
            continue
        for target in targets:
            if target == "hermes" or target.startswith("hermes."):
                resolved = _resolve(target, modules)
                if resolved is not None and resolved != module:
                    found.add(resolved)
    return found


def import_graph() -> dict[str, set[str]]:
    modules = all_modules()
    return {
        name: module_edges(path.read_text(encoding="utf-8"), name, path.name == "__init__.py", modules)
        for name, path in modules.items()
    }


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work: list[tuple[str, list[str]]] = [(root, sorted(graph.get(root, ())))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, pending = work[-1]
            if pending:
                child = pending.pop()
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, sorted(graph.get(child, ()))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component: list[str] = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return sorted(found)


def layer_of(module: str) -> int | None:
    """The layer of `module`: that of the longest name in LAYERS it is or sits under
    (`hermes` itself is its `__init__` only, not a default for every new module)."""
    name = module
    while name and (name != "hermes" or module == "hermes"):
        if name in LAYERS:
            return LAYERS[name]
        name = name.rpartition(".")[0]
    return None


def upward_arrows(graph: dict[str, set[str]]) -> list[tuple[str, str]]:
    arrows = []
    for source, targets in graph.items():
        for target in targets:
            above, below = layer_of(target), layer_of(source)
            if above is not None and below is not None and above < below:
                arrows.append((source, target))
    return sorted(arrows)


if __name__ == "__main__":
    graph = import_graph()
    found = circles(graph)
    print("circles:", len(found))
    for component in found:
        print("  ", component)
    arrows = upward_arrows(graph)
    print("upward arrows:", len(arrows))
    for source, target in arrows:
        print("  ", source, "->", target)
    print("modules without a layer:", sorted(m for m in graph if layer_of(m) is None))

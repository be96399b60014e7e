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

"""File-system helpers shared by the file tools: paths, binary sniffing, globs, atomic writes."""

from __future__ import annotations

import contextlib
import difflib
import os
import re
from collections.abc import Callable, Iterator
from pathlib import Path

from hermes.agent.tools.base import ToolContext
from hermes.errors import ToolError

SNIFF_BYTES = 8192
"""A file with a NUL byte in its first SNIFF_BYTES is treated as binary."""
SKIP_DIRS = frozenset(
    {
        ".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv",
        ".mypy_cache", ".pytest_cache", ".ruff_cache", ".tox", ".nox", ".eggs",
    }
)  # fmt: skip
"""Folders list_files and search_files never descend into (unless asked to start inside one)."""


def resolve(ctx: ToolContext, raw: str) -> Path:
    """Absolute path for a tool argument: ~ expanded, relative paths against ctx.cwd, '..' folded.

    A path whose folder does not exist but that repeats the working directory's own trailing
    folders (`proj/src/a.py` from inside `…/proj`, or `/proj/src/a.py`) is taken as meant
    when that reading names something that exists (the file, or for a new file its folder).
    """
    path = Path(raw).expanduser()
    cwd = Path(ctx.cwd)
    joined = Path(os.path.normpath(path if path.is_absolute() else cwd / path))
    if joined.exists() or joined.parent.is_dir():
        return joined
    meant = _without_repeated_cwd(cwd, path)
    if meant is not None and (meant.exists() or meant.parent.is_dir()):
        return meant
    return joined


def _without_repeated_cwd(cwd: Path, path: Path) -> Path | None:
    """`cwd / rest` when `path` starts with folders that `cwd` itself holds in that order
    (`A/x.py` or `runs/A/x.py` from inside `…/runs/A`; also a run short of its end,
    `runs/x.py` from inside `…/runs/A`), longest first, else None."""
    parts = [part for part in path.parts if part not in ("/", ".")]
    folders = cwd.parts[1:]
    for size in range(min(len(folders), len(parts) - 1), 0, -1):
        head = tuple(parts[:size])
        if any(folders[i : i + size] == head for i in range(len(folders) - size + 1)):
            return Path(os.path.normpath(cwd.joinpath(*parts[size:])))
    return None


def is_binary(path: Path) -> bool:
    with path.open("rb") as handle:
        return b"\0" in handle.read(SNIFF_BYTES)


def not_found(path: Path, root: Path | None = None) -> ToolError:
    """A ToolError for a missing path that names the closest existing ones: similar entries
    of its folder, else files of the same or a similar name under `root` (the working directory)."""
    parent = path.parent
    names: list[str] = []
    if parent.is_dir():
        with contextlib.suppress(OSError):
            names = os.listdir(parent)
    similar = [str(parent / n) for n in difflib.get_close_matches(path.name, names, n=5, cutoff=0.5)]
    if not similar and root is not None and root.is_dir():
        similar = _similar_under(root, path.name)
    missing = "" if parent.is_dir() else f" (the folder {parent} does not exist either)"
    hint = f" Did you mean: {', '.join(similar)}?" if similar else ""
    if not similar and root is not None and _IDENTIFIER.fullmatch(path.stem):
        hint = _definitions_hint(root, path.stem)
    return ToolError(f"File not found: {path}{missing}.{hint}")


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{3,}")
_DEFINITION = r"\b(?:class|def|function|interface|struct|enum|type|fn|func)\s+{name}\b"
DEFINITION_SCAN_BYTES = 1_000_000
"""Text files larger than this are not looked into for a missing path's name."""


def _definitions_hint(root: Path, name: str) -> str:
    """Where `name` (a missing file's stem, like a class name) is defined under `root`, if anywhere."""
    pattern = re.compile(_DEFINITION.format(name=re.escape(name)))
    found: list[str] = []
    for count, (rel, path) in enumerate(iter_files(root)):
        if count >= SIMILAR_SCAN_LIMIT or len(found) >= 5:
            break
        try:
            if path.stat().st_size > DEFINITION_SCAN_BYTES:
                continue
            text = path.read_text(encoding="utf-8", errors="replace")
        except OSError:
            continue
        match = pattern.search(text)
        if match:
            found.append(f"{root / rel}:{text.count(chr(10), 0, match.start()) + 1}")
    return f" {name} is defined in {', '.join(found)}." if found else ""


SIMILAR_SCAN_LIMIT = 20_000
"""Files looked at under the working directory for a missing path's closest names."""


def _similar_under(root: Path, name: str) -> list[str]:
    """Up to 5 files under `root` named `name`, else named most like it (relative to `root`)."""
    files = [rel for _, (rel, _) in zip(range(SIMILAR_SCAN_LIMIT), iter_files(root), strict=False)]
    base_of = {rel: rel.rsplit("/", 1)[-1] for rel in files}
    exact = [rel for rel in files if base_of[rel] == name]
    if exact:
        return [str(root / rel) for rel in exact[:5]]
    close = set(difflib.get_close_matches(name, sorted(set(base_of.values())), n=5, cutoff=0.6))
    return [str(root / rel) for rel in files if base_of[rel] in close][:5]


def existing_text_file(path: Path, root: Path | None = None) -> Path:
    """`path` if it is a readable text file; otherwise a ToolError saying what it is instead
    (for a missing one, the closest existing paths, also under `root`)."""
    if path.is_dir():
        raise ToolError(f"{path} is a directory, not a file; use list_files to see its contents")
    if not path.exists():
        raise not_found(path, root)
    if not path.is_file():
        raise ToolError(f"{path} is not a regular file")
    try:
        if is_binary(path):
            size = path.stat().st_size
            raise ToolError(f"{path} is a binary file ({size} bytes); only text files can be read or edited")
    except PermissionError:
        raise ToolError(f"permission denied reading {path}") from None
    return path


def glob_matcher(pattern: str) -> Callable[[str], bool]:
    """Matcher for '/'-separated relative paths.

    `*` and `?` stay inside one path component, `**` spans folders, `[…]` is a class.
    A pattern without '/' matches the file name at any depth ("*.py").
    """
    pattern = pattern.strip()
    if pattern.startswith("./"):
        pattern = pattern[2:]
    on_name = "/" not in pattern
    regex = re.compile(_glob_regex(pattern))
    if on_name:
        return lambda rel: regex.fullmatch(rel.rsplit("/", 1)[-1]) is not None
    return lambda rel: regex.fullmatch(rel) is not None


def _glob_regex(pattern: str) -> str:
    out: list[str] = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            end = pattern.find("]", i + 2)
            if end < 0:
                out.append(re.escape(c))
                i += 1
                continue
            body = pattern[i + 1 : end]
            if body.startswith("!"):
                body = "^" + body[1:]
            out.append("[" + body.replace("\\", "\\\\") + "]")
            i = end + 1
        else:
            out.append(re.escape(c))
            i += 1
    return "".join(out)


def iter_files(top: Path, skip: Callable[[Path], bool] | None = None) -> Iterator[tuple[str, Path]]:
    """(relative posix path, path) of every file under `top`, junk folders skipped.

    Deterministic order: folders and names are visited sorted. Symlinked folders are not
    followed. Folders and files for which `skip(path)` is true are left out (not entered).
    """
    for root, dirs, files in os.walk(top):
        base = Path(root)
        dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not (skip and skip(base / d)))
        rel_root = base.relative_to(top).as_posix()
        for name in sorted(files):
            if skip is not None and skip(base / name):
                continue
            yield (name if rel_root == "." else f"{rel_root}/{name}"), base / name

"""Project instructions: the AGENTS.md files that join the system prompt.

Sources, in this order (later files are more specific):

    $HERMES_HOME/AGENTS.md                      the user's own, for every project
    <repository root>/AGENTS.md                 the nearest ancestor of cwd holding .git
    …every directory below it…/AGENTS.md
    <cwd>/AGENTS.md

Outside a repository only the working directory's own file is read. The joined text is
capped at `max_bytes` (UTF-8) in that order: once the budget is spent, the file being
read is cut and later ones are left out, and both the prompt section and `notice` say so.

`load_instructions` is pure file reading with no caching: front ends call it once at
start and hand the result to the agent (`Agent.instructions`) and to the TUI's
`/context`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from hermes.config import Settings

INSTRUCTIONS_FILE = "AGENTS.md"
DEFAULT_MAX_BYTES = 32 * 1024
"""Cap on the instructions' total size: about 8k tokens, a fraction of any model's window."""

HEADER = (
    "# Project instructions\n"
    "The user keeps instructions for you in the AGENTS.md files below; follow them. "
    "They are listed from the most general to the most specific; when two disagree, the later one wins."
)


@dataclass(frozen=True, slots=True)
class InstructionFile:
    """One AGENTS.md that was found."""

    path: Path
    size: int
    """Bytes on disk."""
    included: int
    """Bytes that made it into the prompt (`size` unless the cap cut the file)."""
    error: str | None = None
    """Why the file could not be read (then nothing of it is included)."""

    @property
    def truncated(self) -> bool:
        return self.error is None and self.included < self.size


@dataclass(frozen=True, slots=True)
class ProjectInstructions:
    """What was loaded for a working directory, ready for the prompt and for `/context`."""

    files: tuple[InstructionFile, ...] = ()
    max_bytes: int = DEFAULT_MAX_BYTES
    text: str = ""
    """The system-prompt section ("" when no file had any text)."""

    @property
    def included_bytes(self) -> int:
        return sum(f.included for f in self.files)

    @property
    def total_bytes(self) -> int:
        return sum(f.size for f in self.files if f.error is None)

    @property
    def truncated(self) -> bool:
        return any(f.truncated for f in self.files)

    @property
    def summary(self) -> str | None:
        """One line naming the files loaded, for start-up logs (None when there are none)."""
        loaded = [f"{f.path} ({f.included:,} bytes)" for f in self.files if f.error is None and f.included]
        return f"project instructions: {', '.join(loaded)}" if loaded else None

    @property
    def notice(self) -> str | None:
        """One line for the user when the cap cut something or a file was unreadable."""
        parts = []
        if self.truncated:
            cut = [str(f.path) for f in self.files if f.truncated]
            parts.append(
                f"project instructions cut to {self.max_bytes:,} bytes (instructions_max_bytes): "
                f"{self.included_bytes:,} of {self.total_bytes:,} bytes loaded; cut: {', '.join(cut)}"
            )
        parts += [f"{f.path}: {f.error}" for f in self.files if f.error is not None]
        return "; ".join(parts) or None


def repository_root(cwd: Path) -> Path | None:
    """The nearest directory from `cwd` upwards that holds `.git` (a folder, or a worktree's file)."""
    for folder in (cwd, *cwd.parents):
        if (folder / ".git").exists():
            return folder
    return None


def instruction_paths(home: Path, cwd: Path) -> list[Path]:
    """Every AGENTS.md that may apply, most general first (existing or not)."""
    cwd = cwd.resolve()
    root = repository_root(cwd) or cwd
    chain = [cwd, *cwd.parents]
    folders = list(reversed(chain[: chain.index(root) + 1]))
    paths = [home.expanduser() / INSTRUCTIONS_FILE, *(folder / INSTRUCTIONS_FILE for folder in folders)]
    unique: list[Path] = []
    for path in paths:  # HERMES_HOME inside the repository must not load a file twice
        if path.resolve() not in {p.resolve() for p in unique}:
            unique.append(path)
    return unique


def _cut(data: bytes, limit: int) -> str:
    """The first `limit` bytes as text, never splitting a UTF-8 character."""
    if limit < len(data):
        return data[:limit].decode("utf-8", errors="ignore")
    return data.decode("utf-8", errors="replace")


def load_instructions(home: Path, cwd: Path, *, max_bytes: int = DEFAULT_MAX_BYTES) -> ProjectInstructions:
    """Read the AGENTS.md files for `cwd` (see the module docstring). `max_bytes <= 0` reads none."""
    if max_bytes <= 0:
        return ProjectInstructions(max_bytes=max_bytes)
    files: list[InstructionFile] = []
    sections: list[str] = []
    budget = max_bytes
    for path in instruction_paths(home, cwd):
        if not path.is_file():
            continue
        try:
            data = path.read_bytes()
        except OSError as exc:
            files.append(InstructionFile(path, 0, 0, f"cannot read ({exc.strerror or exc})"))
            continue
        text = _cut(data, budget).strip()
        included = min(len(data), budget)
        budget -= included
        files.append(InstructionFile(path, len(data), included))
        if text:
            sections.append(f"## {path}\n{text}")
    result = ProjectInstructions(tuple(files), max_bytes)
    if not sections:
        return result
    body = "\n\n".join([HEADER, *sections])
    if result.truncated:
        body += (
            f"\n\n[Notice: the project instructions were cut at {max_bytes:,} bytes; "
            f"{result.total_bytes - result.included_bytes:,} bytes were left out. "
            "Read the AGENTS.md files named above with read_file if you need the rest.]"
        )
    return ProjectInstructions(result.files, max_bytes, body)


def load_project_instructions(settings: Settings, cwd: Path | None = None) -> ProjectInstructions:
    """`load_instructions` for `cwd` (default: the process's) with the settings' home and cap."""
    return load_instructions(settings.home, cwd or Path.cwd(), max_bytes=settings.instructions_max_bytes)

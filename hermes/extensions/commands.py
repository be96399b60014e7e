"""Custom slash commands: every `*.md` in a commands folder is a command named after the file.

    .hermes/commands/review.md        → /review
    .claude/commands/git/commit.md    → /git:commit     (Claude Code's subfolder names)

Folders and precedence: `places.command_places` (the project's before the user's; the
first file of a name wins, later ones are reported as shadowed). Optional front matter
gives `description` (else the body's first line) and `argument-hint`.

`expand(command, arguments)` is the prompt the command sends: `$ARGUMENTS` becomes the
whole argument text and `$1`…`$9` its words, split like a shell would (quotes group); a
body that uses neither gets the arguments appended. Substitution is one pass, so text in
the arguments (`$1`, `$ARGUMENTS`) is never expanded again.

Reading is cheap and bounded: at most MAX_COMMANDS files of at most MAX_COMMAND_BYTES,
MAX_DEPTH folders deep; a folder's parsed commands are kept until one of its files changes
(size, mtime or inode). A file that cannot be used is skipped and reported (`problems`).
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass
from pathlib import Path

from hermes.extensions.files import Problem, Refused, inside, read_capped
from hermes.extensions.frontmatter import FrontMatterError, parse
from hermes.extensions.places import Place, command_places

MAX_COMMAND_BYTES = 64 * 1024
MAX_COMMANDS = 500
MAX_DEPTH = 3
"""`a/b/c.md` is the deepest name (`/a:b:c`)."""
MAX_DESCRIPTION = 200

_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_PLACEHOLDER = re.compile(r"\$(ARGUMENTS|[1-9])")


@dataclass(frozen=True, slots=True)
class CustomCommand:
    name: str
    """Lowercase, without the slash; subfolders joined with ":"."""
    description: str
    argument_hint: str
    body: str
    path: Path
    place: Place

    @property
    def source(self) -> str:
        return self.place.label


@dataclass(frozen=True, slots=True)
class CommandCatalog:
    commands: tuple[CustomCommand, ...] = ()
    """Sorted by name; one per name (the first place's)."""
    problems: tuple[Problem, ...] = ()
    shadowed: tuple[CustomCommand, ...] = ()
    """Commands hidden by one of the same name found first (a project's over a user's)."""

    def get(self, name: str) -> CustomCommand | None:
        name = name.lower()
        return next((command for command in self.commands if command.name == name), None)


def split_arguments(arguments: str) -> list[str]:
    """The words of `arguments`, split like a POSIX shell; unbalanced quotes: at white space."""
    try:
        return shlex.split(arguments)
    except ValueError:
        return arguments.split()


def expand(command: CustomCommand, arguments: str) -> str:
    """The prompt `/name arguments` sends (see the module docstring)."""
    arguments = arguments.strip()
    words = split_arguments(arguments)
    body = command.body.strip("\n")

    def substitute(match: re.Match[str]) -> str:
        key = match.group(1)
        if key == "ARGUMENTS":
            return arguments
        index = int(key) - 1
        return words[index] if index < len(words) else ""

    if _PLACEHOLDER.search(body) is None:
        return f"{body}\n\nARGUMENTS: {arguments}" if arguments else body
    return _PLACEHOLDER.sub(substitute, body)


# ---- loading ----------------------------------------------------------------------------

_Stamp = tuple[int, int, int]
"""(mtime_ns, size, inode) of a file; all 0 when it cannot be stat'ed (then reading it reports why)."""
_Signature = tuple[tuple[str, _Stamp], ...]
_cache: dict[Path, tuple[_Signature, list[CustomCommand], list[Problem]]] = {}


def load_commands(home: Path, cwd: Path, user_home: Path | None = None) -> CommandCatalog:
    """Every command for `cwd` (see the module docstring); never raises for a bad file."""
    chosen: dict[str, CustomCommand] = {}
    shadowed: list[CustomCommand] = []
    problems: list[Problem] = []
    budget = MAX_COMMANDS
    for place in command_places(home, cwd, user_home):
        if budget <= 0:
            problems.append(Problem(place.folder, f"not read: over {MAX_COMMANDS} command files"))
            continue
        commands, found = _load_place(place, budget)
        budget -= len(commands) + len(found)
        problems.extend(found)
        for command in commands:
            if command.name in chosen:
                shadowed.append(command)
            else:
                chosen[command.name] = command
    ordered = tuple(sorted(chosen.values(), key=lambda c: c.name))
    return CommandCatalog(ordered, tuple(problems), tuple(shadowed))


def _command_files(folder: Path, limit: int) -> list[tuple[Path, _Stamp]]:
    """The `*.md` files under `folder` (not through symlinked folders), at most `limit`."""
    found: list[tuple[Path, _Stamp]] = []
    pending: list[tuple[Path, int]] = [(folder, 1)]
    while pending and len(found) < limit:
        current, depth = pending.pop()
        try:
            entries = sorted(os.scandir(current), key=lambda e: e.name)
        except OSError:
            continue
        for entry in entries:
            if entry.name.startswith("."):
                continue
            try:
                if entry.is_dir(follow_symlinks=False):
                    if depth < MAX_DEPTH:
                        pending.append((Path(entry.path), depth + 1))
                elif entry.name.endswith(".md"):
                    info = entry.stat(follow_symlinks=True)
                    found.append((Path(entry.path), (info.st_mtime_ns, info.st_size, info.st_ino)))
            except OSError:
                found.append((Path(entry.path), (0, 0, 0)))  # reported when read
            if len(found) >= limit:
                break
    return found


def _load_place(place: Place, limit: int) -> tuple[list[CustomCommand], list[Problem]]:
    if not place.folder.is_dir():
        return [], []
    try:
        inside(place.folder, place.folder)  # resolvable at all
    except Refused:
        return [], []
    files = _command_files(place.folder, limit)
    signature: _Signature = tuple((str(path), stamp) for path, stamp in files)
    key = place.folder.resolve()
    cached = _cache.get(key)
    if cached is not None and cached[0] == signature:
        return [_replace_place(c, place) for c in cached[1]], list(cached[2])
    commands: list[CustomCommand] = []
    problems: list[Problem] = []
    for path, _ in files:
        try:
            commands.append(_read_command(path, place))
        except Refused as exc:
            problems.append(Problem(path, str(exc)))
    _cache[key] = (signature, commands, problems)
    return commands, problems


def _replace_place(command: CustomCommand, place: Place) -> CustomCommand:
    if command.place == place:
        return command
    return CustomCommand(command.name, command.description, command.argument_hint, command.body, command.path, place)


def command_name(path: Path, folder: Path) -> str:
    """`git/commit.md` under `folder` → "git:commit"; Refused for a name a slash cannot reach."""
    parts = path.relative_to(folder).with_suffix("").parts
    if not parts or not all(_SEGMENT.match(part) for part in parts):
        raise Refused("not a usable command name (letters, digits, '.', '_' and '-'; starting with a letter)")
    if not parts[0][0].isalpha():
        raise Refused("a command name must start with a letter")
    return ":".join(parts).lower()


def _read_command(path: Path, place: Place) -> CustomCommand:
    name = command_name(path, place.folder)
    text = read_capped(path, place.folder, max_bytes=MAX_COMMAND_BYTES)
    try:
        document = parse(text)
    except FrontMatterError as exc:
        raise Refused(str(exc)) from None
    body = document.body
    if not body.strip():
        raise Refused("empty command (no text after the front matter)")
    description = document.fields.get("description", "").strip() or _first_line(body)
    return CustomCommand(
        name=name,
        description=" ".join(description.split())[:MAX_DESCRIPTION],
        argument_hint=" ".join(document.fields.get("argument-hint", "").split())[:MAX_DESCRIPTION],
        body=body,
        path=path,
        place=place,
    )


def _first_line(body: str) -> str:
    for line in body.splitlines():
        if line.strip():
            return line.strip().lstrip("#").strip()
    return ""

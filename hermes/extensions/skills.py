"""Skills: folders with a `SKILL.md` (the agentskills.io format) the model loads on demand.

    .hermes/skills/release-notes/SKILL.md
        ---
        name: release-notes
        description: Write release notes from the git log since the last tag.
        ---
        Steps… (and files beside it: templates, scripts, references)

Folders and precedence: `places.skill_places` (the project's `.hermes/skills`,
`.agents/skills`, `.claude/skills`, then `$HERMES_HOME/skills` and `~/.claude/skills`);
the first skill of a name wins. The system prompt lists each skill's name and description
(`prompt_section`, sorted by name so the prompt stays byte-identical and the upstream's
prompt cache holds), never a body: the `skill` tool returns the body (`read_body`) and the
folder, and files in that folder on request (`read_skill_file`).

Rules (a skill that breaks one is skipped and reported in `problems`, never raised):
- front matter with `name` (lowercase letters, digits and single hyphens, at most 64) and
  `description` (at most 1024 characters);
- `SKILL.md` and any file the tool reads lie inside the skill's folder after symlinks, and
  are at most MAX_SKILL_BYTES; a project's skill folder itself may not be a symlink out of
  its skills folder (a cloned repository cannot point hermes at ~/.ssh), a user's may (a
  dotfiles checkout);
- at most MAX_SKILLS skills; only the head of each `SKILL.md` (FRONT_MATTER_BYTES) is read
  to list it, and a skills folder is read again only when a `SKILL.md` in it changed.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from hermes.extensions.files import Problem, Refused, inside, read_capped
from hermes.extensions.frontmatter import FrontMatterError, parse
from hermes.extensions.places import Place, skill_places

SKILL_FILE = "SKILL.md"
MAX_SKILLS = 200
MAX_SKILL_BYTES = 256 * 1024
FRONT_MATTER_BYTES = 16 * 1024
MAX_NAME = 64
MAX_DESCRIPTION = 1024
_NAME = re.compile(r"^[a-z0-9]+(?:-[a-z0-9]+)*$")


@dataclass(frozen=True, slots=True)
class Skill:
    name: str
    description: str
    folder: Path
    """The skill's folder, symlinks resolved (what `read_skill_file` confines reads to)."""
    place: Place

    @property
    def source(self) -> str:
        return self.place.label

    @property
    def path(self) -> Path:
        return self.folder / SKILL_FILE


@dataclass(frozen=True, slots=True)
class SkillCatalog:
    skills: tuple[Skill, ...] = ()
    """Sorted by name; one per name."""
    problems: tuple[Problem, ...] = ()
    shadowed: tuple[Skill, ...] = ()

    def get(self, name: str) -> Skill | None:
        """The listed skill called exactly `name` (no path is ever built from `name`)."""
        return next((skill for skill in self.skills if skill.name == name), None)


# ---- the prompt -------------------------------------------------------------------------

PROMPT_HEADER = (
    "# Skills\n"
    "Skills are instructions for particular tasks, kept in folders. When a task matches a "
    "skill's description, call the `skill` tool with its name before you start, and follow "
    "what it returns."
)


def prompt_section(catalog: SkillCatalog | None) -> str:
    """The system-prompt lines naming every skill ("" when there are none)."""
    if catalog is None or not catalog.skills:
        return ""
    lines = [f"- {skill.name}: {skill.description}" for skill in catalog.skills]
    return "\n".join([PROMPT_HEADER, *lines])


def skill_prompt(skill: Skill, arguments: str) -> str:
    """What `/NAME arguments` sends: ask the model to use the skill for those arguments."""
    request = arguments.strip()
    head = f'Use the skill "{skill.name}": call the `skill` tool with {{"name": "{skill.name}"}} and follow it'
    return f"{head} for this request:\n\n{request}" if request else f"{head}."


# ---- reading one skill ------------------------------------------------------------------


def read_body(skill: Skill) -> str:
    """The instructions of `skill` (its `SKILL.md` after the front matter); Refused if unreadable."""
    text = read_capped(skill.path, skill.folder, max_bytes=MAX_SKILL_BYTES)
    try:
        return parse(text).body.strip("\n")
    except FrontMatterError as exc:
        raise Refused(str(exc)) from None


def read_skill_file(skill: Skill, relative: str) -> str:
    """A file of the skill's folder, by a relative path; Refused outside it (or too large)."""
    pure = PurePosixPath(relative)
    if not relative.strip() or pure.is_absolute() or ".." in pure.parts or "\0" in relative:
        raise Refused(f"{relative!r} is not a relative path inside the skill's folder")
    return read_capped(skill.folder / pure, skill.folder, max_bytes=MAX_SKILL_BYTES)


def skill_files(skill: Skill, limit: int = 50, max_folders: int = 200) -> list[str]:
    """Relative paths of the other files in the skill's folder (for the tool's answer): at most
    `limit`, from at most `max_folders` folders (a user's skill may be a symlink to a big tree)."""
    found: list[str] = []
    for visited, (root, folders, files) in enumerate(os.walk(skill.folder)):
        if visited >= max_folders:
            break
        folders[:] = sorted(f for f in folders if not f.startswith("."))
        for name in sorted(files):
            if name.startswith("."):
                continue
            relative = os.path.relpath(os.path.join(root, name), skill.folder)
            if relative != SKILL_FILE:
                found.append(relative)
            if len(found) >= limit:
                return found
    return found


# ---- loading ----------------------------------------------------------------------------

_Signature = tuple[tuple[str, int, int, int], ...]
_cache: dict[Path, tuple[_Signature, list[Skill], list[Problem]]] = {}


def load_skills(home: Path, cwd: Path, user_home: Path | None = None) -> SkillCatalog:
    """Every skill for `cwd` (see the module docstring); never raises for a bad skill."""
    chosen: dict[str, Skill] = {}
    shadowed: list[Skill] = []
    problems: list[Problem] = []
    for place in skill_places(home, cwd, user_home):
        skills, found = _load_place(place)
        problems.extend(found)
        for skill in skills:
            if skill.name in chosen:
                shadowed.append(skill)
            elif len(chosen) >= MAX_SKILLS:
                problems.append(Problem(skill.path, f"not listed: over {MAX_SKILLS} skills"))
            else:
                chosen[skill.name] = skill
    ordered = tuple(sorted(chosen.values(), key=lambda s: s.name))
    return SkillCatalog(ordered, tuple(problems), tuple(shadowed))


def _candidates(folder: Path) -> list[tuple[Path, tuple[int, int, int]]]:
    """Each `<folder>/<name>/SKILL.md` that exists, with its (mtime, size, inode)."""
    found: list[tuple[Path, tuple[int, int, int]]] = []
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return found
    for entry in entries:
        if entry.name.startswith(".") or len(found) >= MAX_SKILLS * 2:
            continue
        path = Path(entry.path) / SKILL_FILE
        try:
            if not entry.is_dir(follow_symlinks=True):
                continue
            info = path.stat()
        except OSError:
            if path.is_symlink():  # a dangling link is reported, a folder without SKILL.md is not
                found.append((path, (0, 0, 0)))
            continue
        found.append((path, (info.st_mtime_ns, info.st_size, info.st_ino)))
    return found


def _load_place(place: Place) -> tuple[list[Skill], list[Problem]]:
    if not place.folder.is_dir():
        return [], []
    candidates = _candidates(place.folder)
    signature: _Signature = tuple((str(path), *stamp) for path, stamp in candidates)
    key = place.folder.resolve()
    cached = _cache.get(key)
    if cached is not None and cached[0] == signature and all(s.place == place for s in cached[1]):
        return list(cached[1]), list(cached[2])
    skills: list[Skill] = []
    problems: list[Problem] = []
    for path, _ in candidates:
        try:
            skills.append(_read_skill(path, place))
        except Refused as exc:
            problems.append(Problem(path, str(exc)))
    _cache[key] = (signature, skills, problems)
    return skills, problems


def _read_skill(path: Path, place: Place) -> Skill:
    folder = path.parent
    # A project's skill folder stays inside its skills folder; a user's may point anywhere.
    resolved = inside(folder, place.folder) if place.scope == "project" else inside(folder, folder)
    head = read_capped(path, resolved, max_bytes=MAX_SKILL_BYTES, head=FRONT_MATTER_BYTES)
    try:
        document = parse(head)
    except FrontMatterError:
        raise Refused(f"no closed front matter in the first {FRONT_MATTER_BYTES:,} bytes") from None
    if not document.has_front_matter:
        raise Refused("no front matter (---, name:, description:, ---)")
    name = document.fields.get("name", "").strip()
    if not name:
        raise Refused("no name in the front matter")
    if len(name) > MAX_NAME or not _NAME.match(name):
        raise Refused(f"bad name {name[:80]!r}: lowercase letters, digits and single hyphens, at most {MAX_NAME}")
    description = " ".join(document.fields.get("description", "").split())
    if not description:
        raise Refused("no description in the front matter")
    return Skill(name, description[:MAX_DESCRIPTION], resolved, place)

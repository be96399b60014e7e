"""User-defined subagents: every `*.md` in an agents folder is an agent the `task` tool can run.

    .hermes/agents/reviewer.md   (also $HERMES_HOME/agents/, .claude/agents/, ~/.claude/agents/)
    ---
    name: reviewer
    description: Reviews a change for bugs; use after editing code
    tools: read_file, search_files, terminal      (or a YAML list; Claude Code's names work too)
    model: gpt-4o-mini                            (optional: the agent's model)
    ---
    You are a careful code reviewer…              (the body: the agent's system prompt)

Folders and precedence: `places.agent_places` (the project's before the user's; the first
agent of a name wins). `name` defaults to the file name; `description` is required (the model
chooses an agent by it). `tools` names the only tools the agent's turns get; without it an
agent gets the read-only default (`task.READ_ONLY_TOOLS`). Claude Code's tool names (Read,
Grep, Glob, Bash, Edit, Write, …) mean the hermes tools that do the same. Files are read as
custom commands are: capped in size, never through a symlink out of their folder, a file
that cannot be used is skipped and reported (`problems`), never raised.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from hermes.extensions.files import Problem, Refused, inside, read_capped
from hermes.extensions.frontmatter import FrontMatterError, parse
from hermes.extensions.places import Place, agent_places

MAX_AGENT_BYTES = 64 * 1024
MAX_AGENTS = 100
MAX_DESCRIPTION = 300

_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$")
_TOOL = re.compile(r"^[A-Za-z][A-Za-z0-9_.-]{0,127}$")

CLAUDE_TOOL_NAMES: dict[str, str] = {
    "read": "read_file",
    "grep": "search_files",
    "glob": "list_files",
    "ls": "list_files",
    "bash": "terminal",
    "edit": "patch",
    "multiedit": "patch",
    "write": "write_file",
    "todowrite": "todo",
    "webfetch": "web_fetch",
    "websearch": "web_search",
    "task": "task",
}
"""Claude Code's tool names (lower-cased) → the hermes tool that does the same."""


@dataclass(frozen=True, slots=True)
class AgentDefinition:
    name: str
    """Lowercase; what the `task` tool's `agent` argument names."""
    description: str
    tools: tuple[str, ...] | None
    """hermes tool names, in the file's order; None: the file names none (the read-only default)."""
    model: str | None
    prompt: str
    """The body: the agent's system prompt."""
    path: Path
    place: Place


@dataclass(frozen=True, slots=True)
class AgentCatalog:
    agents: tuple[AgentDefinition, ...] = ()
    """Sorted by name; one per name (the first place's)."""
    problems: tuple[Problem, ...] = ()

    def get(self, name: str) -> AgentDefinition | None:
        name = name.strip().lower()
        return next((agent for agent in self.agents if agent.name == name), None)


def load_agents(home: Path, cwd: Path, user_home: Path | None = None) -> AgentCatalog:
    """Every agent definition for `cwd` (see the module docstring); never raises for a bad file."""
    chosen: dict[str, AgentDefinition] = {}
    problems: list[Problem] = []
    for place in agent_places(home, cwd, user_home):
        for path in _agent_files(place.folder):
            if len(chosen) >= MAX_AGENTS:
                problems.append(Problem(path, f"not read: over {MAX_AGENTS} agents"))
                continue
            try:
                agent = read_agent(path, place)
            except Refused as exc:
                problems.append(Problem(path, str(exc)))
                continue
            chosen.setdefault(agent.name, agent)
    return AgentCatalog(tuple(sorted(chosen.values(), key=lambda a: a.name)), tuple(problems))


def _agent_files(folder: Path) -> list[Path]:
    """The `*.md` files directly in `folder` (a symlinked folder is not entered)."""
    if folder.is_symlink() or not folder.is_dir():
        return []
    try:
        inside(folder, folder)
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except (Refused, OSError):
        return []
    return [Path(e.path) for e in entries if e.name.endswith(".md") and not e.name.startswith(".")]


def read_agent(path: Path, place: Place) -> AgentDefinition:
    """The agent `path` defines; Refused says why it cannot be used."""
    text = read_capped(path, place.folder, max_bytes=MAX_AGENT_BYTES)
    try:
        document = parse(text)
    except FrontMatterError as exc:
        raise Refused(str(exc)) from None
    fields = document.fields
    name = (fields.get("name") or path.stem).strip()
    if not _NAME.match(name):
        raise Refused(f"not a usable agent name {name[:64]!r} (a letter, then letters, digits, '.', '_' or '-')")
    description = " ".join((fields.get("description") or "").split())
    if not description:
        raise Refused("no description: the model chooses an agent by its description")
    prompt = document.body.strip()
    if not prompt:
        raise Refused("no body: the body is the agent's system prompt")
    raw_tools = fields.get("tools")
    listed = _flow_list(raw_tools) if raw_tools is not None else _yaml_list(text, "tools")
    tools = None if listed is None else tuple(dict.fromkeys(_tool_name(item) for item in listed))
    model = (fields.get("model") or "").strip() or None
    if model is not None and model.lower() == "inherit":  # Claude Code's word for "the parent's"
        model = None
    return AgentDefinition(
        name=name.lower(),
        description=description[:MAX_DESCRIPTION],
        tools=tools,
        model=model,
        prompt=prompt,
        path=path,
        place=place,
    )


def _tool_name(item: str) -> str:
    if not _TOOL.match(item):
        raise Refused(f"not a tool name: {item[:64]!r}")
    return CLAUDE_TOOL_NAMES.get(item.lower(), item)


def _flow_list(raw: str) -> list[str]:
    """`a, b` or `[a, "b"]` → its items."""
    text = raw.strip()
    if text.startswith("[") and text.endswith("]"):
        text = text[1:-1]
    return [item.strip().strip("'\"").strip() for item in text.split(",") if item.strip().strip("'\"").strip()]


def _yaml_list(text: str, key: str) -> list[str] | None:
    """The items of a block list under `key:` in the front matter (`  - item` lines), or None."""
    lines = text.removeprefix("\ufeff").splitlines()
    if not lines or lines[0].rstrip() != "---":
        return None
    items: list[str] | None = None
    for line in lines[1:]:
        if line.rstrip() in ("---", "..."):
            break
        if items is None:
            if re.match(rf"^{re.escape(key)}\s*:\s*$", line, re.IGNORECASE):
                items = []
            continue
        stripped = line.strip()
        if stripped.startswith("- "):
            items.append(stripped[2:].strip().strip("'\""))
        elif stripped and not line[:1].isspace():
            break  # the next key
    return items

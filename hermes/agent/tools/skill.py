"""The `skill` tool: the model loads a listed skill's instructions when a task needs them.

    {"name": "release-notes"}                       → the body of its SKILL.md, its folder, its files
    {"name": "release-notes", "file": "template.md"} → one file of that folder

Invariants:
- Only a skill of the catalog the system prompt listed is answered: `name` is looked up
  in `SkillCatalog.skills`, never turned into a path, so `../../etc` names nothing.
- `file` is read through `read_skill_file`: relative, inside the skill's folder after
  symlinks, at most MAX_SKILL_BYTES. (The folder may be under $HERMES_HOME, which the file
  tools never read, so the skill's own files come through this tool.)
- Read-only: it changes no file and runs beside other read-only calls.
"""

from __future__ import annotations

from typing import Any

from hermes.agent.tools.args import check_object, require_str
from hermes.agent.tools.base import Tool, ToolContext
from hermes.errors import ToolError
from hermes.extensions.files import Refused
from hermes.extensions.skills import SkillCatalog, read_body, read_skill_file, skill_files

SKILL = "skill"


def make_skill_tool(catalog: SkillCatalog) -> Tool:
    """The `skill` tool over `catalog` (the skills the system prompt lists)."""

    async def run(args: dict[str, Any], ctx: ToolContext) -> str:
        args = check_object(args)
        name = require_str(args, "name").strip()
        skill = catalog.get(name)
        if skill is None:
            known = ", ".join(s.name for s in catalog.skills) or "none"
            raise ToolError(f"no skill named {name[:80]!r}; the skills are: {known}")
        wanted = args.get("file")
        try:
            if wanted is not None:
                if not isinstance(wanted, str):
                    raise ToolError("argument 'file' must be a string (a path relative to the skill's folder)")
                return read_skill_file(skill, wanted)
            body = read_body(skill)
        except Refused as exc:
            raise ToolError(f"skill {skill.name}: {exc}") from None
        files = skill_files(skill)
        listing = "\n".join(f"- {path}" for path in files)
        more = f'\n\nFiles in this folder (read one with the skill tool and "file"):\n{listing}' if files else ""
        return f"Skill: {skill.name}\nFolder: {skill.folder}\n\n{body}{more}"

    names = [skill.name for skill in catalog.skills]
    return Tool(
        name=SKILL,
        description=(
            "Load the instructions of one of the skills listed in the system prompt (by its name) "
            "before doing a task it describes. The answer holds the skill's instructions, its folder "
            'and the other files there; pass "file" (a path relative to that folder) to read one of them.'
        ),
        parameters={
            "type": "object",
            "properties": {
                "name": {"type": "string", "enum": names, "description": "The skill's name."},
                "file": {"type": "string", "description": "Optional: a file of the skill's folder to read."},
            },
            "required": ["name"],
            "additionalProperties": False,
        },
        handler=run,
        read_only=True,
        preview_key="name",
    )

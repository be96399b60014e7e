"""A patch that would undo the turn's own earlier edit is refused once, then carried out
when asked again (hermes/agent/tools/edit_history.py); the transcript is the turn's as the
engine keeps it: each call in an assistant message, its result in a tool message."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.edit_history import REFUSAL_PREFIX
from hermes.agent.tools.files import patch
from hermes.errors import ToolError
from hermes.messages import ChatMessage

BUGGY = "def add(a, b):\n    return a - b\n"
FIXED = "def add(a, b):\n    return a + b\n"


class Turn:
    """Runs patch calls the way the engine does: the call in the transcript first, its result after."""

    def __init__(self, cwd: Path) -> None:
        self.transcript: list[ChatMessage] = [{"role": "user", "content": "fix add"}]
        self.ctx = ToolContext(session_id="s", cwd=cwd, transcript=self.transcript)
        self.calls = 0

    async def patch(self, **args: Any) -> str:
        self.calls += 1
        call_id = f"call_{self.calls}"
        self.transcript.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": call_id, "type": "function", "function": {"name": "patch", "arguments": json.dumps(args)}},
        ]})  # fmt: skip
        try:
            result = await patch(args, self.ctx)
        except ToolError as exc:  # the engine records a failed call's error as its result
            result = f"Error: {exc}"
        self.transcript.append({"role": "tool", "tool_call_id": call_id, "name": "patch", "content": result})
        return result


async def test_undoing_the_turns_own_fix_is_refused_once_then_carried_out(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text(BUGGY)
    turn = Turn(tmp_path)
    fixed = await turn.patch(path="calc.py", old_string="return a - b", new_string="return a + b")
    assert fixed.startswith("Patched") and (tmp_path / "calc.py").read_text() == FIXED

    refused = await turn.patch(path="./calc.py", old_string="return a + b", new_string="return a - b")
    assert refused.startswith(REFUSAL_PREFIX), refused
    assert '"return a - b" with "return a + b"' in refused and "same arguments" in refused
    assert (tmp_path / "calc.py").read_text() == FIXED  # nothing written

    meant = await turn.patch(path="calc.py", old_string="return a + b", new_string="return a - b")
    assert meant.startswith("Patched") and (tmp_path / "calc.py").read_text() == BUGGY


async def test_other_edits_and_other_files_are_not_held_back(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text(BUGGY)
    (tmp_path / "other.py").write_text("x = 1\n")
    turn = Turn(tmp_path)
    await turn.patch(path="calc.py", old_string="return a - b", new_string="return a + b")
    # Another change of the same file, and the same reversal in another file, go through.
    further = await turn.patch(path="calc.py", old_string="return a + b", new_string="return b + a")
    assert further.startswith("Patched")
    (tmp_path / "other.py").write_text("return a + b\n")
    elsewhere = await turn.patch(path="other.py", old_string="return a + b", new_string="return a - b")
    assert elsewhere.startswith("Patched")


async def test_a_failed_earlier_patch_is_no_edit_to_protect(tmp_path: Path) -> None:
    (tmp_path / "calc.py").write_text(BUGGY)
    turn = Turn(tmp_path)
    missed = await turn.patch(path="calc.py", old_string="return a + c", new_string="return a - b")
    assert missed.startswith("Error: no match")
    landed = await turn.patch(path="calc.py", old_string="return a - b", new_string="return a + c")
    assert landed.startswith("Patched") and "a + c" in (tmp_path / "calc.py").read_text()
    # A previous turn's edit is not this turn's: without a transcript nothing is refused.
    (tmp_path / "calc.py").write_text(FIXED)
    plain = await patch(
        {"path": "calc.py", "old_string": "return a + b", "new_string": "return a - b"},
        ToolContext(session_id="s", cwd=tmp_path),
    )
    assert plain.startswith("Patched")

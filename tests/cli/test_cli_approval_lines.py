"""`chat -q` on a terminal: the approval question comes after its tool's line, never on it,
waits the `approval_timeout` setting, and a denial is one short line (not the model's text)."""

from __future__ import annotations

import re

from test_cli_terminal_escapes import approval_on_a_terminal, piped, upstream, work  # noqa: F401

from hermes.testing.upstream import call, text_reply, tool_reply

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def lines_of(screen: bytes) -> list[str]:
    text = ANSI.sub("", screen.decode(errors="replace"))
    return [line.rstrip("\r").rsplit("\r", 1)[-1].rstrip() for line in text.split("\n")]


def test_the_question_follows_the_tool_line_and_the_denial_is_one_short_line(upstream, hermes_home, work):  # noqa: F811
    (work / "junk").mkdir()
    assert piped(["config", "set", "approval_timeout", "77"], home=hermes_home, cwd=work).returncode == 0
    upstream.enqueue(
        tool_reply([call("terminal", {"command": "rm -r junk"})], text="I will clean up the junk folder now."),
        text_reply("Denied, fine."),
    )
    code, screen = approval_on_a_terminal(
        ["chat", "-q", "clean up"], home=hermes_home, cwd=work, upstream=upstream, answer=b"d\n"
    )
    assert code == 0, screen
    lines = lines_of(screen)
    tool = next(i for i, line in enumerate(lines) if line.startswith("→ terminal: rm -r junk"))
    question = next(i for i, line in enumerate(lines) if "wants to run a risky command" in line)
    assert tool < question, lines  # the tool's line first, on a line of its own
    assert lines[tool] == "→ terminal: rm -r junk"
    assert any("(deny in 77 s)" in line for line in lines)  # the setting, not a fixed 120 s
    denial = [line for line in lines if line.startswith("✗ terminal")]
    assert len(denial) == 1 and denial[0].endswith("— denied: not run (the model was told not to retry it)")
    assert "DENIED" not in "\n".join(lines)
    assert (work / "junk").is_dir()

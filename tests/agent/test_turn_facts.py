"""What a turn did, read from its transcript, and when an answer tells the user nothing."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hermes.agent.turn_facts import HERMES_MARK, fallback_answer, turn_facts, unusable_answer


def call(n: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}


def exchange(n: int, name: str, args: dict[str, Any], result: str) -> list[dict[str, Any]]:
    return [
        {"role": "assistant", "content": None, "tool_calls": [call(n, name, args)]},
        {"role": "tool", "tool_call_id": f"c{n}", "content": result},
    ]


def test_facts_count_only_carried_out_writes_and_the_last_command() -> None:
    messages = [
        {"role": "user", "content": "fix it"},
        *exchange(1, "patch", {"path": "a.py"}, "Patched a.py: replaced 1 occurrence."),
        *exchange(2, "patch", {"path": "b.py"}, "Error: old_string not found in b.py"),
        *exchange(3, "patch", {"path": "c.py"}, "Not patched: this would undo your own edit of c.py"),
        *exchange(4, "write_file", {"path": "NOTES.md"}, "Created NOTES.md (3 lines)."),
        *exchange(5, "patch", {"path": "a.py"}, "Patched a.py: replaced 1 occurrence."),
        *exchange(6, "terminal", {"command": "ls"}, "exit code: 0\n--- stdout ---\na.py"),
        *exchange(7, "terminal", {"command": "pytest -q"}, "exit code: 1\n--- stdout ---\nE   assert 1 == 2"),
    ]
    facts = turn_facts(messages)
    assert facts.changed == ("a.py", "NOTES.md")
    assert facts.ran_tools
    assert facts.last_command is not None and facts.last_command.command == "pytest -q"
    assert facts.last_command.result.exit_code == 1
    assert len(facts.guidance) == 2  # the error and the refusal: hermes' words, never an answer

    text = fallback_answer(facts, stopped_early="stopped after 14 model calls")
    assert text.splitlines() == [
        f"{HERMES_MARK} the model ended the turn without an answer of its own (stopped after 14 model calls)."
        " What the turn did:",
        "Changed: a.py, NOTES.md.",
        "Last command: `pytest -q` failed (exit code 1):",
        "    E   assert 1 == 2",
    ]


def test_a_turn_that_only_read_says_so() -> None:
    facts = turn_facts([{"role": "user", "content": "q"}, *exchange(1, "read_file", {"path": "a"}, "1|x")])
    assert fallback_answer(facts).splitlines()[1:] == ["No file was changed."]


@pytest.mark.parametrize(
    ("answer", "unusable"),
    [
        ("", True),
        ("   \n", True),
        ("The tests fail. Fix the bug in stats.py so that pytest passes.", True),  # the request handed back
        ("the tests fail. fix the bug in stats.py   so that pytest passes", True),
        ("I'm sorry, but I can't assist with that.", True),
        ("Sorry, I cannot help with this request.", True),
        ("I am sorry, but I cannot perform that action. Please let me know what you need assistance with.", True),
        ("I am sorry, but I cannot perform that action. stats.py divides by len - 1.", False),
        ("Fixed: mean divides by len(values); pytest passes.", False),
        ("I'm sorry, the check still fails: helper.py does not exist and I could not find answer().", False),
        ("Do not run it again: use the result to reply.", True),  # hermes' note repeated
        ("42", False),
        ("All good.", False),
        ("Fixed the bug in stats.py so that pytest passes.", False),  # the request, in the model's own words
        ("The tests fail. Fix the bug in stats.py so", True),  # cut short
    ],
)
def test_an_answer_that_tells_nothing_is_told_apart(answer: str, unusable: bool) -> None:
    request = "The tests fail. Fix the bug in stats.py so that pytest passes."
    notes = [
        "You already ran patch with exactly these args; its result is above. Do not run it again: use the "
        "result to reply, or choose a different action."
    ]
    assert unusable_answer(answer, request, notes) is unusable


def test_hermes_notes_pieced_together_around_the_request_are_not_an_answer() -> None:
    # Seen with the bundled model: two of the turn's notes said again, the request quoted inside.
    from hermes.agent.providers.action_steering import EDIT_RETRY_NOTE, FAILED_AFTER_EDIT_NOTE

    request = "pytest is failing on test_remainder, looks like an off-by-one in chunks.py. Can you fix it?"
    notes = [
        FAILED_AFTER_EDIT_NOTE.format(
            command="pytest",
            path="chunks.py",
            edit="you replaced `a` with `b`",
            why="E assert [[1, 2]] == [[1, 2], [5]]",
            request="",
        ),
        EDIT_RETRY_NOTE.format(path="chunks.py", reason="old_string and new_string are identical.", request=""),
    ]
    answer = (
        "pytest is still failing after your edit of chunks.py. "
        "The current content of chunks.py (around your edit, when it is long) is above. "
        f'Do the request "{request}" now: call patch chunks.py again with old_string copied exactly from that '
        "content (without the line-number prefixes), or reply if the file already does what was asked."
    )
    assert unusable_answer(answer, request, notes)
    # Neither source alone is most of it: only the two together tell.
    assert not unusable_answer(answer, "", notes)
    # The request restated in the model's words, with a few of the notes' words, is an answer.
    own = (
        "I fixed the off-by-one in chunks.py: the loop now runs to len(items), so test_remainder "
        "passes; pytest is failing no more after your edit of chunks.py."
    )
    assert not unusable_answer(own, request, notes)

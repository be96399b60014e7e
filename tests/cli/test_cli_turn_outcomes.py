"""`hermes sessions show` labels tool results that were not a success and marks turns that
failed or were interrupted (the same reading as the TUI's replay)."""

from __future__ import annotations

from turn_outcome_seed import seed_outcomes


def test_show_marks_denied_failed_interrupted_calls_and_turns(store, invoke) -> None:
    sid = seed_outcomes(store)
    result = invoke("sessions", "show", sid)
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    labels = [line for line in lines if " tool (terminal)" in line]
    assert [label.split(" ", 1)[1] for label in labels] == [
        "tool (terminal) [denied]",
        "tool (terminal) [failed]",
        "tool (terminal) [interrupted]",
    ]
    marks = [line for line in lines if line.startswith(("⏹", "✗"))]
    assert marks == [
        "⏹ this turn was interrupted",
        "✗ this turn failed before it answered",
        "✗ this turn failed before it answered",
    ]
    # each mark follows its turn's last message
    assert lines.index(marks[0]) > next(i for i, line in enumerate(lines) if "The build is still" in line)
    assert lines[-1] == marks[2]

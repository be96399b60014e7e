"""Reading a command's result back: its exit code and the lines that say why it failed."""

from __future__ import annotations

from hermes.agent.check_output import command_result, essential_lines

PYTEST = """\
F                                                                        [100%]
=================================== FAILURES ===================================
__________________________________ test_mean ___________________________________

    def test_mean():
>       assert mean([2, 4, 6]) == 4
E       assert 6.0 == 4
E        +  where 6.0 = mean([2, 4, 6])

test_stats.py:5: AssertionError
=========================== short test summary info ============================
FAILED test_stats.py::test_mean - assert 6.0 == 4
1 failed in 0.01s
"""

TRACEBACK = """\
Traceback (most recent call last):
  File "/w/app.py", line 3, in <module>
    print(total(load()))
  File "/w/pricing.py", line 7, in total
    return sum(p["price"] for p in items) * (1 - discount)
                                             ~~^~~~~~~~~~
TypeError: unsupported operand type(s) for -: 'int' and 'str'
"""


def test_a_terminal_result_is_read_back() -> None:
    run = command_result("exit code: 1\n--- stdout ---\n" + PYTEST)
    assert run is not None and run.exit_code == 1 and run.failed and not run.timed_out
    passed = command_result("exit code: 0\n--- stdout ---\n1 passed")
    assert passed is not None and not passed.failed
    timed_out = command_result("Command timed out after 5 s; it and its child processes were killed.\nexit code: -9")
    assert timed_out is not None and timed_out.timed_out and timed_out.failed
    assert command_result("Patched calc.py: replaced 1 occurrence.") is None


def test_pytest_failures_keep_the_assertion_and_where() -> None:
    lines = essential_lines(PYTEST)
    assert lines == [
        "E       assert 6.0 == 4",
        "E        +  where 6.0 = mean([2, 4, 6])",
        "test_stats.py:5: AssertionError",
        "FAILED test_stats.py::test_mean - assert 6.0 == 4",
    ]


def test_a_traceback_keeps_its_last_frame_and_the_exception() -> None:
    assert essential_lines(TRACEBACK) == [
        'File "/w/pricing.py", line 7, in total',
        'return sum(p["price"] for p in items) * (1 - discount)',
        "TypeError: unsupported operand type(s) for -: 'int' and 'str'",
    ]


def test_other_output_keeps_its_last_lines_clipped() -> None:
    output = "\n".join(f"line {n}" for n in range(20)) + "\n" + "x" * 500
    lines = essential_lines(output)
    assert lines[:4] == ["line 16", "line 17", "line 18", "line 19"]
    assert len(lines) == 5 and len(lines[-1]) == 200 and lines[-1].endswith("…")
    assert essential_lines("--- stderr ---\n(no output)\n") == []

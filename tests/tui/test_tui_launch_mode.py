"""`hermes chat --mode plan` (the TUI, in a pseudo-terminal) opens in plan mode: the status
bar shows it from the first frame; an unknown mode is one line and exit 2."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from .test_tui_launch import env_for, run_in_terminal


def test_chat_mode_plan_starts_the_tui_in_plan_mode(tmp_path: Path) -> None:
    home = tmp_path / "home"
    output = run_in_terminal(
        [sys.executable, "-m", "hermes", "chat", "--mode", "plan"], env_for(home), tmp_path, wait_for="PLAN"
    )
    assert "⏸ PLAN" in output and "Traceback" not in output


def test_chat_with_an_unknown_mode_is_one_line(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "hermes", "chat", "--mode", "reckless"],
        capture_output=True, text=True, timeout=60, env=env_for(tmp_path / "home"), stdin=subprocess.DEVNULL,
    )  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "hermes: --mode: unknown mode 'reckless': use one of default, accept-edits, plan"
    ]

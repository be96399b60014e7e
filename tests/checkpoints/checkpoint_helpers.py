"""Helpers for the checkpoint tests (imported by name; pytest puts this folder on sys.path)."""

from __future__ import annotations

import subprocess
from pathlib import Path


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def make_work_repo(folder: Path) -> Path:
    """A git repository with one commit: a.txt, doomed.txt, and a .gitignore of *.log."""
    folder.mkdir(parents=True)
    git(folder, "init", "-q")
    git(folder, "config", "user.email", "t@example.com")
    git(folder, "config", "user.name", "t")
    (folder / "a.txt").write_text("alpha\nbeta\ngamma\n")
    (folder / "doomed.txt").write_text("bye\n")
    (folder / ".gitignore").write_text("*.log\n")
    git(folder, "add", "-A")
    git(folder, "commit", "-q", "-m", "start")
    return folder

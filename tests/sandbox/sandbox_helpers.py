"""Helpers for the sandbox tests (imported by name; pytest puts this folder on sys.path):
a fake bwrap, real-bwrap detection, process lookup by marker."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from hermes.agent.safety.sandbox import SandboxConfig, resolve_sandbox


def bwrap_works() -> bool:
    return resolve_sandbox(SandboxConfig(mode="auto")).active


needs_bwrap = pytest.mark.skipif(not bwrap_works(), reason="bubblewrap is missing or does not work here")


def fake_bwrap(folder: Path, body: str) -> Path:
    """A `bwrap` program that runs the shell script `body` (e.g. fails like a restricted kernel)."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "bwrap"
    program.write_text(f"#!/bin/sh\n{body}\n")
    program.chmod(0o755)
    return program


def pids_with(marker: str, *, program: bool = False) -> list[int]:
    """Live (non-zombie) processes whose command line (with `program`: whose argv[0]) holds `marker`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        where = cmdline.split(" ", 1)[0] if program else cmdline
        if marker in where and state not in ("Z", "X"):
            found.append(int(entry.name))
    return found


def wait_until(predicate: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()

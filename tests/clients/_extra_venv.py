"""Installing the extra Python clients' pinned venv: `pip install -r requirements.txt` into `folder/.venv`.

instructor and llama-index pin an `openai` of their own, so they cannot share the project's
environment. `ensure_venv(folder)` builds `folder/.venv` from `folder/requirements.txt`
(every version pinned) with this interpreter's `venv` and `pip --python`, then imports the
clients once to write their bytecode. It rebuilds when the venv is missing or was built
from other requirements or another Python: the stamp `.venv/hermes-requirements.sha256`,
written last, holds the hash of both, so a half-built venv has none and is rebuilt from
scratch. The build runs under an exclusive lock on `folder/.pip-install.lock`: parallel
test runs of one checkout build once, the others wait and then find it done. It returns
None when the venv is ready, else why not (pip failing, too slow), for the tests to skip
with, or fail with under CI.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

PIP_INSTALL_TIMEOUT = 300.0
"""Seconds the whole build may take (a cold download of ~75 wheels included)."""

STAMP = "hermes-requirements.sha256"
WARM_IMPORTS = ("instructor", "llama_index.llms.openai_like", "llama_index.core.tools", "llama_index.core.prompts")
"""Imported once after the install, which writes their bytecode: without it every client run
compiles llama-index anew where PYTHONDONTWRITEBYTECODE is set (seconds of CPU each)."""


def venv_python(folder: Path) -> Path:
    return folder / ".venv" / "bin" / "python"


def wanted_stamp(folder: Path) -> str:
    digest = hashlib.sha256((folder / "requirements.txt").read_bytes())
    digest.update(sys.version.encode())
    return digest.hexdigest()


def venv_current(folder: Path) -> bool:
    try:
        stamp = (folder / ".venv" / STAMP).read_text().strip()
    except FileNotFoundError:
        return False
    return stamp == wanted_stamp(folder) and venv_python(folder).exists()


def ensure_venv(folder: Path, timeout: float = PIP_INSTALL_TIMEOUT, warm: tuple[str, ...] = WARM_IMPORTS) -> str | None:
    folder = folder.resolve()
    if venv_current(folder):
        return None
    fd = os.open(folder / ".pip-install.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        if venv_current(folder):
            return None  # another run built it while this one waited
        return _build(folder, timeout, warm)
    finally:
        os.close(fd)  # releases the lock


def _build(folder: Path, timeout: float, warm: tuple[str, ...]) -> str | None:
    venv = folder / ".venv"
    shutil.rmtree(venv, ignore_errors=True)
    deadline = time.monotonic() + timeout
    steps = [
        ("python -m venv", [sys.executable, "-m", "venv", "--without-pip", str(venv)]),
        (
            "pip install -r requirements.txt",
            [
                # this interpreter's pip installs into the venv (`--python`): no ensurepip there
                sys.executable,
                "-m",
                "pip",
                "--python",
                str(venv_python(folder)),
                "install",
                "--quiet",
                "--disable-pip-version-check",
                "--no-input",
                "--no-compile",  # the next step compiles what the clients import, not all
                "-r",
                str(folder / "requirements.txt"),
            ],
        ),
        ("import " + ", ".join(warm), [str(venv_python(folder)), "-c", "import " + ", ".join(warm)]),
    ]
    # bytecode written here serves every later run, also those under PYTHONDONTWRITEBYTECODE
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    for what, argv in steps:
        left = max(deadline - time.monotonic(), 1.0)
        try:
            proc = subprocess.run(
                argv, capture_output=True, text=True, timeout=left, stdin=subprocess.DEVNULL, cwd=folder, env=env
            )
        except subprocess.TimeoutExpired:
            return f"`{what}` for {folder} took more than {timeout:g} s"
        if proc.returncode != 0:
            lines = proc.stderr.strip().splitlines() or ["no output"]
            last = next((line for line in reversed(lines) if line.startswith("ERROR")), lines[-1])
            return f"`{what}` for {folder} failed (exit {proc.returncode}): {last}"
    (venv / STAMP).write_text(wanted_stamp(folder) + "\n")
    return None

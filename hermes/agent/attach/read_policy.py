"""Whether a file a person named in a prompt (an `@` mention, an image) may be read into it.

The same guards as the file tools' reads, decided without asking anyone (a mention is
expanded before the turn starts, so there is no approval to wait for): a refusal is a
visible note, never a silent attachment.

Refused:
- a path hidden from tools by the confinement policy ($HERMES_HOME, credential stores,
  password databases), as written and as resolved (a symlink cannot disguise its target);
- a private key (by name, or by the content's first bytes) and the sudo policy;
- an environment file (`.env`, `.env.local`, …; not `.env.example` and its kind), which
  usually holds keys;
- a path written relative to the working folder that resolves outside it (a symlink in
  the folder leading out of it); a path written as absolute or `~/…` is the person's own
  choice and only the rules above apply;
- anything but a regular file or a folder (a FIFO would block the read, a device never ends).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

from hermes.agent.safety.confinement import Confinement
from hermes.agent.safety.protected_paths import secret_read

ENV_FILE_SAMPLES = frozenset({".env.example", ".env.sample", ".env.template", ".env.dist"})
"""Environment files meant to be shared (no real values in them)."""


def is_env_file(name: str) -> bool:
    return (name == ".env" or name.startswith(".env.")) and name not in ENV_FILE_SAMPLES


def refusal(path: Path, written: str, cwd: Path, confinement: Confinement) -> str | None:
    """None when `path` (absolute; `written` is how the prompt named it) may be read, else why not."""
    hidden = confinement.hidden_entry(path, cwd)
    if hidden is not None:
        return f"{hidden} is hidden from tools (credentials or hermes's own files)"
    real = Path(os.path.realpath(path))
    for name in dict.fromkeys((path.name, real.name)):
        if is_env_file(name):
            return f"{name} is an environment file (it usually holds secrets)"
    relative = not (written.startswith(("/", "~")))
    work = os.path.realpath(cwd)
    if relative and not (str(real) == work or str(real).startswith(work.rstrip("/") + "/")):
        return f"it leads out of the working folder (to {real}); name it by its absolute path to attach it"
    try:
        mode = os.stat(real).st_mode
    except OSError as exc:
        return f"it cannot be read ({exc.strerror or exc})"
    if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
        return "it is not a regular file"
    found = secret_read(str(path))  # after the type check: it reads the file's first bytes
    if found is not None:
        return f"it is {found[1]}"
    return None


def open_regular(path: Path) -> int:
    """A read descriptor of the regular file `path` (symlinks followed), refusing anything else
    without blocking on it (a FIFO put there after the check); raises OSError."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(f"{path} is not a regular file")
    return fd

"""The bearer key a client command sends to `hermes serve` (`chat --server`, `sessions … --server`).

Where it comes from, first found wins:

    --key KEY             on the command line (visible to every local user in `ps`)
    --key-file PATH       the file's content, less its trailing newline
    HERMES_SERVER_KEY     the environment variable
    server_key            config.toml (or API_SERVER_KEY, which `hermes serve` itself reads)

The key file is read once, through one open file: more than MAX_KEY_FILE_BYTES, an empty
key, a key of several lines, or a file that cannot be read is refused (a UsageError naming
the file, never its content). A file that group or others may read or write is used, with
a warning on stderr (as ssh warns of an exposed key file; it is not refused, so a key kept
on a shared mount still works). The key itself is never printed.
"""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import typer

from hermes.errors import UsageError

ENV_VAR = "HERMES_SERVER_KEY"
MAX_KEY_FILE_BYTES = 4096

KEY_OPTION: Any = typer.Option(
    None, "--key", help="Bearer key of --server (shown in `ps`: prefer --key-file or HERMES_SERVER_KEY)."
)
KEY_FILE_OPTION: Any = typer.Option(
    None,
    "--key-file",
    metavar="PATH",
    help="Read the bearer key of --server from this file (after --key; before HERMES_SERVER_KEY, server_key).",
)


def server_key(
    settings_key: str | None,
    *,
    key: str | None,
    key_file: Path | None,
    env: Mapping[str, str] | None = None,
) -> str | None:
    """The key to send: --key, else --key-file, else HERMES_SERVER_KEY, else `settings_key`."""
    if key:
        return key
    if key_file is not None:
        return read_key_file(key_file)
    env = os.environ if env is None else env
    return env.get(ENV_VAR) or settings_key


def read_key_file(path: Path) -> str:
    """The key held by `path` (see the module docstring for what is refused)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOCTTY | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise UsageError(f"cannot read the key file {path}: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise UsageError(f"cannot read the key file {path}: it is a folder")
        data = os.read(fd, MAX_KEY_FILE_BYTES + 1)
    except OSError as exc:
        raise UsageError(f"cannot read the key file {path}: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
    if len(data) > MAX_KEY_FILE_BYTES:
        raise UsageError(f"the key file {path} is larger than {MAX_KEY_FILE_BYTES} bytes: it should hold one key")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise UsageError(f"the key file {path} is not UTF-8 text") from None
    key = text.removesuffix("\n").removesuffix("\r")
    if not key.strip():
        raise UsageError(f"the key file {path} is empty")
    if any(ord(char) < 0x20 or ord(char) == 0x7F for char in key):
        raise UsageError(f"the key file {path} must hold one key on one line")
    if stat.S_ISREG(info.st_mode) and info.st_mode & 0o077:
        sys.stderr.write(
            f"hermes: warning: the key file {path} can be read or written by other users"
            f" (mode {stat.S_IMODE(info.st_mode):04o}); chmod 600 it\n"
        )
    return key

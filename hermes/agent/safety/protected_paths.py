"""Which paths the approval policy protects, and how paths written in commands are read.

- critical targets: deleting them recursively is hard-blocked (/, system folders, homes);
- disk devices: writing to them is hard-blocked (/dev/sda, /dev/nvme0n1, …);
- sensitive files: writing to them needs approval (~/.ssh, /etc, anything in $HERMES_HOME,
  and the files that run code later: shell rc files, ~/.gitconfig, ~/.config, ~/.local/bin,
  .git/config, .git/hooks, .git/info and .envrc at any depth; hermes/agent/safety/runs_later.py);
- secret files: reading them through the file tools of a server needs approval
  (private keys by name or content, /etc/sudoers); the confinement policy hides the
  password databases, credential stores and $HERMES_HOME from every tool.

Paths in commands are text: `~`, `$HOME`, `${HOME}`, `$HERMES_HOME` and `${HERMES_HOME}`
are understood, other variables are not evaluated (such a path is "unknown" and never
counts as critical or sensitive).
"""

from __future__ import annotations

import os
import posixpath
import re

from hermes.agent.safety.paths import HermesPaths
from hermes.agent.safety.runs_later import runs_later_write

CRITICAL_DIRS = frozenset(
    {
        "/", "/etc", "/usr", "/var", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/boot",
        "/dev", "/proc", "/sys", "/opt", "/root", "/home", "/srv",
        "/Users", "/System", "/Library", "/Applications", "/private",
    }
)  # fmt: skip
_HOME_MARKER = "/\0home"  # stands for ~, ~user, $HOME, ${HOME} in normalised targets
_HOME_PREFIX = re.compile(r"^(~[\w.-]*|\$HOME|\$\{HOME\})(?=/|$)")
_HERMES_HOME_PREFIX = re.compile(r"^(\$HERMES_HOME|\$\{HERMES_HOME\})(?=/|$)")
_USER_HOME = re.compile(r"/(home|Users)/[^/]+")
_DEVICE = re.compile(r"^/dev/(sd|hd|vd|xvd|nvme|mmcblk|r?disk|mapper/|md\d|dm-)")


def is_disk_device(path: str) -> bool:
    return _DEVICE.match(path) is not None


def is_critical_target(path: str, cwd: str | None) -> bool:
    """True if `path` (as written in a command) is /, a system folder or a home folder.

    Trailing globs count as the folder itself ("/usr/*", "~/*"); relative paths resolve
    against `cwd` when it is known and are otherwise never critical.
    """
    target = path.strip()
    if not target:
        return False
    home = _HOME_PREFIX.match(target)
    if home:
        target = _HOME_MARKER + target[home.end() :]
    elif not target.startswith("/"):
        if cwd is None:
            return False
        target = posixpath.join(cwd, target)
    target = normalise(target)
    real_home = os.path.expanduser("~")
    return (
        target in CRITICAL_DIRS
        or target == _HOME_MARKER
        or target in (real_home, os.path.realpath(real_home))
        or _USER_HOME.fullmatch(target) is not None
    )


def expand_command_path(path: str, cwd: str | None) -> str | None:
    """Absolute, normalised form of a path written in a command, or None if it cannot be known."""
    hermes_home = _HERMES_HOME_PREFIX.match(path)
    if hermes_home:
        path = HermesPaths.from_environment().homes_as_text()[-1] + path[hermes_home.end() :]
    home = _HOME_PREFIX.match(path)
    if home and home.group(1).startswith("~") and home.group(1) != "~":
        return None  # ~otheruser: not ours to resolve
    if home:
        path = os.path.expanduser("~") + path[home.end() :]
    if "$" in path or "`" in path:
        return None  # depends on a variable or command output we do not evaluate
    if not path.startswith("/"):
        if cwd is None:
            return None
        path = posixpath.join(cwd, path)
    return normalise(path)


def normalise(path: str) -> str:
    """normpath, one leading slash, and trailing "/*" globs dropped ("/etc/*" -> "/etc")."""
    path = re.sub(r"^/+", "/", posixpath.normpath(path))
    while path.endswith("/*"):
        path = re.sub(r"^/+", "/", posixpath.normpath(path[:-2] or "/"))
    return path


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def sensitive_path(path: str) -> tuple[str, str] | None:
    """(rule, description) when writing to the absolute `path` needs approval, else None."""
    if _under(path, "/etc") or _under(path, "/private/etc"):
        return "etc_write", "a system configuration file under /etc"
    home = os.path.expanduser("~")
    for h in dict.fromkeys((home, os.path.realpath(home))):
        if _under(path, posixpath.join(h, ".ssh")):
            return "ssh_write", "SSH keys or configuration in ~/.ssh"
    runs_later = runs_later_write(path, home)
    if runs_later is not None:
        return runs_later
    for h in HermesPaths.from_environment().homes_as_text():
        if path == posixpath.join(h, "config.toml"):
            return "hermes_config_write", "hermes's own configuration file"
        if _under(path, h):
            return "hermes_home_write", "hermes's own files in $HERMES_HOME"
    return None


SECRET_FILES = frozenset({"/etc/sudoers"})
"""Secret files outside the confinement policy's hidden list (which covers the password
databases, credential stores and $HERMES_HOME for every tool)."""
SSH_KEY_NAMES = re.compile(r"id_(rsa|dsa|ecdsa|ed25519|xmss)(_sk)?")
"""Default names of SSH private keys (their .pub halves are public)."""
PRIVATE_KEY_MARKER = b"PRIVATE KEY-----"
"""Found in the first SNIFF of PEM/OpenSSH private keys ("-----BEGIN RSA PRIVATE KEY-----")."""
_SNIFF = 8192


def secret_read(path: str, *, sniff: bool = True) -> tuple[str, str] | None:
    """(rule, description) when reading the absolute `path` exposes a secret that the hidden
    list does not cover, else None.

    Looks at the path itself and, with `sniff`, at the start of a file's content (private
    keys stored under any name); symlinks are followed, so a link cannot disguise its target.
    """
    for candidate in dict.fromkeys((path, os.path.realpath(path))):
        if candidate in SECRET_FILES:
            return "secret_file_read", f"the sudo policy {candidate}"
        name = posixpath.basename(candidate)
        if SSH_KEY_NAMES.fullmatch(name) or (sniff and holds_private_key(candidate)):
            return "private_key_read", f"a private key ({name})"
    return None


def holds_private_key(path: str) -> bool:
    """True when the file's first bytes hold a PEM/OpenSSH private key marker."""
    try:
        with open(path, "rb") as handle:
            return PRIVATE_KEY_MARKER in handle.read(_SNIFF)
    except OSError:
        return False

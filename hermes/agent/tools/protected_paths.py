"""Which paths the approval policy protects, and how paths written in commands are read.

- critical targets: deleting them recursively is hard-blocked (/, system folders, homes);
- disk devices: writing to them is hard-blocked (/dev/sda, /dev/nvme0n1, …);
- sensitive files: writing to them needs approval (~/.ssh, shell rc files, /etc, hermes config).

Paths in commands are text: `~`, `$HOME` and `${HOME}` are understood, other variables
are not evaluated (such a path is "unknown" and never counts as critical or sensitive).
"""

from __future__ import annotations

import os
import posixpath
import re

CRITICAL_DIRS = frozenset(
    {
        "/", "/etc", "/usr", "/var", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/boot",
        "/dev", "/proc", "/sys", "/opt", "/root", "/home", "/srv",
        "/Users", "/System", "/Library", "/Applications", "/private",
    }
)  # fmt: skip
RC_FILES = frozenset(
    {
        ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".profile",
        ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".kshrc", ".cshrc", ".tcshrc",
        ".config/fish/config.fish",
    }
)  # fmt: skip
_HOME_MARKER = "/\0home"  # stands for ~, ~user, $HOME, ${HOME} in normalised targets
_HOME_PREFIX = re.compile(r"^(~[\w.-]*|\$HOME|\$\{HOME\})(?=/|$)")
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
        if path.startswith(h + "/") and path[len(h) + 1 :] in RC_FILES:
            return "shell_rc_write", f"the shell startup file ~/{path[len(h) + 1 :]}"
    hermes_homes = [posixpath.join(home, ".hermes")]
    if os.environ.get("HERMES_HOME"):  # read per call: nothing caches HERMES_HOME
        hermes_homes.append(os.path.abspath(os.path.expanduser(os.environ["HERMES_HOME"])))
    if any(path == posixpath.join(h, "config.toml") for h in hermes_homes):
        return "hermes_config_write", "hermes's own configuration file"
    return None

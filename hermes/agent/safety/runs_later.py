"""Files that run code later: what git, direnv, the shell and the desktop execute on their own.

    runs_later_write(path, home) -> (rule, description) | None    for file tools and `terminal`
    sandbox_mounts(roots, home)  -> bwrap arguments               for the bubblewrap sandbox

A write to one of these is not a write of data: the next `git status`, `cd` or log-in runs
what it holds (an `fsmonitor` command in .git/config, a hook, an .envrc, a line in ~/.bashrc).

Invariants:
- repository internals are recognised at any depth, in any repository: below a `.git`
  component (or a bare repository's `NAME.git`), `config`/`config.worktree` (last component), anything under `hooks/` or
  `info/` (also in submodules' git folders, .git/modules/...), and a `.git` file itself
  (a `gitdir:` pointer names the repository git opens); `.envrc` anywhere;
- under the home folder: the shell start-up files (RC_FILES), ~/.gitconfig, ~/.config,
  ~/.local/bin (on PATH at log-in) and direnv's allow list (~/.local/share/direnv);
- file tools and `terminal` ask before writing any of them, whatever the writable roots,
  and a session grant never covers them (hermes/agent/safety/grants.py);
- the sandbox keeps them read-only inside its writable roots (see `sandbox_mounts`).
"""

from __future__ import annotations

import os
import posixpath
import time
from collections import deque
from collections.abc import Iterable, Sequence
from pathlib import Path

RC_FILES = frozenset(
    {
        ".bashrc", ".bash_profile", ".bash_login", ".bash_logout", ".bash_aliases", ".profile",
        ".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".kshrc", ".cshrc", ".tcshrc", ".login",
        ".config/fish/config.fish",
    }
)  # fmt: skip
"""Shell start-up files, relative to the home folder."""

HOME_RUNS_LATER: dict[str, tuple[str, str]] = {
    ".gitconfig": ("gitconfig_write", "git's global configuration ~/.gitconfig (it can name commands git runs)"),
    ".config": ("user_config_write", "programs' configuration in ~/.config (git, fish, autostart and systemd run it)"),
    ".local/bin": ("user_bin_write", "~/.local/bin (programs on PATH, found before the system's)"),
    ".local/share/direnv": ("direnv_allow_write", "direnv's list of allowed .envrc files"),
}
"""Home-relative paths (files or folders, with everything below) besides RC_FILES."""

ONLY_WHEN_PRESENT = frozenset({".local/share/direnv"})
"""Kept read-only by the sandbox only when they exist: freezing ~/.local/share for a missing
one would stop every program that keeps data there (without direnv, nothing reads it)."""

GIT_INTERNALS = ("config", "config.worktree", "hooks", "info")
"""The entries of a git folder that make git run commands (config, hooks) or change what it
tracks (info/exclude, info/attributes)."""

RUNS_LATER_RULES = frozenset(  # fmt: skip
    {
        "shell_rc_write",
        "git_internals_write",
        "git_config_write",
        "envrc_write",
        *(rule for rule, _ in HOME_RUNS_LATER.values()),
    }
)

SCAN_LIMIT = 5000
"""Folders the sandbox looks through per command to find repositories and .envrc files."""
SCAN_SECONDS = 0.25
"""Longest time that walk may take per command (it stops there, keeping what it found)."""
SCAN_SKIP = frozenset({"node_modules", ".venv", "venv", "__pycache__", ".tox", ".nox", ".mypy_cache", ".pytest_cache"})
"""Folders of installed dependencies and caches the scan does not enter (no repository of the user's lives there)."""


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def git_internal(path: str) -> bool:
    """True when the absolute, normalised `path` is a repository's config, hook or info file,
    or a `.git` entry itself."""
    parts = path.split("/")
    git = next((i for i, part in enumerate(parts) if part == ".git" or part.endswith(".git")), None)
    if git is None:
        return False
    rest = parts[git + 1 :]
    return not rest or rest[-1] in ("config", "config.worktree") or "hooks" in rest or "info" in rest


def runs_later_write(path: str, home: str | None = None) -> tuple[str, str] | None:
    """(rule, description) when writing the absolute, normalised `path` changes what runs later."""
    if git_internal(path):
        return "git_internals_write", f"git's configuration or hooks ({path}), which git runs later"
    if posixpath.basename(path) == ".envrc":
        return "envrc_write", f"a direnv .envrc ({path}), which runs when a shell enters its folder"
    user_home = home if home is not None else os.path.expanduser("~")
    for h in dict.fromkeys((user_home, os.path.realpath(user_home))):
        if not path.startswith(h.rstrip("/") + "/"):
            continue
        relative = path[len(h.rstrip("/")) + 1 :]
        if relative in RC_FILES:
            return "shell_rc_write", f"the shell startup file ~/{relative}"
        for name, found in HOME_RUNS_LATER.items():
            if _under(relative, name):
                return found
    return None


# --- the sandbox -----------------------------------------------------------------------------
#
# How the sandbox keeps these read-only inside a writable root (bubblewrap mounts, applied
# after the writable binds, so they win):
# - an existing one is `--ro-bind` onto itself: `echo x >> .git/config` gets EROFS, git's
#   lock-and-rename of config gets EBUSY;
# - a missing hooks/ or info/ of a repository's git folder is first made as the empty folder
#   `git init` makes (git reads an empty one exactly like a missing one), then bound read-only.
#   The git folder itself cannot be read-only: git writes index, HEAD and their .lock files
#   in it. A missing config is left alone (git keeps a repository's config at all times);
# - a missing file under the home folder (~/.bash_profile, ~/.local/bin) must not become an
#   empty placeholder: an empty ~/.bash_profile would silently replace ~/.profile at log-in.
#   Instead the nearest existing folder above it (~/.local) is "frozen": bound read-only (no
#   name can be made or removed in it), each existing file and folder in it bound writable
#   again. A writable root itself is never frozen (new files in the working directory must
#   work), so with the working directory at $HOME a missing ~/.bash_profile or ~/.gitconfig
#   can still be made by the sandboxed command; a command that names it (`> ~/.bash_profile`,
#   `git config --global`) asks first (approval.py), one that hides it in a script does not;
# - a missing .envrc is left alone: direnv runs a new or changed .envrc only after
#   `direnv allow`, and its allow list is protected;
# - a writable root that lies inside a protected folder is bound writable again at the end
#   (the user chose to work there);
# - repositories are found by a breadth-first walk of the writable roots (SCAN_LIMIT folders
#   or SCAN_SECONDS, symlinks not followed, dependency folders skipped), so those near the
#   top of the working directory come first; a repository the walk does not reach,
#   or one the command creates (`git init`, `git clone`), is not covered.


def _gitdir_entries(gitdir: Path, depth: int = 0) -> Iterable[tuple[Path, bool]]:
    """(path, is_dir) of the GIT_INTERNALS of `gitdir` and of its submodules' git folders."""
    for name in GIT_INTERNALS:
        yield gitdir / name, name in ("hooks", "info")
    modules = gitdir / "modules"
    if depth < 4 and modules.is_dir() and not modules.is_symlink():
        for sub in _gitdirs_below(modules):
            yield from _gitdir_entries(sub, depth + 1)


def _gitdirs_below(folder: Path, depth: int = 0) -> Iterable[Path]:
    """Git folders (holding HEAD) below .git/modules (module names may hold slashes)."""
    try:
        entries = [e for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for entry in entries:
        path = Path(entry.path)
        if (path / "HEAD").is_file():
            yield path
        elif depth < 4:
            yield from _gitdirs_below(path, depth + 1)


def _scan(root: Path, budget: list[int], deadline: float) -> tuple[list[Path], list[Path]]:
    """(git folders, other protected entries: .git files and .envrc files) below `root`."""
    gitdirs: list[Path] = []
    others: list[Path] = []
    queue = deque([root])
    while queue and budget[0] > 0 and time.monotonic() < deadline:
        folder = queue.popleft()
        budget[0] -= 1
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        for entry in entries:
            if entry.name == ".git":
                if entry.is_dir(follow_symlinks=False):
                    gitdirs.append(Path(entry.path))
                elif not entry.is_symlink():
                    others.append(Path(entry.path))
            elif entry.name == ".envrc" and not entry.is_symlink():
                others.append(Path(entry.path))
            elif entry.name not in SCAN_SKIP and entry.is_dir(follow_symlinks=False):
                queue.append(Path(entry.path))
    return gitdirs, others


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _freeze(folder: Path, keep_read_only: set[Path]) -> list[str]:
    """`folder` read-only (no entry can be made or removed), its existing entries writable again."""
    args = ["--ro-bind", str(folder), str(folder)]
    try:
        entries = sorted(os.scandir(folder), key=lambda e: e.name)
    except OSError:
        return args
    for entry in entries:
        path = Path(entry.path)
        if path in keep_read_only or entry.is_symlink():
            continue  # a symlink stays as it is; writes through it meet its target's mounts
        if entry.is_dir(follow_symlinks=False) or entry.is_file(follow_symlinks=False):
            args += ["--bind", str(path), str(path)]
    return args


def sandbox_mounts(roots: Sequence[Path], home: Path, *, scan_roots: Sequence[Path] | None = None) -> list[str]:
    """bwrap arguments that keep the files that run code later read-only inside `roots`
    (real paths of the writable roots, already bound writable). `scan_roots` are the roots
    searched for repositories and .envrc files (default: all of `roots`).

    May create empty hooks/ and info/ folders in git folders (see the comment above)."""
    read_only: dict[Path, None] = {}
    budget = [SCAN_LIMIT]
    deadline = time.monotonic() + SCAN_SECONDS
    for root in scan_roots if scan_roots is not None else roots:
        gitdirs, others = _scan(root, budget, deadline)
        read_only.update(dict.fromkeys(others))
        for gitdir in gitdirs:
            for path, is_folder in _gitdir_entries(gitdir):
                if is_folder and not os.path.lexists(path) and (gitdir / "HEAD").exists():
                    try:
                        path.mkdir(mode=0o755)
                    except OSError:
                        continue
                if os.path.lexists(path):
                    read_only[path] = None
    frozen: dict[Path, None] = {}
    real_home = Path(os.path.realpath(home))
    if real_home.is_dir() and any(_within(real_home, root) for root in roots):
        for name in (*sorted(RC_FILES), *HOME_RUNS_LATER):
            path = real_home / name
            if os.path.lexists(path):
                read_only[path] = None
                continue
            if name in ONLY_WHEN_PRESENT:
                continue
            parent = path.parent
            while not parent.is_dir() and _within(parent, real_home):
                parent = parent.parent
            if _within(parent, real_home) and parent not in roots and not parent.is_symlink():
                frozen[parent] = None
    # A folder inside one that is read-only as a whole (~/.config) needs no freezing.
    frozen = {f: None for f in frozen if not any(_within(f, path) for path in read_only)}
    args: list[str] = []
    for folder in sorted(frozen, key=lambda p: len(p.parts)):  # outer folders first: inner ones re-freeze
        args += _freeze(folder, set(read_only) | set(frozen))
    for path in read_only:
        real = Path(os.path.realpath(path))
        if any(_within(real, root) for root in roots):
            args += ["--ro-bind", str(real), str(real)]
    covered = [*read_only, *frozen]
    for root in roots:
        if any(root != path and _within(root, path) for path in covered):
            args += ["--bind", str(root), str(root)]
    return args

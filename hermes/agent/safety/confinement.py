"""One confinement policy for every tool: where tools may write and what they may not see.

    policy = Confinement.from_settings(settings)      # or Confinement.default()
    policy.hidden_entry(path, cwd)      -> the hidden path covering `path`, or None
    policy.write_check(path, cwd)       -> Verdict(level, reason, rule)
    policy.writable_roots_for(cwd)      -> the folders a tool in `cwd` may change

The same lists drive the bubblewrap mounts (hermes/agent/safety/sandbox.py) for `terminal` and
MCP stdio servers, and the checks of the file tools (read_file, list_files, search_files,
write_file, patch), so no tool sees or changes what another one may not.

Invariants:
- hidden: `$HERMES_HOME` (and ~/.hermes), the credential stores under the home folder
  (HOME_SECRETS), the password databases (SYSTEM_SECRETS) and every process's
  /proc/PID/environ and /proc/PID/mem. The sandbox covers them;
  the file tools refuse to read them, and list/search skip them and count what they skipped.
  A hidden folder that holds the working directory does not hide the working directory.
- writable roots: the turn's working directory, the `writable_roots` setting and the
  private tmp folder (`TMPDIR` of every tool command). A file-tool write elsewhere is an
  approval request (nobody to ask: refused).
- protected: hermes's own installation (its package, the Python environment's
  site-packages and scripts, the user site) and `$HERMES_HOME` are never written by a
  tool, not even with approval or --yolo, wherever they are.
- files that run code later (.git/config, .git/hooks, .envrc, shell start-up files,
  ~/.config …) need approval from every tool even inside the writable roots, and the
  sandbox keeps them read-only there: hermes/agent/safety/runs_later.py;
- paths are checked as written (normalised, `~` expanded) and as resolved (symlinks
  followed); the stricter answer wins.
"""

from __future__ import annotations

import atexit
import os
import re
import shutil
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.agent.safety.paths import HermesPaths, absolute, installation_paths
from hermes.agent.safety.verdict import ALLOW, Verdict

if TYPE_CHECKING:
    from hermes.config import Settings

HOME_SECRETS: tuple[str, ...] = (
    ".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker",
    ".netrc", ".pgpass", ".git-credentials", ".config/gh", ".config/hub", ".vault-token",
    ".npmrc", ".pypirc", ".cargo/credentials", ".cargo/credentials.toml", ".password-store",
    ".local/share/keyrings", ".terraform.d/credentials.tfrc.json",
)  # fmt: skip
"""Credential stores under the user's home folder (folders and files)."""

SYSTEM_SECRETS: tuple[str, ...] = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-")
"""Password databases (readable to root otherwise)."""

_PROCESS_SECRETS = re.compile(r"^/proc/[^/\s]+/(environ|mem)$")
"""Another process's environment or memory (hermes's own holds its keys): hidden too."""


def is_process_secret(path: str) -> bool:
    """True for /proc/PID/environ and /proc/PID/mem (PID may be a glob or `self`)."""
    return _PROCESS_SECRETS.match(path) is not None



def _forms(path: Path) -> tuple[Path, ...]:
    """The normalised path and, when symlinks lead elsewhere, its real path."""
    real = Path(os.path.realpath(path))
    return (path,) if real == path else (path, real)


def _with_real_forms(paths: tuple[Path, ...]) -> tuple[Path, ...]:
    """`paths` and, after them, the real paths of those that are symlinks (or lie under one)."""
    return tuple(dict.fromkeys((*paths, *(Path(os.path.realpath(p)) for p in paths))))


def _within(path: Path, folder: Path) -> bool:
    return path == folder or folder in path.parents


def _within_text(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def hidden_paths(hermes_home: Path, user_home: Path | None = None) -> tuple[Path, ...]:
    """$HERMES_HOME (and ~/.hermes), the credential stores, the password databases."""
    return _hidden(HermesPaths.of(hermes_home, user_home))


def _hidden(paths: HermesPaths) -> tuple[Path, ...]:
    home = paths.user_home
    return (*paths.own_homes, *(home / name for name in HOME_SECRETS), *(Path(p) for p in SYSTEM_SECRETS))


_PRIVATE_TMP: Path | None = None
_PRIVATE_TMP_LOCK = threading.Lock()


def private_tmp() -> Path:
    """This process's private tmp folder for tools (0700, removed at exit); made on first use."""
    global _PRIVATE_TMP
    with _PRIVATE_TMP_LOCK:
        if _PRIVATE_TMP is None or not _PRIVATE_TMP.is_dir():
            _PRIVATE_TMP = Path(tempfile.mkdtemp(prefix="hermes-tools-"))
            atexit.register(shutil.rmtree, _PRIVATE_TMP, True)
        return _PRIVATE_TMP


@dataclass(frozen=True, slots=True)
class Confinement:
    """Where tools may write and what they may not see (see the module docstring)."""

    hidden: tuple[Path, ...]
    protected: tuple[Path, ...]
    writable_roots: tuple[Path, ...] = ()
    """Folders writable besides each turn's working directory and the private tmp."""
    tmp: Path | None = None
    """The private tmp folder; None: made on first use (`private_tmp()`)."""

    @classmethod
    def build(
        cls, hermes_home: Path, writable_roots: tuple[str, ...] = (), user_home: Path | None = None
    ) -> Confinement:
        return cls.for_paths(HermesPaths.of(hermes_home, user_home), writable_roots)

    @classmethod
    def for_paths(cls, paths: HermesPaths, writable_roots: tuple[str, ...] = ()) -> Confinement:
        return cls(
            hidden=_with_real_forms(_hidden(paths)),
            protected=_with_real_forms((*paths.own_homes, *installation_paths())),
            writable_roots=tuple(absolute(root) for root in writable_roots),
        )

    @classmethod
    def from_settings(cls, settings: Settings) -> Confinement:
        return cls.build(settings.home, settings.writable_roots)

    @classmethod
    def default(cls) -> Confinement:
        """The policy without settings: `$HERMES_HOME` as the environment says now."""
        return cls.for_paths(HermesPaths.from_environment())

    @property
    def tmp_dir(self) -> Path:
        return self.tmp if self.tmp is not None else private_tmp()

    def writable_roots_for(self, cwd: Path) -> tuple[Path, ...]:
        """The working directory, the configured roots and the private tmp: as written and resolved."""
        roots = (absolute(cwd), *self.writable_roots, self.tmp_dir)
        return tuple(dict.fromkeys(form for root in roots for form in _forms(root)))

    # --- reading ------------------------------------------------------------------------

    def hidden_entry(
        self, path: str | os.PathLike[str], cwd: Path | None = None, *, resolve: bool = True
    ) -> Path | None:
        """The hidden path that covers `path` (as written and, with `resolve`, as resolved), else None.

        A hidden folder holding the working directory hides nothing below the working
        directory (the person chose to work there).
        """
        written = absolute(path, cwd)
        forms = _forms(written) if resolve else (written,)
        work = os.path.realpath(cwd) if cwd is not None else None
        for form in map(str, forms):
            if is_process_secret(form):
                return Path(form)
            for secret in self.hidden:
                folder = str(secret)
                if not (form == folder or form.startswith(folder + "/")):
                    continue
                if work is not None and _within_text(work, folder) and _within_text(form, work):
                    continue
                return secret
        return None

    # --- writing ------------------------------------------------------------------------

    def protected_entry(self, path: str | os.PathLike[str], cwd: Path | None = None) -> Path | None:
        """The protected path (never writable) that covers `path`, else None."""
        for form in _forms(absolute(path, cwd)):
            for folder in self.protected:
                if _within(form, folder):
                    return folder
        return None

    def write_check(self, path: str | os.PathLike[str], cwd: Path) -> Verdict:
        """Whether a file tool may write `path` in a turn whose working directory is `cwd`."""
        target = absolute(path, cwd)
        owner = self.protected_entry(target)
        if owner is not None:
            return Verdict(
                "block", f"a write to hermes's own files ({owner}), which tools never change", "hermes_own_write"
            )
        roots = self.writable_roots_for(cwd)
        if all(any(_within(form, root) for root in roots) for form in _forms(target)):
            return ALLOW
        return Verdict(
            "approve",
            f"a write outside the working directory and the writable roots ({', '.join(map(str, roots))})",
            "outside_write",
        )

"""A shadow git repository per working tree: snapshots, diffs and restores of its files.

    repo = ShadowRepo.for_worktree(home, Path.cwd(), max_file_kb=1024)
    snap = await repo.snapshot(ref="refs/hermes/SESSION/12-before")
    patch = await repo.diff(before, after)          # a patch `git apply` accepts

Invariants:

- The repository lives in `$HERMES_HOME/checkpoints/<sha256 of the worktree's realpath>`;
  every command runs `git --git-dir=<shadow> --work-tree=<worktree>` with the `GIT_*`
  variables of the environment removed, so the user's own `.git`, index and stash are
  never read or written, and a folder that is not a git repository works the same.
- What git ignores is ignored: the worktree's `.gitignore` files (nested ones included),
  the user's `core.excludesFile`, and the `info/exclude` of the repository the worktree
  belongs to (copied into the shadow's own `info/exclude` at each snapshot).
- A file over `max_file_kb` is left out of the snapshot (excluded and dropped from the
  shadow index) and named in `Snapshot.skipped`; a snapshot never holds a stale copy.
- Snapshots of one shadow repository never overlap within a process (one lock each);
  another process snapshotting the same tree at the same moment makes one of them fail
  with a CheckpointError (git's index lock), never a wrong commit.
- Snapshots are commits with no parent, kept alive by a ref under `refs/hermes/<session>/`;
  `prune_session` deletes a session's refs and the objects nothing else reaches.
- `$HERMES_HOME` (or, when it is the worktree itself, its `checkpoints/` folder) is never
  part of a snapshot.
- Git runs in hermes' own process (never inside the tool sandbox), with pathspecs taken
  literally (`GIT_LITERAL_PATHSPECS`).
- `restore` writes the files of one commit (content and executable bit, symlinks as
  symlinks) and deletes the ones it lacks; it touches only the paths it is given, each
  opened beneath a descriptor of the worktree with no symlink followed (hermes/beneath.py).
  A path that would leave the worktree or pass a symlinked folder is refused before any
  path is written.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
import stat
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from hermes.beneath import Folder, PathRefused
from hermes.errors import CheckpointError, RestoreRefused

__all__ = ["FileChange", "ShadowRepo", "Snapshot", "git_available", "prune_session", "shadow_root"]

_IDENTITY = {
    "GIT_AUTHOR_NAME": "hermes",
    "GIT_AUTHOR_EMAIL": "hermes@localhost",
    "GIT_COMMITTER_NAME": "hermes",
    "GIT_COMMITTER_EMAIL": "hermes@localhost",
    "GIT_LITERAL_PATHSPECS": "1",
    "GIT_TERMINAL_PROMPT": "0",
}


def git_available() -> bool:
    """Whether a `git` executable is on PATH."""
    return shutil.which("git") is not None


def shadow_root(home: Path) -> Path:
    return home / "checkpoints"


@dataclass(frozen=True, slots=True)
class Snapshot:
    commit: str
    skipped: tuple[str, ...] = ()
    """Files left out for being over the size cap (paths relative to the worktree)."""


@dataclass(frozen=True, slots=True)
class FileChange:
    """One file's change between two snapshots (`git diff --numstat`)."""

    path: str
    added: int
    removed: int
    binary: bool = False


@dataclass(frozen=True, slots=True)
class Entry:
    mode: str
    blob: str


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(_IDENTITY)
    return env


def _escape_pattern(path: str) -> str:
    """`path` as a gitignore pattern matching exactly that file from the worktree's root."""
    escaped = "".join("\\" + c if c in "\\*?[!# " else c for c in path)
    return "/" + escaped


class ShadowRepo:
    """The shadow repository of one working tree (see the module docstring)."""

    def __init__(self, git_dir: Path, worktree: Path, *, max_file_kb: int = 1024, home: Path | None = None) -> None:
        self.git_dir = git_dir
        self.worktree = worktree
        self.max_file_kb = max_file_kb
        self._home = home

    @classmethod
    def for_worktree(cls, home: Path, worktree: Path, *, max_file_kb: int = 1024) -> ShadowRepo:
        real = Path(os.path.realpath(worktree))
        digest = hashlib.sha256(str(real).encode()).hexdigest()[:24]
        return cls(shadow_root(home) / digest, real, max_file_kb=max_file_kb, home=home)

    # ---- plumbing --------------------------------------------------------------------

    async def git(self, *args: str, stdin: bytes | None = None, ok: Iterable[int] = (0,)) -> bytes:
        proc = await asyncio.create_subprocess_exec(
            "git", f"--git-dir={self.git_dir}", f"--work-tree={self.worktree}", *args,
            stdin=asyncio.subprocess.PIPE if stdin is not None else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            cwd=self.worktree, env=_env(),
        )  # fmt: skip
        out, err = await proc.communicate(stdin)
        if proc.returncode not in tuple(ok):
            message = err.decode(errors="replace").strip().splitlines()
            raise CheckpointError(f"git {args[0]} failed: {message[-1] if message else proc.returncode}")
        return out

    async def ensure(self) -> None:
        """Create the shadow repository if it does not exist yet."""
        if (self.git_dir / "HEAD").exists():
            return
        self.git_dir.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        proc = await asyncio.create_subprocess_exec(
            "git", "init", "-q", "--bare", str(self.git_dir),
            stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE, env=_env(),
        )  # fmt: skip
        _, err = await proc.communicate()
        if proc.returncode != 0:
            raise CheckpointError(f"git init failed: {err.decode(errors='replace').strip()}")
        for key, value in (
            ("core.bare", "false"),
            ("core.autocrlf", "false"),
            ("gc.auto", "0"),
            ("core.quotepath", "false"),
        ):
            await self.git("config", key, value)

    # ---- snapshots -------------------------------------------------------------------

    async def snapshot(self, ref: str | None = None) -> Snapshot:
        """Commit the worktree's current files; keep the commit under `ref` when given."""
        async with _lock_for(self.git_dir):
            return await self._snapshot(ref)

    async def _snapshot(self, ref: str | None) -> Snapshot:
        await self.ensure()
        skipped = await self._write_excludes()
        await self.git("add", "-A", "--ignore-errors", "--", ".", ok=(0, 1))
        if skipped:
            await self.git("rm", "--cached", "-q", "--ignore-unmatch", "--", *skipped)
        tree = (await self.git("write-tree")).decode().strip()
        commit = (await self.git("commit-tree", "--no-gpg-sign", tree, "-m", ref or "hermes snapshot")).decode().strip()
        if ref is not None:
            await self.git("update-ref", ref, commit)
        return Snapshot(commit, tuple(skipped))

    async def _write_excludes(self) -> list[str]:
        """Rewrite the shadow's info/exclude; the files over the cap (now excluded)."""
        lines: list[str] = []
        user_git = _enclosing_git_dir(self.worktree)
        if user_git is not None and (user_git / "info" / "exclude").is_file():
            lines.append((user_git / "info" / "exclude").read_text(encoding="utf-8", errors="replace"))
        if self._home is not None:  # hermes' own files are never part of a snapshot
            home = Path(os.path.realpath(self._home))
            for own in (home, shadow_root(home)):
                if own.is_relative_to(self.worktree) and own != self.worktree:
                    lines.append(_escape_pattern(str(own.relative_to(self.worktree))) + "/")
        exclude = self.git_dir / "info" / "exclude"
        exclude.parent.mkdir(exist_ok=True)
        exclude.write_text("\n".join(lines) + "\n", encoding="utf-8")
        limit = self.max_file_kb * 1024
        skipped: list[str] = []
        if limit > 0:
            listed = await self.git("ls-files", "-z", "--cached", "--others", "--exclude-standard")
            for name in sorted(set(filter(None, listed.decode(errors="surrogateescape").split("\0")))):
                try:
                    stat = os.lstat(self.worktree / name)
                except OSError:
                    continue
                if stat.st_size > limit and not os.path.islink(self.worktree / name):
                    skipped.append(name)
        if skipped:
            lines.extend(_escape_pattern(name) for name in skipped)
            exclude.write_text("\n".join(lines) + "\n", encoding="utf-8")
        return skipped

    # ---- reading ---------------------------------------------------------------------

    async def changed(self, a: str, b: str) -> list[str]:
        out = await self.git("diff", "--name-only", "-z", "--no-renames", a, b)
        return [p for p in out.decode(errors="surrogateescape").split("\0") if p]

    async def numstat(self, a: str, b: str) -> list[FileChange]:
        out = await self.git("diff", "--numstat", "-z", "--no-renames", a, b)
        changes: list[FileChange] = []
        for record in out.decode(errors="surrogateescape").split("\0"):
            if not record:
                continue
            added, removed, path = record.split("\t", 2)
            binary = added == "-"
            changes.append(FileChange(path, 0 if binary else int(added), 0 if binary else int(removed), binary))
        return changes

    async def diff(self, a: str, b: str, *, color: bool = False) -> str:
        """The change from `a` to `b` as a patch (`git apply` accepts it at the worktree's root)."""
        out = await self.git(
            "diff", "--binary", "--no-renames", "--no-ext-diff", "--color=always" if color else "--no-color", a, b
        )
        return out.decode(errors="replace")

    async def entries(self, commit: str) -> dict[str, Entry]:
        out = await self.git("ls-tree", "-r", "-z", "--full-tree", commit)
        found: dict[str, Entry] = {}
        for record in out.decode(errors="surrogateescape").split("\0"):
            if not record:
                continue
            meta, path = record.split("\t", 1)
            mode, _kind, blob = meta.split()
            found[path] = Entry(mode, blob)
        return found

    # ---- writing ---------------------------------------------------------------------

    def check_targets(self, targets: Iterable[str], *, refuse: Callable[[str], str | None] | None = None) -> None:
        """RestoreRefused naming every path `restore` would refuse now (see there); else nothing."""
        with self._opened() as tree:
            self._check(tree, targets, refuse)

    async def restore(
        self, targets: Mapping[str, Entry | None], *, refuse: Callable[[str], str | None] | None = None
    ) -> None:
        """Make each path what `targets` says: that blob, or absent (None).

        Every path is checked first: one that is not a plain relative path, whose folder is a
        symlink or no folder, or that `refuse` names a reason for, is a RestoreRefused (all of
        them named) and nothing is written. Then each is written or deleted beneath a
        descriptor of the worktree (hermes/beneath.py), no symlink followed on the way.
        """
        with self._opened() as tree:
            self._check(tree, targets, refuse)
            in_the_way = [p for p, e in targets.items() if e is not None and _is_folder(tree.lstat(p))]
            if in_the_way:
                raise CheckpointError(f"could not restore {', '.join(sorted(in_the_way))}: a folder stands there; "
                                      "nothing was changed")  # fmt: skip
            blobs = {
                path: await self.git("cat-file", "blob", entry.blob)
                for path, entry in targets.items()
                if entry is not None and entry.mode != "160000"  # a nested repository: not ours to restore
            }
            try:
                for path, entry in sorted(targets.items()):
                    if entry is None:
                        if tree.remove(path):
                            tree.prune_empty(path.rpartition("/")[0])
                    elif entry.mode == "120000":
                        tree.symlink(path, blobs[path].decode(errors="surrogateescape"))
                    elif path in blobs:
                        tree.write(path, blobs[path], mode=0o755 if entry.mode == "100755" else 0o644)
            except PathRefused as exc:  # a symlink swapped in since the check above
                raise RestoreRefused([(exc.path, exc.reason)]) from None
            except OSError as exc:
                raise CheckpointError(f"could not restore {exc.filename or '?'}: {exc.strerror or exc}") from None

    def _opened(self) -> Folder:
        try:
            return Folder.open(self.worktree)
        except PathRefused as exc:
            raise RestoreRefused([(str(self.worktree), f"the worktree {exc.reason}")]) from None

    @staticmethod
    def _check(tree: Folder, targets: Iterable[str], refuse: Callable[[str], str | None] | None) -> None:
        refusals: list[tuple[str, str]] = []
        for path in sorted(targets):
            try:
                tree.check(path)
            except PathRefused as exc:
                refusals.append((path, exc.reason))
                continue
            reason = refuse(path) if refuse is not None else None
            if reason is not None:
                refusals.append((path, reason))
        if refusals:
            raise RestoreRefused(refusals)

    async def drop_refs(self, prefix: str) -> int:
        """Delete the refs under `prefix` and the objects only they reached; how many refs."""
        if not (self.git_dir / "HEAD").exists():
            return 0
        refs = (await self.git("for-each-ref", "--format=%(refname)", prefix)).decode().split()
        if not refs:
            return 0
        await self.git("update-ref", "--stdin", stdin="".join(f"delete {ref}\n" for ref in refs).encode())
        await self.git("prune", "--expire=now")
        return len(refs)


_LOCKS: dict[tuple[int, Path], asyncio.Lock] = {}


def _lock_for(git_dir: Path) -> asyncio.Lock:
    """One lock per shadow repository and event loop: snapshots of one tree never overlap
    (they share the shadow index) when several sessions of one process work in it."""
    key = (id(asyncio.get_running_loop()), git_dir)
    lock = _LOCKS.get(key)
    if lock is None:
        lock = _LOCKS[key] = asyncio.Lock()
    return lock


def _is_folder(found: os.stat_result | None) -> bool:
    return found is not None and stat.S_ISDIR(found.st_mode)


def _enclosing_git_dir(path: Path) -> Path | None:
    for folder in (path, *path.parents):
        candidate = folder / ".git"
        if candidate.is_dir():
            return candidate
        if candidate.is_file():  # a linked worktree or submodule: "gitdir: <path>"
            text = candidate.read_text(encoding="utf-8", errors="replace").strip()
            if text.startswith("gitdir:"):
                return (folder / text.removeprefix("gitdir:").strip()).resolve()
    return None


async def prune_session(home: Path, session_id: str) -> int:
    """Delete a session's snapshots in every shadow repository under `home`; refs removed."""
    root = shadow_root(home)
    if not root.is_dir() or not git_available():
        return 0
    removed = 0
    for git_dir in sorted(root.iterdir()):
        if (git_dir / "HEAD").exists():
            repo = ShadowRepo(git_dir, git_dir)
            removed += await repo.drop_refs(f"refs/hermes/{session_id}/")
    return removed

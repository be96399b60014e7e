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
- `diff_capped` and `numstat_capped` read git's output as it comes and stop (killing git)
  at the cap, so a huge turn never sits in memory whole; the result says it was cut.
- `restore` writes the files of one commit (content and executable bit, symlinks as
  symlinks) and deletes the ones it lacks; it touches only the paths it is given.
"""

from __future__ import annotations

import asyncio
import hashlib
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from hermes.errors import CheckpointError

__all__ = [
    "CappedOutput", "CappedText", "FileChange", "ShadowRepo", "Snapshot", "git_available", "prune_session",
    "read_capped", "shadow_root",
]  # fmt: skip

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

    async def _spawn(self, *args: str, stdin: bool = False) -> asyncio.subprocess.Process:
        """Start one git command on this shadow repository (every command starts here)."""
        return await asyncio.create_subprocess_exec(
            "git", f"--git-dir={self.git_dir}", f"--work-tree={self.worktree}", *args,
            stdin=asyncio.subprocess.PIPE if stdin else asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            cwd=self.worktree, env=_env(),
        )  # fmt: skip

    async def git(self, *args: str, stdin: bytes | None = None, ok: Iterable[int] = (0,)) -> bytes:
        proc = await self._spawn(*args, stdin=stdin is not None)
        out, err = await proc.communicate(stdin)
        if proc.returncode not in tuple(ok):
            raise _failed(args[0], err, proc.returncode)
        return out

    async def git_capped(self, *args: str, limit: int) -> CappedOutput:
        """Run git and keep at most `limit` bytes of its output: past that, git is killed.

        Never holds more than `limit` bytes of output (plus one pipe read) in memory.
        """
        proc = await self._spawn(*args)
        assert proc.stdout is not None and proc.stderr is not None
        errors = asyncio.ensure_future(_tail(proc.stderr))
        try:
            data, cut = await read_capped(proc.stdout, limit)
            if cut:
                proc.kill()
            err = await errors
            code = await proc.wait()
        finally:
            errors.cancel()
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        if not cut and code != 0:
            raise _failed(args[0], err, code)
        return CappedOutput(data, cut)

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
        return _numstat(await self.git("diff", "--numstat", "-z", "--no-renames", a, b))

    async def diff(self, a: str, b: str, *, color: bool = False) -> str:
        """The change from `a` to `b` as a patch (`git apply` accepts it at the worktree's root)."""
        out = await self.git(*_diff_args(a, b, color=color))
        return out.decode(errors="replace")

    async def diff_capped(self, a: str, b: str, limit: int, *, color: bool = False) -> CappedText:
        """`diff`, cut after `limit` bytes of git's output (git is stopped there, see `git_capped`)."""
        out = await self.git_capped(*_diff_args(a, b, color=color), limit=limit)
        return CappedText(out.data.decode(errors="replace"), out.truncated)

    async def numstat_capped(self, a: str, b: str, limit: int) -> tuple[list[FileChange], bool]:
        """`numstat` from at most `limit` bytes of git's output; True when files were left out."""
        out = await self.git_capped("diff", "--numstat", "-z", "--no-renames", a, b, limit=limit)
        data = out.data
        if out.truncated:
            data = data[: data.rfind(b"\0") + 1]  # a cut record is dropped whole
        return _numstat(data), out.truncated

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

    async def restore(self, targets: Mapping[str, Entry | None]) -> None:
        """Make each path what `targets` says: that blob, or absent (None)."""
        for path, entry in sorted(targets.items()):
            file = self.worktree / path
            if entry is None:
                if file.is_symlink() or file.is_file():
                    file.unlink()
                    _remove_empty_parents(file.parent, self.worktree)
                continue
            if entry.mode == "160000":
                continue  # a nested repository: not ours to restore
            data = await self.git("cat-file", "blob", entry.blob)
            file.parent.mkdir(parents=True, exist_ok=True)
            if file.is_symlink() or (file.exists() and not file.is_dir()):
                file.unlink()
            if entry.mode == "120000":
                os.symlink(data.decode(errors="surrogateescape"), file)
                continue
            file.write_bytes(data)
            file.chmod(0o755 if entry.mode == "100755" else 0o644)

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


@dataclass(frozen=True, slots=True)
class CappedOutput:
    data: bytes
    truncated: bool
    """git wrote more than the cap: `data` is its first `limit` bytes."""


@dataclass(frozen=True, slots=True)
class CappedText:
    text: str
    truncated: bool


async def read_capped(stream: asyncio.StreamReader, limit: int) -> tuple[bytes, bool]:
    """Up to `limit` bytes of `stream`; True when more followed (the rest is not read)."""
    chunks: list[bytes] = []
    size = 0
    while chunk := await stream.read(_READ_SIZE):
        room = limit - size
        if len(chunk) > room:
            chunks.append(chunk[:room])
            return b"".join(chunks), True
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks), False


_READ_SIZE = 64 * 1024
_ERROR_TAIL = 4096
"""Bytes of git's stderr kept for an error message (the rest is read and dropped)."""


async def _tail(stream: asyncio.StreamReader) -> bytes:
    kept = b""
    while chunk := await stream.read(_READ_SIZE):
        kept = (kept + chunk)[-_ERROR_TAIL:]
    return kept


def _failed(command: str, err: bytes, code: int | None) -> CheckpointError:
    message = err.decode(errors="replace").strip().splitlines()
    return CheckpointError(f"git {command} failed: {message[-1] if message else code}")


def _diff_args(a: str, b: str, *, color: bool) -> tuple[str, ...]:
    return ("diff", "--binary", "--no-renames", "--no-ext-diff", "--color=always" if color else "--no-color", a, b)


def _numstat(out: bytes) -> list[FileChange]:
    changes: list[FileChange] = []
    for record in out.decode(errors="surrogateescape").split("\0"):
        if not record:
            continue
        added, removed, path = record.split("\t", 2)
        binary = added == "-"
        changes.append(FileChange(path, 0 if binary else int(added), 0 if binary else int(removed), binary))
    return changes


_LOCKS: dict[tuple[int, Path], asyncio.Lock] = {}


def _lock_for(git_dir: Path) -> asyncio.Lock:
    """One lock per shadow repository and event loop: snapshots of one tree never overlap
    (they share the shadow index) when several sessions of one process work in it."""
    key = (id(asyncio.get_running_loop()), git_dir)
    lock = _LOCKS.get(key)
    if lock is None:
        lock = _LOCKS[key] = asyncio.Lock()
    return lock


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


def _remove_empty_parents(folder: Path, stop: Path) -> None:
    while folder != stop and folder.is_relative_to(stop):
        try:
            folder.rmdir()
        except OSError:
            return
        folder = folder.parent


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

"""A shadow git repository per working tree: snapshots, diffs and restores of its files.

    repo = ShadowRepo.for_worktree(home, Path.cwd(), max_file_kb=1024, hidden=policy.hidden)
    snap = await repo.snapshot(ref="refs/hermes/SESSION/12-before")
    patch = await repo.diff(before, after)          # a patch `git apply` accepts

Invariants:

- The repository lives in `$HERMES_HOME/checkpoints/<sha256 of the worktree's realpath>`;
  every command runs `git --git-dir=<shadow> --work-tree=<worktree>` isolated from the
  user's git setup (hermes/checkpoints/isolated_git.py: no global or system config, no
  inherited `GIT_*` variable, no fsmonitor, hook, filter, textconv, pager or editor), so
  the user's own `.git`, its config, index and stash are never read or written, and a
  folder that is not a git repository works the same.
- What git ignores is ignored: the worktree's `.gitignore` files (nested ones included),
  the user's global excludes file (`core.excludesFile` of ~/.gitconfig or
  $XDG_CONFIG_HOME/git/config, read as data; else $XDG_CONFIG_HOME/git/ignore), and the
  `info/exclude` of the repository the worktree belongs to (copied into the shadow's own
  `info/exclude` at each snapshot).
- What a snapshot may hold is hermes/checkpoints/scope.py's: no snapshot of `/`, of a
  folder holding `$HOME` or of one inside a hidden path (`SnapshotRefused`); the hidden
  paths and `$HERMES_HOME` inside the worktree are left out (their content is never
  hashed); the caps of `SnapshotLimits` (`SnapshotTooLarge`). The hidden paths a
  snapshot was given are kept in the shadow repository (`hermes-hidden`), so a snapshot
  taken without them (undo's) leaves out the same.
- A file over `max_file_kb` is left out of the snapshot (never hashed, dropped from the
  shadow index) and named in `Snapshot.skipped`; a snapshot never holds a stale copy.
- Paths are read from git NUL-separated (`-z`) and given back to it NUL-separated
  (`--pathspec-from-file --pathspec-file-nul`), taken literally; no file name ever goes
  into an exclude line unless it holds no control character.
- Snapshots are byte-exact: the shadow's `info/attributes` turns off every conversion
  (end of line, `ident`, encodings, filters) whatever the worktree's `.gitattributes` say.
- Snapshots of one shadow repository never overlap within a process (one lock each);
  another process snapshotting the same tree at the same moment makes one of them fail
  with a CheckpointError (git's index lock), never a wrong commit.
- Snapshots are commits with no parent, kept alive by a ref under `refs/hermes/<session>/`
  (hermes/checkpoints/refs.py encodes any session id into a valid ref name);
  `prune_session` deletes a session's refs and the objects nothing else reaches.
- Git runs in hermes' own process (never inside the tool sandbox).
- `diff_capped` and `numstat_capped` read git's output as it comes and stop (killing git)
  at the cap, so a huge turn never sits in memory whole; the result says it was cut.
- `restore` writes the files of one commit (content and executable bit, symlinks as
  symlinks) and deletes the ones it lacks; it touches only the paths it is given, each
  opened beneath a descriptor of the worktree with no symlink followed (hermes/beneath.py).
  A path that would leave the worktree or pass a symlinked folder is refused before any
  path is written.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
import stat
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hermes.beneath import Folder, PathRefused
from hermes.checkpoints.isolated_git import ATTRIBUTES, GitTimeout, TooManyRecords, git_command, git_env, run_git
from hermes.checkpoints.refs import legacy_ref_prefix, session_ref_prefix
from hermes.checkpoints.scope import (
    SnapshotLimits,
    SnapshotRefused,
    SnapshotTooLarge,
    exclude_pattern,
    hidden_within,
    read_bytes_bounded,
    read_text_bounded,
    refusal,
    under_any,
)
from hermes.errors import CheckpointError, RestoreRefused

__all__ = [
    "CappedOutput", "CappedText", "FileChange", "ShadowRepo", "Snapshot", "SnapshotLimits", "git_available",
    "prune_session", "read_capped", "shadow_root",
]  # fmt: skip

_HIDDEN_FILE = "hermes-hidden"
"""In the shadow git dir: the worktree-relative hidden paths, NUL-separated (see above)."""


def git_available() -> bool:
    """Whether a `git` executable is on PATH (found, not run)."""
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


class ShadowRepo:
    """The shadow repository of one working tree (see the module docstring)."""

    def __init__(
        self, git_dir: Path, worktree: Path, *, max_file_kb: int = 1024, home: Path | None = None,
        hidden: Sequence[Path] | None = None, limits: SnapshotLimits | None = None,
    ) -> None:  # fmt: skip
        self.git_dir = git_dir
        self.worktree = worktree
        self.max_file_kb = max_file_kb
        self._home = home
        self._hidden = None if hidden is None else tuple(hidden)
        """The hidden paths; None: those the last snapshot given them kept (`_HIDDEN_FILE`)."""
        self.limits = limits
        """The caps of each snapshot; None: no cap (undo's snapshot of a tree already taken)."""

    @classmethod
    def for_worktree(
        cls, home: Path, worktree: Path, *, max_file_kb: int = 1024,
        hidden: Sequence[Path] | None = None, limits: SnapshotLimits | None = None,
    ) -> ShadowRepo:  # fmt: skip
        real = Path(os.path.realpath(worktree))
        digest = hashlib.sha256(str(real).encode()).hexdigest()[:24]
        return cls(shadow_root(home) / digest, real, max_file_kb=max_file_kb, home=home, hidden=hidden, limits=limits)

    # ---- plumbing --------------------------------------------------------------------

    async def git(
        self, *args: str, stdin: bytes | None = None, ok: Iterable[int] = (0,), deadline: float | None = None,
        max_records: int | None = None, literal_pathspecs: bool = True,
    ) -> bytes:  # fmt: skip
        result = await run_git(
            (f"--git-dir={self.git_dir}", f"--work-tree={self.worktree}", *args), cwd=self.worktree, stdin=stdin,
            deadline=deadline, max_records=max_records, literal_pathspecs=literal_pathspecs,
        )  # fmt: skip
        if result.returncode not in tuple(ok):
            message = result.stderr.decode(errors="replace").strip().splitlines()
            raise CheckpointError(f"git {args[0]} failed: {message[-1] if message else result.returncode}")
        return result.stdout

    async def _spawn(self, *args: str) -> asyncio.subprocess.Process:
        """Start one isolated git command whose output is read as it comes (`git_capped`)."""
        return await asyncio.create_subprocess_exec(
            *git_command((f"--git-dir={self.git_dir}", f"--work-tree={self.worktree}", *args)),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            cwd=self.worktree, env=git_env(),
        )  # fmt: skip

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
        if not (self.git_dir / "HEAD").exists():
            self.git_dir.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
            result = await run_git(("init", "-q", "--bare", "--template=", str(self.git_dir)))
            if result.returncode != 0:
                raise CheckpointError(f"git init failed: {result.stderr.decode(errors='replace').strip()}")
            for key, value in (
                ("core.bare", "false"),
                ("core.autocrlf", "false"),
                ("gc.auto", "0"),
                ("core.quotepath", "false"),
            ):
                await self.git("config", key, value)
        info = self.git_dir / "info"
        info.mkdir(exist_ok=True)
        attributes = info / "attributes"
        if read_text_bounded(attributes) != ATTRIBUTES:
            attributes.write_text(ATTRIBUTES, encoding="utf-8")

    # ---- snapshots -------------------------------------------------------------------

    async def snapshot(self, ref: str | None = None) -> Snapshot:
        """Commit the worktree's current files; keep the commit under `ref` when given.

        Raises `SnapshotRefused` for a working directory that gets none, `SnapshotTooLarge`
        past a cap of `limits` (nothing is committed then)."""
        hidden = self._hidden_paths()
        why = refusal(self.worktree, hidden, self._home)
        if why is not None:
            raise SnapshotRefused(why)
        limits = self.limits
        timeout = limits.timeout if limits is not None and limits.timeout > 0 else None
        started = time.time()
        deadline = asyncio.get_running_loop().time() + timeout if timeout is not None else None
        async with _lock_for(self.git_dir):
            try:
                return await self._snapshot(ref, hidden, deadline)
            except GitTimeout:
                self._drop_stale_index_lock(started)
                raise SnapshotTooLarge(f"it took longer than {timeout:g} s") from None
            except TooManyRecords:
                assert limits is not None
                raise SnapshotTooLarge(f"the folder holds more than {limits.max_files:,} files") from None

    async def _snapshot(self, ref: str | None, hidden: tuple[Path, ...], deadline: float | None) -> Snapshot:
        await self.ensure()
        self._keep_hidden()
        own = hidden_within(self.worktree, hidden, self._home)
        await self._write_excludes(own, deadline)
        skipped = await self._oversized(own, deadline)
        left_out = [*own, *skipped]
        if left_out:  # copies an older snapshot holds
            await self.git(
                "rm", "--cached", "-r", "-q", "--ignore-unmatch", "--pathspec-from-file=-", "--pathspec-file-nul",
                stdin=_nul_list(left_out), deadline=deadline,
            )  # fmt: skip
        pathspecs = [":(literal).", *(f":(exclude,literal){name}" for name in left_out)]
        await self.git(
            "add", "-A", "--ignore-errors", "--pathspec-from-file=-", "--pathspec-file-nul",
            stdin=_nul_list(pathspecs), ok=(0, 1), deadline=deadline, literal_pathspecs=False,
        )  # fmt: skip
        tree = (await self.git("write-tree", deadline=deadline)).decode().strip()
        message = "hermes snapshot" if ref is None else ref
        made = await self.git("commit-tree", "--no-gpg-sign", tree, "-m", message, deadline=deadline)
        commit = made.decode().strip()
        if ref is not None:
            await self.git("update-ref", ref, commit, deadline=deadline)
        return Snapshot(commit, tuple(skipped))

    def _hidden_paths(self) -> tuple[Path, ...]:
        """The hidden paths given; else those the last snapshot given them kept."""
        if self._hidden is not None:
            return self._hidden
        kept = read_bytes_bounded(self.git_dir / _HIDDEN_FILE).decode("utf-8", "surrogateescape")
        return tuple(self.worktree / name for name in kept.split("\0") if name)

    def _keep_hidden(self) -> None:
        """Keep the hidden paths given (those inside the worktree) for later snapshots."""
        if self._hidden is None:
            return
        text = _nul_list(hidden_within(self.worktree, self._hidden))
        kept = self.git_dir / _HIDDEN_FILE
        if read_bytes_bounded(kept) != text:
            kept.write_bytes(text)

    async def _write_excludes(self, own: Sequence[str], deadline: float | None) -> None:
        """Rewrite the shadow's info/exclude (the user's excludes and the printable hidden paths)."""
        parts: list[str] = [await _user_excludes(deadline)]
        user_git = _enclosing_git_dir(self.worktree)
        if user_git is not None:
            parts.append(read_text_bounded(user_git / "info" / "exclude"))
        # Printable hidden paths are also ignored, so listings never descend into them.
        parts += [pattern for pattern in map(exclude_pattern, own) if pattern is not None]
        exclude = self.git_dir / "info" / "exclude"
        exclude.write_text("\n".join(parts) + "\n", encoding="utf-8", errors="surrogateescape")

    async def _oversized(self, own: Sequence[str], deadline: float | None) -> list[str]:
        """The files over the size cap (checked against the file-count cap on the way)."""
        max_files = self.limits.max_files if self.limits is not None and self.limits.max_files > 0 else None
        listed = await self.git(
            "ls-files", "-z", "--cached", "--others", "--exclude-standard", deadline=deadline, max_records=max_files
        )  # fmt: skip
        limit = self.max_file_kb * 1024
        if limit <= 0:
            return []
        skipped: list[str] = []
        for name in sorted(set(filter(None, listed.decode(errors="surrogateescape").split("\0")))):
            if under_any(name, own):
                continue
            try:
                info = os.lstat(self.worktree / name)
            except OSError:
                continue
            if info.st_size > limit and stat.S_ISREG(info.st_mode):
                skipped.append(name)
        return skipped

    def _drop_stale_index_lock(self, started: float) -> None:
        """After a killed snapshot: git's index lock, when the killed command made it."""
        lock = self.git_dir / "index.lock"
        with contextlib.suppress(OSError):
            if lock.stat().st_mtime >= started - 1:
                lock.unlink()

    # ---- reading ---------------------------------------------------------------------

    async def changed(self, a: str, b: str) -> list[str]:
        out = await self.git("diff", "--name-only", "-z", "--no-renames", "--no-textconv", "--no-ext-diff", a, b)
        return [p for p in out.decode(errors="surrogateescape").split("\0") if p]

    async def numstat(self, a: str, b: str) -> list[FileChange]:
        return _numstat(await self.git(*_NUMSTAT, a, b))

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
        out = await self.git_capped(*_NUMSTAT, a, b, limit=limit)
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
    return (
        "diff", "--binary", "--no-renames", "--no-ext-diff", "--no-textconv",
        "--color=always" if color else "--no-color", a, b,
    )  # fmt: skip


_NUMSTAT = ("diff", "--numstat", "-z", "--no-renames", "--no-textconv", "--no-ext-diff")


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
    prefixes = [session_ref_prefix(session_id)]
    legacy = legacy_ref_prefix(session_id)
    if legacy is not None:  # refs written before session ids were encoded
        prefixes.append(legacy)
    removed = 0
    for git_dir in sorted(root.iterdir()):
        if (git_dir / "HEAD").exists():
            repo = ShadowRepo(git_dir, git_dir)
            for prefix in prefixes:
                removed += await repo.drop_refs(prefix)
    return removed


def _nul_list(items: Iterable[str]) -> bytes:
    return "".join(f"{item}\0" for item in items).encode("utf-8", "surrogateescape")


async def _user_excludes(deadline: float | None) -> str:
    """The text of the user's global excludes file, when ~/.gitconfig or
    $XDG_CONFIG_HOME/git/config names one (`core.excludesFile`, read as data: no other
    key of those files is used); git reads the default $XDG_CONFIG_HOME/git/ignore itself."""
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    named: str | None = None
    for config in (Path(xdg) / "git" / "config", Path.home() / ".gitconfig"):  # the later one wins, as in git
        if not config.is_file():
            continue
        result = await run_git(("config", "--file", str(config), "--get", "--path", "core.excludesFile"),
                               deadline=deadline)  # fmt: skip
        value = result.stdout.decode(errors="surrogateescape").strip()
        if result.returncode == 0 and value:
            named = value
    return read_text_bounded(Path(named)) if named is not None else ""

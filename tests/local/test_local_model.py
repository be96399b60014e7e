"""Model assembly, verification and the per-user model cache, on small parts made here
(no model download, no llama.cpp)."""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hermes.agent.providers import local, local_model
from hermes.agent.providers.local import local_status, resolve_model
from hermes.agent.providers.local_model import (
    BundledModel,
    LocalModelError,
    ModelChecksumError,
    check_gguf,
    ensure_model,
    stamp_matches,
)
from hermes.config import Settings
from hermes.errors import ConfigError


@pytest.fixture
def parts(tmp_path: Path) -> list[Path]:
    folder = tmp_path / "parts"
    folder.mkdir()
    out = []
    for i in range(3):
        path = folder / f"part{i + 1:02d}.bin"
        path.write_bytes((b"GGUF" if i == 0 else b"") + bytes([i]) * 100_000)
        out.append(path)
    return out


@pytest.fixture
def model(parts: list[Path]) -> BundledModel:
    data = b"".join(p.read_bytes() for p in parts)
    return BundledModel(
        name="tiny",
        filename="tiny.gguf",
        sha256=hashlib.sha256(data).hexdigest(),
        size=len(data),
        part_packages=("p1", "p2", "p3"),
    )


def test_parts_are_assembled_in_order_verified_and_stamped(
    tmp_path: Path, parts: list[Path], model: BundledModel
) -> None:
    seen: list[tuple[str, int, int]] = []
    path = ensure_model(tmp_path / "cache", model, lambda *update: seen.append(update), parts=parts)

    assert path == tmp_path / "cache" / "tiny.gguf"
    assert path.read_bytes() == b"".join(p.read_bytes() for p in parts)
    assert stamp_matches(path, model)
    assert seen[-1] == ("assembling", model.size, model.size)
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".partial")] == []


def test_a_verified_model_is_not_rebuilt(tmp_path: Path, parts: list[Path], model: BundledModel) -> None:
    home = tmp_path / "cache"
    first = ensure_model(home, model, parts=parts)
    mtime = first.stat().st_mtime_ns
    seen: list[tuple[str, int, int]] = []
    assert ensure_model(home, model, lambda *update: seen.append(update), parts=[]) == first
    assert first.stat().st_mtime_ns == mtime and seen == []  # stamp matched: no hashing


def test_corrupted_parts_are_refused_by_the_checksum(tmp_path: Path, parts: list[Path], model: BundledModel) -> None:
    with parts[1].open("r+b") as fh:
        fh.seek(500)
        fh.write(b"\xff")
    with pytest.raises(ModelChecksumError) as info:
        ensure_model(tmp_path / "cache", model, parts=parts)
    assert info.value.expected == model.sha256 and info.value.actual != model.sha256
    assert "reinstall" in str(info.value)
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [".tiny.gguf.lock"]  # nothing half-made left


def test_a_corrupted_model_file_is_detected_and_rebuilt_from_the_parts(
    tmp_path: Path, parts: list[Path], model: BundledModel
) -> None:
    home = tmp_path / "cache"
    path = ensure_model(home, model, parts=parts)
    with path.open("r+b") as fh:
        fh.seek(1234)
        fh.write(b"\x00\x01\x02")
    os.utime(path, ns=(0, 0))  # a change the stamp will notice
    assert not stamp_matches(path, model)

    rebuilt = ensure_model(home, model, parts=parts)
    assert hashlib.sha256(rebuilt.read_bytes()).hexdigest() == model.sha256


def test_a_corrupted_model_with_damaged_parts_is_refused(
    tmp_path: Path, parts: list[Path], model: BundledModel
) -> None:
    home = tmp_path / "cache"
    path = ensure_model(home, model, parts=parts)
    path.write_bytes(b"GGUF garbage")
    parts[2].write_bytes(b"short")
    with pytest.raises(ModelChecksumError):
        ensure_model(home, model, parts=parts)
    assert not path.exists()


def test_missing_parts_say_how_to_install_them(tmp_path: Path, model: BundledModel) -> None:
    with pytest.raises(LocalModelError, match=r"hermes-agent-cli\[local\]"):
        ensure_model(tmp_path / "cache", model)  # p1..p3 are not installed packages


def test_find_parts_locates_packages_without_importing_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for i in (1, 2):
        data = tmp_path / f"fake_part{i}" / "data"
        data.mkdir(parents=True)
        (data.parent / "__init__.py").write_text("raise RuntimeError('imported')\n")
        (data / f"part{i:02d}.bin").write_bytes(b"x")
    monkeypatch.syspath_prepend(str(tmp_path))
    fake = BundledModel("f", "f.gguf", "0" * 64, 2, ("fake_part1", "fake_part2"))
    found = local_model.find_parts(fake)
    assert found is not None and [p.name for p in found] == ["part01.bin", "part02.bin"]
    assert local_model.find_parts(BundledModel("f", "f.gguf", "0" * 64, 2, ("fake_part1", "no_such_pkg"))) is None


def test_a_custom_model_path_must_be_a_gguf(tmp_path: Path) -> None:
    good = tmp_path / "m.gguf"
    good.write_bytes(b"GGUF\x03\x00")
    assert check_gguf(good) == good
    bad = tmp_path / "m.bin"
    bad.write_bytes(b"PK\x03\x04")
    with pytest.raises(ConfigError, match="not a GGUF"):
        check_gguf(bad)
    with pytest.raises(ConfigError, match="does not exist"):
        check_gguf(tmp_path / "nope.gguf")


def test_local_status_explains_a_missing_custom_model(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = Settings.load(env={"HERMES_HOME": str(tmp_path), "HERMES_LOCAL_MODEL_PATH": str(tmp_path / "x.gguf")})
    # Both answers, whether or not this environment has the llama.cpp runtime.
    monkeypatch.setattr(local, "runtime_installed", lambda: True)
    status = local_status(settings)
    assert not status.available and "does not exist" in status.reason
    monkeypatch.setattr(local, "runtime_installed", lambda: False)
    status = local_status(settings)
    assert not status.available and "runtime is not installed" in status.reason


def test_a_configured_gguf_is_used_as_is(tmp_path: Path) -> None:
    custom = tmp_path / "my-model.Q4.gguf"
    custom.write_bytes(b"GGUF" + b"\0" * 16)
    settings = Settings.load(env={"HERMES_HOME": str(tmp_path / "home"), "HERMES_LOCAL_MODEL_PATH": str(custom)})
    assert resolve_model(settings) == (custom, "my-model.Q4")
    assert not (tmp_path / "home" / "models").exists()  # nothing assembled


def test_two_homes_share_one_copy_in_the_user_cache(tmp_path: Path, parts: list[Path], model: BundledModel) -> None:
    cache = tmp_path / "user-cache" / "hermes" / "models"
    first = ensure_model(cache, model, parts=parts, legacy=[tmp_path / "home-a" / "models"])
    second = ensure_model(cache, model, parts=[], legacy=[tmp_path / "home-b" / "models"])  # no parts: no rebuild
    assert first == second == cache / "tiny.gguf"
    ggufs = [p for p in tmp_path.rglob("*.gguf")]
    assert ggufs == [cache / "tiny.gguf"]  # one copy on disk, in no home
    for folder in (cache, cache.parent):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700


def test_the_cache_folder_follows_the_environment(tmp_path: Path) -> None:
    home = str(tmp_path / "h")
    explicit = Settings.load(env={"HERMES_HOME": home, "HERMES_MODEL_CACHE": str(tmp_path / "mc")})
    assert explicit.model_cache == tmp_path / "mc"
    xdg = Settings.load(env={"HERMES_HOME": home, "XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert xdg.model_cache == tmp_path / "xdg" / "hermes" / "models"
    default = Settings.load(env={"HERMES_HOME": home, "XDG_CACHE_HOME": "relative/ignored"})
    assert default.model_cache == Path.home() / ".cache" / "hermes" / "models"


def test_a_copy_assembled_under_a_home_is_moved_into_the_cache(
    tmp_path: Path, parts: list[Path], model: BundledModel
) -> None:
    old_models = tmp_path / "home" / "models"
    old = ensure_model(old_models, model, parts=parts)  # what the previous version left in a home
    inode = old.stat().st_ino
    cache = tmp_path / "cache"
    seen: list[tuple[str, int, int]] = []
    path = ensure_model(cache, model, lambda *update: seen.append(update), parts=[], legacy=[old_models])
    assert path == cache / "tiny.gguf" and path.stat().st_ino == inode  # moved, not assembled again
    assert stamp_matches(path, model) and seen == []  # its stamp moved along: not even hashed
    assert old.is_symlink() and old.resolve() == path.resolve()  # the home still finds it
    again = ensure_model(tmp_path / "cache2", model, parts=parts, legacy=[old_models])  # a link is not adopted
    assert not again.is_symlink()


def test_a_damaged_copy_under_a_home_is_not_adopted(tmp_path: Path, parts: list[Path], model: BundledModel) -> None:
    old_models = tmp_path / "home" / "models"
    old_models.mkdir(parents=True)
    (old_models / "tiny.gguf").write_bytes(b"GGUF not the model")
    path = ensure_model(tmp_path / "cache", model, parts=parts, legacy=[old_models])
    assert hashlib.sha256(path.read_bytes()).hexdigest() == model.sha256
    assert (old_models / "tiny.gguf").read_bytes() == b"GGUF not the model"  # left alone


def test_two_processes_assembling_at_once_make_one_file(tmp_path: Path, parts: list[Path], model: BundledModel) -> None:
    cache = tmp_path / "cache"
    script = textwrap.dedent(
        f"""
        import sys
        from pathlib import Path
        from hermes.agent.providers.local_model import BundledModel, ensure_model
        model = BundledModel("tiny", "tiny.gguf", {model.sha256!r}, {model.size}, ("p1", "p2", "p3"))
        parts = [Path(p) for p in {[str(p) for p in parts]!r}]
        steps = []
        ensure_model(Path({str(cache)!r}), model, lambda step, d, t: steps.append(step), parts=parts)
        print(",".join(sorted(set(steps))))
        """
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True) for _ in range(3)
    ]
    outputs = [proc.communicate(timeout=60)[0].strip() for proc in procs]
    assert [proc.returncode for proc in procs] == [0, 0, 0]
    assert outputs.count("assembling") == 1  # one assembled; the others waited or found it stamped
    assert sorted(p.name for p in cache.iterdir()) == [".tiny.gguf.lock", "tiny.gguf", "tiny.gguf.verified"]
    assert hashlib.sha256((cache / "tiny.gguf").read_bytes()).hexdigest() == model.sha256

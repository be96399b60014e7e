"""Model assembly and verification, on small parts made here (no model download, no llama.cpp)."""

from __future__ import annotations

import hashlib
import os
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
    seen: list[tuple[int, int]] = []
    path = ensure_model(tmp_path / "home", model, lambda done, total: seen.append((done, total)), parts=parts)

    assert path == tmp_path / "home" / "models" / "tiny.gguf"
    assert path.read_bytes() == b"".join(p.read_bytes() for p in parts)
    assert stamp_matches(path, model)
    assert seen[-1] == (model.size, model.size)
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".partial")] == []


def test_a_verified_model_is_not_rebuilt(tmp_path: Path, parts: list[Path], model: BundledModel) -> None:
    home = tmp_path / "home"
    first = ensure_model(home, model, parts=parts)
    mtime = first.stat().st_mtime_ns
    seen: list[tuple[int, int]] = []
    assert ensure_model(home, model, lambda d, t: seen.append((d, t)), parts=[]) == first
    assert first.stat().st_mtime_ns == mtime and seen == []  # stamp matched: no hashing


def test_corrupted_parts_are_refused_by_the_checksum(tmp_path: Path, parts: list[Path], model: BundledModel) -> None:
    with parts[1].open("r+b") as fh:
        fh.seek(500)
        fh.write(b"\xff")
    with pytest.raises(ModelChecksumError) as info:
        ensure_model(tmp_path / "home", model, parts=parts)
    assert info.value.expected == model.sha256 and info.value.actual != model.sha256
    assert "reinstall" in str(info.value)
    assert list((tmp_path / "home" / "models").iterdir()) == []  # nothing half-made left behind


def test_a_corrupted_model_file_is_detected_and_rebuilt_from_the_parts(
    tmp_path: Path, parts: list[Path], model: BundledModel
) -> None:
    home = tmp_path / "home"
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
    home = tmp_path / "home"
    path = ensure_model(home, model, parts=parts)
    path.write_bytes(b"GGUF garbage")
    parts[2].write_bytes(b"short")
    with pytest.raises(ModelChecksumError):
        ensure_model(home, model, parts=parts)
    assert not path.exists()


def test_missing_parts_say_how_to_install_them(tmp_path: Path, model: BundledModel) -> None:
    with pytest.raises(LocalModelError, match=r"hermes-agent-cli\[local\]"):
        ensure_model(tmp_path / "home", model)  # p1..p3 are not installed packages


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

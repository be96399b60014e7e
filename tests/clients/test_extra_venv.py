"""The extra Python clients' venv builds itself: once, under a lock, again when the pinned
requirements change, and says why when pip fails. Real `venv` and pip on a requirements file
that needs no download; the warm-up import is a module of the folder that logs each build."""

from __future__ import annotations

import threading
from pathlib import Path

from _extra_venv import ensure_venv, venv_current, venv_python

COUNTER = """from pathlib import Path
with open(Path(__file__).with_name("builds.log"), "a") as log:
    log.write("built\\n")
"""


def project(tmp_path: Path, requirements: str = "# nothing to install\n") -> Path:
    folder = tmp_path / "extra"
    folder.mkdir()
    (folder / "requirements.txt").write_text(requirements)
    (folder / "build_counter.py").write_text(COUNTER)
    return folder


def builds(folder: Path) -> int:
    log = folder / "builds.log"
    return len(log.read_text().splitlines()) if log.exists() else 0


def test_parallel_callers_build_once_and_later_ones_find_it_current(tmp_path: Path) -> None:
    folder = project(tmp_path)
    assert not venv_current(folder)
    results: list[str | None] = []
    threads = [
        threading.Thread(target=lambda: results.append(ensure_venv(folder, warm=("build_counter",)))) for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert results == [None, None, None]
    assert venv_current(folder) and venv_python(folder).exists()
    assert ensure_venv(folder, warm=("build_counter",)) is None
    assert builds(folder) == 1


def test_changed_requirements_rebuild_from_scratch(tmp_path: Path) -> None:
    folder = project(tmp_path)
    assert ensure_venv(folder, warm=("build_counter",)) is None
    leftover = folder / ".venv" / "leftover"
    leftover.write_text("from the old build")
    (folder / "requirements.txt").write_text("# still nothing, but another file\n")
    assert not venv_current(folder)
    assert ensure_venv(folder, warm=("build_counter",)) is None
    assert builds(folder) == 2
    assert not leftover.exists()


def test_a_failed_install_says_why_and_leaves_no_stamp(tmp_path: Path) -> None:
    folder = project(tmp_path, "./no-such-project\n")
    problem = ensure_venv(folder, warm=("build_counter",))
    assert problem is not None and "pip install -r requirements.txt" in problem and "failed (exit" in problem
    assert not venv_current(folder) and builds(folder) == 0

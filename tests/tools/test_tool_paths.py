"""Path discipline: tool paths resolve against the working directory; one that repeats the
working directory's own folders is taken as meant; a missing path names the closest ones."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.file_search import list_files
from hermes.agent.tools.files import patch, read_file, write_file
from hermes.errors import ToolError


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "llm" / "runs" / "A"
    (folder / "pkg").mkdir(parents=True)
    (folder / "window.py").write_text("SIZE = 3\n")
    (folder / "pkg" / "helpers.py").write_text("def helper():\n    return 1\n")
    return folder


def ctx(cwd: Path) -> ToolContext:
    return ToolContext(session_id="s", cwd=cwd)


@pytest.mark.parametrize("given", ["llm/runs/A/window.py", "runs/A/window.py", "A/window.py", "/llm/runs/A/window.py"])
async def test_a_path_repeating_the_working_directory_is_taken_as_meant(work: Path, given: str) -> None:
    assert "SIZE = 3" in await read_file({"path": given}, ctx(work))


async def test_edits_and_new_files_follow_the_same_reading(work: Path) -> None:
    patched = await patch({"path": "A/window.py", "old_string": "3", "new_string": "4"}, ctx(work))
    created = await write_file({"path": "runs/A/pkg/new.py", "content": "x = 1\n"}, ctx(work))
    listed = await list_files({"path": "A/pkg"}, ctx(work))

    assert patched.startswith(f"Patched {work / 'window.py'}") and (work / "window.py").read_text() == "SIZE = 4\n"
    assert created.startswith(f"Created {work / 'pkg' / 'new.py'}")
    assert "helpers.py" in listed and not (work / "A").exists() and not (work / "runs").exists()


async def test_an_absolute_path_whose_folder_exists_is_never_rewritten(work: Path, tmp_path: Path) -> None:
    other = tmp_path / "A"
    other.mkdir()
    yolo = ToolContext(session_id="s", cwd=work, yolo=True)  # the write is outside the workspace
    out = await write_file({"path": str(other / "window.py"), "content": "elsewhere\n"}, yolo)

    assert out.startswith(f"Created {other / 'window.py'}")
    assert (work / "window.py").read_text() == "SIZE = 3\n"


async def test_a_missing_path_names_the_closest_existing_ones(work: Path) -> None:
    with pytest.raises(ToolError, match=r"Did you mean: .*/pkg/helpers\.py\?"):
        await read_file({"path": "helpers.py"}, ctx(work))
    with pytest.raises(ToolError, match=r"Did you mean: .*/window\.py\?"):
        await read_file({"path": "windows.py"}, ctx(work))
    with pytest.raises(ToolError, match=r"does not exist either.*Did you mean: .*/pkg/helpers\.py\?"):
        await read_file({"path": "src/helper.py"}, ctx(work))


async def test_a_path_naming_folders_above_the_working_directory_is_taken_as_meant(work: Path) -> None:
    # From inside …/llm/runs/A a small model wrote "llm/runs/window.py" (the run without its end).
    assert "SIZE = 3" in await read_file({"path": "llm/runs/window.py"}, ctx(work))


async def test_a_missing_file_named_like_a_class_says_where_that_class_is_defined(work: Path) -> None:
    (work / "pkg" / "invoices.py").write_text("import os\n\n\nclass InvoiceBuilder:\n    pass\n")

    with pytest.raises(ToolError, match=r"InvoiceBuilder is defined in .*/pkg/invoices\.py:4\."):
        await read_file({"path": "src/com/example/InvoiceBuilder.java"}, ctx(work))

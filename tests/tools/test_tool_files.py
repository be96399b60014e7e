"""read_file, write_file and patch on real files in tmp_path."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.files import PATCH_TOOL, READ_FILE_TOOL, WRITE_FILE_TOOL, patch, read_file, write_file
from hermes.errors import ToolError


def _ctx(cwd: Path) -> ToolContext:
    return ToolContext(session_id="s", cwd=cwd)


# --- read_file -------------------------------------------------------------------------


async def test_read_numbers_lines(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("alpha\nbeta\n\ngamma")
    assert await read_file({"path": "a.txt"}, _ctx(tmp_path)) == "1|alpha\n2|beta\n3|\n4|gamma"


async def test_read_offset_and_limit_say_how_to_continue(tmp_path: Path) -> None:
    (tmp_path / "n.txt").write_text("".join(f"line {i}\n" for i in range(1, 11)))
    result = await read_file({"path": "n.txt", "offset": 3, "limit": 2}, _ctx(tmp_path))
    assert result.splitlines() == ["3|line 3", "4|line 4", "[Showing lines 3-4 of 10. Use offset=5 to read more.]"]
    tail = await read_file({"path": "n.txt", "offset": 9}, _ctx(tmp_path))
    assert tail.splitlines() == ["9|line 9", "10|line 10", "[Showing lines 9-10 of 10; end of file.]"]


async def test_read_default_limit_and_cap(tmp_path: Path) -> None:
    (tmp_path / "big.txt").write_text("".join(f"{i}\n" for i in range(1, 2501)))
    default = (await read_file({"path": "big.txt"}, _ctx(tmp_path))).splitlines()
    assert len(default) == 501
    assert default[-2] == "500|500"
    assert "Use offset=501" in default[-1]
    capped = (await read_file({"path": "big.txt", "limit": 10_000}, _ctx(tmp_path))).splitlines()
    assert capped[-2] == "2000|2000"
    assert "of 2500" in capped[-1]


async def test_read_output_size_is_bounded(tmp_path: Path) -> None:
    (tmp_path / "wide.txt").write_text(("y" * 1500 + "\n") * 400)
    result = await read_file({"path": "wide.txt"}, _ctx(tmp_path))
    lines = result.splitlines()
    assert len(result) < 110_000
    shown = len(lines) - 1
    assert 50 < shown < 400
    assert lines[-1] == f"[Showing lines 1-{shown} of 400. Use offset={shown + 1} to read more.]"


async def test_read_offset_past_end(tmp_path: Path) -> None:
    (tmp_path / "short.txt").write_text("one\ntwo\n")
    with pytest.raises(ToolError, match=r"past the end.*2 lines"):
        await read_file({"path": "short.txt", "offset": 5}, _ctx(tmp_path))


async def test_read_empty_file(tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_text("")
    assert "empty (0 lines)" in await read_file({"path": "empty.txt"}, _ctx(tmp_path))


async def test_read_missing_file_suggests_similar_names(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("x")
    (tmp_path / "unrelated.bin").write_text("x")
    with pytest.raises(ToolError, match="not found") as info:
        await read_file({"path": "confg.yaml"}, _ctx(tmp_path))
    assert f"Did you mean: {tmp_path / 'config.yaml'}" in str(info.value)
    assert "unrelated" not in str(info.value)


async def test_read_missing_folder(tmp_path: Path) -> None:
    with pytest.raises(ToolError, match="does not exist either"):
        await read_file({"path": "no/such/file.txt"}, _ctx(tmp_path))


async def test_read_directory_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        await read_file({"path": "d"}, _ctx(tmp_path))


async def test_read_binary_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "img.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
    with pytest.raises(ToolError, match="binary file"):
        await read_file({"path": "img.png"}, _ctx(tmp_path))


async def test_read_handles_crlf_bad_bytes_and_long_lines(tmp_path: Path) -> None:
    (tmp_path / "w.txt").write_bytes(b"a\r\ncaf\xe9\r\n" + b"x" * 5000 + b"\n")
    lines = (await read_file({"path": "w.txt"}, _ctx(tmp_path))).splitlines()
    assert lines[0] == "1|a"
    assert lines[1] == "2|caf\ufffd"
    assert lines[2].startswith("3|xxx")
    assert lines[2].endswith("… [line cut: 5000 characters]")
    assert len(lines[2]) < 2100


async def test_read_expands_home_and_absolute_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "h.txt").write_text("home\n")
    assert await read_file({"path": "~/h.txt"}, _ctx(Path("/"))) == "1|home"
    assert await read_file({"path": str(tmp_path / "h.txt")}, _ctx(Path("/"))) == "1|home"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({}, "missing required argument 'path'"),
        ({"path": 3}, "must be a string"),
        ({"path": "a.txt", "offset": 0}, "at least 1"),
        ({"path": "a.txt", "offset": "x"}, "must be an integer"),
        ({"path": "a.txt", "limit": 1.5}, "must be an integer"),
    ],
)
async def test_read_argument_errors(tmp_path: Path, args: dict, message: str) -> None:
    (tmp_path / "a.txt").write_text("x\n")
    with pytest.raises(ToolError, match=message):
        await read_file(args, _ctx(tmp_path))


async def test_read_accepts_numeric_strings(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("1\n2\n3\n")
    assert (await read_file({"path": "a.txt", "offset": "2", "limit": "1"}, _ctx(tmp_path))).startswith("2|2\n")


# --- write_file ------------------------------------------------------------------------


async def test_write_creates_parents_and_reports_size(tmp_path: Path) -> None:
    result = await write_file({"path": "a/b/c.txt", "content": "héllo\nworld\n"}, _ctx(tmp_path))
    target = tmp_path / "a" / "b" / "c.txt"
    assert target.read_text(encoding="utf-8") == "héllo\nworld\n"
    assert result == f"Created {target}: wrote 13 bytes (2 lines)."


async def test_write_overwrites_atomically_and_keeps_mode(tmp_path: Path) -> None:
    script = tmp_path / "run.sh"
    script.write_text("old\n")
    script.chmod(0o750)
    result = await write_file({"path": "run.sh", "content": "new\nlast line without newline"}, _ctx(tmp_path))
    assert result.startswith(f"Overwrote {script}")
    assert "(2 lines)" in result
    assert script.read_text() == "new\nlast line without newline"
    assert stat.S_IMODE(script.stat().st_mode) == 0o750
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.sh"]  # no temp files left behind


async def test_write_new_file_gets_umask_mode(tmp_path: Path) -> None:
    await write_file({"path": "n.txt", "content": "x"}, _ctx(tmp_path))
    umask = os.umask(0)
    os.umask(umask)
    assert stat.S_IMODE((tmp_path / "n.txt").stat().st_mode) == 0o666 & ~umask


async def test_write_through_symlink_keeps_the_link(tmp_path: Path) -> None:
    real = tmp_path / "real.txt"
    real.write_text("old")
    link = tmp_path / "link.txt"
    link.symlink_to(real)
    await write_file({"path": "link.txt", "content": "new"}, _ctx(tmp_path))
    assert link.is_symlink()
    assert real.read_text() == "new"


async def test_write_empty_content_is_allowed(tmp_path: Path) -> None:
    result = await write_file({"path": "e.txt", "content": ""}, _ctx(tmp_path))
    assert (tmp_path / "e.txt").read_bytes() == b""
    assert "0 bytes (0 lines)" in result


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"content": "x"}, "missing required argument 'path'"),
        ({"path": "a.txt"}, "missing required argument 'content'"),
        ({"path": "a.txt", "content": 5}, "must be a string"),
        ({"path": "a.txt", "content": None}, "missing required argument 'content'"),
    ],
)
async def test_write_argument_errors(tmp_path: Path, args: dict, message: str) -> None:
    with pytest.raises(ToolError, match=message):
        await write_file(args, _ctx(tmp_path))
    assert not (tmp_path / "a.txt").exists()


async def test_write_to_a_directory_is_an_error(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(ToolError, match="is a directory"):
        await write_file({"path": "d", "content": "x"}, _ctx(tmp_path))


async def test_write_into_unwritable_folder_is_a_tool_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(ToolError, match="could not write"):
        await write_file({"path": "file/child.txt", "content": "x"}, _ctx(tmp_path))


# --- patch -----------------------------------------------------------------------------

SOURCE = "def f():\n    return 1\n\n\ndef g():\n    return 2\n"


async def test_patch_replaces_one_match_and_shows_a_diff(tmp_path: Path) -> None:
    target = tmp_path / "m.py"
    target.write_text(SOURCE)
    result = await patch({"path": "m.py", "old_string": "    return 2", "new_string": "    return 3"}, _ctx(tmp_path))
    assert target.read_text() == SOURCE.replace("return 2", "return 3")
    assert result.startswith(f"Patched {target}: replaced 1 occurrence.")
    assert "--- a/m.py\n+++ b/m.py" in result
    assert "-    return 2\n+    return 3" in result


async def test_patch_no_match_leaves_file_untouched(tmp_path: Path) -> None:
    target = tmp_path / "m.py"
    target.write_text(SOURCE)
    # A near match is not a match: `return 42` must not stand for `return 2`.
    with pytest.raises(ToolError, match=r"no match.*most like it are:\n5\|def g\(\):\n6\|    return 2"):
        await patch({"path": "m.py", "old_string": "return 42", "new_string": "x"}, _ctx(tmp_path))
    assert target.read_text() == SOURCE


async def test_patch_no_match_shows_the_nearest_lines(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    # The indentation cannot be carried over consistently ("  " stands for "" and for "    ").
    with pytest.raises(ToolError, match=r"most like it are:\n4\|\n5\|def g\(\):\n6\|    return 2"):
        await patch({"path": "m.py", "old_string": "  def g():\n  return 2", "new_string": "x"}, _ctx(tmp_path))


async def test_patch_several_matches_need_context_or_replace_all(tmp_path: Path) -> None:
    target = tmp_path / "m.py"
    target.write_text(SOURCE)
    with pytest.raises(ToolError, match=r"2 matches.*replace_all"):
        await patch({"path": "m.py", "old_string": "    return", "new_string": "    yield"}, _ctx(tmp_path))
    assert target.read_text() == SOURCE
    result = await patch(
        {"path": "m.py", "old_string": "    return", "new_string": "    yield", "replace_all": True}, _ctx(tmp_path)
    )
    assert "replaced 2 occurrences" in result
    assert target.read_text().count("yield") == 2


async def test_patch_can_delete_text(tmp_path: Path) -> None:
    target = tmp_path / "m.py"
    target.write_text(SOURCE)
    await patch({"path": "m.py", "old_string": "\n\ndef g():\n    return 2\n", "new_string": ""}, _ctx(tmp_path))
    assert target.read_text() == "def f():\n    return 1\n"


async def test_patch_keeps_crlf_and_undecodable_bytes(tmp_path: Path) -> None:
    target = tmp_path / "w.txt"
    target.write_bytes(b"caf\xe9\r\nfirst\r\nsecond\r\n")
    await patch({"path": "w.txt", "old_string": "first\nsecond", "new_string": "one\ntwo"}, _ctx(tmp_path))
    assert target.read_bytes() == b"caf\xe9\r\none\r\ntwo\r\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"path": "m.py", "old_string": "x", "new_string": "x"}, "identical"),
        ({"path": "m.py", "old_string": "", "new_string": "x"}, "must not be empty"),
        ({"path": "m.py", "new_string": "x"}, "missing required argument 'old_string'"),
        ({"path": "m.py", "old_string": "x"}, "missing required argument 'new_string'"),
        ({"path": "m.py", "old_string": "f", "new_string": "h", "replace_all": "yes"}, "true or false"),
        ({"path": "nope.py", "old_string": "a", "new_string": "b"}, "not found"),
    ],
)
async def test_patch_argument_errors(tmp_path: Path, args: dict, message: str) -> None:
    (tmp_path / "m.py").write_text(SOURCE)
    with pytest.raises(ToolError, match=message):
        await patch(args, _ctx(tmp_path))
    assert (tmp_path / "m.py").read_text() == SOURCE


async def test_patch_refuses_binary_files(tmp_path: Path) -> None:
    (tmp_path / "b.bin").write_bytes(b"abc\x00def")
    with pytest.raises(ToolError, match="binary"):
        await patch({"path": "b.bin", "old_string": "abc", "new_string": "x"}, _ctx(tmp_path))


def test_file_tool_metadata() -> None:
    assert READ_FILE_TOOL.read_only and not WRITE_FILE_TOOL.read_only and not PATCH_TOOL.read_only
    assert {t.preview_key for t in (READ_FILE_TOOL, WRITE_FILE_TOOL, PATCH_TOOL)} == {"path"}
    assert READ_FILE_TOOL.parameters["required"] == ["path"]
    assert WRITE_FILE_TOOL.parameters["required"] == ["path", "content"]
    assert PATCH_TOOL.parameters["required"] == ["path", "old_string", "new_string"]

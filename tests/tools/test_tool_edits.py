"""Edits that land: patch fits old_string to the file (exactly, then without read_file's
N| prefixes, then ignoring indentation and spaces; always uniquely), an edit that
changes nothing says so, and a failed match shows the nearest lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.files import patch, write_file
from hermes.errors import ToolError

CODE = (
    "class Shop:\n    def total(self, items):\n        return sum(items) - 1\n\n"
    "    def count(self, items):\n        return len(items)\n"
)


def ctx(cwd: Path) -> ToolContext:
    return ToolContext(session_id="s", cwd=cwd)


async def test_wrong_indentation_still_lands_indented_like_the_file(tmp_path: Path) -> None:
    (tmp_path / "shop.py").write_text(CODE)
    args = {
        "path": "shop.py",
        "old_string": "def total(self, items):\n    return sum(items) - 1",
        "new_string": "def total(self, items):\n    # no off-by-one\n    return sum(items)",
    }

    out = await patch(args, ctx(tmp_path))

    assert out.startswith("Patched") and "ignoring indentation" in out
    assert (tmp_path / "shop.py").read_text() == CODE.replace(
        "        return sum(items) - 1", "        # no off-by-one\n        return sum(items)"
    )


async def test_copied_line_prefixes_are_dropped(tmp_path: Path) -> None:
    (tmp_path / "shop.py").write_text(CODE)
    args = {"path": "shop.py", "old_string": "6|        return len(items)", "new_string": "6|        return 0"}

    out = await patch(args, ctx(tmp_path))

    assert "N| prefixes were dropped" in out
    assert (tmp_path / "shop.py").read_text().endswith("        return 0\n")


async def test_a_loose_match_must_be_unique(tmp_path: Path) -> None:
    text = "if a:\n    x = 1\n    y = 2\nif b:\n        x = 1\n        y = 2\n"
    (tmp_path / "twice.py").write_text(text)

    with pytest.raises(ToolError, match="no match"):
        await patch({"path": "twice.py", "old_string": "  x = 1\n  y = 2", "new_string": "  x = 3"}, ctx(tmp_path))
    assert (tmp_path / "twice.py").read_text() == text


async def test_a_crlf_file_is_fitted_and_keeps_its_line_ends(tmp_path: Path) -> None:
    (tmp_path / "w.py").write_bytes(b"def f():\r\n    return 1\r\n")

    out = await patch({"path": "w.py", "old_string": "return 1", "new_string": "return 2"}, ctx(tmp_path))
    loose = await patch(
        {"path": "w.py", "old_string": "def f():\n  return 2", "new_string": "def f():\n  return 3"}, ctx(tmp_path)
    )

    assert out.startswith("Patched") and loose.startswith("Patched")
    assert (tmp_path / "w.py").read_bytes() == b"def f():\r\n    return 3\r\n"


async def test_an_edit_that_changes_nothing_is_reported_and_writes_nothing(tmp_path: Path) -> None:
    target = tmp_path / "shop.py"
    target.write_text(CODE)
    before = target.stat().st_mtime_ns

    patched = await patch(
        {
            "path": "shop.py",
            "old_string": "def count(self, items):\n  return len(items)",
            "new_string": "def count(self, items):\n        return len(items)",
        },
        ctx(tmp_path),
    )
    written = await write_file({"path": "shop.py", "content": CODE}, ctx(tmp_path))

    assert patched.startswith("No change:") and written.startswith("No change:")
    assert target.stat().st_mtime_ns == before and target.read_text() == CODE


async def test_a_patch_naming_new_code_adds_it_at_the_end(tmp_path: Path) -> None:
    (tmp_path / "mathx.py").write_text("def square(n: int) -> int:\n    return n * n\n")
    args = {
        "path": "mathx.py",
        "old_string": "def is_even(n: int) -> bool",
        "new_string": "def is_even(n: int) -> bool:\n    return n % 2 == 0",
    }

    out = await patch(args, ctx(tmp_path))

    assert "added at the end of the file" in out
    assert (tmp_path / "mathx.py").read_text() == (
        "def square(n: int) -> int:\n    return n * n\n\ndef is_even(n: int) -> bool:\n    return n % 2 == 0\n"
    )


async def test_a_misquoted_existing_line_is_not_taken_for_new_code(tmp_path: Path) -> None:
    (tmp_path / "m.py").write_text("def f(a):\n    return a\n")

    with pytest.raises(ToolError, match="no match"):
        args = {"path": "m.py", "old_string": "def f(a):\n  return b", "new_string": "def f(a):\n  return b + 1"}
        await patch(args, ctx(tmp_path))
    assert (tmp_path / "m.py").read_text() == "def f(a):\n    return a\n"

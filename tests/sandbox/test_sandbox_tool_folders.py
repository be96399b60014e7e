"""A user's tools stay reachable in the sandbox: PATH folders and the virtual environment under
/tmp (which the sandbox's private /tmp covers) are bound read-only; and a "command not found"
result names a close command that exists (issue 35, item 4)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from sandbox_helpers import needs_bwrap

from hermes.agent.safety.launch import ToolLauncher, tool_folders
from hermes.agent.safety.sandbox import SandboxConfig, resolve_sandbox
from hermes.agent.tools.terminal import run_command


def _program(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / name
    program.write_text(f"#!/bin/sh\necho {text}\n")
    program.chmod(0o755)
    return program


@pytest.fixture
def tmp_tools(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A PATH folder and a virtual environment, both under /tmp (pytest's tmp_path is)."""
    assert Path(os.path.realpath(tmp_path)).is_relative_to("/tmp")
    _program(tmp_path / "tools", "hermes-probe-tool", "from-path")
    venv = tmp_path / "venv"
    (venv / "pyvenv.cfg").parent.mkdir()
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    _program(venv / "bin", "hermes-probe-venv", "from-venv")
    monkeypatch.setenv("PATH", f"{tmp_path / 'tools'}{os.pathsep}{venv / 'bin'}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("VIRTUAL_ENV", str(venv))
    return tmp_path


@needs_bwrap
async def test_path_folders_and_the_venv_under_tmp_are_visible_read_only(tmp_tools: Path, tmp_path: Path) -> None:
    state = resolve_sandbox(SandboxConfig(mode="on"))
    assert state.active
    work = tmp_path / "work"
    work.mkdir()
    launcher = ToolLauncher(sandbox=state)

    ran = await run_command("hermes-probe-tool && hermes-probe-venv && ls $VIRTUAL_ENV", work, 30, launcher)
    assert "exit code: 0" in ran, ran
    assert "from-path" in ran and "from-venv" in ran and "pyvenv.cfg" in ran

    written = await run_command(f"touch {tmp_tools / 'tools' / 'planted'}", work, 30, launcher)
    assert "exit code: 0" not in written
    assert not (tmp_tools / "tools" / "planted").exists()


@needs_bwrap
async def test_without_the_tool_folders_the_private_tmp_hides_them(tmp_tools: Path, tmp_path: Path) -> None:
    # The control: the same sandbox, the folders not exposed, loses the command (exit 127).
    state = resolve_sandbox(SandboxConfig(mode="on"))
    work = tmp_path / "work"
    work.mkdir()
    argv = state.wrap(["/bin/sh", "-c", "hermes-probe-tool"], work)
    proc = await asyncio.create_subprocess_exec(
        *argv, cwd=work, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env={**os.environ}
    )
    await proc.communicate()
    assert proc.returncode == 127


def test_tool_folders_are_the_path_folders_and_the_venv() -> None:
    env = {"PATH": "/a/bin:relative:/b/bin::/a/bin", "VIRTUAL_ENV": "/v"}
    assert tool_folders(env) == (Path("/a/bin"), Path("/b/bin"), Path("/v"))
    assert tool_folders({}) == ()


async def test_a_missing_command_names_a_close_one_that_exists(tmp_tools: Path, tmp_path: Path) -> None:
    _program(tmp_tools / "tools", "hermes-probe3", "three")
    work = tmp_path / "work"
    _program(work / ".venv" / "bin", "hermes-projtool", "project")

    with_three = await run_command("hermes-probe --version", work, 30)
    assert "exit code: 127" in with_three
    assert "`hermes-probe3` exists" in with_three

    in_project = await run_command("hermes-projtool", work, 30)
    assert "`.venv/bin/hermes-projtool` exists" in in_project

    close = await run_command("hermes-probe-tol", work, 30)
    assert "`hermes-probe-tool` exists" in close


async def test_no_hint_without_a_close_command_or_for_other_failures(tmp_tools: Path, tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    nothing_close = await run_command("zzqxw-nonexistent-77", work, 30)
    assert "exit code: 127" in nothing_close
    assert "hint:" not in nothing_close

    other = await run_command("echo 'x: command not found' >&2; exit 3", work, 30)
    assert "hint:" not in other

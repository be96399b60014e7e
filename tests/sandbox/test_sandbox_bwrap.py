"""Commands of the terminal tool inside the real bubblewrap sandbox (skipped where bwrap cannot run).

The layout mimics a user working in their home folder, the hardest case: the working
directory is writable and holds the credential stores and $HERMES_HOME, which must still
be unreadable and unwritable, also through symlinks.
"""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

import pytest
from sandbox_helpers import needs_bwrap

from hermes.agent.safety.confinement import hidden_paths
from hermes.agent.safety.launch import ToolLauncher
from hermes.agent.safety.sandbox import SandboxConfig, resolve_sandbox
from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.terminal import make_terminal_tool, run_command

pytestmark = needs_bwrap


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user home with SSH keys, AWS credentials and a hermes home holding config.toml."""
    home = tmp_path / "user"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "authorized_keys").write_text("ssh-ed25519 AAAA original\n")
    (home / ".ssh" / "id_ed25519").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nsecret\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("aws_secret_access_key = shh\n")
    (home / ".hermes").mkdir()
    (home / ".hermes" / "config.toml").write_text('model = "m"\n')
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("HERMES_HOME", str(home / ".hermes"))
    return home


def launcher(home: Path, *, network: bool = True) -> ToolLauncher:
    hidden = hidden_paths(home / ".hermes", user_home=home)
    state = resolve_sandbox(SandboxConfig(mode="on", network=network, hidden=hidden))
    assert state.active
    return ToolLauncher(sandbox=state)


async def sh(command: str, cwd: Path, tools: ToolLauncher) -> str:
    return await run_command(command, cwd, 30, tools)


async def test_working_directory_is_writable_and_the_rest_read_only(home: Path) -> None:
    out = await sh("echo made > made.txt && cat made.txt; touch /usr/hermes-sandbox-test", home, launcher(home))

    assert "--- stdout ---\nmade" in out
    assert "Read-only file system" in out
    assert (home / "made.txt").read_text() == "made\n"
    assert not Path("/usr/hermes-sandbox-test").exists()


async def test_credential_stores_and_hermes_home_are_hidden(home: Path) -> None:
    out = await sh(
        'for d in .ssh .aws .hermes; do echo "$d holds $(ls -A ~/$d | wc -l)"; done; '
        "cat ~/.ssh/id_ed25519 ~/.aws/credentials $HERMES_HOME/config.toml; "
        "cat /etc/shadow",
        home,
        launcher(home),
    )

    assert "secret" not in out and "shh" not in out and "model" not in out
    assert "--- stdout ---\n.ssh holds 0\n.aws holds 0\n.hermes holds 0\n" in out
    assert "root:" not in out and "/etc/shadow: Permission denied" in out


async def test_the_two_policy_bypasses_fail_by_construction(home: Path) -> None:
    tools = launcher(home)
    symlink = await sh("ln -s ~/.ssh l && echo k >> l/authorized_keys", home, tools)
    config = await sh("echo 'yolo = true' > $HERMES_HOME/config.toml", home, tools)

    assert "Read-only file system" in symlink and "Read-only file system" in config
    assert (home / ".ssh" / "authorized_keys").read_text() == "ssh-ed25519 AAAA original\n"
    assert (home / ".hermes" / "config.toml").read_text() == 'model = "m"\n'


async def test_tmp_is_private(home: Path, tmp_path: Path) -> None:
    host_file = Path("/tmp") / f"hermes-sandbox-host-{tmp_path.name}"
    host_file.write_text("host\n")
    try:
        out = await sh(f"ls {host_file}; echo inside > /tmp/inside-{tmp_path.name} && echo wrote", home, launcher(home))
    finally:
        host_file.unlink()

    assert "No such file or directory" in out and "wrote" in out
    assert not Path(f"/tmp/inside-{tmp_path.name}").exists()


async def test_network_is_on_by_default_and_a_setting_turns_it_off(home: Path) -> None:
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        port = listener.getsockname()[1]
        probe = f"(exec 3<>/dev/tcp/127.0.0.1/{port}) 2>/dev/null && echo connected || echo refused"

        on = await sh(probe, home, launcher(home))
        off = await sh(probe, home, launcher(home, network=False))

    assert "connected" in on
    assert "refused" in off


async def test_hermes_keys_stay_out_inside(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("API_SERVER_KEY", "server-secret")
    monkeypatch.setenv("HERMES_API_KEY", "provider-secret")

    out = await sh("env", home, launcher(home))

    assert "server-secret" not in out and "provider-secret" not in out
    assert f"HOME={home}" in out


async def test_terminal_tool_built_with_the_launcher_runs_sandboxed(home: Path) -> None:
    tool = make_terminal_tool(launcher(home))
    ctx = ToolContext(session_id="s", cwd=home, yolo=True)

    out = await tool.handler({"command": "cat ~/.ssh/authorized_keys; echo $$"}, ctx)

    assert "original" not in out
    assert "No such file or directory" in out
    assert "--- stdout ---\n2\n" in out  # PID 2 in a PID namespace of its own (bwrap is PID 1)


async def test_interrupt_kills_everything_in_the_sandbox(home: Path) -> None:
    marker = f"{home.name}-interrupt"
    task = asyncio.create_task(sh(f"sleep 1000 & sleep 999 & echo {marker}; wait", home, launcher(home)))
    from sandbox_helpers import pids_with, wait_until

    def both_running() -> bool:
        return len(pids_with("sleep 100")) + len(pids_with("sleep 999")) >= 2

    assert await asyncio.to_thread(wait_until, both_running, 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await asyncio.to_thread(wait_until, lambda: not pids_with(marker), 10)


async def test_workdir_outside_the_session_folder_stays_read_only(home: Path, tmp_path: Path) -> None:
    elsewhere = Path("/var/tmp") / f"hermes-sandbox-{tmp_path.name}"
    elsewhere.mkdir()
    try:
        tool = make_terminal_tool(launcher(home))
        ctx = ToolContext(session_id="s", cwd=home, yolo=True)

        out = await tool.handler({"command": "pwd; touch made-here", "workdir": str(elsewhere)}, ctx)

        assert f"--- stdout ---\n{elsewhere}\n" in out and "Read-only file system" in out
        assert not (elsewhere / "made-here").exists()
    finally:
        for child in elsewhere.iterdir():
            child.unlink()
        elsewhere.rmdir()

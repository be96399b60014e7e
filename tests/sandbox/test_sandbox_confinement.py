"""One confinement model in a real bubblewrap: the terminal, the file tools and the policy
agree on what is hidden, what is writable and what is never written."""

from __future__ import annotations

from pathlib import Path

import pytest
from sandbox_helpers import needs_bwrap

from hermes.agent.safety.confinement import Confinement
from hermes.agent.safety.launch import ToolLauncher
from hermes.agent.safety.sandbox import SandboxConfig, resolve_sandbox
from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.files import read_file, write_file
from hermes.agent.tools.registry import default_registry
from hermes.agent.tools.terminal import make_terminal_tool, run_command
from hermes.config import Settings

pytestmark = needs_bwrap

SECRETS = (".netrc", ".pgpass", ".git-credentials", ".vault-token", ".config/gh/hosts.yml", ".docker/config.json")


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "user"
    for name in SECRETS:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text("hunter2\n")
    monkeypatch.setenv("HOME", str(folder))
    return folder


@pytest.fixture
def work(home: Path) -> Path:
    folder = home / "project"
    folder.mkdir()
    return folder


def settings(home: Path, **values: str) -> Settings:
    return Settings.load(env={"HERMES_HOME": str(home / ".hermes"), "HERMES_SANDBOX": "on", **values})


async def run(launcher: ToolLauncher, command: str, cwd: Path, ctx: ToolContext | None = None) -> str:
    tool = make_terminal_tool(launcher)
    return await tool.handler({"command": command}, ctx or ToolContext(session_id="s", cwd=cwd))


async def test_the_sandbox_hides_every_credential_store_of_the_one_list(home: Path, work: Path) -> None:
    launcher = ToolLauncher.from_settings(settings(home))
    out = await run(launcher, " ; ".join(f"cat ~/{name}" for name in SECRETS), work)

    assert "hunter2" not in out


async def test_terminal_and_file_tools_share_the_private_tmp(home: Path, work: Path) -> None:
    launcher = ToolLauncher.from_settings(settings(home))
    ctx = ToolContext(session_id="s", cwd=work, source="api_server", confinement=launcher.confinement)

    made = await run(launcher, 'echo from-terminal > "$TMPDIR/t.txt" && echo "$TMPDIR"', work, ctx)
    tmp = Path(made.split("--- stdout ---\n", 1)[1].split()[0])
    read = await read_file({"path": str(tmp / "t.txt")}, ctx)
    wrote = await write_file({"path": str(tmp / "f.txt"), "content": "from-tool\n"}, ctx)
    seen = await run(launcher, 'cat "$TMPDIR/f.txt"', work, ctx)

    assert launcher.confinement is not None and tmp == launcher.confinement.tmp_dir
    assert "from-terminal" in read and wrote.startswith("Created") and "from-tool" in seen


async def test_writable_roots_are_writable_in_the_sandbox_and_for_the_file_tools(
    home: Path, work: Path, tmp_path: Path
) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    launcher = ToolLauncher.from_settings(settings(home, HERMES_WRITABLE_ROOTS=str(shared)))
    ctx = ToolContext(session_id="s", cwd=work, source="api_server", confinement=launcher.confinement)

    await run(launcher, f"echo ok > {shared}/from-terminal.txt; touch {tmp_path}/not-a-root.txt", work, ctx)
    wrote = await write_file({"path": str(shared / "from-tool.txt"), "content": "ok\n"}, ctx)

    assert (shared / "from-terminal.txt").read_text() == "ok\n" and wrote.startswith("Created")
    assert not (tmp_path / "not-a-root.txt").exists()  # (inside, /tmp is a private tmpfs)


async def test_hermes_own_files_stay_read_only_inside_a_writable_root(home: Path, work: Path) -> None:
    (work / "venv" / "site-packages").mkdir(parents=True)
    policy = Confinement.build(home / ".hermes")
    policy = Confinement(hidden=policy.hidden, protected=(*policy.protected, work / "venv"))
    state = resolve_sandbox(SandboxConfig(mode="on", hidden=policy.hidden, protected=policy.protected))
    launcher = ToolLauncher(sandbox=state, confinement=policy)
    ctx = ToolContext(session_id="s", cwd=work, yolo=True, confinement=policy)

    # The policy blocks the command already; the mounts hold even without it.
    policed = await run(launcher, "echo 'import os' > venv/site-packages/evil.pth", work, ctx)
    out = await run_command("echo 'import os' > venv/site-packages/evil.pth; echo fine > mine.txt", work, 30, launcher)
    tool = await write_file({"path": "venv/site-packages/evil.pth", "content": "import os\n"}, ctx)

    assert policed.startswith("BLOCKED") and "[rule: hermes_own_write]" in policed
    assert "Read-only file system" in out and (work / "mine.txt").read_text() == "fine\n"
    assert tool.startswith("BLOCKED") and not (work / "venv" / "site-packages" / "evil.pth").exists()


@pytest.mark.parametrize("sandbox", ["on", "off"])
async def test_inline_interpreter_code_asks_only_without_the_sandbox(home: Path, work: Path, sandbox: str) -> None:
    launcher = ToolLauncher.from_settings(settings(home, HERMES_SANDBOX=sandbox))
    registry = default_registry(launcher)
    terminal = registry.get("terminal")
    assert terminal is not None and registry.confinement is launcher.confinement

    out = await terminal.handler(
        {"command": "python3 -c 'open(\"marker\", \"w\").write(\"ran\")'"}, ToolContext(session_id="s", cwd=work)
    )

    if sandbox == "on":
        assert (work / "marker").read_text() == "ran", out
    else:
        assert out.startswith("DENIED:") and "[rule: inline_code]" in out
        assert not (work / "marker").exists()

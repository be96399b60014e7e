"""Diagnostics after edits from a real language server (pylsp with pyflakes, from the venv)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import pytest_asyncio

from hermes.agent.lsp.diagnostics import LanguageServers
from hermes.agent.safety.launch import ToolLauncher
from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.files import patch, write_file
from hermes.config import Settings

PYLSP = Path(sys.executable).parent / "pylsp"
pytestmark = pytest.mark.skipif(not PYLSP.exists(), reason="pylsp is installed with the dev extra")

SILENT_SERVER = '''
import json, sys
def read():
    length = 0
    while True:
        line = sys.stdin.buffer.readline()
        if not line:
            sys.exit(0)
        if line.strip() == b"":
            break
        if line.lower().startswith(b"content-length:"):
            length = int(line.split(b":")[1])
    return json.loads(sys.stdin.buffer.read(length))
while True:
    message = read()
    if "id" in message:
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": {"capabilities": {}}}).encode()
        sys.stdout.buffer.write(b"Content-Length: %d\\r\\n\\r\\n" % len(body) + body)
        sys.stdout.buffer.flush()
'''


@pytest_asyncio.fixture
async def servers() -> AsyncIterator[LanguageServers]:
    made = LanguageServers(configured={"python": (str(PYLSP),)}, timeout=30.0)
    try:
        yield made
    finally:
        await made.aclose()


async def test_a_broken_name_is_reported_and_a_fix_clears_it(servers: LanguageServers, tmp_path: Path) -> None:
    target = tmp_path / "greet.py"
    before = "def greet(name):\n    return 'hi ' + name\n"
    broken = "def greet(name):\n    return 'hi ' + nmae\n"
    report = await servers.after_edit(target, before, broken, tmp_path)
    lines = report.splitlines()
    assert lines[0] == "Diagnostics from pylsp after this edit: 1 new problem"
    assert lines[1].startswith("  greet.py:2:") and "error: undefined name 'nmae' [pyflakes]" in lines[1]
    fixed = await servers.after_edit(target, broken, before, tmp_path)
    assert fixed == ""


async def test_a_problem_that_was_already_there_is_not_new(servers: LanguageServers, tmp_path: Path) -> None:
    target = tmp_path / "old.py"
    before = "x = missing_one\n"
    after = "\n\n# moved down\nx = missing_one\ny = 2\n"
    assert await servers.after_edit(target, before, after, tmp_path) == ""
    worse = after + "z = missing_two\n"
    report = await servers.after_edit(target, after, worse, tmp_path)
    assert "missing_two" in report and "missing_one" not in report


async def test_a_new_file_reports_all_and_says_its_past_is_unknown(servers: LanguageServers, tmp_path: Path) -> None:
    report = await servers.after_edit(tmp_path / "new.py", None, "print(undefined)\n", tmp_path)
    assert "1 new problem (the file's earlier state is unknown" in report and "undefined" in report


async def test_style_warnings_and_other_languages_are_left_out(servers: LanguageServers, tmp_path: Path) -> None:
    ugly = "x=1;y=2\nimport os\n"  # pycodestyle complains; pyflakes: an unused import is a warning
    report = await servers.after_edit(tmp_path / "style.py", "", ugly, tmp_path)
    assert "pycodestyle" not in report
    assert await servers.after_edit(tmp_path / "notes.txt", "", "anything", tmp_path) == ""


async def test_write_file_and_patch_carry_the_diagnostics(servers: LanguageServers, tmp_path: Path) -> None:
    ctx = ToolContext(session_id="lsp", cwd=tmp_path, diagnostics=servers)
    created = await write_file({"path": "app.py", "content": "import json\nprint(json.dumps({}))\n"}, ctx)
    assert created.startswith("Created") and "Diagnostics" not in created
    patched = await patch({"path": "app.py", "old_string": "json.dumps({})", "new_string": "jsn.dumps({})"}, ctx)
    assert "Patched" in patched and "undefined name 'jsn'" in patched


async def test_a_server_that_never_answers_costs_at_most_the_timeout(tmp_path: Path) -> None:
    script = tmp_path / "silent.py"
    script.write_text(SILENT_SERVER)
    servers = LanguageServers(configured={"python": (sys.executable, str(script))}, timeout=1.5)
    try:
        loop = asyncio.get_running_loop()
        started = loop.time()
        assert await servers.after_edit(tmp_path / "a.py", "", "x = y\n", tmp_path) == ""
        assert loop.time() - started < 5
    finally:
        await servers.aclose()


async def test_a_server_that_cannot_start_is_said_once(tmp_path: Path) -> None:
    servers = LanguageServers(configured={"python": (str(tmp_path / "no-such-lsp"),)}, timeout=5)
    try:
        first = await servers.after_edit(tmp_path / "a.py", "", "x = 1\n", tmp_path)
        assert first.startswith("(no diagnostics: no-such-lsp did not start")
        assert await servers.after_edit(tmp_path / "a.py", "x = 1\n", "x = 2\n", tmp_path) == ""
    finally:
        await servers.aclose()


@pytest.mark.skipif(not Path("/usr/bin/bwrap").exists(), reason="bubblewrap is not installed")
async def test_the_server_runs_under_the_supervisor_and_the_sandbox(tmp_path: Path) -> None:
    try:
        launcher = ToolLauncher.from_settings(Settings.load({"home": str(tmp_path / "home"), "sandbox": "on"}, env={}))
    except Exception as exc:  # noqa: BLE001 - a machine where bwrap cannot run
        pytest.skip(f"the sandbox cannot run here: {exc}")
    servers = LanguageServers(launcher=launcher, configured={"python": (str(PYLSP),)}, timeout=30)
    try:
        report = await servers.after_edit(tmp_path / "s.py", "", "print(nope)\n", tmp_path)
        assert "undefined name 'nope'" in report
        (task,) = servers._servers.values()
        server = task.result()
        assert server is not None
        command = Path(f"/proc/{server.connection.process.pid}/cmdline").read_bytes().split(b"\0")
        assert any(part.endswith(b"_supervisor.py") for part in command) and b"bwrap" in b" ".join(command)
    finally:
        await servers.aclose()


def test_chat_q_shows_the_model_what_its_edit_broke(tmp_path: Path) -> None:
    import os
    import subprocess

    from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply

    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.toml").write_text(f'[lsp.python]\ncommand = ["{PYLSP}"]\n')
    work = tmp_path / "work"
    work.mkdir()
    (work / "calc.py").write_text("def total(items):\n    return sum(items)\n")
    with ScriptedUpstream.in_thread() as upstream:
        edit = {"path": "calc.py", "old_string": "sum(items)", "new_string": "sum(itmes)"}
        upstream.enqueue(tool_reply([call("patch", edit)]), text_reply("Fixed the typo? Not yet."))
        env = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_", "OPENAI_"))}
        env.update(
            HERMES_HOME=str(home), HERMES_BASE_URL=upstream.base_url, HERMES_MODEL="scripted-model",
            HERMES_SANDBOX="off", HERMES_LSP_TIMEOUT="30", HERMES_STREAM_STALE_TIMEOUT="60",
            PYTHONPATH=str(Path(__file__).resolve().parents[2]) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        )  # fmt: skip
        proc = subprocess.run(
            [sys.executable, "-m", "hermes", "chat", "-q", "rename the loop variable"],
            cwd=work, env=env, input="", capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        (tool,) = [m for m in upstream.requests[1].messages if m["role"] == "tool"]
    assert "Patched" in tool["content"]
    assert "Diagnostics from pylsp after this edit: 1 new problem" in tool["content"]
    assert "calc.py:2:" in tool["content"] and "undefined name 'itmes'" in tool["content"]

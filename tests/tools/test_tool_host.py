"""The tools' host seam (hermes/agent/tool_host.py): file tools and the terminal through a
front end's own files and commands, after the same checks as without one.

The host here is a real in-memory editor (buffers by path) and a recording command runner.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hermes.agent.tool_host import ToolHost
from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.files import patch, read_file, write_file
from hermes.agent.tools.terminal import terminal
from hermes.agent.types import ApprovalDecision, ApprovalRequest


@dataclass
class Buffers:
    """An editor's open buffers; a path without one reads from the disk."""

    texts: dict[Path, str] = field(default_factory=dict)
    reads: list[Path] = field(default_factory=list)

    async def read_text(self, path: Path) -> str:
        self.reads.append(path)
        return self.texts[path] if path in self.texts else path.read_text(encoding="utf-8")

    async def write_text(self, path: Path, text: str) -> None:
        self.texts[path] = text


@dataclass
class Commands:
    ran: list[tuple[str, Path, float]] = field(default_factory=list)

    async def run(self, command: str, cwd: Path, timeout: float) -> str:
        self.ran.append((command, cwd, timeout))
        return "exit code: 0\n--- output ---\nran in the editor"


def _ctx(cwd: Path, host: ToolHost, answer: ApprovalDecision | None = None) -> ToolContext:
    async def approve(request: ApprovalRequest) -> ApprovalDecision:
        assert answer is not None
        return answer

    return ToolContext(session_id="s", cwd=cwd, host=host, approve=approve if answer is not None else None)


async def test_file_tools_read_and_write_the_hosts_buffers_not_the_disk(tmp_path: Path) -> None:
    source = tmp_path / "a.py"
    source.write_text("x = 'disk'\n")
    buffers = Buffers({source: "x = 'buffer'\ny = 2\n"})
    ctx = _ctx(tmp_path, ToolHost(files=buffers))

    assert await read_file({"path": "a.py", "offset": 2}, ctx) == "2|y = 2\n[Showing lines 2-2 of 2; end of file.]"
    patched = await patch({"path": "a.py", "old_string": "'buffer'", "new_string": "'edited'"}, ctx)
    assert patched.startswith(f"Patched {source}: replaced 1 occurrence")
    assert buffers.texts[source] == "x = 'edited'\ny = 2\n"
    unchanged = await write_file({"path": "a.py", "content": "x = 'edited'\ny = 2\n"}, ctx)
    assert unchanged.startswith("No change")
    await write_file({"path": "new.py", "content": "z = 3\n"}, ctx)
    assert buffers.texts[tmp_path / "new.py"] == "z = 3\n"
    assert source.read_text() == "x = 'disk'\n" and not (tmp_path / "new.py").exists()


async def test_hidden_paths_and_refused_writes_never_reach_the_host(tmp_path: Path, hermes_home: Path) -> None:
    hermes_home.mkdir()
    (hermes_home / "config.toml").write_text('api_key = "sk-stored"\n')
    buffers = Buffers()
    ctx = _ctx(tmp_path, ToolHost(files=buffers), answer=ApprovalDecision.DENY)

    hidden = await read_file({"path": str(hermes_home / "config.toml")}, ctx)
    outside = await write_file({"path": "/usr/local/hermes-host-test.txt", "content": "x"}, ctx)

    assert "[rule: hidden_path]" in hidden
    assert outside.startswith("DENIED")
    assert buffers.reads == [] and buffers.texts == {}


async def test_terminal_runs_approved_commands_through_the_host(tmp_path: Path) -> None:
    commands = Commands()
    denied = _ctx(tmp_path, ToolHost(commands=commands), answer=ApprovalDecision.DENY)
    allowed = _ctx(tmp_path, ToolHost(commands=commands), answer=ApprovalDecision.ONCE)

    refused = await terminal({"command": "rm -r build"}, denied)
    ran = await terminal({"command": "rm -r build", "timeout": 5}, allowed)
    blocked = await terminal({"command": "rm -rf /"}, allowed)

    assert refused.startswith("DENIED") and blocked.startswith("BLOCKED")
    assert ran.endswith("ran in the editor")
    assert commands.ran == [("rm -r build", tmp_path, 5.0)]

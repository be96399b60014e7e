"""Turn modes in the engine: plan mode refuses writes and changing commands (attacks), the
model is told it plans, accept-edits widens nothing beyond workspace edits."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from hermes.agent.events import ApprovalRequested, ToolCompleted
from hermes.agent.modes import PLAN_NOTE, next_mode, parse_mode
from hermes.agent.tools.read_only_commands import not_read_only
from hermes.agent.tools.registry import default_registry
from hermes.agent.types import TurnRequest
from hermes.testing.turns import collect_turn as run
from hermes.testing.upstream import call, text_reply, tool_reply

ATTACKS = [
    ("write_file", {"path": "new.txt", "content": "pwned"}),
    ("write_file", {"path": "notes.txt", "content": "pwned"}),
    ("patch", {"path": "notes.txt", "old_string": "alpha", "new_string": "pwned"}),
    ("terminal", {"command": "echo x > f"}),
    ("terminal", {"command": "sed -i s/alpha/pwned/ notes.txt"}),
    ("terminal", {"command": "python3 -c \"open('f','w').write('x')\""}),
    ("terminal", {"command": "git add -A && git commit -qm pwned"}),
    ("terminal", {"command": "git commit --allow-empty -qm pwned"}),
    ("terminal", {"command": "cat notes.txt | tee copy.txt"}),
    ("terminal", {"command": "ls $(touch made.txt)"}),
    ("terminal", {"command": "bash -c 'echo x > f'"}),
    ("terminal", {"command": "find . -name notes.txt -delete"}),
    ("terminal", {"command": "rm notes.txt"}),
]


def _snapshot(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes()
        for p in sorted(folder.rglob("*"))
        if p.is_file() and ".git" not in p.relative_to(folder).parts[:1]
    }


def _git_head(folder: Path) -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=folder, capture_output=True, text=True).stdout


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "notes.txt").write_text("alpha\nbeta\n")
    env = {"GIT_CONFIG_GLOBAL": "/dev/null", "GIT_CONFIG_NOSYSTEM": "1"}
    for argv in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@e", "commit", "-qm", "init"]):
        subprocess.run(["git", *argv], cwd=folder, check=True, env={**env, "PATH": "/usr/bin:/bin"})
    return folder


async def test_plan_mode_refuses_every_write_and_changing_command(upstream, make_agent, workspace):
    agent = make_agent(tools=default_registry())
    calls = [call(name, args, id=f"c{i}") for i, (name, args) in enumerate(ATTACKS)]
    upstream.enqueue(tool_reply(calls), text_reply("Here is my plan."))
    before, head = _snapshot(workspace), _git_head(workspace)
    events, result = await run(agent, TurnRequest(input="change things", cwd=str(workspace), mode="plan", yolo=True))
    assert result.status == "completed"
    done = {e.call_id: e for e in events if isinstance(e, ToolCompleted)}
    assert len(done) == len(ATTACKS)
    for i, (name, _) in enumerate(ATTACKS):
        completed = done[f"c{i}"]
        assert completed.is_error, (name, completed.result)
        assert completed.result.startswith("DENIED: plan mode is on"), completed.result
    assert not [e for e in events if isinstance(e, ApprovalRequested)]  # refused before any approval
    assert _snapshot(workspace) == before and _git_head(workspace) == head
    # What the model read back: the refusals, naming plan mode.
    tool_messages = [m for m in upstream.requests[1].messages if m["role"] == "tool"]
    assert all("plan mode is on" in m["content"] for m in tool_messages)


async def test_plan_mode_runs_read_only_tools_and_commands(upstream, make_agent, workspace):
    agent = make_agent(tools=default_registry())
    upstream.enqueue(
        tool_reply(
            [
                call("read_file", {"path": "notes.txt"}, id="r"),
                call("terminal", {"command": "ls -la && cat notes.txt | grep alpha"}, id="t1"),
                call("terminal", {"command": "git status --short; git log --oneline -1; git diff"}, id="t2"),
                call("search_files", {"pattern": "beta"}, id="s"),
            ]
        ),
        text_reply("Plan: nothing to change."),
    )
    events, result = await run(agent, TurnRequest(input="look", cwd=str(workspace), mode="plan"))
    done = {e.call_id: e for e in events if isinstance(e, ToolCompleted)}
    assert not any(d.is_error for d in done.values()), {k: d.result for k, d in done.items()}
    assert "1|alpha" in done["r"].result
    assert "notes.txt" in done["t1"].result and "exit code: 0" in done["t1"].result
    assert "init" in done["t2"].result


async def test_plan_mode_tells_the_model_in_its_copy_of_the_user_message_only(upstream, make_agent, store, workspace):
    agent = make_agent(tools=default_registry())
    upstream.enqueue(text_reply("plan A"), text_reply("done"))
    _, first = await run(agent, TurnRequest(input="make a plan", cwd=str(workspace), mode="plan"))
    sent = upstream.requests[0].messages
    assert sent[0]["role"] == "system" and PLAN_NOTE not in sent[0]["content"]
    assert sent[-1] == {"role": "user", "content": f"make a plan\n\n{PLAN_NOTE}"}
    # The same tools are offered in every mode (the prompt cache keeps them).
    tools = [t["function"]["name"] for t in upstream.requests[0].body["tools"]]
    assert {"write_file", "patch", "terminal"} <= set(tools)
    # Stored as typed; the next turn, in default mode, carries no note and the same system prompt.
    assert [m["content"] for m in store.history(first.session_id) if m["role"] == "user"] == ["make a plan"]
    await run(agent, TurnRequest(input="go ahead", session_id=first.session_id, cwd=str(workspace)))
    again = upstream.requests[1].messages
    assert again[0] == sent[0]
    assert all(PLAN_NOTE not in str(m.get("content")) for m in again)
    assert [t["function"]["name"] for t in upstream.requests[1].body["tools"]] == tools


async def test_accept_edits_writes_in_the_workspace_and_approves_nothing_else(
    upstream, make_agent, workspace, tmp_path
):
    agent = make_agent(tools=default_registry())
    outside = tmp_path / "outside.txt"
    (workspace / ".git" / "config").write_text("[core]\n")
    upstream.enqueue(
        tool_reply(
            [
                call("write_file", {"path": "notes.txt", "content": "edited\n"}, id="in"),
                call("write_file", {"path": str(outside), "content": "pwned"}, id="out"),
                call("write_file", {"path": ".git/config", "content": "[core]\nfsmonitor = evil\n"}, id="git"),
                call("write_file", {"path": ".envrc", "content": "evil"}, id="envrc"),
                call("terminal", {"command": "rm -r notes.txt"}, id="cmd"),
            ]
        ),
        text_reply("ok"),
    )
    # Nobody to approve: whatever asks is refused.
    events, _ = await run(agent, TurnRequest(input="edit", cwd=str(workspace), mode="accept-edits"))
    done = {e.call_id: e for e in events if isinstance(e, ToolCompleted)}
    assert not done["in"].is_error and (workspace / "notes.txt").read_text() == "edited\n"
    for refused in ("out", "git", "envrc", "cmd"):
        assert done[refused].is_error and done[refused].result.startswith("DENIED"), done[refused].result
    assert not outside.exists() and not (workspace / ".envrc").exists()
    assert (workspace / ".git" / "config").read_text() == "[core]\n"
    assert (workspace / "notes.txt").exists()
    asked = {e.call_id for e in events if isinstance(e, ApprovalRequested)}
    assert asked == {"out", "git", "envrc", "cmd"}


def test_modes_parse_and_cycle():
    assert parse_mode(" Plan ") == "plan" and parse_mode("accept_edits") == "accept-edits"
    with pytest.raises(ValueError, match="default, accept-edits, plan"):
        parse_mode("yolo")
    assert [next_mode(m) for m in ("default", "accept-edits", "plan")] == ["accept-edits", "plan", "default"]


@pytest.mark.parametrize(
    "command",
    ["ls -la", "cat a | grep x | wc -l", "git status", "git diff HEAD~1", "git log --oneline", "rg foo",
     "grep -rn x .", "sed -n 1,5p f", "find . -name '*.py'", "ls 2>&1 >/dev/null", "git stash list"],
)  # fmt: skip
def test_read_only_commands_pass(command):
    assert not_read_only(command) is None


@pytest.mark.parametrize(
    "command",
    ["echo x > f", "sed -i s/a/b/ f", "sed 's/a/b/w out' f", "python -c 'print(1)'", "git commit -m x",
     "git stash", "git -c core.pager=sh log", "git diff --output=x", "ls; rm f", "cat $(rm f)",
     "diff <(ls) >(tee f)", "x=1 ls", "./ls", "find . -exec rm {} +", "sort -o f x", "uniq a b",
     "ls &> out", "awk '{print > \"f\"}' x", "unknown-tool", "f() { rm x; }; f", "fd -Hx rm", "rg -iz x",
     "git grep -iO x", "sed 's/a/b/e' f", "sed '1e rm x' f", "awk 'BEGIN{system(\"rm x\")}'"],
)  # fmt: skip
def test_changing_or_unknown_commands_are_refused(command):
    assert not_read_only(command) is not None

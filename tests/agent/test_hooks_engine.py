"""Hooks in the engine, with real hook scripts in tmp folders and the scripted upstream:
blocking, approving (never a protected path), prompt context and refusal, a Stop hook that
continues once, a hook that hangs, the stdin JSON, .claude/settings.json compatibility."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import time
from pathlib import Path

import pytest

from hermes.agent.events import ApprovalRequested, Status, ToolCompleted
from hermes.agent.hooks import Hooks
from hermes.agent.hooks.context import CONTEXT_HEADER
from hermes.agent.safety.launch import ToolLauncher
from hermes.agent.tools.registry import default_registry
from hermes.agent.types import TurnRequest
from hermes.error_codes import PROMPT_BLOCKED
from hermes.hooks_config import HookConfig
from hermes.testing.turns import collect_turn as run
from hermes.testing.upstream import call, text_reply, tool_reply


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    folder = tmp_path / "ws"
    folder.mkdir()
    (folder / "victim.txt").write_text("keep me\n")
    (folder / ".git").mkdir()
    (folder / ".git" / "config").write_text("[core]\n")
    return folder


def script(folder: Path, name: str, body: str) -> str:
    """A hook script file (python when `body` starts with `import`, else bash); its command line."""
    path = folder / name
    if body.startswith("import"):
        path.write_text("#!/usr/bin/env python3\n" + body)
    else:
        path.write_text("#!/bin/bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


def hooks(*configured: HookConfig, claude: bool = False, stop_limit: int = 3) -> Hooks:
    return Hooks(tuple(configured), ToolLauncher(), claude_compat=claude, stop_limit=stop_limit)


def tool_messages(request: object) -> list[dict[str, object]]:
    return [m for m in request.messages if m["role"] == "tool"]  # type: ignore[attr-defined]


def hook_statuses(events: list[object]) -> list[str]:
    return [e.text for e in events if isinstance(e, Status) and e.kind == "hook"]


BLOCK_RM = """import json, sys
data = json.load(sys.stdin)
if "rm" in data["tool_input"].get("command", ""):
    print("rm is not allowed here; move files to trash/ instead", file=sys.stderr)
    sys.exit(2)
"""


async def test_exit_2_blocks_the_command_and_its_stderr_is_the_result(upstream, make_agent, workspace, tmp_path):
    agent = make_agent(tools=default_registry())
    agent.hooks = hooks(HookConfig("PreToolUse", script(tmp_path, "guard.py", BLOCK_RM), matcher="terminal"))
    upstream.enqueue(
        tool_reply([call("terminal", {"command": "rm -f victim.txt"}, id="c1")]),
        tool_reply([call("terminal", {"command": "echo fine"}, id="c2")]),
        text_reply("ok"),
    )
    events, result = await run(agent, TurnRequest(input="clean up", cwd=str(workspace), yolo=True))
    assert result.status == "completed"
    assert (workspace / "victim.txt").read_text() == "keep me\n"  # not run, even with --yolo
    done = {e.call_id: e for e in events if isinstance(e, ToolCompleted)}
    assert done["c1"].is_error and done["c1"].result == "rm is not allowed here; move files to trash/ instead"
    assert not done["c2"].is_error and "fine" in done["c2"].result  # other commands run
    # What the model read next: the hook's stderr as the tool result.
    assert tool_messages(upstream.requests[1])[-1]["content"] == "rm is not allowed here; move files to trash/ instead"
    assert any("PreToolUse hook on terminal blocked" in s for s in hook_statuses(events))


async def test_json_decision_block_blocks_with_its_reason(upstream, make_agent, workspace, tmp_path):
    agent = make_agent(tools=default_registry())
    body = 'echo \'{"decision": "block", "reason": "writes are frozen today"}\'\n'
    agent.hooks = hooks(HookConfig("PreToolUse", script(tmp_path, "freeze.sh", body), matcher="write_file|patch"))
    upstream.enqueue(tool_reply([call("write_file", {"path": "new.txt", "content": "x"}, id="w")]), text_reply("ok"))
    events, _ = await run(agent, TurnRequest(input="write", cwd=str(workspace), yolo=True))
    assert not (workspace / "new.txt").exists()
    assert tool_messages(upstream.requests[1])[-1]["content"] == "writes are frozen today"


APPROVE = 'echo \'{"decision": "approve", "reason": "trusted by the team hook"}\'\n'


async def test_decision_approve_runs_what_needs_approval_with_nobody_to_approve(
    upstream, make_agent, workspace, tmp_path
):
    (workspace / "build").mkdir()
    (workspace / "build" / "out.o").write_text("x")
    agent = make_agent(tools=default_registry())
    # Without the hook: nobody to approve, so it is denied.
    upstream.enqueue(tool_reply([call("terminal", {"command": "rm -r build"}, id="a")]), text_reply("ok"))
    events, _ = await run(agent, TurnRequest(input="clean", cwd=str(workspace)))
    denied = next(e for e in events if isinstance(e, ToolCompleted))
    assert denied.result.startswith("DENIED") and (workspace / "build").exists()
    # With an approving hook: it runs, and nobody was asked.
    agent.hooks = hooks(HookConfig("PreToolUse", script(tmp_path, "approve.sh", APPROVE), matcher="Bash"))
    upstream.enqueue(tool_reply([call("terminal", {"command": "rm -r build"}, id="b")]), text_reply("ok"))
    events, _ = await run(agent, TurnRequest(input="clean", cwd=str(workspace)))
    ran = next(e for e in events if isinstance(e, ToolCompleted))
    assert not ran.is_error, ran.result
    assert not (workspace / "build").exists()
    assert not [e for e in events if isinstance(e, ApprovalRequested)]


async def test_decision_approve_never_covers_protected_paths(upstream, make_agent, workspace, tmp_path):
    agent = make_agent(tools=default_registry())
    agent.hooks = hooks(HookConfig("PreToolUse", script(tmp_path, "approve.sh", APPROVE)))
    upstream.enqueue(
        tool_reply(
            [
                call("write_file", {"path": ".git/config", "content": "[core]\nfsmonitor = evil\n"}, id="w"),
                call("terminal", {"command": "echo '[core] fsmonitor=evil' > .git/config"}, id="t"),
                call("patch", {"path": ".git/config", "old_string": "[core]", "new_string": "[x]"}, id="p"),
            ]
        ),
        text_reply("ok"),
    )
    events, _ = await run(agent, TurnRequest(input="tweak git", cwd=str(workspace)))
    done = {e.call_id: e for e in events if isinstance(e, ToolCompleted)}
    for call_id in ("w", "t", "p"):
        assert done[call_id].is_error and done[call_id].result.startswith("DENIED"), done[call_id].result
    assert (workspace / ".git" / "config").read_text() == "[core]\n"


async def test_plan_mode_still_refuses_what_a_hook_approves(upstream, make_agent, workspace, tmp_path):
    agent = make_agent(tools=default_registry())
    agent.hooks = hooks(HookConfig("PreToolUse", script(tmp_path, "approve.sh", APPROVE)))
    upstream.enqueue(tool_reply([call("terminal", {"command": "rm victim.txt"}, id="t")]), text_reply("plan"))
    events, _ = await run(agent, TurnRequest(input="x", cwd=str(workspace), mode="plan"))
    done = next(e for e in events if isinstance(e, ToolCompleted))
    assert done.result.startswith("DENIED: plan mode is on") and (workspace / "victim.txt").exists()


async def test_the_hook_reads_its_stdin_json_fields(upstream, make_agent, workspace, tmp_path):
    log = tmp_path / "hook-log.jsonl"
    body = f"import sys\nopen({str(log)!r}, 'a').write(sys.stdin.read())\n"
    recorder = script(tmp_path, "record.py", body)
    agent = make_agent(tools=default_registry())
    agent.hooks = hooks(
        HookConfig("PreToolUse", recorder, matcher="terminal"),
        HookConfig("PostToolUse", recorder, matcher="*"),
        HookConfig("UserPromptSubmit", recorder),
        HookConfig("Stop", recorder),
    )
    upstream.enqueue(tool_reply([call("terminal", {"command": "echo hello-hooks"}, id="c")]), text_reply("done"))
    _, result = await run(agent, TurnRequest(input="say hello", cwd=str(workspace)))
    seen = [json.loads(line) for line in log.read_text().splitlines()]
    assert [s["hook_event_name"] for s in seen] == ["UserPromptSubmit", "PreToolUse", "PostToolUse", "Stop"]
    assert all(s["session_id"] == result.session_id and s["cwd"] == str(workspace) for s in seen)
    prompt, pre, post, stop = seen
    assert prompt["prompt"] == "say hello"
    assert pre["tool_name"] == "terminal" and pre["tool_input"] == {"command": "echo hello-hooks"}
    assert post["tool_name"] == "terminal" and "hello-hooks" in post["tool_response"]
    assert post["tool_is_error"] is False
    assert stop["stop_hook_active"] is False


async def test_user_prompt_submit_adds_context_for_the_model_only(upstream, make_agent, store, workspace, tmp_path):
    agent = make_agent(tools=default_registry())
    body = "echo 'The deploy freeze is on until Friday.'\n"
    agent.hooks = hooks(HookConfig("UserPromptSubmit", script(tmp_path, "ctx.sh", body)))
    upstream.enqueue(text_reply("noted"))
    _, result = await run(agent, TurnRequest(input="can we deploy?", cwd=str(workspace)))
    sent = upstream.requests[0].messages[-1]
    assert sent["role"] == "user"
    assert sent["content"] == f"can we deploy?\n\n{CONTEXT_HEADER}\nThe deploy freeze is on until Friday."
    stored = [m["content"] for m in store.history(result.session_id) if m["role"] == "user"]
    assert stored == ["can we deploy?"]


async def test_user_prompt_submit_exit_2_refuses_the_prompt(upstream, make_agent, store, workspace, tmp_path):
    agent = make_agent(tools=default_registry())
    body = "echo 'prompts must not contain passwords' >&2; exit 2\n"
    agent.hooks = hooks(HookConfig("UserPromptSubmit", script(tmp_path, "refuse.sh", body)))
    events, result = await run(agent, TurnRequest(input="my password is hunter2", cwd=str(workspace)))
    assert result.status == "failed" and result.error_code == PROMPT_BLOCKED
    assert result.error == "prompts must not contain passwords"
    assert upstream.requests == []  # no model call
    assert store.history(result.session_id) == []  # the prompt is not stored
    assert store.get_session(result.session_id).title is None  # not even as the title


STOP_ONCE = """import json, sys
data = json.load(sys.stdin)
if not data["stop_hook_active"]:
    print(json.dumps({"decision": "block", "reason": "Run the tests before you finish."}))
"""


async def test_a_stop_hook_makes_the_turn_go_on_once(upstream, make_agent, store, workspace, tmp_path):
    agent = make_agent(tools=default_registry())
    agent.hooks = hooks(HookConfig("Stop", script(tmp_path, "stop.py", STOP_ONCE)))
    upstream.enqueue(text_reply("All done."), text_reply("Tests pass; done now."))
    events, result = await run(agent, TurnRequest(input="fix it", cwd=str(workspace)))
    assert result.status == "completed" and result.final_text == "Tests pass; done now."
    assert len(upstream.requests) == 2
    tail = upstream.requests[1].messages[-2:]
    assert tail == [
        {"role": "assistant", "content": "All done."},
        {"role": "user", "content": "Run the tests before you finish."},
    ]
    history = store.history(result.session_id)
    assert [(m["role"], m["content"]) for m in history] == [
        ("user", "fix it"),
        ("assistant", "All done."),
        ("user", "Run the tests before you finish."),
        ("assistant", "Tests pass; done now."),
    ]


async def test_a_stop_hook_goes_on_at_most_the_limit(upstream, make_agent, workspace, tmp_path):
    agent = make_agent(tools=default_registry())
    body = 'echo "not yet" >&2; exit 2\n'
    agent.hooks = hooks(HookConfig("Stop", script(tmp_path, "never.sh", body)), stop_limit=2)
    upstream.enqueue(text_reply("one"), text_reply("two"), text_reply("three"))
    events, result = await run(agent, TurnRequest(input="go", cwd=str(workspace)))
    assert result.status == "completed" and result.final_text == "three"
    assert len(upstream.requests) == 3
    assert any("hooks_stop_limit" in s for s in hook_statuses(events))


async def test_a_hook_that_hangs_is_killed_and_the_turn_goes_on(upstream, make_agent, workspace, tmp_path):
    pid_file = tmp_path / "hang.pid"
    body = f"sleep 60 &\necho $! > {pid_file}\nwait\n"
    agent = make_agent(tools=default_registry())
    agent.hooks = hooks(HookConfig("PreToolUse", script(tmp_path, "hang.sh", body), timeout=1))
    upstream.enqueue(tool_reply([call("terminal", {"command": "echo still-ran"}, id="c")]), text_reply("ok"))
    started = time.monotonic()
    events, result = await run(agent, TurnRequest(input="go", cwd=str(workspace)))
    assert time.monotonic() - started < 15
    assert result.status == "completed"
    done = next(e for e in events if isinstance(e, ToolCompleted))
    assert "still-ran" in done.result and not done.is_error
    assert any("timed out after 1s" in s for s in hook_statuses(events))
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid), "the hook's child outlived its time limit"


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


async def test_a_failing_hook_is_shown_and_never_stops_the_turn(upstream, make_agent, workspace, tmp_path):
    agent = make_agent(tools=default_registry())
    agent.hooks = hooks(
        HookConfig("PreToolUse", "echo broken >&2; exit 1"),
        HookConfig("UserPromptSubmit", str(tmp_path / "missing-hook.sh")),
    )
    upstream.enqueue(tool_reply([call("terminal", {"command": "echo ran"}, id="c")]), text_reply("ok"))
    events, result = await run(agent, TurnRequest(input="go", cwd=str(workspace)))
    assert result.status == "completed"
    done = next(e for e in events if isinstance(e, ToolCompleted))
    assert "ran" in done.result and not done.is_error
    statuses = hook_statuses(events)
    assert any("failed with exit code 1: broken" in s for s in statuses)
    assert any("UserPromptSubmit hook" in s and "exit code 127" in s for s in statuses)


async def test_hooks_get_the_tool_environment_not_hermes_secrets(
    upstream, make_agent, workspace, tmp_path, monkeypatch
):
    monkeypatch.setenv("HERMES_API_KEY", "sk-secret-hermes-key")
    monkeypatch.setenv("SOME_RANDOM_TOKEN", "tok-123")
    env_file = tmp_path / "env.txt"
    agent = make_agent(tools=default_registry())
    agent.hooks = hooks(HookConfig("UserPromptSubmit", f"env > {env_file}; pwd >> {env_file}"))
    upstream.enqueue(text_reply("ok"))
    await run(agent, TurnRequest(input="go", cwd=str(workspace)))
    seen = env_file.read_text()
    assert "sk-secret-hermes-key" not in seen and "tok-123" not in seen
    assert "PATH=" in seen and seen.splitlines()[-1] == str(workspace)
    assert f"CLAUDE_PROJECT_DIR={workspace}\n" in seen


async def test_session_start_context_joins_the_new_sessions_prompt(upstream, make_agent, store, workspace, tmp_path):
    agent = make_agent(tools=default_registry())
    count = tmp_path / "starts"
    body = f"echo x >> {count}; echo 'Branch: main, 3 open issues.'\n"
    agent.hooks = hooks(HookConfig("SessionStart", script(tmp_path, "start.sh", body)))
    upstream.enqueue(text_reply("hi"), text_reply("again"))
    _, first = await run(agent, TurnRequest(input="hello", cwd=str(workspace)))
    await run(agent, TurnRequest(input="more", session_id=first.session_id, cwd=str(workspace)))
    system = upstream.requests[0].messages[0]
    assert system["role"] == "system" and "Branch: main, 3 open issues." in system["content"]
    assert upstream.requests[1].messages[0] == system  # kept byte for byte: the prompt cache holds
    assert count.read_text().count("x") == 1  # once per new session, not per turn


CLAUDE_GUARD = """import json, sys
data = json.load(sys.stdin)
open(sys.argv[1], "w").write(json.dumps(data))
if data["tool_name"] == "Bash" and "rm" in data["tool_input"]["command"]:
    print("Blocked by the project's Claude Code hook", file=sys.stderr)
    sys.exit(2)
"""


async def test_claude_settings_json_hooks_match_bash_to_terminal(upstream, make_agent, workspace, tmp_path):
    seen = tmp_path / "seen.json"
    guard = script(tmp_path, "claude_guard.py", CLAUDE_GUARD)
    settings = {
        "hooks": {
            "PreToolUse": [
                {"matcher": "Bash", "hooks": [{"type": "command", "command": f"{guard} {seen}", "timeout": 30}]}
            ]
        }
    }
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(json.dumps(settings))
    agent = make_agent(tools=default_registry())
    # Without hooks_claude_compat the file is not read.
    agent.hooks = hooks(claude=False)
    upstream.enqueue(tool_reply([call("read_file", {"path": "victim.txt"}, id="r")]), text_reply("ok"))
    await run(agent, TurnRequest(input="x", cwd=str(workspace)))
    assert not seen.exists()
    agent.hooks = hooks(claude=True)
    upstream.enqueue(
        tool_reply([call("read_file", {"path": "victim.txt"}, id="r")]),  # not Bash: the hook does not run
        tool_reply([call("terminal", {"command": "rm -f victim.txt"}, id="t")]),
        text_reply("ok"),
    )
    events, _ = await run(agent, TurnRequest(input="x", cwd=str(workspace), yolo=True))
    assert (workspace / "victim.txt").exists()
    done = {e.call_id: e for e in events if isinstance(e, ToolCompleted)}
    assert done["t"].result == "Blocked by the project's Claude Code hook"
    data = json.loads(seen.read_text())
    assert data["tool_name"] == "Bash" and data["hermes_tool_name"] == "terminal"
    assert data["hook_event_name"] == "PreToolUse" and data["tool_input"]["command"] == "rm -f victim.txt"


async def test_claude_file_tools_get_claude_names_and_file_path(upstream, make_agent, workspace, tmp_path):
    seen = tmp_path / "seen.json"
    body = f"import sys\nopen({str(seen)!r}, 'w').write(sys.stdin.read())\n"
    recorder = script(tmp_path, "rec.py", body)
    settings = {
        "hooks": {
            "PostToolUse": [{"matcher": "Edit|MultiEdit|Write", "hooks": [{"type": "command", "command": recorder}]}]
        }
    }
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text(json.dumps(settings))
    agent = make_agent(tools=default_registry())
    agent.hooks = hooks(claude=True)
    upstream.enqueue(tool_reply([call("write_file", {"path": "new.txt", "content": "hi\n"}, id="w")]), text_reply("ok"))
    await run(agent, TurnRequest(input="x", cwd=str(workspace)))
    data = json.loads(seen.read_text())
    assert data["tool_name"] == "Write" and data["hermes_tool_name"] == "write_file"
    assert data["tool_input"]["file_path"] == os.path.join(str(workspace), "new.txt")


async def test_a_broken_claude_settings_file_is_shown_not_fatal(upstream, make_agent, workspace):
    (workspace / ".claude").mkdir()
    (workspace / ".claude" / "settings.json").write_text("{not json")
    agent = make_agent(tools=default_registry())
    agent.hooks = hooks(claude=True)
    upstream.enqueue(text_reply("ok"))
    events, result = await run(agent, TurnRequest(input="x", cwd=str(workspace)))
    assert result.status == "completed"
    assert any("settings.json: not read" in s for s in hook_statuses(events))


async def test_a_blocking_post_tool_hook_adds_its_reason_to_the_result(upstream, make_agent, workspace, tmp_path):
    agent = make_agent(tools=default_registry())
    body = 'echo "lint failed: trailing whitespace in new.txt" >&2; exit 2\n'
    agent.hooks = hooks(HookConfig("PostToolUse", script(tmp_path, "lint.sh", body), matcher="Write"))
    upstream.enqueue(tool_reply([call("write_file", {"path": "new.txt", "content": "x \n"}, id="w")]), text_reply("ok"))
    await run(agent, TurnRequest(input="write", cwd=str(workspace)))
    assert (workspace / "new.txt").read_text() == "x \n"  # the tool ran
    result = tool_messages(upstream.requests[1])[-1]["content"]
    assert result.endswith("\n\n[PostToolUse hook] lint failed: trailing whitespace in new.txt")


async def test_claude_code_permission_decisions_are_understood(upstream, make_agent, workspace, tmp_path):
    deny = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                   "permissionDecisionReason": "not on Fridays"}}  # fmt: skip
    agent = make_agent(tools=default_registry())
    agent.hooks = hooks(HookConfig("PreToolUse", f"echo '{json.dumps(deny)}'"))
    upstream.enqueue(tool_reply([call("terminal", {"command": "echo hi"}, id="t")]), text_reply("ok"))
    await run(agent, TurnRequest(input="x", cwd=str(workspace)))
    assert tool_messages(upstream.requests[1])[-1]["content"] == "not on Fridays"
    allow = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "allow"}}
    agent.hooks = hooks(HookConfig("PreToolUse", f"echo '{json.dumps(allow)}'"))
    (workspace / "build").mkdir()
    upstream.enqueue(tool_reply([call("terminal", {"command": "rm -r build"}, id="t")]), text_reply("ok"))
    await run(agent, TurnRequest(input="x", cwd=str(workspace)))
    assert not (workspace / "build").exists()


APPROVE_BUILD_ONLY = """import json, sys
data = json.load(sys.stdin)
if data["tool_input"].get("command") == "rm -r build":
    print(json.dumps({"decision": "approve"}))
"""


async def test_an_approval_covers_only_the_call_the_hook_approved(upstream, make_agent, workspace, tmp_path):
    (workspace / "build").mkdir()
    (workspace / "other").mkdir()
    agent = make_agent(tools=default_registry())
    agent.hooks = hooks(HookConfig("PreToolUse", script(tmp_path, "only.py", APPROVE_BUILD_ONLY)))
    upstream.enqueue(
        tool_reply([call("terminal", {"command": "rm -r build"}, id="a")]),
        tool_reply([call("terminal", {"command": "rm -r other"}, id="b")]),
        text_reply("ok"),
    )
    events, _ = await run(agent, TurnRequest(input="x", cwd=str(workspace)))
    done = {e.call_id: e for e in events if isinstance(e, ToolCompleted)}
    assert not done["a"].is_error and not (workspace / "build").exists()
    assert done["b"].result.startswith("DENIED") and (workspace / "other").exists()


async def test_a_stop_while_a_prompt_hook_runs_ends_the_turn_at_once(upstream, make_agent, workspace, tmp_path):
    pid_file = tmp_path / "slow.pid"
    agent = make_agent(tools=default_registry())
    agent.hooks = hooks(HookConfig("UserPromptSubmit", f"sleep 60 & echo $! > {pid_file}; wait", timeout=120))
    started = time.monotonic()
    async with agent.start(TurnRequest(input="x", cwd=str(workspace))) as handle:
        while not pid_file.exists() or not pid_file.read_text().strip():
            await asyncio.sleep(0.05)
        handle.stop()
        result = await handle.wait()
    assert time.monotonic() - started < 15
    assert result is not None and result.status == "interrupted"
    assert upstream.requests == []
    pid = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not _alive(pid)

"""`hermes chat -q` as a real subprocess against a scripted upstream on loopback."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from hermes.testing.state_db import open_sync_state
from hermes.testing.upstream import ScriptedUpstream, call, error_reply, text_reply, tool_reply


@pytest.fixture
def upstream():
    with ScriptedUpstream.in_thread() as server:
        yield server


def hermes(args, *, home: Path, upstream=None, stdin: str | None = None, extra_env=None, timeout=30):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_"))}
    env["HERMES_HOME"] = str(home)
    env["HERMES_STREAM_STALE_TIMEOUT"] = "5"
    if upstream is not None:
        env["HERMES_BASE_URL"] = upstream.base_url
        env["HERMES_MODEL"] = "scripted-model"
    env.update(extra_env or {})
    return subprocess.run(
        [sys.executable, "-m", "hermes", *args],
        input=stdin if stdin is not None else "",
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )


def test_answer_streams_to_stdout_as_plain_text_when_piped(upstream, hermes_home):
    upstream.enqueue(text_reply("**Hello** from hermes."))
    proc = hermes(["chat", "-q", "say hello"], home=hermes_home, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "**Hello** from hermes.\n"
    assert upstream.requests[0].messages[-1] == {"role": "user", "content": "say hello"}
    store = open_sync_state(hermes_home / "state.db")
    (session,) = store.list_sessions()
    assert session.source == "cli" and session.message_count == 2
    store.close()


def test_tool_activity_goes_to_stderr(upstream, hermes_home, tmp_path):
    target = tmp_path / "notes.txt"
    target.write_text("alpha\nbeta\n")
    upstream.enqueue(tool_reply([call("read_file", {"path": str(target)})]), text_reply("It says alpha and beta."))
    proc = hermes(["chat", "-q", "read it"], home=hermes_home, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "It says alpha and beta.\n"
    assert f"→ read_file: {target}" in proc.stderr
    assert "✓ read_file" in proc.stderr
    tool_message = [m for m in upstream.requests[1].messages if m["role"] == "tool"][0]
    assert "alpha" in tool_message["content"]


def test_piped_stdin_is_added_as_context(upstream, hermes_home):
    upstream.enqueue(text_reply("Looks fine."))
    proc = hermes(
        ["chat", "-q", "review this"], home=hermes_home, upstream=upstream, stdin="diff --git a/x b/x\n+print(1)\n"
    )
    assert proc.returncode == 0, proc.stderr
    sent = upstream.requests[0].messages[-1]["content"]
    assert sent == "review this\n\n<stdin>\ndiff --git a/x b/x\n+print(1)\n</stdin>"


def test_json_lines_one_per_event_then_the_result(upstream, hermes_home):
    upstream.enqueue(tool_reply([call("list_files", {"pattern": "*.none"})]), text_reply("Nothing there."))
    proc = hermes(["chat", "-q", "look", "--json"], home=hermes_home, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(line) for line in proc.stdout.splitlines()]
    types = [line["type"] for line in lines]
    assert types[0] == "turn.started" and types[-2] == "turn.completed" and types[-1] == "result"
    assert "tool.started" in types and "tool.completed" in types and "segment.end" in types
    result = lines[-1]
    assert result["status"] == "completed" and result["final_text"] == "Nothing there."
    assert result["answer_by"] == "model"
    assert result["usage"]["input_tokens"] == 30
    assert result["cost_usd"] is None  # scripted-model has no price: no guess
    assert proc.stderr == ""


def test_an_answer_hermes_wrote_is_marked_so_in_json_and_plain(upstream, hermes_home, tmp_path):
    # A small model (JSON actions) lists the folder, then only hands the request back.
    request = "look around this folder and tell me what is in it please"
    listing = json.dumps({"action": "list_files", "args": {"pattern": "*.txt"}})
    echo = json.dumps({"action": "reply", "args": {"text": request}})
    (tmp_path / "a.txt").write_text("a\n")
    env = {"HERMES_TOOL_PROTOCOL": "json"}
    for flags in (["--json"], []):
        upstream.enqueue(text_reply(listing), text_reply(echo), text_reply(echo), text_reply(echo))
        proc = subprocess.run(
            [sys.executable, "-m", "hermes", "chat", "-q", request, *flags],
            capture_output=True, text=True, timeout=30, cwd=tmp_path,
            env={**{k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_"))},
                 "HERMES_HOME": str(hermes_home), "HERMES_BASE_URL": upstream.base_url,
                 "HERMES_MODEL": "scripted-model", **env},
        )  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        if flags:
            result = [json.loads(line) for line in proc.stdout.splitlines()][-1]
            assert result["answer_by"] == "hermes"
            assert result["final_text"].startswith("hermes (not the model):")
            assert "No file was changed." in result["final_text"]
        else:
            assert proc.stdout.startswith("hermes (not the model): the model ended the turn without an answer")
            assert request not in proc.stdout


def test_json_result_carries_the_turns_cost_from_a_configured_price(upstream, hermes_home):
    hermes_home.mkdir(parents=True, exist_ok=True)
    (hermes_home / "config.toml").write_text('[prices."scripted-model"]\ninput = 1.0\noutput = 4.0\n')
    upstream.enqueue(text_reply("Priced.", usage=(1000, 500)))
    proc = hermes(["chat", "-q", "price me", "--json"], home=hermes_home, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout.splitlines()[-1])
    assert result["type"] == "result" and result["model"] == "scripted-model"
    assert (result["usage"]["input_tokens"], result["usage"]["output_tokens"]) == (1000, 500)
    assert result["cost_usd"] == pytest.approx((1000 * 1.0 + 500 * 4.0) / 1_000_000)


def test_continue_and_resume_use_the_stored_history(upstream, hermes_home):
    upstream.enqueue(text_reply("First answer."), text_reply("Second answer."), text_reply("Third answer."))
    assert hermes(["chat", "-q", "first"], home=hermes_home, upstream=upstream).returncode == 0
    assert hermes(["chat", "-q", "second", "-c"], home=hermes_home, upstream=upstream).returncode == 0
    roles = [(m["role"], m["content"]) for m in upstream.requests[1].messages[1:]]
    assert roles == [("user", "first"), ("assistant", "First answer."), ("user", "second")]
    store = open_sync_state(hermes_home / "state.db")
    (session,) = store.list_sessions()
    store.close()
    proc = hermes(["chat", "-q", "third", "--resume", session.id], home=hermes_home, upstream=upstream)
    assert proc.returncode == 0
    assert len(upstream.requests[2].messages) == 6


def test_unknown_resume_id_is_one_line_exit_1(upstream, hermes_home):
    proc = hermes(["chat", "-q", "x", "-r", "nope"], home=hermes_home, upstream=upstream)
    assert proc.returncode == 1
    assert proc.stderr == "hermes: no session with id 'nope'\n"
    assert upstream.requests == []


def test_model_flag_overrides_the_configured_model(upstream, hermes_home):
    upstream.enqueue(text_reply("ok"))
    assert hermes(["chat", "-q", "x", "-m", "other-model"], home=hermes_home, upstream=upstream).returncode == 0
    assert upstream.requests[0].body["model"] == "other-model"


def test_no_endpoint_configured_says_what_to_set_and_exits_2(hermes_home):
    proc = hermes(["chat", "-q", "hello"], home=hermes_home, extra_env={"HERMES_PROVIDER": "openai"})
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1
    assert "set HERMES_BASE_URL and HERMES_MODEL" in proc.stderr


def test_unreachable_upstream_is_one_clear_line_exit_1(hermes_home):
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {"HERMES_BASE_URL": f"http://127.0.0.1:{port}/v1", "HERMES_MODEL": "m", "HERMES_STREAM_RETRIES": "0"}
    proc = hermes(["chat", "-q", "hello"], home=hermes_home, extra_env=env)
    assert proc.returncode == 1
    assert proc.stderr.startswith("hermes: failed: cannot reach the model endpoint")
    assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr


def test_partial_answer_exits_1(upstream, hermes_home):
    upstream.enqueue(text_reply("cut short", finish_reason="length"))
    proc = hermes(["chat", "-q", "x"], home=hermes_home, upstream=upstream)
    assert proc.returncode == 1
    assert proc.stdout == "cut short\n"
    assert "incomplete answer" in proc.stderr


def test_upstream_auth_failure_exits_1(upstream, hermes_home):
    upstream.enqueue(error_reply(401, "bad key"))
    proc = hermes(["chat", "-q", "x"], home=hermes_home, upstream=upstream)
    assert proc.returncode == 1
    assert "authentication failed" in proc.stderr


def test_sigint_interrupts_the_turn_with_exit_130(upstream, hermes_home):
    # 2000 words at 0.05 s each: the answer cannot finish on its own within the wait below.
    upstream.enqueue(text_reply(" ".join(f"w{i}" for i in range(2000)), chunk_delay=0.05))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_"))}
    env.update(HERMES_HOME=str(hermes_home), HERMES_BASE_URL=upstream.base_url, HERMES_MODEL="m")
    proc = subprocess.Popen(
        [sys.executable, "-m", "hermes", "chat", "-q", "count"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        text=True,
    )
    assert proc.stdout is not None
    first = proc.stdout.read(3)  # wait for the answer to start
    assert first == "w0 "
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130
    assert err.endswith("hermes: interrupted\n") and "Traceback" not in err
    store = open_sync_state(hermes_home / "state.db")
    (session,) = store.list_sessions()
    assert session.end_reason == "interrupted"
    assert store.get_messages(session.id)[-1].content.startswith("w0 ")
    store.close()

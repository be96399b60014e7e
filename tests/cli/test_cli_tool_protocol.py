"""`tool_protocol = json` for any endpoint, and the doctor's native tool-call probe."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply

REPO = Path(__file__).resolve().parents[2]
# What Qwen2.5-Coder-1.5B behind llama.cpp wrote instead of a native tool call.
JSON_BLOCK_CALL = 'Sure.\n```json\n{"name": "read_file", "arguments": {"path": "notes.txt"}}\n```'


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    with ScriptedUpstream.in_thread(model="scripted-model") as server:
        yield server


def chat_q(
    prompt: str, cwd: Path, home: Path, upstream: ScriptedUpstream, **extra: str
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_"))}
    env.update(
        HERMES_HOME=str(home),
        HERMES_BASE_URL=upstream.base_url,
        HERMES_MODEL="scripted-model",
        HERMES_STREAM_STALE_TIMEOUT="5",
        PYTHONPATH=str(REPO) + os.pathsep + os.environ.get("PYTHONPATH", ""),
        **extra,
    )
    return subprocess.run(
        [sys.executable, "-m", "hermes", "chat", "-q", prompt],
        cwd=cwd, env=env, input="", capture_output=True, text=True, timeout=60, check=False,
    )


def test_json_protocol_runs_a_tool_the_model_wrote_as_json(
    upstream: ScriptedUpstream, tmp_path: Path, hermes_home: Path
) -> None:
    (tmp_path / "notes.txt").write_text("alpha\n")
    upstream.enqueue(text_reply(JSON_BLOCK_CALL), text_reply('{"action": "reply", "args": {"text": "It says alpha."}}'))

    # The request names no file (a named one would be read by the adapter itself, first).
    proc = chat_q("what do my notes say?", tmp_path, hermes_home, upstream, HERMES_TOOL_PROTOCOL="json")

    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "It says alpha."
    first: dict[str, Any] = upstream.requests[0].body
    assert "tools" not in first and first["response_format"]["type"] == "json_schema"
    assert "- read_file" in first["messages"][0]["content"]
    assert "Result of read_file:" in upstream.requests[1].messages[-1]["content"]
    assert "alpha" in upstream.requests[1].messages[-1]["content"]


def test_native_protocol_stays_the_default(upstream: ScriptedUpstream, tmp_path: Path, hermes_home: Path) -> None:
    upstream.enqueue(text_reply("Done."))
    proc = chat_q("hello", tmp_path, hermes_home, upstream)
    assert proc.returncode == 0, proc.stderr
    body = upstream.requests[0].body
    assert "tools" in body and "response_format" not in body


def test_an_unknown_protocol_is_one_clear_line(upstream: ScriptedUpstream, tmp_path: Path, hermes_home: Path) -> None:
    proc = chat_q("hello", tmp_path, hermes_home, upstream, HERMES_TOOL_PROTOCOL="xml")
    assert proc.returncode != 0
    assert proc.stderr.strip().splitlines()[-1].endswith("unknown tool_protocol 'xml': use native or json")
    assert "Traceback" not in proc.stderr and upstream.requests == []


# ---- hermes doctor --------------------------------------------------------------------


@pytest.fixture
def endpoint(upstream: ScriptedUpstream, monkeypatch: pytest.MonkeyPatch) -> ScriptedUpstream:
    monkeypatch.setenv("HERMES_BASE_URL", upstream.base_url)
    monkeypatch.setenv("HERMES_MODEL", "scripted-model")
    return upstream


def tools_line(invoke: Any) -> tuple[int, str, dict[str, Any]]:
    result = invoke("doctor", "--json")
    check = next(c for c in json.loads(result.stdout) if c["name"] == "tools")
    return result.exit_code, check["status"], check


def test_doctor_sees_native_tool_calls(invoke: Any, endpoint: ScriptedUpstream) -> None:
    endpoint.enqueue(tool_reply([call("get_time", {"city": "Paris"})]))

    code, status, check = tools_line(invoke)

    assert (code, status) == (0, "ok")
    assert check["detail"] == "the model called get_time natively"
    body = endpoint.requests[0].body
    assert [t["function"]["name"] for t in body["tools"]] == ["get_time"] and body["tool_choice"] == "auto"


def test_doctor_suggests_json_when_the_call_comes_back_as_text(invoke: Any, endpoint: ScriptedUpstream) -> None:
    endpoint.enqueue(text_reply('```json\n{"name": "get_time", "arguments": {"city": "Paris"}}\n```'))

    code, status, check = tools_line(invoke)

    assert (code, status) == (0, "warning")
    assert "wrote its tool call as JSON text" in check["detail"]
    assert "set tool_protocol = json" in check["detail"]


def test_doctor_is_satisfied_once_json_is_set(
    invoke: Any, endpoint: ScriptedUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_TOOL_PROTOCOL", "json")
    endpoint.enqueue(text_reply('{"name": "get_time", "arguments": {"city": "Paris"}}'))

    _, status, check = tools_line(invoke)

    assert status == "ok" and "tool_protocol = json is set" in check["detail"]


def test_doctor_probe_failure_is_a_warning_not_a_hang(
    invoke: Any, endpoint: ScriptedUpstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("hermes.cli.doctor.TOOL_PROBE_TIMEOUT", 0.5)
    from hermes.testing.upstream import Reply, Stall

    endpoint.enqueue(Reply([Stall(30)]))

    code, status, check = tools_line(invoke)

    assert (code, status) == (0, "warning")
    assert check["detail"] == "tool probe failed: the model did not answer the tool probe within 0.5 s"

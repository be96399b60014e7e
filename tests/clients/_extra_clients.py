"""Client tools and output formats through clients that are not project dependencies:
instructor, llama-index (a pinned venv) and Codex CLI (a pinned npm package).

Shared by the suite's `test_extra_clients.py` and the table script
`matrix/run_extra_clients.py`. Both run `hermes serve` on a `RoutedUpstream` (`_routed.py`)
playing `route`, which answers from the request alone:

- a request offering a client tool the clients define (`Person`, `add`) calls it, so a
  dropped `tools` list shows as a model that never calls the client's tool;
- a request carrying `response_format` answers JSON, one without answers free text, so a
  dropped format shows as a parse failure in the client;
- "codex plain" answers text; "codex tool" calls hermes' own `terminal` tool first.

The Python clients run as `extra/clients.py` under `extra/.venv` (built by `_extra_venv.py`)
and report one JSON line; Codex runs as `codex exec --json` with a custom Responses provider
pointed at the server and a temporary CODEX_HOME, so it reaches nothing but loopback.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from _routed import after_tool, all_text, last_user_text, offered_tools

from hermes.testing.upstream import Reply, call, text_reply, tool_reply

HERE = Path(__file__).resolve().parent
EXTRA_DIR = HERE / "extra"
"""requirements.txt and clients.py of the Python clients; their venv is EXTRA_DIR/.venv."""
CODEX_DIR = HERE / "codex"
"""package.json and package-lock.json of Codex CLI; `npm ci` installs it there."""
CODEX_BIN = CODEX_DIR / "node_modules" / ".bin" / "codex"
CLIENT_TIMEOUT = 120.0

CODEX_OFFLINE = (
    "features.plugins=false",  # else it syncs the curated plugins from github.com
    "analytics.enabled=false",  # else it reports to ab.chatgpt.com
)
"""Codex settings that keep it off the network: it reaches only the provider's loopback URL
(checked with `strace -f -e trace=connect`: no DNS lookup at all)."""

PERSON = {"name": "Ada Lovelace", "age": 36}
CODEX_PLAIN = "Plain answer for codex."
CODEX_TOOL_COMMAND = "echo hi-from-codex"
CODEX_TOOL_ANSWER = "The command printed hi-from-codex."
PYTHON_CHECKS = ("instructor_tools", "instructor_json_schema", "llama_predict_and_call", "llama_structured_predict")
"""The checks of extra/clients.py."""


def route(body: dict[str, Any]) -> Reply:
    user = last_user_text(body)
    tools = offered_tools(body)
    result = after_tool(body)
    if "codex tool" in user:
        if result is not None:
            return text_reply(CODEX_TOOL_ANSWER)
        return tool_reply([call("terminal", {"command": CODEX_TOOL_COMMAND})], text="Running it.")
    if "codex plain" in user:
        return text_reply(CODEX_PLAIN)
    if "add 2 and 3" in user:
        if "add" in tools and result is None:
            return tool_reply([call("add", {"a": 2, "b": 3})])
        return text_reply(f"The sum is five (no client tool offered; tools: {tools})")
    if "Ada" in all_text(body):
        wanted = [t for t in tools if t.lower() == "person"]
        if wanted and result is None:
            return tool_reply([call(wanted[0], PERSON)])
        if body.get("response_format"):
            return text_reply(json.dumps(PERSON))
        return text_reply("Ada Lovelace was 36 years old (free text: no tool and no format reached me).")
    return text_reply("ok")


def client_env() -> dict[str, str]:
    """The environment for a client process: none of the caller's OpenAI or hermes settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith(("OPENAI_", "HERMES_", "CODEX_"))}


def run_python_client(python: str | Path, check: str, base_url: str, key: str, model: str) -> dict[str, Any]:
    """Run one check of extra/clients.py under `python`: its JSON result, `ok` and `detail` or `error`."""
    cfg = {"baseURL": base_url, "apiKey": key, "model": model, "person": PERSON}
    proc = subprocess.run(
        [str(python), str(EXTRA_DIR / "clients.py"), check, json.dumps(cfg)],
        capture_output=True,
        text=True,
        timeout=CLIENT_TIMEOUT,
        stdin=subprocess.DEVNULL,
        env=client_env(),
        cwd=EXTRA_DIR,
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode != 0 or not lines:
        return {"ok": False, "error": f"clients.py exited {proc.returncode}: {proc.stderr.strip()[-800:]}"}
    result: dict[str, Any] = json.loads(lines[-1])
    if not result["ok"] and proc.stderr.strip():
        result["error"] += "\n" + proc.stderr.strip()[-800:]
    return result


@dataclass(frozen=True)
class CodexRun:
    returncode: int
    events: list[dict[str, Any]]
    """The JSON lines of `codex exec --json`."""
    output: str
    """stdout and stderr together."""

    def agent_messages(self) -> list[str]:
        return [
            str(e["item"].get("text", ""))
            for e in self.events
            if e.get("type") == "item.completed"
            and isinstance(e.get("item"), dict)
            and e["item"].get("type") in ("agent_message", "assistant_message")
        ]

    def item_types(self) -> list[str]:
        return sorted({str(e["item"].get("type")) for e in self.events if isinstance(e.get("item"), dict)})


def run_codex(binary: str | Path, base_url: str, key: str, model: str, prompt: str) -> CodexRun:
    """`codex exec --json PROMPT` on a custom Responses provider at `base_url`, without retries,
    in an empty working directory with a fresh CODEX_HOME (no login, no user config)."""
    with tempfile.TemporaryDirectory(prefix="hermes-codex-") as home, tempfile.TemporaryDirectory() as work:
        provider = (
            f'{{name="hermes", base_url="{base_url}", env_key="HERMES_CODEX_KEY", wire_api="responses",'
            " request_max_retries=0, stream_max_retries=0}"
        )
        argv = [
            str(binary),
            "exec",
            "--json",
            "--skip-git-repo-check",
            "-C",
            work,
            "-c",
            f"model_providers.hermes={provider}",
            "-c",
            "model_provider=hermes",
            *(arg for key in CODEX_OFFLINE for arg in ("-c", key)),
            "-m",
            model,
            prompt,
        ]
        environ = {**client_env(), "CODEX_HOME": home, "HERMES_CODEX_KEY": key}
        done = subprocess.run(
            argv, env=environ, capture_output=True, text=True, timeout=CLIENT_TIMEOUT, stdin=subprocess.DEVNULL
        )
    events = []
    for line in done.stdout.splitlines():
        try:
            events.append(json.loads(line))
        except ValueError:
            continue
    return CodexRun(done.returncode, events, done.stdout + done.stderr)


def codex_problems(run: CodexRun, answer: str) -> list[str]:
    """What is wrong with a Codex run that should end well with `answer`: it exits 0, never
    says "unsupported call" (a server-run tool handed to it to run), has `answer` among its
    agent messages, and no agent message starts with a blank line (the separator between
    segments belongs to the earlier one). Empty when all holds."""
    problems = []
    if "unsupported call" in run.output:
        line = next(x.strip()[:200] for x in run.output.splitlines() if "unsupported call" in x)
        problems.append(f"codex said: {line}")
    if run.returncode != 0:
        problems.append(f"exit {run.returncode}: {run.output.strip()[-300:]!r}")
    texts = run.agent_messages()
    if not any(answer in t for t in texts):
        problems.append(f"answer not among agent messages {texts!r}")
    blank = [t[:40] for t in texts if t.startswith(("\n", " "))]
    if blank:
        problems.append(f"agent messages start with a blank line: {blank!r}")
    return problems

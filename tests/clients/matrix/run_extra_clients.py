"""Client tools and output formats through real clients: instructor, llama-index, Codex CLI.

Not part of the test suite (these clients are not project dependencies). Run it from a
separate venv that has them, with Codex CLI installed by npm outside the repository:

    python3 -m venv /work/clients-venv
    /work/clients-venv/bin/pip install instructor llama-index-core llama-index-llms-openai-like aiohttp
    (mkdir -p /tmp/codex && cd /tmp/codex && npm install @openai/codex)
    /work/clients-venv/bin/python tests/clients/matrix/run_extra_clients.py \
        [--hermes-python /work/main/.venv/bin/python] [--codex /tmp/codex/node_modules/.bin/codex] [-v]

`hermes serve` runs under `--hermes-python` with this checkout on PYTHONPATH (the
`environment` of `run_matrix.py`), pointed at a `RoutedUpstream` (`routed.py`) that answers
from the request alone:

- a request offering a client tool the script defined (`Person`, `add`) calls it, so a
  dropped `tools` list shows as a model that never calls the client's tool;
- a request carrying `response_format` answers JSON, one without answers free text, so a
  dropped format shows as a parse failure in the client;
- "codex plain" answers text; "codex tool" calls hermes' own `terminal` tool first.

Checks (one row each): instructor TOOLS and JSON_SCHEMA give the validated object;
llama-index `predict_and_call` runs the client's `add` tool and `structured_predict` gives
the object; Codex `exec --json` (Responses, custom provider) exits 0 with the answer and
never says "unsupported call", without and with a server-run tool. Prints the table; exit
status 1 when a check fails. (`client_tools_matrix.py` checks instructor TOOLS and llama-index
with a queued script; this one adds the output formats and Codex, on one routed upstream.)
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))

from routed import RoutedUpstream, after_tool, all_text, last_user_text, offered_tools  # noqa: E402
from run_matrix import KEY, MODEL, REPO, Env, environment  # noqa: E402

from hermes.testing.upstream import Reply, call, text_reply, tool_reply  # noqa: E402

PERSON = {"name": "Ada Lovelace", "age": 36}
CODEX_PLAIN = "Plain answer for codex."
CODEX_TOOL_ANSWER = "The command printed hi-from-codex."


def route(body: dict[str, Any]) -> Reply:
    user = last_user_text(body)
    tools = offered_tools(body)
    result = after_tool(body)
    if "codex tool" in user:
        if result is not None:
            return text_reply(CODEX_TOOL_ANSWER)
        return tool_reply([call("terminal", {"command": "echo hi-from-codex"})], text="Running it.")
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


# ---- the clients ----------------------------------------------------------------------------


class CheckFailed(Exception):
    pass


def expect(cond: bool, what: str) -> None:
    if not cond:
        raise CheckFailed(what)


def _person_model() -> Any:
    from pydantic import BaseModel

    class Person(BaseModel):
        name: str
        age: int

    return Person


def instructor_check(env: Env, mode_name: str) -> str:
    import instructor
    from openai import OpenAI

    client = instructor.from_openai(
        OpenAI(base_url=env.base_url, api_key=KEY, max_retries=0, timeout=60), mode=getattr(instructor.Mode, mode_name)
    )
    person = client.chat.completions.create(
        model=MODEL,
        response_model=_person_model(),
        max_retries=1,
        messages=[{"role": "user", "content": "Extract: Ada Lovelace, aged 36."}],
    )
    expect((person.name, person.age) == (PERSON["name"], PERSON["age"]), f"got {person!r}")
    sent = env.upstream.requests[-1].body
    return f"{person!r}; upstream saw tools={offered_tools(sent)} response_format={'response_format' in sent}"


def _llama(env: Env) -> Any:
    from llama_index.llms.openai_like import OpenAILike

    return OpenAILike(
        model=MODEL,
        api_base=env.base_url,
        api_key=KEY,
        is_chat_model=True,
        is_function_calling_model=True,
        max_retries=0,
        timeout=60,
        context_window=32000,
    )


def llama_predict_and_call(env: Env) -> str:
    from llama_index.core.tools import FunctionTool

    ran: list[tuple[int, int]] = []

    def add(a: int, b: int) -> int:
        """Add two integers."""
        ran.append((a, b))
        return a + b

    response = _llama(env).predict_and_call([FunctionTool.from_defaults(fn=add)], user_msg="add 2 and 3")
    expect(ran == [(2, 3)], f"the client tool ran {ran}; response {str(response)[:200]!r}")
    expect(str(response).strip() == "5", f"response {str(response)[:200]!r}")
    return f"add(2, 3) ran in the client; response {str(response)!r}"


def llama_structured_predict(env: Env) -> str:
    from llama_index.core.prompts import PromptTemplate

    person = _llama(env).structured_predict(
        _person_model(), PromptTemplate("Extract: {text}"), text="Ada Lovelace, 36."
    )
    expect((person.name, person.age) == (PERSON["name"], PERSON["age"]), f"got {person!r}")
    return repr(person)


@dataclass
class Codex:
    binary: str

    def run(self, env: Env, prompt: str) -> tuple[int, list[dict[str, Any]], str]:
        with tempfile.TemporaryDirectory(prefix="hermes-codex-") as home, tempfile.TemporaryDirectory() as work:
            provider = (
                f'{{name="hermes", base_url="{env.base_url}", env_key="HERMES_CODEX_KEY", wire_api="responses",'
                " request_max_retries=0, stream_max_retries=0}"
            )
            argv = [
                self.binary,
                "exec",
                "--json",
                "--skip-git-repo-check",
                "-C",
                work,
                "-c",
                f"model_providers.hermes={provider}",
                "-c",
                "model_provider=hermes",
                "-m",
                MODEL,
                prompt,
            ]
            environ = {**os.environ, "CODEX_HOME": home, "HERMES_CODEX_KEY": KEY}
            environ.pop("OPENAI_API_KEY", None)
            done = subprocess.run(
                argv, env=environ, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
            )
        events = []
        for line in done.stdout.splitlines():
            try:
                events.append(json.loads(line))
            except ValueError:
                continue
        return done.returncode, events, done.stdout + done.stderr


def codex_check(codex: Codex | None, env: Env, prompt: str, answer: str, *, blank_start: bool = False) -> str:
    """`codex exec` ends well with `answer`; with `blank_start`, only: no agent message starts
    with a blank line (the separator between segments belongs to the earlier one)."""
    if codex is None:
        raise CheckFailed("no codex binary (pass --codex)")
    rc, events, output = codex.run(env, prompt)
    texts = [
        str(e["item"].get("text", ""))
        for e in events
        if e.get("type") == "item.completed"
        and isinstance(e.get("item"), dict)
        and e["item"].get("type") in ("agent_message", "assistant_message")
    ]
    kinds = sorted({str(e["item"].get("type")) for e in events if isinstance(e.get("item"), dict)})
    expect("unsupported call" not in output, "codex said: " + _line_with(output, "unsupported call"))
    expect(rc == 0, f"exit {rc}: {output.strip()[-300:]!r}")
    expect(any(answer in t for t in texts), f"answer not among agent messages {texts!r}")
    if blank_start:
        starts = [t[:40] for t in texts if t.startswith(("\n", " "))]
        expect(not starts, f"agent messages start with a blank line: {starts!r}")
        return f"agent messages {[t[:40] for t in texts]!r}"
    errors = [
        str(e["item"].get("message", ""))[:80]
        for e in events
        if isinstance(e.get("item"), dict) and e["item"].get("type") == "error"
    ]
    return f"exit 0; items {kinds}; answer {texts[-1][:80]!r}" + (f"; codex error items {errors}" if errors else "")


def _line_with(text: str, needle: str) -> str:
    return next((line.strip()[:200] for line in text.splitlines() if needle in line), needle)


# ---- the table ---------------------------------------------------------------------------------


@dataclass
class Row:
    client: str
    mode: str
    check: str
    run: Callable[[Env], str]


def rows(codex: Codex | None) -> list[Row]:
    return [
        Row("instructor", "chat TOOLS", "validated object", lambda e: instructor_check(e, "TOOLS")),
        Row("instructor", "chat JSON_SCHEMA", "validated object", lambda e: instructor_check(e, "JSON_SCHEMA")),
        Row("llama-index OpenAILike", "chat", "predict_and_call runs client tool", llama_predict_and_call),
        Row("llama-index OpenAILike", "chat", "structured_predict", llama_structured_predict),
        Row(
            "codex exec --json",
            "responses",
            "plain: exit 0, answer",
            lambda e: codex_check(codex, e, "codex plain: say something", CODEX_PLAIN),
        ),
        Row(
            "codex exec --json",
            "responses",
            "server tool: exit 0, answer, no unsupported call",
            lambda e: codex_check(codex, e, "codex tool: run echo", CODEX_TOOL_ANSWER),
        ),
        Row(
            "codex exec --json",
            "responses",
            "server tool: no message starts with a blank line",
            lambda e: codex_check(codex, e, "codex tool: run echo", CODEX_TOOL_ANSWER, blank_start=True),
        ),
    ]


def versions(codex: Codex | None) -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for dist in ("openai", "instructor", "llama-index-core", "llama-index-llms-openai-like"):
        try:
            out.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            out.append(f"{dist} (missing)")
    if codex is not None:
        done = subprocess.run([codex.binary, "--version"], capture_output=True, text=True, timeout=30)
        out.append(done.stdout.strip() or f"codex --version exit {done.returncode}")
    head = subprocess.run(["git", "-C", str(REPO), "log", "-1", "--format=%h %s"], capture_output=True, text=True)
    return ", ".join(out) + f"\nhermes at {head.stdout.strip()[:100]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hermes-python", default=os.environ.get("HERMES_PYTHON", "/work/main/.venv/bin/python"))
    parser.add_argument("--codex", default=shutil.which("codex") or "/tmp/codex/node_modules/.bin/codex")
    parser.add_argument("--only", default="", help="run only rows whose client contains this")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    codex = Codex(args.codex) if Path(args.codex).exists() else None
    print(versions(codex))
    table: list[tuple[Row, str, str]] = []
    with environment(args.hermes_python, RoutedUpstream, route=route) as env:
        for row in rows(codex):
            if args.only and args.only not in row.client:
                continue
            env.upstream.requests.clear()
            try:
                table.append((row, "PASS", row.run(env)))
            except CheckFailed as exc:
                table.append((row, "FAIL", str(exc)))
            except Exception as exc:
                table.append((row, "FAIL", f"raised {type(exc).__name__}: {str(exc)[:300]}"))
                if args.verbose:
                    traceback.print_exc()
    print("| client | mode | check | result | evidence |\n|---|---|---|---|---|")
    for row, status, note in table:
        evidence = " ".join(note.split()).replace("|", "/")[:240]
        print(f"| {row.client} | {row.mode} | {row.check} | {status} | {evidence} |")
    failed = sum(1 for _, s, _ in table if s == "FAIL")
    print(f"\n{len(table) - failed}/{len(table)} pass")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

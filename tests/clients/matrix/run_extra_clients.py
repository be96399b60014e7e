"""Client tools and output formats through real clients: instructor, llama-index, Codex CLI, as a table.

The suite runs the same checks (tests/clients/test_extra_clients.py); this script prints
them as the client × check table of the issue's note. It runs under the project's
interpreter and installs the clients itself, like the suite: the pinned venv
tests/clients/extra/.venv and Codex from tests/clients/codex's lock file:

    .venv/bin/python tests/clients/matrix/run_extra_clients.py [--hermes-python .venv/bin/python]
        [--python tests/clients/extra/.venv/bin/python] [--codex PATH] [--only codex]

`hermes serve` runs under `--hermes-python` with this checkout on PYTHONPATH (the
`environment` of `run_matrix.py`), pointed at a `RoutedUpstream` playing the `route` of
`_extra_clients.py` (its docstring says what it answers).

Checks (one row each): instructor TOOLS and JSON_SCHEMA give the validated object;
llama-index `predict_and_call` runs the client's `add` tool and `structured_predict` gives
the object; Codex `exec --json` (Responses, custom provider) exits 0 with the answer, never
says "unsupported call" and starts no message with a blank line, without and with a
server-run tool. Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "clients"))

from _extra_clients import (  # noqa: E402
    CODEX_BIN,
    CODEX_DIR,
    CODEX_PLAIN,
    CODEX_TOOL_ANSWER,
    EXTRA_DIR,
    codex_problems,
    route,
    run_codex,
    run_python_client,
)
from _extra_venv import ensure_venv, venv_python  # noqa: E402
from _node_modules import ensure_node_modules  # noqa: E402
from _routed import RoutedUpstream, offered_tools  # noqa: E402
from run_matrix import KEY, MODEL, Env, environment  # noqa: E402


@dataclass(frozen=True)
class Row:
    client: str
    mode: str
    check: str
    run: Callable[[Env], tuple[bool, str]]


def python_row(client: str, mode: str, check: str, name: str, python: str) -> Row:
    def run(env: Env) -> tuple[bool, str]:
        result = run_python_client(python, name, env.base_url, KEY, MODEL)
        sent = env.upstream.requests[-1].body if env.upstream.requests else {}
        seen = f"; upstream saw tools={offered_tools(sent)} response_format={'response_format' in sent}"
        return bool(result["ok"]), str(result.get("detail") or result.get("error")) + seen

    return Row(client, mode, check, run)


def codex_row(check: str, codex: str, prompt: str, answer: str) -> Row:
    def run(env: Env) -> tuple[bool, str]:
        done = run_codex(codex, env.base_url, KEY, MODEL, prompt)
        problems = codex_problems(done, answer)
        if problems:
            return False, "; ".join(problems)
        return True, f"exit 0; items {done.item_types()}; messages {[t[:40] for t in done.agent_messages()]!r}"

    return Row("codex exec --json", "responses", check, run)


def rows(python: str, codex: str) -> list[Row]:
    return [
        python_row("instructor", "chat TOOLS", "validated object", "instructor_tools", python),
        python_row("instructor", "chat JSON_SCHEMA", "validated object", "instructor_json_schema", python),
        python_row(
            "llama-index OpenAILike", "chat", "predict_and_call runs client tool", "llama_predict_and_call", python
        ),
        python_row("llama-index OpenAILike", "chat", "structured_predict", "llama_structured_predict", python),
        codex_row("plain: exit 0, answer", codex, "codex plain: say something", CODEX_PLAIN),
        codex_row(
            "server tool: exit 0, answer, no unsupported call, no blank start",
            codex,
            "codex tool: run echo",
            CODEX_TOOL_ANSWER,
        ),
    ]


def versions(python: str, codex: str) -> str:
    dists = ("openai", "instructor", "llama-index-core", "llama-index-llms-openai-like")
    script = f"from importlib.metadata import version as v\nfor d in {dists!r}: print(d, v(d))"
    out = subprocess.run([python, "-c", script], capture_output=True, text=True, timeout=60).stdout.split("\n")
    done = subprocess.run([codex, "--version"], capture_output=True, text=True, timeout=30)
    head = subprocess.run(["git", "-C", str(REPO), "log", "-1", "--format=%h %s"], capture_output=True, text=True)
    return ", ".join([*filter(None, out), done.stdout.strip()]) + f"\nhermes at {head.stdout.strip()[:100]}"


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--hermes-python", default=sys.executable)
    parser.add_argument("--python", default="", help="the clients' interpreter (default: build the pinned venv)")
    parser.add_argument("--codex", default="", help="the codex binary (default: npm ci the pinned one)")
    parser.add_argument("--only", default="", help="run only rows whose client contains this")
    args = parser.parse_args()
    for problem in (
        None if args.python else ensure_venv(EXTRA_DIR),
        None if args.codex else ensure_node_modules(CODEX_DIR),
    ):
        if problem is not None:
            raise SystemExit(problem)
    python, codex = args.python or str(venv_python(EXTRA_DIR)), args.codex or str(CODEX_BIN)
    print(versions(python, codex))
    table: list[tuple[Row, bool, str]] = []
    with environment(args.hermes_python, RoutedUpstream, route=route) as env:
        for row in rows(python, codex):
            if args.only and args.only not in row.client:
                continue
            env.upstream.requests.clear()
            table.append((row, *row.run(env)))
    print("| client | mode | check | result | evidence |\n|---|---|---|---|---|")
    for row, passed, note in table:
        evidence = " ".join(note.split()).replace("|", "/")[:240]
        print(f"| {row.client} | {row.mode} | {row.check} | {'PASS' if passed else 'FAIL'} | {evidence} |")
    failed = sum(1 for _, passed, _ in table if not passed)
    print(f"\n{len(table) - failed}/{len(table)} pass")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

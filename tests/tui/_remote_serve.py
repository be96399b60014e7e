"""A real `hermes serve` process for the remote TUI tests, and a loopback proxy that cuts.

`ServeProcess.start(home, upstream, …)` spawns `python -m hermes serve` (asyncio subprocess,
so the test's loop keeps serving the scripted upstream meanwhile), waits for its ready line
and keeps draining its stderr; `kill()` ends it at once (SIGKILL: no graceful settle), and
`start()` again on the same port is a server restart. `CuttingProxy` forwards one local
port to the server and `cut()` resets every connection it holds (a dropped network).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

from hermes.testing.upstream import ScriptedUpstream

REPO = Path(__file__).resolve().parents[2]
READY_PREFIX = "hermes serve: listening on "
KEY = "remote-test-key"


def serve_env(home: Path, upstream: ScriptedUpstream, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_", "OPENAI_"))}
    env.update(
        HERMES_HOME=str(home),
        PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
        HERMES_SANDBOX="off",
        HERMES_PROVIDER="openai",
        HERMES_BASE_URL=upstream.base_url,
        HERMES_MODEL="scripted-model",
        HERMES_API_KEY="test",
        HERMES_TOOL_STALL_WARNING="0.3",
        API_SERVER_KEY=KEY,
    )
    env.update(extra)
    return env


@dataclass
class ServeProcess:
    env: dict[str, str]
    cwd: Path
    port: int = 0
    url: str = ""
    proc: asyncio.subprocess.Process | None = None
    log: list[str] = field(default_factory=list)
    _drain: asyncio.Task[None] | None = None

    async def start(self) -> ServeProcess:
        self.proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "hermes", "serve", "--port", str(self.port),
            env=self.env, cwd=self.cwd, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )  # fmt: skip
        assert self.proc.stderr is not None
        line = (await asyncio.wait_for(self.proc.stderr.readline(), 60)).decode()
        if not line.startswith(READY_PREFIX):
            rest = (await self.proc.stderr.read()).decode()
            raise AssertionError(f"hermes serve did not start: {line}{rest}")
        self.url = line[len(READY_PREFIX) :].strip()
        self.port = int(self.url.rsplit(":", 1)[1])
        self._drain = asyncio.create_task(self._read_rest(self.proc.stderr))
        return self

    async def _read_rest(self, stream: asyncio.StreamReader) -> None:
        async for line in stream:
            self.log.append(line.decode(errors="replace"))

    async def kill(self) -> None:
        if self.proc is not None and self.proc.returncode is None:
            self.proc.kill()
            await self.proc.wait()
        if self._drain is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._drain
        self.proc = None


class CuttingProxy:
    """Forwards 127.0.0.1:<port> to the server's port; `cut()` drops every open connection."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.port = 0
        self.cuts = 0
        self._writers: set[asyncio.StreamWriter] = set()
        self._server: asyncio.Server | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> CuttingProxy:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return
        self._writers |= {writer, up_writer}

        async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
            with contextlib.suppress(OSError, asyncio.CancelledError):
                while data := await src.read(65536):
                    dst.write(data)
                    await dst.drain()
            dst.close()

        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
        self._writers -= {writer, up_writer}

    def cut(self) -> None:
        """Reset every connection now (as a dropped network does)."""
        self.cuts += 1
        for writer in list(self._writers):
            transport = writer.transport
            transport.abort()
        self._writers.clear()

    async def aclose(self) -> None:
        self.cut()
        if self._server is not None:
            self._server.close()
            await self._server.wait_closed()

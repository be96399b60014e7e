"""One language server process, spoken to in JSON-RPC 2.0 with LSP's framing over stdio.

    connection = await LspConnection.start(command, args, env=env, cwd=cwd)
    result = await connection.request("initialize", {...}, timeout=10)
    connection.notify("initialized", {})
    connection.on_notification = handle            # (method, params) for every notification
    await connection.close(timeout=2)

Invariants:
- every request has a timeout; a server that exits fails every request waiting on it;
- requests the server sends to the client (configuration, progress tokens, capability
  registration) are answered at once with null, so a server never waits on hermes;
- the server's stderr goes nowhere (never a pipe nobody reads, which would stall it);
- `close` asks politely (shutdown, exit), then kills, and always reaps the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

MAX_MESSAGE_BYTES = 32 * 1024 * 1024


class LspError(Exception):
    """The server failed, answered an error, or did not answer in time."""


class LspConnection:
    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self.process = process
        self.on_notification: Callable[[str, Any], None] | None = None
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._reader = asyncio.create_task(self._read_loop())

    @classmethod
    async def start(cls, command: str, args: tuple[str, ...], *, env: dict[str, str], cwd: Path) -> LspConnection:
        process = await asyncio.create_subprocess_exec(
            command,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
            env=env,
            cwd=str(cwd),
            start_new_session=True,
        )
        return cls(process)

    @property
    def alive(self) -> bool:
        return self.process.returncode is None and not self._reader.done()

    async def request(self, method: str, params: Any, *, timeout: float) -> Any:
        if not self.alive:
            raise LspError("the language server is not running")
        request_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        try:
            self._send({"jsonrpc": "2.0", "id": request_id, "method": method, "params": params})
            async with asyncio.timeout(timeout):
                return await future
        except TimeoutError:
            raise LspError(f"the language server did not answer {method} within {timeout:g} s") from None
        finally:
            self._waiting.pop(request_id, None)

    def notify(self, method: str, params: Any) -> None:
        if self.alive:
            self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def _send(self, message: dict[str, Any]) -> None:
        body = json.dumps(message, separators=(",", ":")).encode()
        stdin = self.process.stdin
        assert stdin is not None
        stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    async def _read_loop(self) -> None:
        stdout = self.process.stdout
        assert stdout is not None
        try:
            while True:
                length = await _read_header(stdout)
                if length is None:
                    return
                self._dispatch(json.loads(await stdout.readexactly(length)))
        except (asyncio.IncompleteReadError, ValueError, ConnectionError):
            return
        finally:
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(LspError("the language server stopped"))

    def _dispatch(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        if "id" in message and "method" not in message:
            future = self._waiting.get(message["id"])
            if future is not None and not future.done():
                if "error" in message:
                    error = message["error"] if isinstance(message["error"], dict) else {}
                    future.set_exception(LspError(str(error.get("message") or "the language server answered an error")))
                else:
                    future.set_result(message.get("result"))
            return
        method = message.get("method")
        if not isinstance(method, str):
            return
        if "id" in message:  # a request of the server's: answered at once
            self._send({"jsonrpc": "2.0", "id": message["id"], "result": _answer(method, message.get("params"))})
            return
        if self.on_notification is not None:
            self.on_notification(method, message.get("params"))

    async def close(self, *, timeout: float = 2.0) -> None:
        with contextlib.suppress(LspError, OSError, RuntimeError):
            if self.alive:
                await self.request("shutdown", None, timeout=timeout)
                self.notify("exit", None)
        with contextlib.suppress(OSError, RuntimeError):
            if self.process.stdin is not None:
                self.process.stdin.close()
        try:
            async with asyncio.timeout(timeout):
                await self.process.wait()
        except TimeoutError:
            with contextlib.suppress(ProcessLookupError):
                self.process.kill()
            await self.process.wait()
        self._reader.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._reader


def _answer(method: str, params: Any) -> Any:
    """What hermes answers a server's request: no settings, nothing registered."""
    if method == "workspace/configuration" and isinstance(params, dict):
        return [None for _ in params.get("items") or []]
    return None


async def _read_header(stream: asyncio.StreamReader) -> int | None:
    length: int | None = None
    while True:
        line = await stream.readline()
        if not line:
            return None
        text = line.decode("ascii", errors="replace").strip()
        if not text:
            if length is None:
                continue
            return length
        name, _, value = text.partition(":")
        if name.strip().lower() == "content-length":
            length = int(value.strip())
            if length < 0 or length > MAX_MESSAGE_BYTES:
                raise ValueError(f"a message of {length} bytes")

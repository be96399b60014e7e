"""A response `hermes serve` acknowledged survives a crash of the PostgreSQL server.

A dedicated throwaway PostgreSQL with PostgreSQL's durable defaults (fsync and
synchronous_commit on): not the session's shared server, which runs without them and
which this test must not kill. On it, a real `hermes serve` process whose model is the
scripted upstream stores RESPONSES responses through POST /v1/responses (store=true),
CONCURRENCY at a time. The moment the last one is acknowledged, the whole database
server is killed with SIGKILL (`PostgresServer.crash`), then started again on the same
data directory: every acknowledged response must come back from GET /v1/responses/{id},
as it was acknowledged, through the same hermes process.

While hermes set `synchronous_commit = off` on its own connections, 1 to 8 of 50 were
gone after such a crash: their commits sat in PostgreSQL's WAL buffers, acknowledged.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from pg_fixtures import unavailable

from hermes.store.postgres.connect import open_pool
from hermes.testing.postgres import PostgresServer, find_bindir
from hermes.testing.upstream import ScriptedUpstream, text_reply

REPO = Path(__file__).resolve().parents[2]
READY_PREFIX = "hermes serve: listening on "
SERVER_KEY = "sk-crash-test"
AUTH = {"Authorization": f"Bearer {SERVER_KEY}"}
RESPONSES = 50
CONCURRENCY = 10
ANSWER = "stored before the crash"
START_TIMEOUT = 90.0
"""Start-up of `hermes serve` on a loaded 2-core machine."""
REQUEST_TIMEOUT = 30.0
RECOVERY_TIMEOUT = 60.0
"""Bound for reads through hermes to stop failing with 5xx once the database is back."""

pytestmark = pytest.mark.timeout(300)


@pytest.fixture
def durable_pg(pg_driver: None) -> Iterator[PostgresServer]:
    """A server of this test's own, with PostgreSQL's durable defaults, and a database `hermes`."""
    import psycopg

    bindir = find_bindir()
    if bindir is None:
        unavailable("no PostgreSQL server binaries (initdb, pg_ctl) found; install postgresql")
    assert bindir is not None
    try:
        server = PostgresServer.start(bindir, durable=True)
    except (RuntimeError, OSError, KeyError) as exc:
        unavailable(f"could not start PostgreSQL from {bindir}: {exc}")
        raise
    try:
        with psycopg.connect(server.admin_url, autocommit=True) as conn:
            conn.execute("CREATE DATABASE hermes")
        yield server
    finally:
        server.stop()


@pytest.fixture
def upstream() -> Iterator[ScriptedUpstream]:
    """The model, on its own loop in a thread: it answers while the test's loop is busy."""
    with ScriptedUpstream.in_thread() as server:
        server.default = text_reply(ANSWER)
        yield server


@pytest.fixture
async def hermes(durable_pg: PostgresServer, upstream: ScriptedUpstream, tmp_path: Path) -> AsyncIterator[str]:
    """A `hermes serve` process on the durable server; its base URL. Killed in teardown."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_", "OPENAI_"))}
    env.update(
        HERMES_HOME=str(tmp_path / "home"),
        PYTHONPATH=str(REPO) + os.pathsep + env.get("PYTHONPATH", ""),
        HERMES_PROVIDER="openai",
        HERMES_BASE_URL=upstream.base_url,
        HERMES_MODEL="scripted-model",
        HERMES_API_KEY="test-upstream-key",
        HERMES_SANDBOX="off",
        API_SERVER_KEY=SERVER_KEY,
    )
    log = tmp_path / "serve.log"
    with log.open("w", encoding="utf-8") as sink:  # a file: the pipe can never fill up
        proc = subprocess.Popen(
            [sys.executable, "-m", "hermes", "serve", "--port", "0", "--database-url", durable_pg.url("hermes")],
            env=env, cwd=tmp_path, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=sink,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            ready = [line for line in log.read_text(encoding="utf-8").splitlines() if line.startswith(READY_PREFIX)]
            if ready:
                break
            assert proc.poll() is None, f"hermes serve exited ({proc.returncode}): {log.read_text(encoding='utf-8')}"
            assert time.monotonic() < deadline, f"no ready line in {START_TIMEOUT} s: {log.read_text(encoding='utf-8')}"
            await asyncio.sleep(0.05)
        yield ready[0][len(READY_PREFIX) :].strip()
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(20)


async def _synchronous_commit(url: str) -> str:
    """`synchronous_commit` as hermes' own pooled connections see it."""
    pool = await open_pool(url)
    try:
        async with pool.connection() as conn:
            row = await (await conn.execute("SHOW synchronous_commit")).fetchone()
    finally:
        await pool.close()
    assert row is not None
    return str(row[0])


async def _store(client: aiohttp.ClientSession, base: str) -> dict[str, dict[str, Any]]:
    """POST RESPONSES stored responses, CONCURRENCY at a time: {id: body} of those answered 200."""
    gate = asyncio.Semaphore(CONCURRENCY)
    acknowledged: dict[str, dict[str, Any]] = {}

    async def one(i: int) -> None:
        body = {"model": "hermes-agent", "input": f"remember number {i}", "store": True}
        async with gate, client.post(f"{base}/v1/responses", json=body) as resp:
            if resp.status == 200:
                data = await resp.json()
                acknowledged[data["id"]] = data

    await asyncio.gather(*(one(i) for i in range(RESPONSES)))
    return acknowledged


async def _read_back(client: aiohttp.ClientSession, base: str, response_id: str) -> tuple[int, Any]:
    """GET the response; a 5xx (hermes' pool meeting a connection the crash broke) is no
    answer and is retried within RECOVERY_TIMEOUT; a 404 is one."""
    deadline = time.monotonic() + RECOVERY_TIMEOUT
    while True:
        async with client.get(f"{base}/v1/responses/{response_id}") as resp:
            if resp.status < 500 or time.monotonic() > deadline:
                return resp.status, await resp.json()
        await asyncio.sleep(0.1)


async def test_every_acknowledged_response_survives_a_crash_of_the_database_server(
    durable_pg: PostgresServer, hermes: str, upstream: ScriptedUpstream
) -> None:
    url = durable_pg.url("hermes")
    assert await _synchronous_commit(url) == "on"  # hermes keeps PostgreSQL's durable default
    timeout = aiohttp.ClientTimeout(total=REQUEST_TIMEOUT)
    async with aiohttp.ClientSession(headers=AUTH, timeout=timeout) as client:
        acknowledged = await _store(client, hermes)
        durable_pg.crash()  # at once: the last acknowledgements are a few milliseconds old
        assert len(acknowledged) == RESPONSES  # all of them were answered before the crash
        assert len(upstream.requests) == RESPONSES
        durable_pg.restart()

        lost = []
        for response_id, body in acknowledged.items():
            status, data = await _read_back(client, hermes, response_id)
            if status != 200:
                lost.append((response_id, status))
            else:
                assert data == body
    assert not lost, f"{len(lost)} of {RESPONSES} acknowledged responses are gone after the crash: {lost}"

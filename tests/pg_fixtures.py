"""PostgreSQL fixtures shared by the storage contract and the server tests.

`pg_server` is a real PostgreSQL started once per test session (`hermes.testing.postgres.PostgresServer`);
`pg_url` is a fresh database cloned from a migrated template, `empty_pg_url` one without
any hermes schema. Where PostgreSQL or the `postgres` extra is missing these fixtures skip
with the reason, except under CI (`CI=true`), where they fail: CI always runs them.

Registered for every test folder by tests/conftest.py (`pytest_plugins`).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import itertools
import os
from collections.abc import Coroutine, Iterator
from typing import Any, TypeVar

import pytest

from hermes.testing.postgres import PostgresServer, find_bindir

T = TypeVar("T")
TEMPLATE = "hermes_template"
_numbers = itertools.count(1)


def _under_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("1", "true", "yes")


def unavailable(reason: str) -> None:
    """Skip (on a laptop) or fail (under CI) a PostgreSQL case."""
    if _under_ci():
        pytest.fail(f"PostgreSQL tests cannot run under CI: {reason}", pytrace=False)
    pytest.skip(f"PostgreSQL tests skipped: {reason}")


@pytest.fixture(scope="session")
def pg_driver() -> None:
    """The PostgreSQL driver (the `postgres` extra), for cases that need it but no server."""
    try:
        import psycopg  # noqa: F401
        import psycopg_pool  # noqa: F401
    except ImportError:
        unavailable("the driver is not installed (pip install -e '.[postgres]')")


@pytest.fixture(scope="session")
def pg_server(pg_driver: None) -> Iterator[PostgresServer]:
    bindir = find_bindir()
    if bindir is None:
        unavailable("no PostgreSQL server binaries (initdb, pg_ctl) found; install postgresql")
    assert bindir is not None
    try:
        server = PostgresServer.start(bindir)
    except (RuntimeError, OSError, KeyError) as exc:  # KeyError: no `postgres` account
        unavailable(f"could not start PostgreSQL from {bindir}: {exc}")
        raise
    try:
        _create_template(server)
        yield server
    finally:
        server.stop()


def run_async(coro: Coroutine[Any, Any, T]) -> T:
    """Run `coro` to completion on its own loop in a helper thread (fixtures may be set up
    from inside a test's running loop)."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result(timeout=120)


def _create_template(server: PostgresServer) -> None:
    import psycopg

    from hermes.store.postgres.migrate import migrate_url

    with psycopg.connect(server.admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {TEMPLATE}")
    run_async(migrate_url(server.url(TEMPLATE)))


def _new_database(server: PostgresServer, *, template: str) -> str:
    import psycopg

    name = f"t{os.getpid()}_{next(_numbers)}"
    with psycopg.connect(server.admin_url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name} TEMPLATE {template}")
    return name


def _drop_database(server: PostgresServer, name: str) -> None:
    import psycopg

    with psycopg.connect(server.admin_url, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


@pytest.fixture
def pg_url(pg_server: PostgresServer) -> Iterator[str]:
    """A fresh, migrated database."""
    name = _new_database(pg_server, template=TEMPLATE)
    try:
        yield pg_server.url(name)
    finally:
        _drop_database(pg_server, name)


@pytest.fixture
def empty_pg_url(pg_server: PostgresServer) -> Iterator[str]:
    """A fresh database with no hermes schema at all."""
    name = _new_database(pg_server, template="template0")
    try:
        yield pg_server.url(name)
    finally:
        _drop_database(pg_server, name)

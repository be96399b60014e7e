"""Opening the configured storage backend: `open_storage(settings)`.

`database_url` unset (or empty): the SQLite files in `$HERMES_HOME`. A `postgresql://`
(or `postgres://`) URL: that PostgreSQL database, schema brought up to date before this
returns. Anything else is a ConfigError naming the setting.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from hermes.config import Settings
from hermes.errors import ConfigError
from hermes.store.api import Backend, Storage, caps_of
from hermes.store.postgres.connect import is_postgres_url, mask_database_url

if TYPE_CHECKING:
    from hermes.store.sqlite.state_db import StateDb

__all__ = ["backend_for", "open_state_db_at_once", "open_storage", "open_storage_at_once"]


def backend_for(database_url: str | None) -> Backend:
    """Which backend a `database_url` selects (ConfigError for an unsupported URL)."""
    if not database_url or not database_url.strip():
        return "sqlite"
    if is_postgres_url(database_url):
        return "postgres"
    raise ConfigError(
        f"invalid value for database_url: {mask_database_url(database_url)!r} "
        "(use a postgresql:// URL, or leave it empty for SQLite files in HERMES_HOME)"
    )


async def open_storage(settings: Settings) -> Storage:
    """Every store of the configured backend (StoreError when it cannot be opened)."""
    if backend_for(settings.database_url) == "postgres":
        from hermes.store.postgres import open_postgres_storage

        assert settings.database_url is not None
        return await open_postgres_storage(
            settings.database_url.strip(),
            response_store_size=settings.server_response_store_size,
            instance_lease_ttl=settings.instance_lease_ttl,
        )
    opened = open_storage_at_once(settings)
    assert opened is not None
    return opened


def open_storage_at_once(settings: Settings) -> Storage | None:
    """The configured storage opened without an event loop, where opening it needs none
    (SQLite files); None where it does (a database server: use `open_storage`)."""
    if not caps_of(backend_for(settings.database_url)).local_files:
        return None
    from hermes.store.sqlite.assemble import open_sqlite_storage

    settings.ensure_home()
    return open_sqlite_storage(settings.home, response_store_size=settings.server_response_store_size)


def open_state_db_at_once(settings: Settings) -> StateDb | None:
    """The configured state.db alone, where the backend is a local file (the same file and
    rules `open_storage` gives; `StateDb.run` runs a rule without an event loop); None for
    a database server. For one-shot readers (`hermes sessions list`) that need no loop."""
    if not caps_of(backend_for(settings.database_url)).local_files:
        return None
    from hermes.store.sqlite.state_db import STATE_DB, StateDb

    settings.ensure_home()
    return StateDb(settings.home / STATE_DB)

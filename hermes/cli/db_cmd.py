"""`hermes db status|upgrade`: the schema version of the configured storage backend.

    hermes db status [--json]    show applied and pending migrations (changes nothing)
    hermes db upgrade [--json]   apply pending migrations, then show the status

The backend is `database_url` (HERMES_DATABASE_URL, config.toml): empty means the SQLite
file in $HERMES_HOME (state.db), a postgresql:// URL that
database (shown with its password masked). `--json` prints

    {"object": "db.status", "backend": "sqlite"|"postgres", "location": str,
     "current": bool,
     "databases": [{"database": str, "exists": bool, "current": bool,
                    "applied": [name, …], "pending": [name, …], "unknown": [name, …]}],
     "applied_now": {database: [name, …]}}           (upgrade only; {} for status)

Exit codes: 0 success (status exits 0 even with pending migrations: read `current`);
1 the database cannot be reached or read; 2 an unsupported database_url.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import typer

from hermes.cli._common import load_settings, print_json

if TYPE_CHECKING:
    from hermes.store.schema_admin import SchemaReport

app = typer.Typer(help="Show and apply the storage schema version (SQLite files or PostgreSQL).", no_args_is_help=True)

_JSON_HELP = "Print one JSON document (see `hermes db --help`)."


def _report_json(report: SchemaReport) -> dict[str, Any]:
    return {
        "object": "db.status",
        "backend": report.backend,
        "location": report.location,
        "current": report.current,
        "databases": [
            {
                "database": status.database,
                "exists": status.exists,
                "current": status.current,
                "applied": status.applied,
                "pending": status.pending,
                "unknown": status.unknown,
            }
            for status in report.databases
        ],
        "applied_now": report.applied_now,
    }


def _plural(count: int) -> str:
    return f"{count} migration" + ("" if count == 1 else "s")


def _print(report: SchemaReport) -> None:
    for database, names in report.applied_now.items():
        if names:
            typer.echo(f"applied to {database}: {', '.join(names)}")
    if report.applied_now and not any(report.applied_now.values()):
        typer.echo("nothing to apply: the schema was already up to date")
    typer.echo(f"backend: {report.backend} ({report.location})")
    width = max(len(status.database) for status in report.databases)
    for status in report.databases:
        count = len(status.applied)
        if not status.exists:
            state = f"not created yet ({_plural(len(status.pending))} pending)"
        elif status.pending:
            state = f"{len(status.pending)} pending: {', '.join(status.pending)} ({count} applied)"
        else:
            state = f"up to date ({_plural(count)}, newest {status.applied[-1] if count else '-'})"
        if status.unknown:
            state += f"; written by a newer hermes: {', '.join(status.unknown)}"
        typer.echo(f"  {status.database.ljust(width)}  {state}")


@app.command("status")
def status(as_json: bool = typer.Option(False, "--json", help=_JSON_HELP)) -> None:
    """Show applied and pending migrations of every database of the configured backend."""
    import asyncio

    from hermes.store.schema_admin import schema_status

    report = asyncio.run(schema_status(load_settings()))
    print_json(_report_json(report)) if as_json else _print(report)


@app.command("upgrade")
def upgrade(as_json: bool = typer.Option(False, "--json", help=_JSON_HELP)) -> None:
    """Apply pending migrations (safe while other instances start: a lock serialises them)."""
    import asyncio

    from hermes.store.schema_admin import schema_upgrade

    report = asyncio.run(schema_upgrade(load_settings()))
    print_json(_report_json(report)) if as_json else _print(report)


def register(root: typer.Typer) -> None:
    root.add_typer(app, name="db")

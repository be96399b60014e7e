"""`hermes config show|get|set|unset|path`."""

from __future__ import annotations

import typer

from hermes.cli._common import load_settings, print_json
from hermes.errors import ConfigError
from hermes.redact import redact_text

app = typer.Typer(help="Show and change settings ($HERMES_HOME/config.toml).", no_args_is_help=True)


@app.command("show")
def show(as_json: bool = typer.Option(False, "--json", help="Print a JSON object.")) -> None:
    """Print every setting as resolved (flag > env > config.toml > default); secrets and URL credentials masked."""
    settings = load_settings()
    items = settings.public_items()
    if as_json:
        print_json({name: value for name, value in items})
        return
    width = max(len(name) for name, _ in items)
    for name, value in items:
        typer.echo(f"{name.ljust(width)}  {value}")


@app.command("get")
def get(key: str = typer.Argument(..., help="Setting name, e.g. model.")) -> None:
    """Print one setting's resolved value (secrets masked)."""
    settings = load_settings()
    values = dict(settings.public_items())
    if key not in values:
        raise ConfigError(f"unknown setting {key!r}; see `hermes config show`")
    typer.echo(values[key])


@app.command("set")
def set_(key: str = typer.Argument(...), value: str = typer.Argument(...)) -> None:
    """Write KEY = VALUE into config.toml (validated)."""
    from hermes.config import OPTIONS, write_config_value

    settings = load_settings()
    write_config_value(settings, key, value)
    shown = "****" if OPTIONS[key].secret else redact_text(value)
    typer.echo(f"{key} = {shown}  ({settings.config_path})")


@app.command("unset")
def unset(key: str = typer.Argument(...)) -> None:
    """Remove KEY from config.toml (its default or environment value applies again)."""
    from hermes.config import write_config_value

    settings = load_settings()
    write_config_value(settings, key, None)
    typer.echo(f"{key} removed from {settings.config_path}")


@app.command("path")
def path() -> None:
    """Print the path of config.toml."""
    typer.echo(str(load_settings().config_path))

"""`hermes config show|get|set|unset|path`."""

from __future__ import annotations

import typer

from hermes.cli._common import load_settings, print_json
from hermes.errors import ConfigError, UsageError
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


@app.command("set", context_settings={"ignore_unknown_options": True})
def set_(
    key: str = typer.Argument(...),
    value: str = typer.Argument(..., help="The value (a negative number is a value, not an option)."),
    more: list[str] | None = typer.Argument(None, metavar="[KEY VALUE]...", help="More settings, in pairs."),
) -> None:
    """Write KEY = VALUE into config.toml (validated). Prices: prices.MODEL.input (or
    output, cached_input) in dollars per million tokens."""
    from hermes.config import OPTIONS, write_config_value
    from hermes.config_prices import is_price_key, split_price_key, write_prices

    rest = list(more or [])
    if len(rest) % 2:
        raise UsageError(f"settings come in KEY VALUE pairs: {rest[-1]!r} has no value")
    pairs = [(key, value), *zip(rest[::2], rest[1::2], strict=True)]
    settings = load_settings()
    priced: dict[str, dict[str, str | None]] = {}
    for name, raw in pairs:
        if is_price_key(name):
            model, field = split_price_key(name)
            priced.setdefault(model, {})[field] = raw
    for name, raw in pairs:
        if not is_price_key(name):
            write_config_value(settings, name, raw)
            shown = "****" if OPTIONS[name].secret else redact_text(raw)
            typer.echo(f"{name} = {shown}  ({settings.config_path})")
    for model, changes in priced.items():
        table = write_prices(settings, model, changes)
        listed = ", ".join(f"{field} = {amount:g}" for field, amount in table.items())
        typer.echo(f'[prices."{model}"] {listed}  ({settings.config_path})')


@app.command("unset")
def unset(key: str = typer.Argument(...)) -> None:
    """Remove KEY from config.toml (its default or environment value applies again)."""
    from hermes.config import write_config_value
    from hermes.config_prices import is_price_key, split_price_key, write_prices

    settings = load_settings()
    if is_price_key(key):
        model, field = split_price_key(key)
        write_prices(settings, model, {field: None})
    else:
        write_config_value(settings, key, None)
    typer.echo(f"{key} removed from {settings.config_path}")


@app.command("path")
def path() -> None:
    """Print the path of config.toml."""
    typer.echo(str(load_settings().config_path))

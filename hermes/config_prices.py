"""`hermes config set prices.MODEL.FIELD VALUE`: one model's price, written into config.toml.

    write_prices(settings, "gpt-x", {"input": "3.0", "output": "15"})   # None removes a field

A price lives in its own `[prices."MODEL"]` table (hermes/pricing.py: `input` and `output`
in dollars per million tokens, `cached_input` optional). Setting a field rewrites that one
table and keeps the rest of config.toml as it was (the settings above the tables, every
other table verbatim). A model's table needs both `input` and `output`: a field left out
comes from the price hermes already knows for the model (built in, or configured); with
none known, both must be given in one command. Removing the last field removes the table.
Model names may hold dots (`gpt-4.1`): the field is the part after the last dot.

Invariants: what is written is parsed back and must give exactly the new table (ConfigError
otherwise, and the file is left as it was); values are finite numbers, 0 or more.
"""

from __future__ import annotations

import json
import math
import re
import tomllib
from collections.abc import Mapping

from hermes.config import Settings, config_tables_text, read_config_file, write_config_text
from hermes.errors import ConfigError
from hermes.pricing import TABLE

__all__ = ["FIELDS", "is_price_key", "split_price_key", "write_prices"]

FIELDS = ("input", "output", "cached_input")
_REQUIRED = ("input", "output")


def is_price_key(key: str) -> bool:
    return key.startswith(TABLE + ".")


def split_price_key(key: str) -> tuple[str, str]:
    """("MODEL", "FIELD") of `prices.MODEL.FIELD` (ConfigError for anything else)."""
    rest = key[len(TABLE) + 1 :] if is_price_key(key) else ""
    model, _, field = rest.rpartition(".")
    model = model.strip('"')
    if not model or field not in FIELDS:
        raise ConfigError(
            f"{key!r} is not a price setting: use {TABLE}.MODEL.input, {TABLE}.MODEL.output "
            f"or {TABLE}.MODEL.cached_input (dollars per million tokens)"
        )
    return model, field


def _dollars(key: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{key} must be a number of dollars per million tokens, 0 or more, not {raw!r}")
    return value


def write_prices(settings: Settings, model: str, changes: Mapping[str, str | None]) -> dict[str, float]:
    """Apply `changes` (field -> value, None removes it) to `model`'s price; return its new table."""
    read_config_file(settings.config_path)  # valid as it stands (ConfigError names the problem)
    try:
        data = tomllib.loads(settings.config_path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        data = {}
    prices = data.get(TABLE, {})
    old = prices.get(model, {}) if isinstance(prices, dict) else {}
    table: dict[str, float] = {k: float(v) for k, v in old.items() if k in FIELDS} if isinstance(old, dict) else {}
    for field, raw in changes.items():
        if raw is None:
            table.pop(field, None)
        else:
            table[field] = _dollars(f"{TABLE}.{model}.{field}", raw)
    if table:
        known = settings.prices.price(model)
        for field in _REQUIRED:
            if field not in table:
                if known is None:
                    raise ConfigError(
                        f"hermes knows no price for {model}: give input and output together, e.g. "
                        f"hermes config set {TABLE}.{model}.input 3.0 {TABLE}.{model}.output 15.0"
                    )
                table[field] = float(getattr(known, field))
    _write_table(settings, model, table)
    return table


def _header(model: str) -> re.Pattern[str]:
    quoted = "|".join(re.escape(form) for form in (json.dumps(model), f"'{model}'", model))
    return re.compile(rf"^[ \t]*\[[ \t]*{TABLE}[ \t]*\.[ \t]*(?:{quoted})[ \t]*\][ \t]*(?:#.*)?$", re.MULTILINE)


def _write_table(settings: Settings, model: str, table: dict[str, float]) -> None:
    path = settings.config_path
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    tables = config_tables_text(path)
    top = text[: len(text) - len(tables)] if tables else text
    found = _header(model).search(tables)
    if found is not None:  # cut the model's table: from its header to the next header
        following = re.compile(r"^[ \t]*\[", re.MULTILINE).search(tables, found.end())
        tables = tables[: found.start()] + (tables[following.start() :] if following else "")
    if table:
        body = "\n".join(f"{field} = {table[field]!r}" for field in FIELDS if field in table)
        block = f"[{TABLE}.{json.dumps(model)}]\n{body}\n"
        tables = (tables.rstrip("\n") + "\n\n" if tables.strip() else "") + block
    top = top.rstrip("\n") + "\n\n" if top.strip() else ""
    new_text = top + tables
    try:
        written = tomllib.loads(new_text).get(TABLE, {}).get(model)
    except tomllib.TOMLDecodeError:
        written = None
    if (written or None) != (table or None):
        raise ConfigError(
            f"the price of {model} is written in config.toml in a form `hermes config set` does not edit; "
            f"edit {path} by hand"
        )
    write_config_text(settings, new_text)

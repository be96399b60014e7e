"""Model prices and what tokens cost: a small table of known models plus config.toml's
`[prices."MODEL"]` tables.

    [prices."gpt-4o"]              # US dollars per million tokens
    input = 2.5
    cached_input = 1.25            # optional: defaults to `input`
    output = 10.0

Invariants:

- A cost is only ever computed from a price found for the exact model name (after a
  provider prefix such as ``openai/`` is tried without it); an unknown model has no price
  and its cost is None, never a guess. Any usage with an unknown model makes a total None.
- Configured prices replace the built-in entry of the same model and add new ones.
- `cached_input` prices the part of the input the provider served from its cache;
  `input_tokens` always counts every prompt token, cached ones included.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Protocol

from hermes.errors import ConfigError

__all__ = ["KNOWN_PRICES", "TABLE", "Price", "PriceTable", "Tokens", "format_cost", "parse_prices"]

TABLE = "prices"
"""The config.toml table of prices."""
_KEYS = frozenset({"input", "cached_input", "output"})
_PER = 1_000_000


class Tokens(Protocol):
    """Tokens of one model, in one session where `session_id` is set (e.g.
    `hermes.store.records.UsageTotal`)."""

    @property
    def session_id(self) -> str | None: ...
    @property
    def model(self) -> str | None: ...
    @property
    def input_tokens(self) -> int: ...
    @property
    def cached_input_tokens(self) -> int: ...
    @property
    def output_tokens(self) -> int: ...


@dataclass(frozen=True, slots=True)
class Price:
    """US dollars per million tokens."""

    input: float
    output: float
    cached_input: float | None = None
    """None: cached input costs as much as `input`."""

    def cost(self, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0) -> float:
        """Dollars for these tokens (`cached_input_tokens` is a part of `input_tokens`)."""
        cached = min(max(cached_input_tokens, 0), input_tokens)
        cached_price = self.input if self.cached_input is None else self.cached_input
        return ((input_tokens - cached) * self.input + cached * cached_price + output_tokens * self.output) / _PER

    def describe(self) -> str:
        """ "input=2.5 cached_input=1.25 output=10" (dollars per million tokens), as config.toml has it."""
        cached = "" if self.cached_input is None else f" cached_input={self.cached_input:g}"
        return f"input={self.input:g}{cached} output={self.output:g}"


KNOWN_PRICES: Mapping[str, Price] = MappingProxyType(
    {
        # OpenAI list prices (platform.openai.com/docs/pricing).
        "gpt-4o": Price(input=2.5, cached_input=1.25, output=10.0),
        "gpt-4o-mini": Price(input=0.15, cached_input=0.075, output=0.6),
        "gpt-4.1": Price(input=2.0, cached_input=0.5, output=8.0),
        "gpt-4.1-mini": Price(input=0.4, cached_input=0.1, output=1.6),
        "gpt-4.1-nano": Price(input=0.1, cached_input=0.025, output=0.4),
        "o3": Price(input=2.0, cached_input=0.5, output=8.0),
        "o4-mini": Price(input=1.1, cached_input=0.275, output=4.4),
        "gpt-5": Price(input=1.25, cached_input=0.125, output=10.0),
        "gpt-5-mini": Price(input=0.25, cached_input=0.025, output=2.0),
        "gpt-5-nano": Price(input=0.05, cached_input=0.005, output=0.4),
        # Anthropic list prices (cache reads at a tenth of input).
        "claude-sonnet-4-5": Price(input=3.0, cached_input=0.3, output=15.0),
        "claude-opus-4-1": Price(input=15.0, cached_input=1.5, output=75.0),
        "claude-haiku-4-5": Price(input=1.0, cached_input=0.1, output=5.0),
    }
)
"""Built-in prices: a few widely used models; config.toml adds the rest."""


class PriceTable:
    """The prices in force: `KNOWN_PRICES` overlaid with the configured ones."""

    __slots__ = ("_configured", "_prices")

    def __init__(self, configured: Mapping[str, Price] | None = None) -> None:
        self._configured: Mapping[str, Price] = MappingProxyType(dict(configured or {}))
        self._prices: Mapping[str, Price] = MappingProxyType({**KNOWN_PRICES, **self._configured})

    @property
    def configured(self) -> Mapping[str, Price]:
        """The prices config.toml sets (for `hermes config show`), by model."""
        return self._configured

    def __eq__(self, other: object) -> bool:
        return isinstance(other, PriceTable) and dict(self._prices) == dict(other._prices)

    def __hash__(self) -> int:
        return hash(tuple(sorted(self._prices.items())))

    def __repr__(self) -> str:
        return f"PriceTable({len(self._prices)} models)"

    def price(self, model: str | None) -> Price | None:
        """The price of `model`, or None when it is not known."""
        if not model:
            return None
        found = self._prices.get(model)
        if found is None and "/" in model:
            found = self._prices.get(model.rsplit("/", 1)[1])
        return found

    def cost(
        self, model: str | None, input_tokens: int, output_tokens: int, cached_input_tokens: int = 0
    ) -> float | None:
        """Dollars for these tokens of `model`, None when its price is not known."""
        if input_tokens == 0 and output_tokens == 0:
            return 0.0
        price = self.price(model)
        return None if price is None else price.cost(input_tokens, output_tokens, cached_input_tokens)

    def of(self, tokens: Tokens) -> float | None:
        """Dollars for one model's tokens, None when its price is not known."""
        return self.cost(tokens.model, tokens.input_tokens, tokens.output_tokens, tokens.cached_input_tokens)

    def total(self, parts: Iterable[Tokens]) -> float | None:
        """The sum over every part (0 for none); None when any part's price is unknown."""
        total = 0.0
        for part in parts:
            cost = self.of(part)
            if cost is None:
                return None
            total += cost
        return total

    def per_session(self, usage: Iterable[Tokens], session_ids: Iterable[str]) -> dict[str, float | None]:
        """Each session's `total` over its parts of `usage` (0 for a session with none)."""
        parts: dict[str, list[Tokens]] = {sid: [] for sid in session_ids}
        for part in usage:
            if part.session_id in parts:
                parts[part.session_id].append(part)
        return {sid: self.total(found) for sid, found in parts.items()}


def parse_prices(raw: object, where: str) -> dict[str, Price]:
    """The `[prices."MODEL"]` tables of config.toml; ConfigError names the bad entry."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f'{where}: {TABLE} must be a table of [{TABLE}."MODEL"] entries')
    return {str(model): _parse_price(str(model), entry, where) for model, entry in raw.items()}


def _parse_price(model: str, entry: object, where: str) -> Price:
    label = f'{where}: [{TABLE}."{model}"]'
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{label} must be a table with input and output (dollars per million tokens)")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise ConfigError(f"{label}: unknown key(s) {', '.join(unknown)}")
    for key in ("input", "output"):
        if key not in entry:
            raise ConfigError(f"{label}: {key} is missing (dollars per million tokens)")
    values = {key: _dollars(label, key, entry[key]) for key in _KEYS if key in entry}
    return Price(input=values["input"], output=values["output"], cached_input=values.get("cached_input"))


def _dollars(label: str, key: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        raise ConfigError(f"{label}: {key} must be a number of dollars, 0 or more, not {value!r}")
    return float(value)


def format_cost(dollars: float | None) -> str:
    """ "$0.0123" style, with more digits for tiny amounts; "" when unknown."""
    if dollars is None:
        return ""
    if dollars == 0:
        return "$0"
    if dollars < 0.01:
        return f"${dollars:.4f}"
    return f"${dollars:.2f}"

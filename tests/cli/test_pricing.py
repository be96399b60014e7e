"""`hermes.pricing`: prices from the built-in table and config.toml, costs, and no guesses."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.config import Settings
from hermes.errors import ConfigError
from hermes.pricing import KNOWN_PRICES, Price, PriceTable, format_cost, parse_prices
from hermes.store.records import UsageTotal


def test_cost_prices_cached_input_apart_and_defaults_it_to_input() -> None:
    assert Price(input=2.0, output=10.0, cached_input=0.5).cost(1_000_000, 100_000, 400_000) == pytest.approx(2.4)
    assert Price(input=2.0, output=10.0).cost(1_000_000, 0, 400_000) == pytest.approx(2.0)


def test_unknown_models_have_no_price_and_make_totals_unknown() -> None:
    prices = PriceTable()
    assert prices.price("gpt-4o") == KNOWN_PRICES["gpt-4o"]
    assert prices.price("openai/gpt-4o") == KNOWN_PRICES["gpt-4o"]  # a provider prefix is tried without it
    assert prices.price("gpt-4o-2099") is None and prices.price(None) is None  # no near-name guesses
    assert prices.cost("mystery", 10, 5) is None
    assert prices.cost("mystery", 0, 0) == 0.0  # no tokens cost nothing, priced or not
    known, unknown = UsageTotal("gpt-4o", 1_000_000, 0, 0), UsageTotal("mystery", 1, 0, 1)
    assert prices.total([known]) == pytest.approx(2.5)
    assert prices.total([known, unknown]) is None
    assert prices.total([]) == 0.0


def test_config_toml_prices_override_and_extend(tmp_path: Path) -> None:
    (tmp_path / "config.toml").write_text(
        '[prices."gpt-4o"]\ninput = 1\noutput = 2\n[prices."mine"]\ninput = 0.1\noutput = 0.2\n', encoding="utf-8"
    )
    prices = Settings.load({"home": str(tmp_path)}, env={}).prices
    assert prices.price("gpt-4o") == Price(input=1.0, output=2.0)
    assert prices.price("mine") == Price(input=0.1, output=0.2)
    assert prices.price("gpt-4o-mini") == KNOWN_PRICES["gpt-4o-mini"]


@pytest.mark.parametrize(
    ("table", "fragment"),
    [
        ({"m": {"input": 1}}, "output is missing"),
        ({"m": {"input": -1, "output": 1}}, "input must be a number of dollars"),
        ({"m": {"input": True, "output": 1}}, "input must be a number of dollars"),
        ({"m": {"input": 1, "output": 1, "batch": 1}}, "unknown key(s) batch"),
        ({"m": 3}, "must be a table"),
    ],
)
def test_bad_price_tables_name_the_entry(table: dict[str, object], fragment: str) -> None:
    with pytest.raises(ConfigError, match="prices") as caught:
        parse_prices(table, "config.toml")
    assert fragment in str(caught.value)


def test_format_cost() -> None:
    assert [format_cost(v) for v in (None, 0.0, 0.00123, 0.0188, 2.4)] == ["", "$0", "$0.0012", "$0.02", "$2.40"]

"""The status bar's usage figures: the last turn's and the session's tokens and cost, priced
from config.toml's `[prices."MODEL"]` (real turns against the scripted upstream)."""

from __future__ import annotations

from pathlib import Path

from hermes.config import Settings
from hermes.testing.upstream import ScriptedUpstream, text_reply

from .conftest import send_turn, type_and_send, until

PRICES = '[prices."scripted-model"]\ninput = 2.0\ncached_input = 0.5\noutput = 10.0\n'


def priced_settings(home: Path, upstream: ScriptedUpstream) -> Settings:
    home.mkdir(parents=True, exist_ok=True)
    (home / "config.toml").write_text(PRICES, encoding="utf-8")
    overrides = {"home": str(home), "base_url": upstream.base_url, "model": "scripted-model", "api_key": "x"}
    return Settings.load(overrides, env={})


async def test_status_bar_shows_turn_and_session_tokens_and_cost(make_tui, upstream, tmp_path: Path):
    settings = priced_settings(tmp_path / "priced", upstream)
    # 1M prompt tokens (400k cached) + 100k out = $2.40; then 1M uncached prompt tokens = $2.00.
    upstream.enqueue(
        text_reply("first", usage=(1_000_000, 100_000, 400_000)), text_reply("second", usage=(1_000_000, 0))
    )
    app = make_tui(settings=settings, app_settings=settings)
    async with app.run_test(size=(160, 30)) as pilot:
        bar = app.chat.status_bar
        assert bar.usage_text() == (None, "↑0 ↓0")
        await send_turn(pilot, "one")
        await until(pilot, lambda: bar.session_cost is not None, what="the session's cost")
        assert bar.usage_text() == ("turn ↑1.0M ↓100K $2.40", "Σ ↑1.0M ↓100K $2.40")
        await send_turn(pilot, "two")
        await until(pilot, lambda: bar.session_cost == 4.4, what="the session's cost after two turns")
        assert bar.usage_text() == ("turn ↑1.0M ↓0 $2.00", "Σ ↑2.0M ↓100K $4.40")
        line = str(bar.render())
        assert "turn ↑1.0M ↓0 $2.00 │ Σ ↑2.0M ↓100K $4.40 │ ctx " in line
        # A new session starts from nothing again.
        await type_and_send(pilot, "/new")
        await until(pilot, lambda: bar.usage_text() == (None, "↑0 ↓0"), what="the usage to reset")


async def test_an_unpriced_model_shows_tokens_only(make_tui, upstream):
    upstream.enqueue(text_reply("answer", usage=(1200, 300)))
    app = make_tui()  # scripted-model has no built-in price
    async with app.run_test(size=(160, 30)) as pilot:
        bar = app.chat.status_bar
        await send_turn(pilot, "hi")
        assert bar.usage_text() == ("turn ↑1.2K ↓300", "Σ ↑1.2K ↓300")
        assert "$" not in str(bar.render())

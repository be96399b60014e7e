"""Cost in the CLI: each session's `cost_usd` in the `hermes sessions` commands, the by-model
and by-day breakdown of `sessions stats`, and the `result` line of `hermes chat -q --json`
(`result_line`: the turn's usage and its `cost_usd`).

A cost is priced from the usage rows (`AsyncSessionStore.session_usage`/`usage_totals`)
with `Settings.prices`; where any part's model has no price, the cost is None (`null` in
JSON, "?" in text), never a guess.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from itertools import groupby
from typing import TYPE_CHECKING, Any

from hermes.pricing import PriceTable, format_cost

if TYPE_CHECKING:
    from hermes.agent.types import TurnResult
    from hermes.cli._sessions_source import OpenedSessions
    from hermes.store.records import UsageTotal

__all__ = ["result_line", "session_costs", "usage_json", "usage_lines"]


def result_line(result: TurnResult, prices: PriceTable) -> dict[str, Any]:
    """The `{"type": "result", …}` object of `chat -q --json`: the `TurnResult`'s fields
    (its `usage` included) and `cost_usd`, the turn's tokens priced for its model (None
    when the model has no price)."""
    usage = result.usage
    cost = prices.cost(result.model, usage.input_tokens, usage.output_tokens, usage.cached_input_tokens)
    return {"type": "result", **asdict(result), "cost_usd": cost}


def session_costs(opened: OpenedSessions, prices: PriceTable, session_ids: Sequence[str]) -> dict[str, float | None]:
    """`cost_usd` of each session (0 for one that used no tokens; None, unknown, for a
    server's sessions: their usage rows are not offered over HTTP)."""
    ids = list(dict.fromkeys(session_ids))
    if opened.storage is None:
        return dict.fromkeys(ids)
    return prices.per_session(opened.run(opened.storage.sessions.session_usage(ids)), ids)


def _tokens_json(parts: Sequence[UsageTotal], prices: PriceTable) -> dict[str, Any]:
    return {
        "input_tokens": sum(p.input_tokens for p in parts),
        "cached_input_tokens": sum(p.cached_input_tokens for p in parts),
        "output_tokens": sum(p.output_tokens for p in parts),
        "cost_usd": prices.total(parts),
    }


def usage_json(totals: Sequence[UsageTotal], prices: PriceTable) -> dict[str, Any]:
    """The cost keys of `sessions stats --json`: `cached_input_tokens`, `cost_usd`,
    `by_model` (most expensive first, unknown prices last) and `by_day` (oldest first)."""
    by_model = [
        {"model": model, **_tokens_json(list(parts), prices)}
        for model, parts in groupby(sorted(totals, key=lambda t: t.model or ""), key=lambda t: t.model)
    ]
    by_model.sort(key=lambda m: (m["cost_usd"] is None, -(m["cost_usd"] or 0.0), m["model"] or ""))
    by_day = [{"day": day, **_tokens_json(list(parts), prices)} for day, parts in groupby(totals, key=lambda t: t.day)]
    return {
        "cached_input_tokens": sum(t.cached_input_tokens for t in totals),
        "cost_usd": prices.total(totals),
        "by_model": by_model,
        "by_day": by_day,
    }


def _tokens_text(entry: dict[str, Any]) -> str:
    cached = f" ({entry['cached_input_tokens']} cached)" if entry["cached_input_tokens"] else ""
    cost = format_cost(entry["cost_usd"]) if entry["cost_usd"] is not None else "? (no price)"
    return f"{entry['input_tokens']} in{cached} / {entry['output_tokens']} out  {cost}"


def usage_lines(usage: dict[str, Any]) -> list[tuple[str, str]]:
    """(name, value) rows of the text `sessions stats`, from `usage_json`."""
    cost = usage["cost_usd"]
    if cost is not None:
        rows = [("cost", format_cost(cost))]
    else:
        priced = sum(entry["cost_usd"] or 0.0 for entry in usage["by_model"])
        unpriced = ", ".join(entry["model"] or "(none)" for entry in usage["by_model"] if entry["cost_usd"] is None)
        rows = [("cost", f"{format_cost(priced)} priced + the tokens of {unpriced} (no price in config.toml)")]
    if usage["by_model"]:
        rows.append(("by model", ""))
        rows += [(f"  {entry['model'] or '(none)'}", _tokens_text(entry)) for entry in usage["by_model"]]
    if usage["by_day"]:
        rows.append(("by day", ""))
        rows += [(f"  {entry['day']}", _tokens_text(entry)) for entry in usage["by_day"]]
    return rows

"""`cost_usd` on the sessions REST API: priced from config.toml's `[prices."MODEL"]`, with
the cached prompt tokens the upstream reports; null for a model without a price."""

from __future__ import annotations

from pathlib import Path

import pytest
from _runs_fixtures import *  # noqa: F403  (fixtures: serve, upstream, sessions_db)

from hermes.testing.upstream import text_reply

PRICES = '[prices."scripted-model"]\ninput = 2.0\ncached_input = 0.5\noutput = 10.0\n'


async def test_session_cost_from_a_configured_price(serve, upstream, sessions_db, tmp_path: Path):
    (tmp_path / "home").mkdir(exist_ok=True)
    (tmp_path / "home" / "config.toml").write_text(PRICES, encoding="utf-8")
    client = await serve()
    created = await (await client.post("/api/sessions", json={"title": "Priced"})).json()
    session_id = created["session"]["id"]
    assert created["session"]["cost_usd"] == 0.0  # nothing used yet
    # 1M prompt tokens, 400k of them cached, and 100k output: 0.6*2 + 0.4*0.5 + 0.1*10 = $2.40.
    upstream.enqueue(text_reply("priced answer", usage=(1_000_000, 100_000, 400_000)))
    resp = await client.post(f"/api/sessions/{session_id}/chat", json={"message": "hi"})
    assert resp.status == 200, await resp.text()

    unpriced = sessions_db.create_session(source="api_server", model="mystery-model")
    sessions_db.add_usage(unpriced.id, input_tokens=10, output_tokens=5)

    got = (await (await client.get(f"/api/sessions/{session_id}")).json())["session"]
    listed = {s["id"]: s["cost_usd"] for s in (await (await client.get("/api/sessions")).json())["data"]}
    assert (got["input_tokens"], got["output_tokens"]) == (1_000_000, 100_000)
    assert got["cost_usd"] == pytest.approx(2.4)
    assert listed == {session_id: pytest.approx(2.4), unpriced.id: None}
    assert sessions_db.session_usage([session_id])[0].cached_input_tokens == 400_000


async def test_cost_usd_is_documented_in_the_openapi_session(serve):
    client = await serve()
    document = await (await client.get("/openapi.json")).json()
    session = document["components"]["schemas"]["Session"]
    assert session["properties"]["cost_usd"] == {"type": ["number", "null"]}
    assert "cost_usd" in session["required"]

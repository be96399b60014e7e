"""web_search against scripted SearXNG, Brave and Tavily endpoints on loopback; its config table."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from aiohttp import web

from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.web import make_web_search_tool, web_tools
from hermes.config import Settings
from hermes.errors import ConfigError, ToolError
from hermes.web_search_config import WebSearchConfig

SECRET = "brave-key-0123456789"


@pytest_asyncio.fixture
async def engines() -> AsyncIterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []

    async def searxng(request: web.Request) -> web.Response:
        seen.append({"engine": "searxng", "query": dict(request.query)})
        results = [
            {
                "title": "Textual Pilot",
                "url": "https://textual.textualize.io/guide/testing/",
                "content": "Use  pilot.press",
            },
            {"title": "Pilot API", "url": "https://textual.textualize.io/api/pilot/", "content": "press(*keys)"},
            {"title": "no url"},
        ]
        return web.json_response({"query": request.query["q"], "results": results})

    async def brave(request: web.Request) -> web.Response:
        seen.append(
            {"engine": "brave", "query": dict(request.query), "token": request.headers.get("X-Subscription-Token")}
        )
        if request.headers.get("X-Subscription-Token") != SECRET:
            return web.json_response({"error": "bad key"}, status=401)
        return web.json_response({"web": {"results": [{"title": "B", "url": "https://b.test/", "description": "bee"}]}})

    async def tavily(request: web.Request) -> web.Response:
        body = await request.json()
        seen.append({"engine": "tavily", "body": body, "auth": request.headers.get("Authorization")})
        return web.json_response({"results": [{"title": "T", "url": "https://t.test/", "content": "tee"}]})

    app = web.Application()
    app.router.add_get("/search", searxng)
    app.router.add_get("/brave", brave)
    app.router.add_post("/tavily", tavily)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    try:
        yield f"http://127.0.0.1:{runner.addresses[0][1]}", seen
    finally:
        await runner.cleanup()


def _ctx(tmp_path: Path) -> ToolContext:
    return ToolContext(session_id="search", cwd=tmp_path)


async def test_searxng_results_are_titles_urls_and_snippets(engines, tmp_path: Path) -> None:
    base, seen = engines
    tool = make_web_search_tool(WebSearchConfig("searxng", base))
    result = await tool.handler({"query": "textual pilot", "max_results": 1}, _ctx(tmp_path))
    assert seen == [{"engine": "searxng", "query": {"q": "textual pilot", "format": "json"}}]
    assert result.splitlines() == [
        "[web search (searxng) for 'textual pilot' · untrusted: snippets are not the user's words]",
        "1. Textual Pilot",
        "   https://textual.textualize.io/guide/testing/",
        "   Use pilot.press",
    ]


async def test_brave_sends_the_key_from_the_named_variable_and_never_shows_it(
    engines, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, seen = engines
    tool = make_web_search_tool(WebSearchConfig("brave", f"{base}/brave", "MY_BRAVE_KEY"))
    monkeypatch.delenv("MY_BRAVE_KEY", raising=False)
    with pytest.raises(ToolError, match="needs its key in the environment variable MY_BRAVE_KEY"):
        await tool.handler({"query": "x"}, _ctx(tmp_path))
    assert seen == []
    monkeypatch.setenv("MY_BRAVE_KEY", "wrong-key-000000000000")
    with pytest.raises(ToolError) as refused:
        await tool.handler({"query": "x"}, _ctx(tmp_path))
    assert "HTTP 401" in str(refused.value) and "wrong-key" not in str(refused.value)
    monkeypatch.setenv("MY_BRAVE_KEY", SECRET)
    result = await tool.handler({"query": "bees", "max_results": 3}, _ctx(tmp_path))
    assert "1. B\n   https://b.test/\n   bee" in result and SECRET not in result
    assert seen[-1]["query"] == {"q": "bees", "count": "3"}


async def test_tavily_posts_the_query_with_a_bearer_key(
    engines, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base, seen = engines
    monkeypatch.setenv("TAVILY_KEY", "tv-key")
    tool = make_web_search_tool(WebSearchConfig("tavily", f"{base}/tavily", "TAVILY_KEY"))
    result = await tool.handler({"query": "tea"}, _ctx(tmp_path))
    assert seen == [{"engine": "tavily", "body": {"query": "tea", "max_results": 5}, "auth": "Bearer tv-key"}]
    assert "https://t.test/" in result


async def test_an_unreachable_backend_is_a_one_line_error(tmp_path: Path) -> None:
    tool = make_web_search_tool(WebSearchConfig("searxng", "http://127.0.0.1:9"), timeout=5)
    with pytest.raises(ToolError, match=r"web search \(searxng\) failed"):
        await tool.handler({"query": "x"}, _ctx(tmp_path))


def _settings(tmp_path: Path, toml: str) -> Settings:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / "config.toml").write_text(toml)
    return Settings.load({"home": str(home)}, env={})


def test_web_search_is_offered_only_with_a_configured_backend(tmp_path: Path) -> None:
    assert [t.name for t in web_tools(_settings(tmp_path, ""))] == ["web_fetch"]
    configured = _settings(tmp_path, '[web_search]\nbackend = "searxng"\nurl = "http://127.0.0.1:8888"\n')
    assert [t.name for t in web_tools(configured)] == ["web_fetch", "web_search"]
    assert configured.web_search == WebSearchConfig("searxng", "http://127.0.0.1:8888")
    assert ("web_search.backend", "searxng") in configured.public_items()


@pytest.mark.parametrize(
    ("toml", "message"),
    [
        ('[web_search]\nbackend = "bing"\n', "backend must be one of searxng, brave, tavily"),
        ('[web_search]\nbackend = "searxng"\n', 'needs url = "http://…"'),
        ('[web_search]\nbackend = "brave"\n', "needs api_key_env"),
        ('[web_search]\nbackend = "searxng"\nurl = "ftp://x"\n', "must start with http"),
        ('[web_search]\nbackend = "brave"\napi_key_env = "K"\nkey = "inline"\n', "unknown key(s) in [web_search]: key"),
        ('web_search = "searxng"\n', "web_search must be a table"),
    ],
)
def test_a_bad_web_search_table_is_a_clear_config_error(tmp_path: Path, toml: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        _settings(tmp_path, toml)


def test_web_settings_are_checked(tmp_path: Path) -> None:
    settings = Settings.load({"home": str(tmp_path)}, env={"HERMES_WEB_ALLOW": "python.org, *.example.com"})
    assert settings.web_allow == ("python.org", "*.example.com") and settings.web_fetch_max_kb == 200
    for name, value in [("web_fetch_max_kb", "0"), ("web_fetch_timeout", "-1"), ("web_allow_private", "maybe")]:
        with pytest.raises(ConfigError, match=name):
            Settings.load({"home": str(tmp_path), name: value}, env={})

"""Web search through a configured backend: SearXNG (self-hosted), Brave or Tavily.

    results = await search(config, "textual pilot press", max_results=5, key=os.environ.get(...))

Invariants:
- the backend and its address come from the user's config, never from the model, so the
  address rules of a fetch do not apply (a SearXNG on localhost is the common case);
- the key is read from the environment variable the config names, sent only to that
  backend, and never shown in a result or an error;
- every search ends within `timeout` seconds; a backend's error is one line naming the
  backend and its HTTP status.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import aiohttp

from hermes.agent.web.fetch import USER_AGENT
from hermes.web_search_config import WebSearchConfig


class WebSearchError(Exception):
    """The search failed: the message says how (no key, the backend's status, a timeout)."""


@dataclass(frozen=True, slots=True)
class SearchResult:
    title: str
    url: str
    snippet: str


async def search(
    config: WebSearchConfig, query: str, *, max_results: int, key: str | None, timeout: float = 20.0
) -> list[SearchResult]:
    if config.backend != "searxng" and not key:
        where = config.api_key_env or "(none named)"
        raise WebSearchError(f"web search ({config.backend}) needs its key in the environment variable {where}")
    try:
        async with (
            asyncio.timeout(timeout),
            aiohttp.ClientSession(trust_env=False, headers={"User-Agent": USER_AGENT}) as session,
        ):
            data = await _ask(session, config, query, max_results, key)
    except TimeoutError:
        raise WebSearchError(f"web search ({config.backend}) gave no answer within {timeout:g} s") from None
    except aiohttp.ClientResponseError as exc:
        raise WebSearchError(f"web search ({config.backend}) answered HTTP {exc.status}") from None
    except (aiohttp.ClientError, ValueError) as exc:
        raise WebSearchError(f"web search ({config.backend}) failed: {type(exc).__name__}") from None
    return _results(config.backend, data)[:max_results]


async def _ask(
    session: aiohttp.ClientSession, config: WebSearchConfig, query: str, max_results: int, key: str | None
) -> Any:
    if config.backend == "searxng":
        params = {"q": query, "format": "json"}
        async with session.get(config.endpoint, params=params, raise_for_status=True) as response:
            return await response.json(content_type=None)
    if config.backend == "brave":
        headers = {"X-Subscription-Token": key or "", "Accept": "application/json"}
        params = {"q": query, "count": str(max_results)}
        async with session.get(config.endpoint, params=params, headers=headers, raise_for_status=True) as response:
            return await response.json(content_type=None)
    body = {"query": query, "max_results": max_results}
    headers = {"Authorization": f"Bearer {key}"}
    async with session.post(config.endpoint, json=body, headers=headers, raise_for_status=True) as response:
        return await response.json(content_type=None)


def _results(backend: str, data: Any) -> list[SearchResult]:
    if not isinstance(data, dict):
        raise WebSearchError(f"web search ({backend}) answered something that is not a JSON object")
    if backend == "brave":
        web = data.get("web")
        items = web.get("results") if isinstance(web, dict) else None
        snippet_key = "description"
    else:
        items = data.get("results")
        snippet_key = "content"
    out: list[SearchResult] = []
    for item in items if isinstance(items, list) else []:
        if isinstance(item, dict) and isinstance(item.get("url"), str):
            out.append(
                SearchResult(
                    title=str(item.get("title") or item["url"]).strip(),
                    url=item["url"],
                    snippet=" ".join(str(item.get(snippet_key) or "").split()),
                )
            )
    return out

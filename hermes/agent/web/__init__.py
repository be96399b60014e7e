"""The web tools' parts: which addresses may be reached, fetching a page, searching.

- addresses.py: what counts as a private address, and a resolver that never hands one out;
- page.py: a response body as text the model reads (HTML converted to Markdown);
- fetch.py: `WebPolicy` and `fetch_page`, one guarded GET with redirects checked hop by hop;
- search.py: `WebSearchConfig` and the search backends (SearXNG, Brave, Tavily).

The tools themselves (`web_fetch`, `web_search`) live in hermes/agent/tools/web.py.
"""

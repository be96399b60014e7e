"""The `[web_search]` table of config.toml: which backend `web_search` asks.

    [web_search]
    backend = "searxng"                  # or "brave", "tavily"
    url = "http://127.0.0.1:8888"        # SearXNG's address; for Brave/Tavily an API address to override
    api_key_env = "BRAVE_API_KEY"        # Brave/Tavily: the environment variable holding the key

Without the table there is no `web_search` tool. The key itself is never in config.toml.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from hermes.errors import ConfigError

TABLE = "web_search"
BACKENDS = ("searxng", "brave", "tavily")
DEFAULT_URLS = {
    "brave": "https://api.search.brave.com/res/v1/web/search",
    "tavily": "https://api.tavily.com/search",
}


@dataclass(frozen=True, slots=True)
class WebSearchConfig:
    backend: str
    url: str | None = None
    api_key_env: str | None = None

    @property
    def endpoint(self) -> str:
        if self.backend == "searxng":
            return (self.url or "").rstrip("/") + "/search"
        return self.url or DEFAULT_URLS[self.backend]


def parse_web_search(raw: object, where: str) -> WebSearchConfig:
    """The table, checked; ConfigError names what is wrong."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: {TABLE} must be a table ([{TABLE}])")
    unknown = sorted(set(raw) - {"backend", "url", "api_key_env"})
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) in [{TABLE}]: {', '.join(unknown)}")
    backend = raw.get("backend")
    if backend not in BACKENDS:
        raise ConfigError(f"{where}: [{TABLE}] backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
    url, key_env = raw.get("url"), raw.get("api_key_env")
    for name, value in (("url", url), ("api_key_env", key_env)):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ConfigError(f"{where}: [{TABLE}] {name} must be a non-empty string")
    if url is not None and not url.startswith(("http://", "https://")):
        raise ConfigError(f"{where}: [{TABLE}] url must start with http:// or https://")
    if backend == "searxng" and url is None:
        raise ConfigError(f'{where}: [{TABLE}] backend = "searxng" needs url = "http://…" (your SearXNG)')
    if backend != "searxng" and key_env is None:
        raise ConfigError(f"{where}: [{TABLE}] backend = {backend!r} needs api_key_env (the variable holding the key)")
    return WebSearchConfig(backend, url, key_env)

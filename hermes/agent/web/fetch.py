"""One guarded GET of a web page: `fetch_page(url, policy, permit)`.

Invariants:
- only http and https URLs, with a host, are fetched; user names and passwords in a URL
  are refused (they would be sent to the host and logged in the transcript);
- every hop (the first request and each redirect, followed by hand up to
  `policy.max_redirects`) is checked twice before it is made: its host is asked of
  `permit` (the domain rule: web_allow, else a person), and a host written as an IP address
  must be public; a host name is resolved by `GuardedResolver`, so the address connected
  to is public too (unless `policy.allow_private`);
- at most `policy.max_bytes` of the (decompressed) body are read; the rest is left unread
  and the page says it was cut;
- the whole fetch, redirects included, ends within `policy.timeout` seconds;
- no proxy from the environment, no cookies kept between fetches.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit

import aiohttp

from hermes import __version__
from hermes.agent.web.addresses import GuardedResolver, PrivateAddressError, literal_refusal

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})
USER_AGENT = f"hermes-agent/{__version__} (web_fetch)"
ACCEPT = "text/markdown, text/html;q=0.9, text/plain;q=0.8, application/json;q=0.8, */*;q=0.1"

Permit = Callable[[str, str], Awaitable[str | None]]
"""(host, url) → None when the fetch may go on, else the refusal the model reads."""


class WebRefusal(Exception):
    """The fetch was not made (or not followed further): the message says why."""


class WebFetchError(Exception):
    """The fetch was made and failed (timeout, connection, HTTP error): the message says how."""


@dataclass(frozen=True, slots=True)
class WebPolicy:
    """Who may be fetched and how much (from the `web_*` settings)."""

    allow: tuple[str, ...] = ()
    """Domains fetched without asking: `example.com` covers it and its subdomains; `*` any."""
    allow_private: bool = False
    max_bytes: int = 200 * 1024
    timeout: float = 30.0
    max_redirects: int = 5

    def allows(self, host: str) -> bool:
        host = host.lower().rstrip(".")
        for entry in self.allow:
            domain = entry.strip().lower().lstrip("*").lstrip(".").rstrip(".")
            if entry.strip() == "*" or (domain and (host == domain or host.endswith("." + domain))):
                return True
        return False


@dataclass(frozen=True, slots=True)
class FetchedPage:
    url: str
    """The address the body came from (after redirects)."""
    status: int
    content_type: str | None
    charset: str | None
    body: bytes
    truncated: bool


def check_url(url: str) -> str:
    """The URL's host; raises WebRefusal for a URL that may not be fetched at all."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 - raises ValueError for a port out of range
    except ValueError as exc:
        raise WebRefusal(f"{url!r} is not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        raise WebRefusal(f"only http and https URLs are fetched, not {parts.scheme or 'a URL without a scheme'}")
    if not host:
        raise WebRefusal(f"{url!r} has no host")
    if parts.username is not None or parts.password is not None:
        raise WebRefusal("a URL with a user name or password is not fetched")
    return host


async def fetch_page(url: str, policy: WebPolicy, permit: Permit) -> FetchedPage:
    """GET `url` under `policy`; raises WebRefusal or WebFetchError."""
    try:
        async with asyncio.timeout(policy.timeout):
            return await _fetch(url, policy, permit)
    except TimeoutError:
        raise WebFetchError(f"no complete answer from {url} within {policy.timeout:g} s") from None


async def _fetch(url: str, policy: WebPolicy, permit: Permit) -> FetchedPage:
    connector = aiohttp.TCPConnector(resolver=GuardedResolver(policy.allow_private), force_close=True)
    async with aiohttp.ClientSession(
        connector=connector,
        trust_env=False,
        cookie_jar=aiohttp.DummyCookieJar(),
        headers={"User-Agent": USER_AGENT, "Accept": ACCEPT},
    ) as session:
        for _hop in range(policy.max_redirects + 1):
            host = check_url(url)
            why = literal_refusal(host, policy.allow_private)
            if why is not None:
                raise WebRefusal(f"{url} was not fetched: {why} (set web_allow_private = true to allow it)")
            refusal = await permit(host, url)
            if refusal is not None:
                raise WebRefusal(refusal)
            try:
                async with session.get(url, allow_redirects=False) as response:
                    location = response.headers.get("Location")
                    if response.status in REDIRECT_STATUSES and location:
                        url = urljoin(str(response.url), location)
                        continue
                    if response.status >= 400:
                        raise WebFetchError(f"{url} answered HTTP {response.status} {response.reason or ''}".rstrip())
                    body, truncated = await _read_capped(response.content, policy.max_bytes)
                    return FetchedPage(
                        url=str(response.url),
                        status=response.status,
                        content_type=response.headers.get("Content-Type"),
                        charset=response.charset,
                        body=body,
                        truncated=truncated,
                    )
            except aiohttp.ClientConnectorError as exc:
                if isinstance(exc.os_error, PrivateAddressError):
                    raise WebRefusal(
                        f"{url} was not fetched: {exc.os_error} (set web_allow_private = true to allow it)"
                    ) from None
                raise WebFetchError(f"could not connect to {host}: {exc.os_error.strerror or exc}") from None
            except aiohttp.ClientError as exc:
                raise WebFetchError(f"fetching {url} failed: {exc}") from None
        raise WebFetchError(f"more than {policy.max_redirects} redirects, the last to {url}")


async def _read_capped(stream: aiohttp.StreamReader, cap: int) -> tuple[bytes, bool]:
    chunks: list[bytes] = []
    size = 0
    while size <= cap:
        chunk = await stream.read(min(65536, cap + 1 - size))
        if not chunk:
            return b"".join(chunks), False
        chunks.append(chunk)
        size += len(chunk)
    return b"".join(chunks)[:cap], True

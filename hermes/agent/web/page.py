"""A fetched response body as text the model reads.

HTML is converted to Markdown by markdownify (over BeautifulSoup's parser) after the parts
no reader sees are dropped (scripts, styles, templates, frames, inline SVG); plain text,
Markdown, JSON, XML and CSV are kept as they are; anything else is refused by its type.

Invariants:
- the body is decoded with the charset the response names, else UTF-8, and undecodable
  bytes are replaced, never raised;
- conversion never sees more than the fetch's byte cap, so its cost is bounded by it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urljoin

from bs4 import BeautifulSoup
from markdownify import ATX, MarkdownConverter

_DROPPED_TAGS = ("script", "style", "noscript", "template", "iframe", "svg", "canvas", "object", "embed")
_TEXT_TYPES = frozenset(
    {
        "application/json",
        "application/ld+json",
        "application/xml",
        "application/javascript",
        "application/x-javascript",
        "application/yaml",
        "application/x-yaml",
        "application/toml",
    }
)
_BLANK_RUNS = re.compile(r"\n{3,}")


class UnreadableContent(ValueError):
    """The response is not text (an image, an archive, a PDF): the message names its type."""


@dataclass(frozen=True, slots=True)
class PageText:
    text: str
    kind: str
    """"markdown" (converted from HTML) or "text"."""
    title: str | None = None


def media_type(content_type: str | None) -> str:
    """`text/html; charset=utf-8` → `text/html` (lower case); "" when missing."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def is_html(kind: str) -> bool:
    return kind in ("text/html", "application/xhtml+xml")


def is_text(kind: str) -> bool:
    return kind.startswith("text/") or kind in _TEXT_TYPES or kind.endswith(("+json", "+xml"))


def page_text(body: bytes, content_type: str | None, charset: str | None, url: str = "") -> PageText:
    """The body as text; raises UnreadableContent for a type that is not text. Links and
    images of an HTML page are made absolute against `url`, the page's final address."""
    kind = media_type(content_type)
    if not kind:
        kind = "text/html" if body.lstrip()[:15].lower().startswith((b"<!doctype html", b"<html")) else ""
    if not is_html(kind) and not is_text(kind):
        raise UnreadableContent(f"the response is {kind or 'of no stated type'}, not text")
    if b"\x00" in body[:4096] and not is_html(kind):
        raise UnreadableContent(f"the response says {kind} but holds binary data")
    text = _decode(body, charset)
    if not is_html(kind):
        return PageText(text, "text")
    return html_to_markdown(text, url)


def html_to_markdown(html: str, url: str = "") -> PageText:
    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(" ", strip=True) if soup.title else None
    for dropped in soup.find_all(_DROPPED_TAGS):
        dropped.decompose()
    if soup.head is not None:
        soup.head.decompose()
    if url:
        for name, attribute in (("a", "href"), ("img", "src")):
            for element in soup.find_all(name):
                value = element.get(attribute)
                if isinstance(value, str) and value and not value.startswith(("#", "javascript:", "data:")):
                    element[attribute] = urljoin(url, value)
    converter = MarkdownConverter(heading_style=ATX, escape_underscores=False, escape_asterisks=False)
    markdown = _BLANK_RUNS.sub("\n\n", converter.convert_soup(soup)).strip()
    return PageText(markdown, "markdown", title or None)


def _decode(body: bytes, charset: str | None) -> str:
    try:
        return body.decode(charset or "utf-8", errors="replace")
    except LookupError:  # a charset Python does not know
        return body.decode("utf-8", errors="replace")

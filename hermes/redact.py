"""Masking credentials in URLs before hermes prints them.

    redact_url("https://user:pass@host/v1?api_key=x")  -> "https://user:****@host/v1?api_key=****"
    redact_text("failed: https://u:p@h/v1 refused")    -> "failed: https://u:****@h/v1 refused"

Invariants:
- a password in the userinfo part is replaced by MASK; a userinfo with no password (a bare
  token, `https://TOKEN@host`) is replaced whole;
- query parameters whose name looks like a credential (key, token, secret, password,
  signature, auth, …) keep their name and lose their value;
- everything else (scheme, host, port, path, other parameters) is printed unchanged, so the
  masked form still says which endpoint is meant. Text that is not a URL is left alone.
"""

from __future__ import annotations

import re

MASK = "****"

_SECRET_PARAM = re.compile(
    r"(?:^|[_-])(?:key|apikey|token|secret|password|passwd|pwd|signature|sig|auth|authorization|credential|credentials)$",
    re.IGNORECASE,
)
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s'\"<>]+")
_TRAILING = ".,;:!?)]}"
"""Punctuation that ends a sentence around a URL rather than belonging to it."""
_USERINFO = re.compile(r"^(?P<scheme>[A-Za-z][A-Za-z0-9+.-]*://)(?P<userinfo>[^/?#]*)@")
_QUERY_PAIR = re.compile(r"(?P<sep>[?&;])(?P<name>[^=&;#]+)=(?P<value>[^&;#]*)")


def is_secret_param(name: str) -> bool:
    """True for query parameter names like api_key, access_token, X-Amz-Signature, password."""
    return _SECRET_PARAM.search(name) is not None


def redact_url(url: str) -> str:
    """`url` with its userinfo password and credential-like query values masked."""
    match = _USERINFO.match(url)
    if match:
        userinfo = match.group("userinfo")
        user, colon, _ = userinfo.partition(":")
        shown = f"{user}:{MASK}" if colon else MASK
        url = f"{match.group('scheme')}{shown}@{url[match.end() :]}"

    def query(m: re.Match[str]) -> str:
        if is_secret_param(m.group("name")) and m.group("value"):
            return f"{m.group('sep')}{m.group('name')}={MASK}"
        return m.group(0)

    head, hash_mark, fragment = url.partition("#")
    if "?" in head:
        base, _, rest = head.partition("?")
        head = base + _QUERY_PAIR.sub(query, "?" + rest)
    return head + hash_mark + fragment


def redact_text(text: str) -> str:
    """`text` with every URL in it passed through redact_url."""
    if "://" not in text:
        return text
    def one(m: re.Match[str]) -> str:
        url = m.group(0)
        trail = len(url) - len(url.rstrip(_TRAILING))
        return redact_url(url[: len(url) - trail]) + url[len(url) - trail :]

    return _URL.sub(one, text)

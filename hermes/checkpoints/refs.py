"""The git refs that keep a session's snapshots alive: `refs/hermes/<session>/<turn>-before|after`.

    prefix = session_ref_prefix("x.lock")      # "refs/hermes/x%2Elock/"
    session_id_of_ref("refs/hermes/x%2Elock/3-after") == "x.lock"

Invariants:

- Any session id gets a valid ref name, and the encoding is reversible and injective:
  an id made only of `[A-Za-z0-9_-]` and inner dots (no `..`, no dot first or last, not
  ending in `.lock`, not starting with `-`) is used as it is (the refs of such ids keep
  the names they always had); any other id has every byte outside `[A-Za-z0-9_]` written
  as `%XX` (UTF-8), so it holds a `%` (a non-plain id has such a byte; the empty id is
  `%_`), which no id used as it is holds.
- The encoded id is one or more path components of at most `_COMPONENT` bytes; every
  component but the last ends in `%`, which no encoding ends in, so one session's prefix
  is never the start of another's.
- `legacy_ref_prefix` is the prefix refs had before ids were encoded, for ids git took
  as they were and that hold no `%` (so it is never another id's encoded prefix);
  pruning looks there too.
"""

from __future__ import annotations

import re

__all__ = ["legacy_ref_prefix", "session_id_of_ref", "session_ref_prefix"]

ROOT = "refs/hermes/"
_PLAIN = re.compile(r"[A-Za-z0-9_]([A-Za-z0-9_-]|\.(?!\.))*")
_KEPT = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_EMPTY = "%_"
_COMPONENT = 200
"""Bytes per ref component (a loose ref is a file; names stay well under NAME_MAX)."""
_LEGACY_BAD = re.compile(r"^$|[\x00-\x20\x7f~^:?*\[\\%]|\.\.|@\{|//|/\.|\.lock(/|$)|^[./]|[./]$|^@$")


def _plain(session_id: str) -> bool:
    return _PLAIN.fullmatch(session_id) is not None and not session_id.endswith((".", ".lock"))


def encode_session_id(session_id: str) -> str:
    """The session id as ref path components (see the module docstring)."""
    if _plain(session_id):
        encoded = session_id
    elif not session_id:
        encoded = _EMPTY
    else:
        encoded = "".join(chr(b) if b in _KEPT else f"%{b:02X}" for b in session_id.encode("utf-8", "surrogatepass"))
    parts: list[str] = []
    while len(encoded) > _COMPONENT:
        cut = _COMPONENT - 1  # room for the "%" that marks a continued component
        if "%" in encoded[cut - 2 : cut]:
            cut = encoded.rindex("%", cut - 2, cut)  # never split a %XX escape
        if encoded[cut] == ".":
            cut -= 1  # no component starts with a dot (a plain id has no "..")
        parts.append(encoded[:cut] + "%")
        encoded = encoded[cut:]
    return "/".join([*parts, encoded])


def session_ref_prefix(session_id: str) -> str:
    """`refs/hermes/<encoded id>/`: every ref of the session starts with it."""
    return f"{ROOT}{encode_session_id(session_id)}/"


def legacy_ref_prefix(session_id: str) -> str | None:
    """The prefix of refs written before ids were encoded, when it differs and was valid."""
    legacy = f"{ROOT}{session_id}/"
    if legacy == session_ref_prefix(session_id) or _LEGACY_BAD.search(session_id) is not None:
        return None
    return legacy


def session_id_of_ref(ref: str) -> str | None:
    """The session id of one of its refs (`refs/hermes/<encoded id>/<name>`), else None."""
    if not ref.startswith(ROOT) or "/" not in ref[len(ROOT) :]:
        return None
    encoded = ref[len(ROOT) : ref.rindex("/")]
    parts = encoded.split("/")
    if any(not p.endswith("%") for p in parts[:-1]) or parts[-1].endswith("%"):
        return None
    joined = "".join(p[:-1] for p in parts[:-1]) + parts[-1]
    if "%" not in joined:
        return joined if _plain(joined) else None
    return "" if joined == _EMPTY else _unquote(joined)


def _unquote(text: str) -> str | None:
    out = bytearray()
    i = 0
    while i < len(text):
        if text[i] == "%":
            try:
                out.append(int(text[i + 1 : i + 3], 16))
            except ValueError:
                return None
            i += 3
        else:
            out.append(ord(text[i]))
            i += 1
    return out.decode("utf-8", "surrogatepass")

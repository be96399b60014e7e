"""Every identifier format hermes mints, in one place.

This module sits below every layer (it imports nothing from hermes). Formats:

    session           YYYYMMDD_HHMMSS_<6 hex>   new_session_id(): every session any front
                                                end, the engine or the store creates
    derived session   api-<16 hex>              derived_session_id(): sha256 of system
                                                prompt + "\\n" + first user message, for
                                                chat clients that resend the transcript
    keyed session     owui-<16 hex>             keyed_session_id(): sha256 of a client's
                                                own chat id (Open WebUI's chat id)
    run               run_<32 hex>              new_run_id()
    response          resp_<28 hex>             new_response_id()
    chat completion   chatcmpl-<29 hex>         new_completion_id()
    output item       msg_/fc_/fco_/rs_<24 hex> new_item_id(prefix)
    stream message    msg_<32 hex>              new_message_id()
    tool call         call_<24 hex>             new_call_id()

Invariants: random parts come from `secrets`; a new session id sorts by its UTC creation
second; a derived session id is a pure function of its inputs (the API contract pins it,
so clients that resend a transcript land in the same session).
"""

from __future__ import annotations

import hashlib
import re
import secrets
import time
from datetime import UTC, datetime

__all__ = [
    "DERIVED_SESSION_ID",
    "RUN_ID",
    "SESSION_ID",
    "derived_session_id",
    "keyed_session_id",
    "new_call_id",
    "new_completion_id",
    "new_item_id",
    "new_message_id",
    "new_response_id",
    "new_run_id",
    "new_session_id",
    "new_session_ids",
    "short_session_id",
]

SESSION_ID = re.compile(r"^[0-9]{8}_[0-9]{6}_(?P<suffix>[0-9a-f]{6})$")
"""What `new_session_id` returns. Other ids (client-chosen, derived) are valid session ids too."""

DERIVED_SESSION_ID = re.compile(r"^api-[0-9a-f]{16}$")
RUN_ID = re.compile(r"^run_[0-9a-f]{32}$")


def _hex(length: int) -> str:
    return secrets.token_hex((length + 1) // 2)[:length]


def new_session_id(now: float | None = None) -> str:
    """A fresh `YYYYMMDD_HHMMSS_<6 hex>` session id: UTC creation second plus 24 random bits.

    Unique in practice (the store retries on the rare collision) and sortable by creation.
    """
    moment = datetime.fromtimestamp(time.time() if now is None else now, UTC)
    return f"{moment:%Y%m%d_%H%M%S}_{_hex(6)}"


def new_session_ids(count: int, now: float | None = None) -> list[str]:
    """`count` fresh session ids of one creation second (candidates for one insert)."""
    moment = datetime.fromtimestamp(time.time() if now is None else now, UTC)
    prefix = f"{moment:%Y%m%d_%H%M%S}_"
    return [prefix + _hex(6) for _ in range(count)]


def short_session_id(session_id: str) -> str:
    """A short handle for display: the random suffix of a generated id, else the first 8 chars."""
    match = SESSION_ID.match(session_id)
    return match["suffix"] if match else session_id[:8]


def derived_session_id(system_prompt: str | None, first_user_content: str) -> str:
    """`api-` + the first 16 hex of sha256(system prompt + "\\n" + first user message)."""
    seed = f"{system_prompt or ''}\n{first_user_content}"
    return "api-" + hashlib.sha256(seed.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def keyed_session_id(chat_id: str) -> str:
    """`owui-` + the first 16 hex of sha256(the client's chat id)."""
    return "owui-" + hashlib.sha256(chat_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def new_run_id() -> str:
    return "run_" + _hex(32)


def new_instance_id() -> str:
    """A running process's identity in the instance leases (`inst_` + 24 hex digits)."""
    return "inst_" + _hex(24)


def new_response_id() -> str:
    return "resp_" + _hex(28)


def new_completion_id() -> str:
    return "chatcmpl-" + _hex(29)


def new_item_id(prefix: str) -> str:
    """A Responses output item id: `prefix` (msg_, fc_, fco_, rs_) + 24 hex."""
    return prefix + _hex(24)


def new_message_id() -> str:
    """The id of an assistant message on a session chat stream: `msg_` + 32 hex."""
    return "msg_" + _hex(32)


def new_call_id() -> str:
    """A tool call id the engine mints itself (models that do not name their calls)."""
    return "call_" + _hex(24)

"""The JSON shapes of the sessions resource and their schemas, one beside the other.

`session_json` is `SessionRecord.to_json` with the system prompt replaced by
`has_system_prompt` (an API never hands the prompt out) plus what only the server knows;
`message_json` is every field of `MessageRecord` (without the ``object`` tag `to_json`
adds). Their schemas (`SESSION`, `MESSAGE`) are generated from the record types
(`hermes.server.http.record_schema`) with exactly those differences, so a field added to a
record shows up in the answer and in `/openapi.json` at once.
"""

from __future__ import annotations

from typing import Any

from hermes.server.http.record_schema import record_schema
from hermes.server.http.route import Component
from hermes.store.records import MessageRecord, RunRecord, SessionRecord


def session_json(
    record: SessionRecord, run: RunRecord | None = None, *, cost_usd: float | None = None
) -> dict[str, Any]:
    """The session object of `hermes sessions … --json` (`SessionRecord.to_json` plus
    `cost_usd`), with `has_system_prompt` in place of the prompt (an API never hands it
    out), plus what only the server knows: `last_active` (= updated_at, the name session
    clients read) and the active run. README, "One session shape", lists the differences."""
    data = record.to_json()
    data["cost_usd"] = cost_usd
    data["has_system_prompt"] = bool(data.pop("system_prompt", None))
    active = run is not None and not run.terminal
    return {
        **data,
        "last_active": record.updated_at,
        "active_run_id": run.run_id if run is not None and active else None,
        "active_run_status": run.status if run is not None and active else None,
    }


def message_json(record: MessageRecord) -> dict[str, Any]:
    """An item of a messages page: `MessageRecord.to_json` without its ``object`` tag."""
    data = record.to_json()
    del data["object"]
    return data


SESSION = Component(
    "Session",
    record_schema(
        SessionRecord,
        object_name="session",
        without=("system_prompt",),
        extra={
            "cost_usd": float | None,
            "has_system_prompt": bool,
            "last_active": float,
            "active_run_id": str | None,
            "active_run_status": str | None,
        },
    ),
)
"""`session_json`: the record's own shape, the prompt replaced by `has_system_prompt`, plus the active run."""
MESSAGE = Component("Message", record_schema(MessageRecord))
"""`message_json`: every field of the record (no ``object`` tag)."""
SESSION_ENVELOPE = Component(
    "SessionEnvelope",
    {
        "type": "object",
        "required": ["object", "session"],
        "properties": {"object": {"const": "hermes.session"}, "session": SESSION.ref},
    },
    uses=(SESSION,),
)
SESSION_PAGE = Component(
    "SessionPage",
    {
        "type": "object",
        "required": ["object", "data", "limit", "offset", "total", "has_more"],
        "properties": {
            "object": {"const": "list"},
            "data": {"type": "array", "items": SESSION.ref},
            "limit": {"type": "integer"},
            "offset": {"type": "integer"},
            "total": {"type": "integer"},
            "has_more": {"type": "boolean"},
        },
    },
    uses=(SESSION,),
)
MESSAGE_PAGE = Component(
    "MessagePage",
    {
        "type": "object",
        "required": ["object", "session_id", "data", "pagination"],
        "properties": {
            "object": {"const": "list"},
            "session_id": {"type": "string"},
            "data": {"type": "array", "items": MESSAGE.ref},
            "pagination": {"type": "object"},
        },
    },
    uses=(MESSAGE,),
)

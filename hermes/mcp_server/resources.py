"""The stored sessions as MCP resources: `hermes://sessions/{id}`, a Markdown transcript.

`resources/list` names the newest `LIST_LIMIT` sessions (any source); the template
`hermes://sessions/{id}` reaches every stored one. A read renders the session with
hermes/transcript_markdown.py (`hermes sessions export -f markdown`'s document).
"""

from __future__ import annotations

import mcp_types as types

from hermes.backend import ChatSessions
from hermes.transcript_markdown import local_time, session_markdown

PREFIX = "hermes://sessions/"
TEMPLATE = PREFIX + "{id}"
MIME = "text/markdown"
LIST_LIMIT = 50


class UnknownResource(LookupError):
    """A URI that names no stored session (or is not a hermes session URI)."""


def session_uri(session_id: str) -> str:
    return PREFIX + session_id


async def list_sessions(sessions: ChatSessions, limit: int = LIST_LIMIT) -> list[types.Resource]:
    """The newest `limit` sessions, newest first."""
    records = await sessions.list_sessions(limit=limit)
    return [
        types.Resource(
            uri=session_uri(record.id),
            name=record.id,
            title=record.title or f"Session {record.id}",
            description=f"hermes session ({record.source}, updated {local_time(record.updated_at)}, "
            f"{record.message_count} messages)",
            mime_type=MIME,
        )
        for record in records
    ]


def templates() -> list[types.ResourceTemplate]:
    return [
        types.ResourceTemplate(
            uri_template=TEMPLATE,
            name="session",
            title="hermes session",
            description="A stored hermes session as Markdown (the id is the session_id the chat tool returns).",
            mime_type=MIME,
        )
    ]


async def read_session(sessions: ChatSessions, uri: str) -> types.TextResourceContents:
    """The session `uri` names, as Markdown; UnknownResource for anything else."""
    if not uri.startswith(PREFIX):
        raise UnknownResource(f"not a hermes session URI: {uri!r} (expected {TEMPLATE})")
    session_id = uri.removeprefix(PREFIX)
    record = await sessions.find_session(session_id) if session_id and "/" not in session_id else None
    if record is None:
        raise UnknownResource(f"no hermes session {session_id!r}")
    messages = await sessions.get_messages(record.id)
    return types.TextResourceContents(uri=uri, mime_type=MIME, text=session_markdown(record, messages))

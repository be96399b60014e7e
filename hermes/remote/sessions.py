"""The session store of a remote `hermes serve`, over its sessions REST API.

`RemoteSessions` answers the part of `AsyncSessionStore` the chat TUI and the `sessions`
commands use (find, get, list, count, search, messages, rename, fork, delete), with the
same record types (`SessionRecord`, `MessageRecord`, `SearchHit`) rebuilt from the JSON
the server sends. It is also the server's `SessionFiles` (hermes/checkpoints/files.py):
undo, redo and diffs run on the server, against the server's files
(`POST /api/sessions/{id}/undo|redo`, `GET /api/sessions/{id}/diff`). Invariants:
- a session the server does not have raises `SessionNotFound`, as locally;
- the server never hands out a session's system prompt: `system_prompt` is None here;
- compaction markers are not offered over HTTP: `compactions` is empty, so a resumed
  session's context estimate counts every message until its first turn reports the size;
- a session's model is sent with each turn (`RemoteAgent`), not patched on the server;
- usage rows are not offered over HTTP: `session_usage` raises `RemoteUnsupported`, so no
  cost is shown for a server's session rather than a wrong one;
- undo and redo raise what the local rules raise: `FilesChangedOutside` with the server's
  paths (nothing changed; `force=True` overwrites), `NothingToUndo`; a run active in the
  session is a `RemoteError` (409 `run_already_active`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields
from typing import Any
from urllib.parse import quote

from hermes import api_paths
from hermes.agent.types import ChatMessage
from hermes.checkpoints.shadow import FileChange
from hermes.checkpoints.undo import TurnChange, UndoOutcome
from hermes.errors import RemoteUnsupported
from hermes.remote.client import RemoteClient
from hermes.store.records import CompactionRecord, MessageRecord, SearchHit, SessionRecord, UsageTotal

MESSAGE_PAGE = 500
"""Messages per request (the server's maximum)."""
_SESSION_FIELDS = tuple(f.name for f in fields(SessionRecord))
_MESSAGE_FIELDS = tuple(f.name for f in fields(MessageRecord))


def session_record(data: dict[str, Any]) -> SessionRecord:
    """A `SessionRecord` from the server's session object (`system_prompt` is never sent)."""
    values: dict[str, Any] = {name: data.get(name) for name in _SESSION_FIELDS}
    for name in ("message_count", "tool_call_count", "input_tokens", "output_tokens"):
        values[name] = int(values[name] or 0)
    values["system_prompt"] = None
    return SessionRecord(**values)


def message_record(data: dict[str, Any]) -> MessageRecord:
    values: dict[str, Any] = {name: data.get(name) for name in _MESSAGE_FIELDS}
    return MessageRecord(**values)


def _filters(source: str | None, cwd: str | None) -> dict[str, str]:
    """The list's query filters: a source, a folder."""
    return {**({"source": source} if source else {}), **({"cwd": cwd} if cwd else {})}


def session_path(session_id: str, tail: str = "") -> str:
    return f"{api_paths.SESSIONS}/{quote(session_id, safe='')}{tail}"


class RemoteSessions:
    """Sessions of the server `client` talks to (see the module docstring)."""

    def __init__(self, client: RemoteClient) -> None:
        self.client = client

    async def get_session(self, session_id: str) -> SessionRecord:
        data = await self.client.request("GET", session_path(session_id))
        return session_record(data["session"])

    async def find_session(self, session_id: str) -> SessionRecord | None:
        from hermes.errors import SessionNotFound

        try:
            return await self.get_session(session_id)
        except SessionNotFound:
            return None

    async def latest_session(self, *, source: str | None = None, cwd: str | None = None) -> SessionRecord | None:
        listed = await self.list_sessions(limit=1, source=source, cwd=cwd)
        return listed[0] if listed else None

    async def list_sessions(
        self, *, limit: int = 50, offset: int = 0, source: str | None = None, cwd: str | None = None
    ) -> list[SessionRecord]:
        records: list[SessionRecord] = []
        while len(records) < limit:
            params = {"limit": str(min(200, limit - len(records))), "offset": str(offset + len(records))}
            params |= _filters(source, cwd)
            page = await self.client.request("GET", api_paths.SESSIONS, params=params)
            records += [session_record(item) for item in page["data"]]
            if not page.get("has_more") or not page["data"]:
                break
        return records

    async def count_sessions(self, *, source: str | None = None, cwd: str | None = None) -> int:
        params = {"limit": "1", **_filters(source, cwd)}
        page = await self.client.request("GET", api_paths.SESSIONS, params=params)
        return int(page["total"])

    async def sessions_with_prefix(self, prefix: str, *, limit: int = 10) -> list[SessionRecord]:
        if not prefix:
            return []
        params = {"id_prefix": prefix, "limit": str(max(1, min(limit, 200)))}
        page = await self.client.request("GET", api_paths.SESSIONS, params=params)
        return [session_record(item) for item in page["data"]][:limit]

    async def search(self, query: str, *, limit: int = 20, source: str | None = None) -> list[SearchHit]:
        params = {"q": query, "limit": str(max(1, min(limit, 200)))}
        if source:
            params["source"] = source
        page = await self.client.request("GET", api_paths.SEARCH, params=params)
        return [
            SearchHit(session_record(hit["session"]), int(hit["message_id"]), str(hit["role"]), str(hit["snippet"]))
            for hit in page["data"]
        ][:limit]

    async def get_messages(self, session_id: str, *, limit: int | None = None, offset: int = 0) -> list[MessageRecord]:
        messages: list[MessageRecord] = []
        while limit is None or len(messages) < limit:
            want = MESSAGE_PAGE if limit is None else min(MESSAGE_PAGE, limit - len(messages))
            params = {"limit": str(want), "offset": str(offset + len(messages)), "order": "oldest"}
            page = await self.client.request("GET", session_path(session_id, "/messages"), params=params)
            messages += [message_record(item) for item in page["data"]]
            if len(page["data"]) < want:
                break
        return messages

    async def history(self, session_id: str) -> list[ChatMessage]:
        return [m.to_openai() for m in await self.get_messages(session_id) if m.role != "system"]

    async def compactions(self, session_id: str) -> list[CompactionRecord]:
        return []  # not offered over HTTP (see the module docstring)

    async def session_usage(self, session_ids: Sequence[str]) -> list[UsageTotal]:
        raise RemoteUnsupported("a session's usage rows (its cost) are not offered over HTTP")

    async def create_session(self, *, source: str, title: str | None = None, model: str | None = None) -> SessionRecord:
        body: dict[str, Any] = {"source": source}
        if title:
            body["title"] = title
        if model:
            body["model"] = model
        data = await self.client.request("POST", api_paths.SESSIONS, body=body)
        return session_record(data["session"])

    async def rename_session(self, session_id: str, title: str) -> SessionRecord:
        data = await self.client.request("PATCH", session_path(session_id), body={"title": title})
        return session_record(data["session"])

    async def update_session(
        self, session_id: str, *, model: str | None = None, system_prompt: str | None = None
    ) -> SessionRecord:
        """Nothing to patch on the server: the model goes with each turn (module docstring)."""
        return await self.get_session(session_id)

    async def delete_session(self, session_id: str) -> None:
        await self.client.request("DELETE", session_path(session_id))

    async def fork_session(
        self,
        session_id: str,
        *,
        at_message_id: int | None = None,
        title: str | None = None,
        source: str | None = None,
    ) -> SessionRecord:
        """The server marks the fork's source itself (api_server); `source` is not sent."""
        body: dict[str, Any] = {}
        if title:
            body["title"] = title
        if at_message_id is not None:
            body["at_message_id"] = at_message_id
        data = await self.client.request("POST", session_path(session_id, "/fork"), body=body)
        return session_record(data["session"])

    # ---- file checkpoints (SessionFiles) -------------------------------------------------

    async def undo(self, session_id: str, *, turns: int = 1, force: bool = False) -> UndoOutcome:
        body = {"turns": turns, "force": force}
        return undo_outcome(await self.client.request("POST", session_path(session_id, "/undo"), body=body))

    async def redo(self, session_id: str, *, force: bool = False) -> UndoOutcome:
        body = {"force": force}
        return undo_outcome(await self.client.request("POST", session_path(session_id, "/redo"), body=body))

    async def turn_changes(self, session_id: str, turn: int | None = None) -> TurnChange:
        params = {"turn": str(turn)} if turn is not None else None
        data = await self.client.request("GET", session_path(session_id, "/diff"), params=params)
        files = tuple(
            FileChange(str(f["path"]), int(f["added"]), int(f["removed"]), bool(f.get("binary"))) for f in data["files"]
        )
        truncated = data.get("truncated") is True
        return TurnChange(int(data["turn"]), int(data["turn_id"]), files, str(data["patch"]), truncated)


def undo_outcome(data: dict[str, Any]) -> UndoOutcome:
    """An `UndoOutcome` from the server's undo or redo answer."""
    return UndoOutcome(tuple(int(t) for t in data["turns"]), tuple(str(f) for f in data["files"]))

"""`PgDialect`: how the `hermes` schema differs from the neutral SQL of `hermes.store.rules.sessions`.

- Content is stored as JSON text (`content_json`), so any string round-trips, beside its
  searchable text (`search_text`, see `postgres.search`), from which a generated
  tsvector column is indexed.
- Sessions inserted at equal times sort by `created_seq`; LIMIT NULL means no limit.
- Rows a write depends on are locked (`FOR UPDATE`); every write touching a turn locks
  the turn row before the session row, so an owner and a repairer never deadlock.
- Fork titles ("<base> #N") are chosen under a transaction-level advisory lock on the
  base title, so two instances forking the same lineage never pick the same number.
- A turn belongs to this storage's instance (`owner_instance`, its lease in
  `hermes.instances`); it is abandoned when that lease expired or is missing, by the
  database's clock, re-checked under the turn's lock before repair.
- A run settled by any instance stays settled; the clock is the database's; a stored
  response's recency is the sequence `hermes.response_clock`.
- The hot writes are one statement each (`FusedWrites`): every round trip counts.
"""

from __future__ import annotations

import json
from typing import Any

from hermes.errors import StoreError
from hermes.store.postgres.search import search_messages, search_text
from hermes.store.records import SearchHit
from hermes.store.sql import TURN_COLUMNS, Executor, FusedWrites, Params, Row, encode_json

__all__ = ["PgDialect"]

_TURN_COLUMNS = f"{TURN_COLUMNS}, owner_instance"
_T_COLUMNS = ", ".join("t." + name.strip() for name in _TURN_COLUMNS.split(","))
_MESSAGE_DATA = (
    "role, content_json, search_text, tool_calls, tool_call_id, tool_name, reasoning, finish_reason, "
    "timestamp, token_count"
)
_MESSAGE_VALUES = (
    "%s::text, %s::text, %s::text, %s::text, %s::text, %s::text, %s::text, %s::text, %s::double precision, %s::integer"
)
_DB_NOW = "extract(epoch from clock_timestamp())::double precision"
_LIVE_LEASE = (
    f"EXISTS (SELECT 1 FROM hermes.instances AS i WHERE i.instance_id = t.owner_instance AND i.expires_at >= {_DB_NOW})"
)
# Count the message on its session (locking the row, so counters stay exact) and insert
# it; no row comes back when the session does not exist.
# (calls, now, session, <message data>)
_APPEND = (
    "WITH s AS (UPDATE hermes.sessions SET message_count = message_count + 1, "
    "tool_call_count = tool_call_count + %s, updated_at = %s WHERE id = %s RETURNING id) "
    f"INSERT INTO hermes.messages (session_id, {_MESSAGE_DATA}) SELECT s.id, {_MESSAGE_VALUES} FROM s RETURNING id"
)
# An assistant message of a turn: it replaces the turn's open draft in place (kept as a
# message, the turn's draft cleared; the count already holds it), else it is a plain
# append. The turn row is locked first (the lock order of every turn write). No row
# back: no such turn in this session. Back: (id, whether it replaced the draft).
# (turn, sid, calls, now, <one message's arrays' values as scalars>)
_APPEND_TO_TURN = (
    "WITH t AS (SELECT draft_message_id AS draft, ended_at FROM hermes.turns "
    "WHERE id = %(turn)s AND session_id = %(sid)s FOR UPDATE), "
    "d AS (SELECT draft FROM t WHERE ended_at IS NULL AND draft IS NOT NULL), "
    "r AS (UPDATE hermes.messages SET content_json = %(content)s::text, search_text = %(search)s::text, "
    "tool_calls = %(tool_calls)s::text, reasoning = %(reasoning)s::text, finish_reason = %(finish)s::text, "
    "token_count = %(tokens)s::integer, timestamp = %(now)s::double precision, draft = false "
    "WHERE id = (SELECT draft FROM d) RETURNING id), "
    "u AS (UPDATE hermes.turns SET draft_message_id = NULL WHERE id = %(turn)s AND EXISTS (SELECT 1 FROM r)), "
    "s AS (UPDATE hermes.sessions SET message_count = message_count + (CASE WHEN EXISTS (SELECT 1 FROM d) "
    "THEN 0 ELSE 1 END), tool_call_count = tool_call_count + %(calls)s, updated_at = %(now)s "
    "WHERE id = %(sid)s AND EXISTS (SELECT 1 FROM t) RETURNING id), "
    f"i AS (INSERT INTO hermes.messages (session_id, {_MESSAGE_DATA}) SELECT s.id, %(role)s::text, "
    "%(content)s::text, %(search)s::text, %(tool_calls)s::text, %(call_id)s::text, %(tool_name)s::text, "
    "%(reasoning)s::text, %(finish)s::text, %(now)s::double precision, %(tokens)s::integer FROM s "
    "WHERE NOT EXISTS (SELECT 1 FROM d) RETURNING id) "
    "SELECT id, true FROM r UNION ALL SELECT id, false FROM i"
)
# The draft it had (read before the update) is kept as a message. No row in `old`: no
# such turn. Ended already: nothing changes. (turn, now, reason)
_END_TURN = (
    "WITH old AS (SELECT id, draft_message_id FROM hermes.turns WHERE id = %(turn)s), "
    "t AS (UPDATE hermes.turns AS u SET ended_at = %(now)s, end_reason = %(reason)s, draft_message_id = NULL "
    "FROM old WHERE u.id = old.id AND u.ended_at IS NULL RETURNING old.draft_message_id AS draft), "
    "m AS (UPDATE hermes.messages SET draft = false, finish_reason = coalesce(finish_reason, %(reason)s) "
    "WHERE id = (SELECT draft FROM t)) "
    "SELECT count(*) FROM old"
)
# The turn starts after the session's newest message. No row: no session.
# (now, host, pid, started, instance, session)
_BEGIN_TURN = (
    "INSERT INTO hermes.turns (session_id, after_message_id, started_at, owner_host, owner_pid, "
    "owner_started, owner_instance) "
    "SELECT s.id, (SELECT coalesce(max(m.id), 0) FROM hermes.messages AS m WHERE m.session_id = s.id), "
    "%s, %s, %s, %s, %s FROM hermes.sessions AS s WHERE s.id = %s "
    f"RETURNING {_TURN_COLUMNS}"
)
# A turn's input messages (one array per column, zipped by unnest, in order): inserted
# in that order after the session's newest message.
_INPUTS = (
    f"msg AS (INSERT INTO hermes.messages (session_id, {_MESSAGE_DATA}) SELECT s.id, v.role, v.content_json, "
    "v.search_text, v.tool_calls, v.tool_call_id, v.tool_name, v.reasoning, v.finish_reason, "
    "%(now)s::double precision, v.token_count FROM s, unnest(%(role)s::text[], %(content)s::text[], "
    "%(search)s::text[], %(tool_calls)s::text[], %(call_id)s::text[], %(tool_name)s::text[], "
    "%(reasoning)s::text[], %(finish)s::text[], %(tokens)s::integer[]) WITH ORDINALITY AS v(role, content_json, "
    "search_text, tool_calls, tool_call_id, tool_name, reasoning, finish_reason, token_count, n) "
    "ORDER BY v.n RETURNING id) "
    "SELECT t.*, (SELECT array_agg(id ORDER BY id) FROM msg) FROM t"
)
_OWNER_VALUES = "%(host)s::text, %(pid)s::integer, %(started)s::text, %(instance)s::text"
# A turn and its input messages, in a session that exists (counted on its row, locked
# first); the turn starts after the session's newest message (the snapshot is from
# before this insert). No row: no session.
_START_TURN = (
    "WITH s AS (UPDATE hermes.sessions SET message_count = message_count + %(count)s, "
    "tool_call_count = tool_call_count + %(calls)s, updated_at = %(now)s WHERE id = %(sid)s RETURNING id), "
    "t AS (INSERT INTO hermes.turns (session_id, after_message_id, started_at, owner_host, owner_pid, "
    "owner_started, owner_instance) SELECT s.id, (SELECT coalesce(max(m.id), 0) FROM hermes.messages AS m "
    f"WHERE m.session_id = s.id), %(now)s, {_OWNER_VALUES} FROM s RETURNING {_TURN_COLUMNS}), " + _INPUTS
)
# A new session (the first of the candidate ids no session has; its counters already
# count the inputs), its first turn and the turn's input messages. No row: every
# candidate was taken (or one was taken meanwhile).
_CREATE_WITH_TURN = (
    "WITH c AS (SELECT x.id FROM unnest(%(ids)s::text[]) WITH ORDINALITY AS x(id, n) "
    "WHERE NOT EXISTS (SELECT 1 FROM hermes.sessions AS e WHERE e.id = x.id) ORDER BY x.n LIMIT 1), "
    "s AS (INSERT INTO hermes.sessions (id, source, title, model, started_at, updated_at, message_count, "
    "tool_call_count, system_prompt, cwd, parent_session_id, parent_call_id) SELECT c.id, %(source)s::text, "
    "%(title)s::text, %(model)s::text, "
    "%(created)s::double precision, %(now)s::double precision, %(count)s::integer, %(calls)s::integer, "
    "%(prompt)s::text, %(cwd)s::text, %(parent)s::text, %(parent_call)s::text FROM c ON CONFLICT (id) DO NOTHING "
    "RETURNING id), "
    "t AS (INSERT INTO hermes.turns (session_id, after_message_id, started_at, owner_host, owner_pid, "
    f"owner_started, owner_instance) SELECT s.id, 0, %(now)s, {_OWNER_VALUES} FROM s RETURNING {_TURN_COLUMNS}), "
    + _INPUTS
)
# The turn's end in one statement: its answer (when %(answer)s) replaces the turn's open
# draft in place or is appended; else an open draft is kept as a message. The turn ends,
# the usage is added, the session ends (first reason wins) and, given %(mark)s, the
# session is marked at the answer (else at the kept draft, else at its newest message).
# Each row is written once (PostgreSQL applies one change per row and statement): the
# session's counters and end are one UPDATE. Nothing when the turn is not one of the
# session's (locked first: the lock order of every turn write).
# Back: (the turn in this session, the session, the answer's id, whether it replaced the draft).
_FINISH_TURN = (
    "WITH old AS (SELECT id, draft_message_id AS draft, ended_at FROM hermes.turns "
    "WHERE id = %(turn)s AND session_id = %(sid)s FOR UPDATE), "
    "d AS (SELECT draft FROM old WHERE ended_at IS NULL AND draft IS NOT NULL), "
    "r AS (UPDATE hermes.messages SET content_json = %(content)s::text, search_text = %(search)s::text, "
    "tool_calls = %(tool_calls)s::text, reasoning = %(reasoning)s::text, finish_reason = %(finish)s::text, "
    "token_count = %(tokens)s::integer, timestamp = %(now)s::double precision, draft = false "
    "WHERE %(answer)s AND id = (SELECT draft FROM d) RETURNING id), "
    f"i AS (INSERT INTO hermes.messages (session_id, {_MESSAGE_DATA}) SELECT %(sid)s, %(role)s::text, "
    "%(content)s::text, %(search)s::text, %(tool_calls)s::text, %(call_id)s::text, %(tool_name)s::text, "
    "%(reasoning)s::text, %(finish)s::text, %(now)s::double precision, %(tokens)s::integer FROM old "
    "WHERE %(answer)s AND NOT EXISTS (SELECT 1 FROM d) RETURNING id), "
    "a AS (SELECT id FROM r UNION ALL SELECT id FROM i), "
    "t AS (UPDATE hermes.turns AS u SET ended_at = %(now)s, end_reason = %(reason)s, draft_message_id = NULL "
    "FROM old WHERE u.id = old.id AND old.ended_at IS NULL RETURNING old.draft), "
    "m AS (UPDATE hermes.messages SET draft = false, finish_reason = coalesce(finish_reason, %(reason)s) "
    "WHERE NOT %(answer)s AND id = (SELECT draft FROM t)), "
    "s AS (UPDATE hermes.sessions SET message_count = message_count + (SELECT count(*) FROM i), "
    "tool_call_count = tool_call_count + (SELECT count(*) FROM a) * %(calls)s, "
    "input_tokens = input_tokens + %(input)s, output_tokens = output_tokens + %(output)s, "
    "ended_at = CASE WHEN end_reason IS NULL THEN %(now)s ELSE ended_at END, "
    "updated_at = CASE WHEN end_reason IS NULL OR %(answer)s THEN %(now)s ELSE updated_at END, "
    "end_reason = coalesce(end_reason, %(reason)s) WHERE id = %(sid)s AND EXISTS (SELECT 1 FROM old) "
    "RETURNING id, model), "
    "u AS (INSERT INTO hermes.usage (session_id, model, day, input_tokens, cached_input_tokens, output_tokens) "
    "SELECT id, coalesce(%(model)s, model), %(day)s, %(input)s, %(cached)s, %(output)s FROM s "
    "WHERE %(input)s + %(output)s + %(cached)s > 0), "
    "k AS (INSERT INTO hermes.conversation_marks (session_id, fingerprint, message_id, marked_at) "
    "SELECT s.id, %(mark)s::text, coalesce((SELECT id FROM a), (SELECT draft FROM t), "
    "(SELECT max(n.id) FROM hermes.messages AS n WHERE n.session_id = %(sid)s AND NOT n.draft)), %(now)s FROM s "
    "WHERE %(mark)s::text IS NOT NULL "
    "ON CONFLICT (session_id, fingerprint) DO UPDATE SET message_id = excluded.message_id, "
    "marked_at = excluded.marked_at, claimed = false) "
    "SELECT (SELECT count(*) FROM old), (SELECT count(*) FROM hermes.sessions WHERE id = %(sid)s), "
    "(SELECT id FROM a), EXISTS (SELECT 1 FROM r)"
)
# A draft save of an open turn's streaming text, locking the turn first: its draft row is
# overwritten (its own flag re-checked under its lock, so a draft that end_turn has
# just kept is never overwritten), or, at its first save, a draft row is inserted
# (counted on the session) and the turn points at it. Back: (the open turn found, a row
# written); nothing written when the turn has ended. (turn, now, content, search)
_SAVE_DRAFT = (
    "WITH t AS (SELECT id, session_id, draft_message_id AS draft FROM hermes.turns "
    "WHERE id = %(turn)s AND ended_at IS NULL FOR UPDATE), "
    "u AS (UPDATE hermes.messages AS m SET content_json = %(content)s::text, search_text = %(search)s::text "
    "FROM t WHERE m.id = t.draft AND m.draft RETURNING m.id), "
    "s AS (UPDATE hermes.sessions SET message_count = message_count + 1, updated_at = %(now)s "
    "WHERE id = (SELECT session_id FROM t WHERE draft IS NULL) RETURNING id), "
    "m AS (INSERT INTO hermes.messages (session_id, role, content_json, search_text, timestamp, draft) "
    "SELECT s.id, 'assistant', %(content)s::text, %(search)s::text, %(now)s::double precision, true FROM s "
    "RETURNING id), "
    "n AS (UPDATE hermes.turns SET draft_message_id = (SELECT id FROM m) WHERE id = (SELECT id FROM t) "
    "AND EXISTS (SELECT 1 FROM m)) "
    "SELECT (SELECT count(*) FROM t), (SELECT count(*) FROM u) + (SELECT count(*) FROM m)"
)
_FUSED = FusedWrites(
    append=_APPEND,
    append_to_turn=_APPEND_TO_TURN,
    start_turn=_START_TURN,
    create_with_turn=_CREATE_WITH_TURN,
    finish_turn=_FINISH_TURN,
    end_turn=_END_TURN,
    begin_turn=_BEGIN_TURN,
    save_draft=_SAVE_DRAFT,
)


class PgDialect:
    """See the module docstring."""

    content_columns = "content_json, search_text"
    content_width = 1
    session_order = "created_seq"
    no_limit: int | None = None
    for_update = " FOR UPDATE"
    tool_call_count = "json_array_length(tool_calls::json)"
    turn_instance = "owner_instance"
    fused: FusedWrites | None = _FUSED
    settled_runs_final = True
    db_now = _DB_NOW
    response_recency = "nextval('hermes.response_clock')"
    skip_locked = " FOR UPDATE SKIP LOCKED"
    find_output_item = (
        "SELECT item::text FROM hermes.responses AS r, jsonb_array_elements("
        "CASE WHEN jsonb_typeof(r.data::jsonb #> '{response,output}') = 'array' "
        "THEN r.data::jsonb #> '{response,output}' ELSE '[]'::jsonb END) AS item "
        "WHERE jsonb_typeof(item) = 'object' AND item ->> 'id' = ? LIMIT 1"
    )

    def unique_violation(self, error: StoreError, index: str) -> bool:
        import psycopg

        cause = error.__context__
        return isinstance(cause, psycopg.errors.UniqueViolation) and cause.diag.constraint_name == index

    def encode_content(self, role: str, content: object) -> tuple[Any, ...]:
        if content is not None and not isinstance(content, (str, list)):
            raise TypeError(f"message content must be str, list or None, not {type(content).__name__}")
        return encode_json(content), search_text(role, content)

    def decode_content(self, stored: Row) -> str | list[dict[str, Any]] | None:
        content: str | list[dict[str, Any]] | None = json.loads(stored[0])
        return content

    def lineage_titles(self, base: str) -> list[tuple[str, Params]]:
        return [
            ("SELECT pg_advisory_xact_lock(hashtext('hermes.fork_title'), hashtext(%s))", (base,)),
            ("SELECT title FROM hermes.sessions WHERE starts_with(title, %s)", (base + " #",)),
        ]

    def abandoned(self) -> tuple[str, str]:
        return (
            f"SELECT {_T_COLUMNS} FROM hermes.turns AS t WHERE t.ended_at IS NULL AND NOT {_LIVE_LEASE} ORDER BY t.id",
            f"SELECT {_T_COLUMNS} FROM hermes.turns AS t WHERE t.id = %s AND t.ended_at IS NULL AND NOT {_LIVE_LEASE} "
            "FOR UPDATE OF t",
        )

    async def search(self, db: Executor, query: str, *, limit: int, source: str | None) -> list[SearchHit]:
        return await search_messages(db, query, limit=limit, source=source)

    async def db_bytes(self, db: Executor) -> int:
        row = await db.fetch_one(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class AS c "
            "JOIN pg_namespace AS n ON n.oid = c.relnamespace WHERE n.nspname = 'hermes' AND c.relkind = 'r'"
        )
        return int(row[0]) if row else 0

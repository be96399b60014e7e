"""The PostgreSQL schema history: every record kind in one database, schema `hermes`.

Migrations run through the shared mechanism (`hermes.store.migrations`, applied by
`postgres.migrate.migrate_postgres` under an advisory lock); this module only lists them,
in order. Each step is an async function of an autocommit psycopg connection, run inside
the transaction that also records its name. Names never change once released; new
migrations are only ever appended.

Schema summary (after all migrations), every object in schema `hermes`:

    sessions        one row per conversation (same columns as state.db's); `created_seq`
                    orders sessions with equal `updated_at` by insertion
    messages        one row per OpenAI message; `content_json` holds the content as JSON
                    (null, a string or a part list) so any text, NUL included, round-trips;
                    `search_text` is the searchable text (see `postgres.search`) and
                    `search_vector` the tsvector of `search_words(search_text)`, a
                    generated column with a GIN index
    search          text search configuration: the default parser, English Snowball
                    stemming with no stop words (FTS5's porter tokenizer drops none either)
    responses       stored Responses API records (JSON text), LRU by `accessed_at`
    conversations   conversation name -> newest response id
    runs            durable run status, `owner_instance` = the lease holder running it;
                    at most one unsettled run per session (partial unique index
                    `runs_one_unsettled_per_session`)
    receipts        Idempotency-Key receipts, primary key (scope, key): a run id, or a
                    claim token and the finished JSON `answer` (live until `expires_at`)
    instances       instance leases (`expires_at` by the database's clock)
    run_events      each run's events, primary key (run_id, seq)
    turns           one row per turn, open until ended; owned by an instance lease
                    (`owner_instance`) and described by its process (see m005)
    compactions     one row per context compaction (as in state.db)
    conversation_marks  (session, fingerprint) -> the session's newest message when a
                    client's resent conversation was marked (as in state.db, see m009)
    usage           one row per usage write: session, model, UTC day, tokens (m010)
                    (turns and messages carry file checkpoints and undo markers: m011;
                    visible messages get a partial index: m012;
                    runs and responses their writer, responses their status: m013;
                    sessions their folder, `cwd`: m014)
                    sessions the parent's `task` call of a subagent: m015)

`messages.draft` marks a streaming assistant draft (as state.db's `draft = 1`).
"""

from __future__ import annotations

import string
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from hermes.store.migrations import MigrationHistory
from hermes.store.records import ORPHAN_MESSAGE, TERMINAL_STATES

if TYPE_CHECKING:
    from psycopg import AsyncConnection

__all__ = ["PG_MIGRATIONS", "SCHEMA", "PgMigration", "PgMigrations"]

SCHEMA = "hermes"
_PUNCTUATION_SQL = string.punctuation.replace("'", "''")
_TERMINAL = sorted(TERMINAL_STATES)

PgMigration = Callable[["AsyncConnection[Any]"], Awaitable[None]]


class PgMigrations(MigrationHistory[PgMigration]):
    """The ordered schema history of the PostgreSQL database."""


PG_MIGRATIONS = PgMigrations("postgresql")
"""Every PostgreSQL migration, in the order it must run."""


async def _execute_all(conn: AsyncConnection[Any], statements: tuple[str, ...]) -> None:
    for statement in statements:
        await conn.execute(statement)


@PG_MIGRATIONS.migration
async def m001_sessions(conn: AsyncConnection[Any]) -> None:
    await _execute_all(
        conn,
        (
            """
            CREATE TABLE hermes.sessions (
                id text PRIMARY KEY,
                source text NOT NULL,
                title text,
                model text,
                parent_session_id text REFERENCES hermes.sessions(id) ON DELETE SET NULL,
                started_at double precision NOT NULL,
                updated_at double precision NOT NULL,
                ended_at double precision,
                end_reason text,
                message_count integer NOT NULL DEFAULT 0,
                tool_call_count integer NOT NULL DEFAULT 0,
                input_tokens bigint NOT NULL DEFAULT 0,
                output_tokens bigint NOT NULL DEFAULT 0,
                system_prompt text,
                created_seq bigint GENERATED ALWAYS AS IDENTITY
            )
            """,
            "CREATE INDEX sessions_updated_at ON hermes.sessions (updated_at DESC, created_seq DESC)",
            "CREATE INDEX sessions_source_updated_at ON hermes.sessions (source, updated_at DESC, created_seq DESC)",
            "CREATE INDEX sessions_parent ON hermes.sessions (parent_session_id)",
            "CREATE INDEX sessions_title ON hermes.sessions (title text_pattern_ops)",
        ),
    )


@PG_MIGRATIONS.migration
async def m002_messages(conn: AsyncConnection[Any]) -> None:
    await _execute_all(
        conn,
        (
            "CREATE TEXT SEARCH DICTIONARY hermes.english_stem (TEMPLATE = pg_catalog.snowball, LANGUAGE = english)",
            "CREATE TEXT SEARCH CONFIGURATION hermes.search (COPY = pg_catalog.simple)",
            """
            ALTER TEXT SEARCH CONFIGURATION hermes.search
                ALTER MAPPING FOR asciiword, asciihword, hword_asciipart, word, hword, hword_part
                WITH hermes.english_stem
            """,
            # The words of a text: ASCII punctuation becomes spaces, so "config.py",
            # "foo-bar" or "3.14" index as separate words, as FTS5's unicode61 splits them
            # (PostgreSQL's parser would keep file names, hosts and numbers whole).
            # Immutable and locale-free: usable in the generated column.
            f"""
            CREATE FUNCTION hermes.search_words(body text) RETURNS text
            LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE
            AS $body$ SELECT translate(body, '{_PUNCTUATION_SQL}', '{" " * len(string.punctuation)}') $body$
            """,
            """
            CREATE TABLE hermes.messages (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                session_id text NOT NULL REFERENCES hermes.sessions(id) ON DELETE CASCADE,
                role text NOT NULL,
                content_json text NOT NULL,
                tool_calls text,
                tool_call_id text,
                tool_name text,
                reasoning text,
                finish_reason text,
                timestamp double precision NOT NULL,
                token_count integer,
                search_text text,
                search_vector tsvector GENERATED ALWAYS AS
                    (to_tsvector('hermes.search'::regconfig, coalesce(hermes.search_words(search_text), ''))) STORED
            )
            """,
            "CREATE INDEX messages_session ON hermes.messages (session_id, id)",
            "CREATE INDEX messages_search ON hermes.messages USING gin (search_vector)",
        ),
    )


@PG_MIGRATIONS.migration
async def m003_responses(conn: AsyncConnection[Any]) -> None:
    await _execute_all(
        conn,
        (
            """
            CREATE TABLE hermes.responses (
                response_id text PRIMARY KEY,
                data text NOT NULL,
                accessed_at bigint NOT NULL
            )
            """,
            "CREATE INDEX responses_accessed ON hermes.responses (accessed_at)",
            "CREATE SEQUENCE hermes.response_clock",
            """
            CREATE TABLE hermes.conversations (
                name text PRIMARY KEY,
                response_id text NOT NULL
            )
            """,
            "CREATE INDEX conversations_response ON hermes.conversations (response_id)",
        ),
    )


@PG_MIGRATIONS.migration
async def m004_runs(conn: AsyncConnection[Any]) -> None:
    await _execute_all(
        conn,
        (
            """
            CREATE TABLE hermes.runs (
                run_id text PRIMARY KEY,
                status text NOT NULL,
                session_id text,
                model text,
                created_at double precision NOT NULL,
                updated_at double precision NOT NULL,
                last_event text,
                output text,
                usage text,
                error text,
                error_code text,
                owner_pid integer,
                owner_instance text
            )
            """,
            "CREATE INDEX runs_status ON hermes.runs (status)",
            "CREATE INDEX runs_updated_at ON hermes.runs (updated_at)",
            "CREATE INDEX runs_owner_instance ON hermes.runs (owner_instance)",
            """
            CREATE TABLE hermes.receipts (
                scope text NOT NULL,
                key text NOT NULL,
                fingerprint text NOT NULL,
                run_id text NOT NULL,
                created_at double precision NOT NULL,
                updated_at double precision NOT NULL,
                PRIMARY KEY (scope, key)
            )
            """,
            "CREATE INDEX receipts_updated_at ON hermes.receipts (updated_at)",
            "CREATE INDEX receipts_run ON hermes.receipts (run_id)",
            """
            CREATE TABLE hermes.instances (
                instance_id text PRIMARY KEY,
                host text NOT NULL,
                pid integer NOT NULL,
                started_at double precision NOT NULL,
                heartbeat_at double precision NOT NULL,
                expires_at double precision NOT NULL
            )
            """,
            """
            CREATE TABLE hermes.run_events (
                run_id text NOT NULL,
                seq bigint NOT NULL,
                name text NOT NULL,
                data text NOT NULL,
                ts double precision NOT NULL,
                final boolean NOT NULL DEFAULT false,
                PRIMARY KEY (run_id, seq)
            )
            """,
            "CREATE INDEX run_events_final_ts ON hermes.run_events (ts) WHERE final",
        ),
    )


@PG_MIGRATIONS.migration
async def m005_turns_drafts_compactions(conn: AsyncConnection[Any]) -> None:
    # As state.db's m004/m005. A turn is open while `ended_at` is NULL: the instance
    # `owner_instance` runs it, or its lease expired and a repair ends it. Its messages
    # are the session's rows with id > after_message_id (up to the next turn's);
    # `draft_message_id` is the assistant row (draft = true) its streaming text is
    # saved into until the turn records the real message.
    await _execute_all(
        conn,
        (
            "ALTER TABLE hermes.messages ADD COLUMN draft boolean NOT NULL DEFAULT false",
            """
            CREATE TABLE hermes.turns (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                session_id text NOT NULL REFERENCES hermes.sessions(id) ON DELETE CASCADE,
                after_message_id bigint NOT NULL,
                draft_message_id bigint,
                started_at double precision NOT NULL,
                ended_at double precision,
                end_reason text,
                owner_host text NOT NULL,
                owner_pid integer NOT NULL,
                owner_started text NOT NULL,
                owner_instance text NOT NULL
            )
            """,
            # Repair reads only open turns: a partial index keeps that query cheap.
            "CREATE INDEX turns_open ON hermes.turns (owner_instance) WHERE ended_at IS NULL",
            "CREATE INDEX turns_session ON hermes.turns (session_id, started_at)",
            """
            CREATE TABLE hermes.compactions (
                id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
                session_id text NOT NULL REFERENCES hermes.sessions(id) ON DELETE CASCADE,
                summary text NOT NULL,
                first_kept_message_id bigint NOT NULL,
                summarized_messages integer NOT NULL DEFAULT 0,
                before_tokens bigint NOT NULL DEFAULT 0,
                after_tokens bigint NOT NULL DEFAULT 0,
                created_at double precision NOT NULL
            )
            """,
            "CREATE INDEX compactions_session ON hermes.compactions (session_id, id)",
        ),
    )


@PG_MIGRATIONS.migration
async def m006_runs_by_session(conn: AsyncConnection[Any]) -> None:
    # The session endpoints ask for a session's newest run (is it busy on any instance?).
    await _execute_all(conn, ("CREATE INDEX runs_session ON hermes.runs (session_id, created_at DESC)",))


@PG_MIGRATIONS.migration
async def m007_receipt_answers(conn: AsyncConnection[Any]) -> None:
    # As runs.db's m004: the OpenAI endpoints' Idempotency-Key receipts hold their
    # finished JSON answer and live until `expires_at` (a claim lapses unless refreshed).
    await _execute_all(
        conn,
        (
            "ALTER TABLE hermes.receipts ADD COLUMN answer text",
            "ALTER TABLE hermes.receipts ADD COLUMN expires_at double precision",
        ),
    )


@PG_MIGRATIONS.migration
async def m008_one_unsettled_run_per_session(conn: AsyncConnection[Any]) -> None:
    # As runs.db's m005: of several unsettled runs of one session (instances racing before
    # this index existed) all but the newest are settled `interrupted`, then the index
    # refuses a second one, whichever instance writes it.
    terminal = ", ".join(f"'{state}'" for state in _TERMINAL)
    await _execute_all(
        conn,
        (
            f"""
            UPDATE hermes.runs AS r SET status = 'interrupted', error_code = 'interrupted',
                error = '{ORPHAN_MESSAGE}', last_event = 'run.interrupted'
            WHERE r.session_id IS NOT NULL AND r.status NOT IN ({terminal}) AND EXISTS (
                SELECT 1 FROM hermes.runs AS newer
                WHERE newer.session_id = r.session_id AND newer.status NOT IN ({terminal})
                    AND (newer.created_at > r.created_at
                         OR (newer.created_at = r.created_at AND newer.run_id > r.run_id))
            )
            """,
            "CREATE UNIQUE INDEX runs_one_unsettled_per_session ON hermes.runs (session_id) "
            f"WHERE status NOT IN ({terminal})",
        ),
    )


@PG_MIGRATIONS.migration
async def m009_conversation_marks(conn: AsyncConnection[Any]) -> None:
    # As state.db's m007: which session a client resending its conversation continues.
    await _execute_all(
        conn,
        (
            """
            CREATE TABLE hermes.conversation_marks (
                session_id text NOT NULL REFERENCES hermes.sessions(id) ON DELETE CASCADE,
                fingerprint text NOT NULL,
                message_id bigint NOT NULL,
                marked_at double precision NOT NULL,
                claimed boolean NOT NULL DEFAULT false,
                PRIMARY KEY (session_id, fingerprint)
            )
            """,
            "CREATE INDEX conversation_marks_fingerprint ON hermes.conversation_marks (fingerprint)",
        ),
    )


@PG_MIGRATIONS.migration
async def m010_usage_rows(conn: AsyncConnection[Any]) -> None:
    # As state.db's m008: one row per usage write, priced per model and summed per UTC day.
    await _execute_all(
        conn,
        (
            """
            CREATE TABLE hermes.usage (
                id bigserial PRIMARY KEY,
                session_id text NOT NULL REFERENCES hermes.sessions(id) ON DELETE CASCADE,
                model text,
                day text NOT NULL,
                input_tokens bigint NOT NULL,
                cached_input_tokens bigint NOT NULL,
                output_tokens bigint NOT NULL
            )
            """,
            "CREATE INDEX usage_session ON hermes.usage (session_id)",
            "CREATE INDEX usage_day ON hermes.usage (day)",
            "INSERT INTO hermes.usage (session_id, model, day, input_tokens, cached_input_tokens, output_tokens) "
            "SELECT id, model, to_char(to_timestamp(updated_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD'), "
            "input_tokens, 0, output_tokens FROM hermes.sessions WHERE input_tokens + output_tokens > 0",
        ),
    )


@PG_MIGRATIONS.migration
async def m011_turn_checkpoints(conn: AsyncConnection[Any]) -> None:
    # As state.db's m009: a turn's file snapshots and the undo marker of turns and messages.
    await _execute_all(
        conn,
        (
            "ALTER TABLE hermes.turns ADD COLUMN worktree text",
            "ALTER TABLE hermes.turns ADD COLUMN checkpoint_before text",
            "ALTER TABLE hermes.turns ADD COLUMN checkpoint_after text",
            "ALTER TABLE hermes.turns ADD COLUMN undone bigint",
            "ALTER TABLE hermes.messages ADD COLUMN undone bigint",
        ),
    )


@PG_MIGRATIONS.migration
async def m012_visible_messages_index(conn: AsyncConnection[Any]) -> None:
    # As state.db's m011: the messages a history holds, for the history mark read every turn.
    await _execute_all(
        conn,
        ("CREATE INDEX messages_visible ON hermes.messages (session_id, id) WHERE NOT draft AND undone IS NULL",),
    )


@PG_MIGRATIONS.migration
async def m013_record_owners(conn: AsyncConnection[Any]) -> None:
    # The columns state.db's runs and responses have, so their rules are written once
    # (`hermes.store.rules`): a run's owner process identity, a stored response's envelope
    # status and writer (what start-up repair reads on SQLite).
    await _execute_all(
        conn,
        (
            "ALTER TABLE hermes.runs ADD COLUMN owner_host text",
            "ALTER TABLE hermes.runs ADD COLUMN owner_started text",
            "ALTER TABLE hermes.responses ADD COLUMN status text",
            "ALTER TABLE hermes.responses ADD COLUMN owner_host text",
            "ALTER TABLE hermes.responses ADD COLUMN owner_pid integer",
            "ALTER TABLE hermes.responses ADD COLUMN owner_started text",
            "CREATE INDEX responses_in_progress ON hermes.responses (response_id) WHERE status = 'in_progress'",
        ),
    )


@PG_MIGRATIONS.migration
async def m014_session_folders(conn: AsyncConnection[Any]) -> None:
    # As state.db's m013: the folder a session belongs to (NULL for older sessions).
    await _execute_all(
        conn,
        (
            "ALTER TABLE hermes.sessions ADD COLUMN cwd text",
            "CREATE INDEX sessions_cwd_updated_at ON hermes.sessions (cwd, updated_at DESC, created_seq DESC)",
        ),
    )


@PG_MIGRATIONS.migration
async def m015_session_parent_call(conn: AsyncConnection[Any]) -> None:
    # As state.db's m014: a subagent's session names its parent's `task` call.
    await _execute_all(conn, ("ALTER TABLE hermes.sessions ADD COLUMN parent_call_id text",))

"""The schema history of `state.db`, the one SQLite file of a home.

Migrations run through the shared mechanism in `hermes.store.migrations` (see its
invariants); this module only lists them, in order.

Schema summary (after all migrations):

    sessions            one row per conversation; counters are maintained by the store
    messages            one row per OpenAI message, `id` grows monotonically (AUTOINCREMENT);
                        `draft = 1` marks a streaming assistant message draft
    turns               one row per turn: owner process, open until ended (see m004)
    messages_fts_source view: the searchable text of each message (drafts excluded, m006)
    messages_fts        FTS5 external-content index over messages_fts_source, kept in
                        sync by triggers on `messages`
    compactions         one row per context compaction: the summary that replaced the
                        messages before `first_kept_message_id` (which stay in `messages`)
    conversation_marks  which session a client resending its conversation continues (m007)
    usage               one row per usage write: session, model, UTC day, input (cached
                        part too) and output tokens (m008); sums equal the session counters
    (m009: turns carry their file checkpoints and, with messages, the undo marker `undone`)
    fts_indexed         one row: `upto`, the newest message id the search index has seen;
                        newer messages are indexed in batches (`fts_batches`, m010)
    (m011: `messages_visible`, a partial index of the messages a history holds)
    runs, receipts,     what runs.db and response_store.db held (m012, their rows folded
    instances,          in by `folded_files`): run rows, Idempotency-Key receipts,
    responses,          instance leases, stored Responses API records (LRU by
    conversations       `accessed_at`) and conversation names
    (m013: sessions carry `cwd`, the folder they belong to)
"""

from __future__ import annotations

import sqlite3

from hermes.store.migrations import Migrations, execute_all
from hermes.store.records import ORPHAN_MESSAGE, TERMINAL_STATES
from hermes.store.sqlite import folded_files

__all__ = ["STATE_MIGRATIONS"]

STATE_MIGRATIONS = Migrations("state.db")
"""Every state.db migration, in the order it must run."""


@STATE_MIGRATIONS.migration
def m001_sessions(db: sqlite3.Connection) -> None:
    execute_all(
        db,
        (
            """
            CREATE TABLE sessions (
                id TEXT PRIMARY KEY,
                source TEXT NOT NULL,
                title TEXT,
                model TEXT,
                parent_session_id TEXT REFERENCES sessions(id) ON DELETE SET NULL,
                started_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                ended_at REAL,
                end_reason TEXT,
                message_count INTEGER NOT NULL DEFAULT 0,
                tool_call_count INTEGER NOT NULL DEFAULT 0,
                input_tokens INTEGER NOT NULL DEFAULT 0,
                output_tokens INTEGER NOT NULL DEFAULT 0,
                system_prompt TEXT
            )
            """,
            # Listing is "newest activity first"; the implicit rowid in each index entry
            # breaks ties in insertion order.
            "CREATE INDEX sessions_updated_at ON sessions(updated_at)",
            "CREATE INDEX sessions_source_updated_at ON sessions(source, updated_at)",
            "CREATE INDEX sessions_parent ON sessions(parent_session_id)",
            # Range scans "title >= 'x #' AND title < 'x $'" find lineage titles.
            "CREATE INDEX sessions_title ON sessions(title)",
        ),
    )


@STATE_MIGRATIONS.migration
def m002_messages(db: sqlite3.Connection) -> None:
    execute_all(
        db,
        (
            """
            CREATE TABLE messages (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
                role TEXT NOT NULL,
                content TEXT,
                content_is_parts INTEGER NOT NULL DEFAULT 0,
                parts_text TEXT,
                tool_calls TEXT,
                tool_call_id TEXT,
                tool_name TEXT,
                reasoning TEXT,
                finish_reason TEXT,
                timestamp REAL NOT NULL,
                token_count INTEGER
            )
            """,
            "CREATE INDEX messages_session ON messages(session_id, id)",
        ),
    )


# The searchable text of a message: plain content as is; for a content-part list the
# store writes the `text` of its parts to `parts_text`; tool results only up to their
# first 8,192 characters (large tool outputs would swamp the index). The view must stay
# free of table-valued functions such as json_each: FTS5's integrity-check cannot read
# an external-content view that uses one.
_SEARCH_BODY = """
    CASE
        WHEN m.content_is_parts THEN m.parts_text
        WHEN m.role = 'tool' THEN substr(m.content, 1, 8192)
        ELSE m.content
    END
"""


@STATE_MIGRATIONS.migration
def m003_messages_fts(db: sqlite3.Connection) -> None:
    # Every message has exactly one row in messages_fts (possibly without tokens). The
    # view is the single definition of the indexed text: the triggers read it both to
    # add a row and, before a row goes away, to remove exactly what was indexed.
    execute_all(
        db,
        (
            f"""
            CREATE VIEW messages_fts_source AS
            SELECT m.id AS id, {_SEARCH_BODY} AS body FROM messages AS m
            """,
            """
            CREATE VIRTUAL TABLE messages_fts USING fts5(
                body,
                content='messages_fts_source',
                content_rowid='id',
                tokenize='porter unicode61 remove_diacritics 2'
            )
            """,
            """
            CREATE TRIGGER messages_fts_after_insert AFTER INSERT ON messages BEGIN
                INSERT INTO messages_fts(rowid, body)
                SELECT id, body FROM messages_fts_source WHERE id = new.id;
            END
            """,
            """
            CREATE TRIGGER messages_fts_before_delete BEFORE DELETE ON messages BEGIN
                INSERT INTO messages_fts(messages_fts, rowid, body)
                SELECT 'delete', id, body FROM messages_fts_source WHERE id = old.id;
            END
            """,
            """
            CREATE TRIGGER messages_fts_before_update
            BEFORE UPDATE OF content, content_is_parts, parts_text, role ON messages BEGIN
                INSERT INTO messages_fts(messages_fts, rowid, body)
                SELECT 'delete', id, body FROM messages_fts_source WHERE id = old.id;
            END
            """,
            """
            CREATE TRIGGER messages_fts_after_update
            AFTER UPDATE OF content, content_is_parts, parts_text, role ON messages BEGIN
                INSERT INTO messages_fts(rowid, body)
                SELECT id, body FROM messages_fts_source WHERE id = new.id;
            END
            """,
        ),
    )


@STATE_MIGRATIONS.migration
def m004_turns_and_drafts(db: sqlite3.Connection) -> None:
    # A turn row exists from a turn's first message to its end. While `ended_at` is NULL
    # the turn is open: its owner process is running it, or it died (start-up repair then
    # ends it). The turn's messages are the session's rows with id > after_message_id
    # (up to the next turn's). `draft_message_id` is the assistant row the streaming text
    # is saved into (messages.draft = 1) until the turn records the real message.
    execute_all(
        db,
        (
            """
            CREATE TABLE turns (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
                after_message_id INTEGER NOT NULL,
                draft_message_id INTEGER,
                started_at REAL NOT NULL,
                ended_at REAL,
                end_reason TEXT,
                owner_host TEXT NOT NULL,
                owner_pid INTEGER NOT NULL,
                owner_started TEXT NOT NULL
            )
            """,
            # Start-up repair reads only open turns: a partial index keeps that query cheap
            # however many turns the database holds.
            "CREATE INDEX turns_open ON turns(id) WHERE ended_at IS NULL",
            "CREATE INDEX turns_session ON turns(session_id, started_at)",
            "ALTER TABLE messages ADD COLUMN draft INTEGER NOT NULL DEFAULT 0",
        ),
    )


@STATE_MIGRATIONS.migration
def m005_compaction_markers(db: sqlite3.Connection) -> None:
    execute_all(
        db,
        (
            """
            CREATE TABLE compactions (
                id INTEGER PRIMARY KEY AUTOINCREMENT,
                session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
                summary TEXT NOT NULL,
                first_kept_message_id INTEGER NOT NULL,
                summarized_messages INTEGER NOT NULL DEFAULT 0,
                before_tokens INTEGER NOT NULL DEFAULT 0,
                after_tokens INTEGER NOT NULL DEFAULT 0,
                created_at REAL NOT NULL
            )
            """,
            "CREATE INDEX compactions_session ON compactions(session_id, id)",
        ),
    )


# The update triggers of m006: they also fire when `draft` changes, since a draft
# becomes searchable when it turns into a real message.
_FTS_UPDATE_COLUMNS = "content, content_is_parts, parts_text, role, draft"


@STATE_MIGRATIONS.migration
def m006_drafts_not_searchable(db: sqlite3.Connection) -> None:
    # A draft (streaming text saved so far, `draft = 1`) is left out of search as history()
    # leaves it out; it is indexed when it becomes a real message. Drafts already indexed
    # are removed from the index first, while the old view still yields what was indexed.
    execute_all(
        db,
        (
            """
            INSERT INTO messages_fts(messages_fts, rowid, body)
            SELECT 'delete', s.id, s.body FROM messages_fts_source AS s
            JOIN messages AS m ON m.id = s.id WHERE m.draft = 1
            """,
            "DROP TRIGGER messages_fts_before_update",
            "DROP TRIGGER messages_fts_after_update",
            "DROP VIEW messages_fts_source",
            f"""
            CREATE VIEW messages_fts_source AS
            SELECT m.id AS id, {_SEARCH_BODY} AS body FROM messages AS m WHERE m.draft = 0
            """,
            f"""
            CREATE TRIGGER messages_fts_before_update
            BEFORE UPDATE OF {_FTS_UPDATE_COLUMNS} ON messages BEGIN
                INSERT INTO messages_fts(messages_fts, rowid, body)
                SELECT 'delete', id, body FROM messages_fts_source WHERE id = old.id;
            END
            """,
            f"""
            CREATE TRIGGER messages_fts_after_update
            AFTER UPDATE OF {_FTS_UPDATE_COLUMNS} ON messages BEGIN
                INSERT INTO messages_fts(rowid, body)
                SELECT id, body FROM messages_fts_source WHERE id = new.id;
            END
            """,
        ),
    )


@STATE_MIGRATIONS.migration
def m007_conversation_marks(db: sqlite3.Connection) -> None:
    # Which session a client resending its conversation continues (`conversation_marks`).
    execute_all(
        db,
        (
            """
            CREATE TABLE conversation_marks (
                session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
                fingerprint TEXT NOT NULL,
                message_id INTEGER NOT NULL,
                marked_at REAL NOT NULL,
                claimed INTEGER NOT NULL DEFAULT 0,
                PRIMARY KEY (session_id, fingerprint)
            )
            """,
            "CREATE INDEX conversation_marks_fingerprint ON conversation_marks(fingerprint)",
        ),
    )


@STATE_MIGRATIONS.migration
def m008_usage_rows(db: sqlite3.Connection) -> None:
    # One row per usage write (a turn's end, a compaction), with the model that was used and
    # the UTC day, so cost can be priced per model and summed per day. Sessions written
    # before keep their totals as one row on the day of their last activity.
    execute_all(
        db,
        (
            """
            CREATE TABLE usage (
                id INTEGER PRIMARY KEY,
                session_id TEXT NOT NULL REFERENCES sessions(id) ON DELETE CASCADE,
                model TEXT,
                day TEXT NOT NULL,
                input_tokens INTEGER NOT NULL,
                cached_input_tokens INTEGER NOT NULL,
                output_tokens INTEGER NOT NULL
            )
            """,
            "CREATE INDEX usage_session ON usage(session_id)",
            "CREATE INDEX usage_day ON usage(day)",
            "INSERT INTO usage (session_id, model, day, input_tokens, cached_input_tokens, output_tokens) "
            "SELECT id, model, strftime('%Y-%m-%d', updated_at, 'unixepoch'), input_tokens, 0, output_tokens "
            "FROM sessions WHERE input_tokens + output_tokens > 0",
        ),
    )


@STATE_MIGRATIONS.migration
def m009_turn_checkpoints(db: sqlite3.Connection) -> None:
    # A turn's file snapshots (shadow git commits, hermes/checkpoints) and undo: an undone
    # turn and its messages carry the undo's marker (`undone`); NULL is visible.
    execute_all(
        db,
        (
            "ALTER TABLE turns ADD COLUMN worktree TEXT",
            "ALTER TABLE turns ADD COLUMN checkpoint_before TEXT",
            "ALTER TABLE turns ADD COLUMN checkpoint_after TEXT",
            "ALTER TABLE turns ADD COLUMN undone INTEGER",
            "ALTER TABLE messages ADD COLUMN undone INTEGER",
        ),
    )


@STATE_MIGRATIONS.migration
def m010_fts_batches(db: sqlite3.Connection) -> None:
    # New messages are indexed in batches (`hermes.store.sqlite.fts_batches`), not by a
    # trigger inside every commit: `fts_indexed.upto` is the newest message id the index
    # has seen, and the rows above it wait for the next batch. The update and delete
    # triggers touch the index only for rows at or below it (a row above was never indexed).
    upto = "(SELECT upto FROM fts_indexed)"
    execute_all(
        db,
        (
            "CREATE TABLE fts_indexed (id INTEGER PRIMARY KEY CHECK (id = 1), upto INTEGER NOT NULL)",
            "INSERT INTO fts_indexed (id, upto) SELECT 1, coalesce(max(id), 0) FROM messages",
            "DROP TRIGGER messages_fts_after_insert",
            "DROP TRIGGER messages_fts_before_delete",
            "DROP TRIGGER messages_fts_before_update",
            "DROP TRIGGER messages_fts_after_update",
            f"""
            CREATE TRIGGER messages_fts_before_delete BEFORE DELETE ON messages
            WHEN old.id <= {upto} BEGIN
                INSERT INTO messages_fts(messages_fts, rowid, body)
                SELECT 'delete', id, body FROM messages_fts_source WHERE id = old.id;
            END
            """,
            f"""
            CREATE TRIGGER messages_fts_before_update
            BEFORE UPDATE OF {_FTS_UPDATE_COLUMNS} ON messages WHEN old.id <= {upto} BEGIN
                INSERT INTO messages_fts(messages_fts, rowid, body)
                SELECT 'delete', id, body FROM messages_fts_source WHERE id = old.id;
            END
            """,
            f"""
            CREATE TRIGGER messages_fts_after_update
            AFTER UPDATE OF {_FTS_UPDATE_COLUMNS} ON messages WHEN new.id <= {upto} BEGIN
                INSERT INTO messages_fts(rowid, body)
                SELECT id, body FROM messages_fts_source WHERE id = new.id;
            END
            """,
        ),
    )


@STATE_MIGRATIONS.migration
def m011_visible_messages_index(db: sqlite3.Connection) -> None:
    # The messages a history holds (finished, not undone), by session and id: the history
    # mark (`Sessions.history_mark`, read every turn) counts them from the index alone.
    execute_all(
        db,
        ("CREATE INDEX messages_visible ON messages(session_id, id) WHERE NOT draft AND undone IS NULL",),
    )


@STATE_MIGRATIONS.migration
def m012_runs_and_responses(db: sqlite3.Connection) -> None:
    # One file: runs, receipts and instance leases (from runs.db), stored responses and
    # conversation names (from response_store.db) live in state.db, with their final
    # schema; the old files' rows are copied in (`folded_files`), then the one index
    # that may refuse old rows is built once they are settled.
    execute_all(
        db,
        (
            """
            CREATE TABLE runs (
                run_id TEXT PRIMARY KEY,
                status TEXT NOT NULL,
                session_id TEXT,
                model TEXT,
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                last_event TEXT,
                output TEXT,
                usage TEXT,
                error TEXT,
                error_code TEXT,
                owner_pid INTEGER,
                owner_host TEXT,
                owner_started TEXT,
                owner_instance TEXT
            )
            """,
            "CREATE INDEX runs_status ON runs(status)",
            "CREATE INDEX runs_updated_at ON runs(updated_at)",
            "CREATE INDEX runs_owner_instance ON runs(owner_instance)",
            "CREATE INDEX runs_session ON runs(session_id, created_at)",
            """
            CREATE TABLE receipts (
                scope TEXT NOT NULL,
                key TEXT NOT NULL,
                fingerprint TEXT NOT NULL,
                run_id TEXT NOT NULL,
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL,
                answer TEXT,
                expires_at REAL,
                PRIMARY KEY (scope, key)
            )
            """,
            "CREATE INDEX receipts_updated_at ON receipts(updated_at)",
            "CREATE INDEX receipts_run ON receipts(run_id)",
            """
            CREATE TABLE instances (
                instance_id TEXT PRIMARY KEY,
                host TEXT NOT NULL,
                pid INTEGER NOT NULL,
                started_at REAL NOT NULL,
                heartbeat_at REAL NOT NULL,
                expires_at REAL NOT NULL
            )
            """,
            """
            CREATE TABLE responses (
                response_id TEXT PRIMARY KEY,
                data TEXT NOT NULL,
                accessed_at INTEGER NOT NULL,
                status TEXT,
                owner_host TEXT,
                owner_pid INTEGER,
                owner_started TEXT
            )
            """,
            "CREATE INDEX responses_accessed ON responses(accessed_at)",
            "CREATE INDEX responses_in_progress ON responses(response_id) WHERE status = 'in_progress'",
            """
            CREATE TABLE conversations (
                name TEXT PRIMARY KEY,
                response_id TEXT NOT NULL
            )
            """,
            "CREATE INDEX conversations_response ON conversations(response_id)",
        ),
    )
    folded_files.copy_into(db)
    terminal = ", ".join(f"'{state}'" for state in sorted(TERMINAL_STATES))
    execute_all(
        db,
        (
            # An old file may hold several unsettled runs of one session (a crashed
            # process's): all but the newest are settled `interrupted`.
            f"""
            UPDATE runs SET status = 'interrupted', error_code = 'interrupted',
                error = '{ORPHAN_MESSAGE}', last_event = 'run.interrupted'
            WHERE session_id IS NOT NULL AND status NOT IN ({terminal}) AND EXISTS (
                SELECT 1 FROM runs AS newer
                WHERE newer.session_id = runs.session_id AND newer.status NOT IN ({terminal})
                    AND (newer.created_at > runs.created_at
                         OR (newer.created_at = runs.created_at AND newer.run_id > runs.run_id))
            )
            """,
            f"CREATE UNIQUE INDEX runs_one_unsettled_per_session ON runs(session_id) WHERE status NOT IN ({terminal})",
        ),
    )


@STATE_MIGRATIONS.migration
def m013_session_folders(db: sqlite3.Connection) -> None:
    # A session belongs to a folder: the working directory its tools run in. Sessions
    # written before keep NULL (no folder known). `chat -c` reads the newest of a folder.
    execute_all(
        db,
        (
            "ALTER TABLE sessions ADD COLUMN cwd TEXT",
            "CREATE INDEX sessions_cwd_updated_at ON sessions(cwd, updated_at)",
        ),
    )


@STATE_MIGRATIONS.migration
def m014_session_parent_call(db: sqlite3.Connection) -> None:
    # A subagent's session names the `task` call of its parent that ran it (with
    # `parent_session_id`); forks and every older session keep NULL.
    execute_all(db, ("ALTER TABLE sessions ADD COLUMN parent_call_id TEXT",))

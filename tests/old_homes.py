"""The SQLite files of earlier versions' homes, as their code left them, for upgrade tests.

Earlier versions kept `runs.db` and `response_store.db` beside `state.db`. The DDL here is
copied verbatim from files that code wrote; it must never change.
"""

from __future__ import annotations

# The schema the last version with three files left (its migrations all applied).
RUNS_DB_SCHEMA = (
    "CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)",
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
                owner_pid INTEGER
            , owner_host TEXT, owner_started TEXT, owner_instance TEXT)
    """,
    "CREATE INDEX runs_status ON runs(status)",
    "CREATE INDEX runs_updated_at ON runs(updated_at)",
    """
    CREATE TABLE receipts (
                scope TEXT NOT NULL,
                key TEXT NOT NULL,
                fingerprint TEXT NOT NULL,
                run_id TEXT NOT NULL,
                created_at REAL NOT NULL,
                updated_at REAL NOT NULL, answer TEXT, expires_at REAL,
                PRIMARY KEY (scope, key)
            )
    """,
    "CREATE INDEX receipts_updated_at ON receipts(updated_at)",
    "CREATE INDEX runs_owner_instance ON runs(owner_instance)",
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
    "CREATE INDEX receipts_run ON receipts(run_id)",
    "CREATE UNIQUE INDEX runs_one_unsettled_per_session ON runs(session_id) "
    "WHERE status NOT IN ('cancelled', 'completed', 'failed', 'interrupted')",
    "INSERT INTO _migrations VALUES ('m001_runs_and_receipts', 1), ('m002_owner_identity', 1), "
    "('m003_run_owner_instances', 1), ('m004_receipt_answers', 1), ('m005_one_unsettled_run_per_session', 1)",
)
RESPONSE_STORE_DB_SCHEMA = (
    "CREATE TABLE _migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)",
    """
    CREATE TABLE responses (
                response_id TEXT PRIMARY KEY,
                data        TEXT NOT NULL,
                accessed_at INTEGER NOT NULL
            , status TEXT, owner_host TEXT, owner_pid INTEGER, owner_started TEXT)
    """,
    "CREATE INDEX responses_accessed ON responses(accessed_at)",
    """
    CREATE TABLE conversations (
                name        TEXT PRIMARY KEY,
                response_id TEXT NOT NULL
            )
    """,
    "CREATE INDEX conversations_response ON conversations(response_id)",
    "CREATE INDEX responses_in_progress ON responses(response_id) WHERE status = 'in_progress'",
    "INSERT INTO _migrations VALUES ('m001_responses', 1), ('m002_status_and_owner', 1)",
)

# What the earliest versions ran on every open (`CREATE … IF NOT EXISTS`, no ledger).
OLD_RESPONSES_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    response_id TEXT PRIMARY KEY,
    data        TEXT NOT NULL,
    accessed_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS responses_accessed ON responses(accessed_at);
CREATE TABLE IF NOT EXISTS conversations (
    name        TEXT PRIMARY KEY,
    response_id TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS conversations_response ON conversations(response_id);
"""

OLD_RUNS_SCHEMA = (
    """
    CREATE TABLE IF NOT EXISTS runs (
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
        owner_pid INTEGER
    )
    """,
    "CREATE INDEX IF NOT EXISTS runs_status ON runs(status)",
    "CREATE INDEX IF NOT EXISTS runs_updated_at ON runs(updated_at)",
    """
    CREATE TABLE IF NOT EXISTS receipts (
        scope TEXT NOT NULL,
        key TEXT NOT NULL,
        fingerprint TEXT NOT NULL,
        run_id TEXT NOT NULL,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        PRIMARY KEY (scope, key)
    )
    """,
    "CREATE INDEX IF NOT EXISTS receipts_updated_at ON receipts(updated_at)",
)

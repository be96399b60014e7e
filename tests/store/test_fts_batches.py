"""state.db's search index is filled in batches after the commit (`fts_batches`): a real
SQLite file, the real background indexer thread, a second connection as another reader."""

from __future__ import annotations

import asyncio
import sqlite3
import time
from contextlib import closing
from pathlib import Path

from hermes.store.records import NewMessage
from hermes.store.sqlite.assemble import open_sqlite_storage
from hermes.store.sqlite.fts_indexer import FtsIndexer
from hermes.testing.state_db import SyncStateDb


def indexed(path: Path, word: str) -> int:
    """What another process reading the file sees in the index."""
    with closing(sqlite3.connect(path)) as db:
        return int(db.execute("SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", (word,)).fetchone()[0])


def test_a_commit_leaves_indexing_to_the_batch_and_a_search_flushes_first(
    store: SyncStateDb, db_path: Path
) -> None:
    session = store.create_session(source="cli")
    message = store.append_message(session.id, NewMessage(role="user", content="quokka on the ferry"))
    assert indexed(db_path, "quokka") == 0  # not inside the turn's commit
    hits = store.search("quokka")
    assert [hit.message_id for hit in hits] == [message.id]
    assert indexed(db_path, "quokka") == 1
    assert store.integrity_check() == "ok"


def test_drafts_deletes_and_forks_keep_the_index_exact(store: SyncStateDb) -> None:
    session = store.create_session(source="cli")
    store.append_message(session.id, NewMessage(role="user", content="wombat question"))
    turn = store.begin_turn(session.id)
    store.save_draft(turn.id, "wombat draft answer")  # above the mark: the batch skips a draft
    store.index_pending()
    assert [hit.role for hit in store.search("wombat")] == ["user"]
    store.end_turn(turn.id, "interrupted")  # the draft becomes a message: the trigger indexes it
    assert sorted(hit.role for hit in store.search("wombat")) == ["assistant", "user"]
    doomed = store.create_session(source="cli")
    store.append_message(doomed.id, NewMessage(role="user", content="wombat never indexed"))
    store.delete_session(doomed.id)  # deleted before any batch saw it
    store.fork_session(session.id)
    assert len(store.search("wombat")) == 4  # the parent's two and the fork's copies
    assert store.integrity_check() == "ok"


async def test_the_background_batch_indexes_within_about_a_second(tmp_path: Path) -> None:
    storage = open_sqlite_storage(tmp_path)  # a server's storage: the indexer thread runs
    try:
        session = await storage.sessions.create_session(source="api_server")
        await storage.sessions.append_message(session.id, NewMessage(role="user", content="numbat at dawn"))
        written = time.monotonic()
        while indexed(tmp_path / "state.db", "numbat") == 0:
            assert time.monotonic() - written < 5.0, "never indexed"
            await asyncio.sleep(0.05)
        assert time.monotonic() - written < 2.0  # a batch a second (slack for a loaded machine)
    finally:
        await storage.aclose()


def test_a_stopped_indexer_is_quick_and_a_missing_file_is_no_crash(tmp_path: Path) -> None:
    indexer = FtsIndexer(tmp_path / "missing" / "state.db", interval=0.01)
    indexer.start()
    time.sleep(0.05)
    started = time.monotonic()
    indexer.stop()
    assert time.monotonic() - started < 1.0 and indexer.batches == 0

"""Turn checkpoints and undo markers: the rules, written once over an `Executor`.

A turn's file snapshots (shadow git commits, see hermes/checkpoints) are recorded on its
row (`worktree`, `checkpoint_before`, `checkpoint_after`). Undo hides turns without
deleting anything; `Sessions` exposes these rules and holds the session's row lock
around `undo_turns` and `redo_turns`.

Invariants:
- An undo hides the newest `count` visible turns and every visible message after the
  first of them, all with one new marker (`undone`): one more than the session's largest.
- A message or turn is visible while `undone` is NULL; `history()`, `get_messages()` and
  forks read visible messages only.
- Redo brings back exactly the newest marker's turns and messages, and only while no
  visible turn came after them (a conversation that went on keeps them hidden for good).
"""

from __future__ import annotations

from hermes.errors import StoreError
from hermes.store.records import TurnCheckpoint
from hermes.store.sql import Executor

__all__ = ["redo_turns", "set_turn_checkpoint", "turn_checkpoints", "undo_turns"]


async def set_turn_checkpoint(db: Executor, turn_id: int, *, worktree: str, before: str, after: str) -> None:
    changed = await db.execute(
        "UPDATE hermes.turns SET worktree = ?, checkpoint_before = ?, checkpoint_after = ? WHERE id = ?",
        (worktree, before, after, turn_id),
    )
    if changed == 0:
        raise StoreError(f"no turn with id {turn_id}")


async def turn_checkpoints(db: Executor, session_id: str) -> list[TurnCheckpoint]:
    rows = await db.fetch_all(
        "SELECT id, session_id, worktree, checkpoint_before, checkpoint_after, undone, ended_at "
        "FROM hermes.turns WHERE session_id = ? ORDER BY id",
        (session_id,),
    )
    return [
        TurnCheckpoint(
            turn_id=int(tid),
            session_id=str(sid),
            worktree=worktree,
            before=before,
            after=after,
            undone=None if undone is None else int(undone),
            ended=ended_at is not None,
        )
        for tid, sid, worktree, before, after, undone, ended_at in rows
    ]


async def undo_turns(db: Executor, session_id: str, count: int) -> list[int]:
    """Inside the caller's transaction (holding the session): see the module docstring."""
    rows = await db.fetch_all(
        "SELECT id, after_message_id FROM hermes.turns WHERE session_id = ? AND undone IS NULL "
        "ORDER BY id DESC LIMIT ?",
        (session_id, max(count, 0)),
    )
    if not rows:
        return []
    top = await db.fetch_one("SELECT coalesce(max(undone), 0) FROM hermes.turns WHERE session_id = ?", (session_id,))
    marker = (int(top[0]) if top else 0) + 1
    first_id, after = int(rows[-1][0]), int(rows[-1][1])
    await db.execute(
        "UPDATE hermes.turns SET undone = ? WHERE session_id = ? AND id >= ? AND undone IS NULL",
        (marker, session_id, first_id),
    )
    await db.execute(
        "UPDATE hermes.messages SET undone = ? WHERE session_id = ? AND id > ? AND undone IS NULL",
        (marker, session_id, after),
    )
    return sorted(int(row[0]) for row in rows)


async def redo_turns(db: Executor, session_id: str) -> list[int]:
    """Inside the caller's transaction (holding the session): see the module docstring."""
    top = await db.fetch_one("SELECT max(undone) FROM hermes.turns WHERE session_id = ?", (session_id,))
    if top is None or top[0] is None:
        return []
    marker = int(top[0])
    rows = await db.fetch_all(
        "SELECT id FROM hermes.turns WHERE session_id = ? AND undone = ? ORDER BY id", (session_id, marker)
    )
    later = await db.fetch_one(
        "SELECT count(*) FROM hermes.turns WHERE session_id = ? AND undone IS NULL AND id > ?",
        (session_id, int(rows[-1][0])),
    )
    if later is not None and int(later[0]) > 0:
        return []
    await db.execute("UPDATE hermes.turns SET undone = NULL WHERE session_id = ? AND undone = ?", (session_id, marker))
    await db.execute(
        "UPDATE hermes.messages SET undone = NULL WHERE session_id = ? AND undone = ?", (session_id, marker)
    )
    return [int(row[0]) for row in rows]

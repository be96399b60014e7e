"""`PgResponseStore`: stored Responses API records and conversation names on PostgreSQL.

Same semantics as `hermes.store.sqlite.responses.ResponseStore` (LRU-bounded to `max_size`,
`get` refreshes, conversation names vanish with their response), shared by every
instance: the recency clock is the database sequence `hermes.response_clock`, and a
record deleted through one instance is gone for all (nothing is cached in memory).
Records are JSON text, so any string content round-trips.
"""

from __future__ import annotations

import json
from typing import Any

from hermes.store.postgres.connect import Database

__all__ = ["PgResponseStore"]


class PgResponseStore:
    def __init__(self, db: Database, *, max_size: int = 1000) -> None:
        if max_size < 1:
            raise ValueError("max_size must be at least 1")
        self._db = db
        self.max_size = max_size

    async def get(self, response_id: str) -> dict[str, Any] | None:
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                "UPDATE hermes.responses SET accessed_at = nextval('hermes.response_clock') "
                "WHERE response_id = %s RETURNING data",
                (response_id,),
            )
            row = await cursor.fetchone()
        if row is None:
            return None
        try:
            data = json.loads(row[0])
        except json.JSONDecodeError:
            await self.delete(response_id)
            return None
        return data if isinstance(data, dict) else None

    async def put(self, response_id: str, record: dict[str, Any]) -> None:
        data = json.dumps(record)
        async with self._db.transaction() as conn:
            await conn.execute(
                "INSERT INTO hermes.responses (response_id, data, accessed_at) "
                "VALUES (%s, %s, nextval('hermes.response_clock')) "
                "ON CONFLICT (response_id) DO UPDATE SET data = EXCLUDED.data, accessed_at = EXCLUDED.accessed_at",
                (response_id, data),
            )
            cursor = await conn.execute("SELECT count(*) FROM hermes.responses")
            row = await cursor.fetchone()
            excess = (int(row[0]) if row else 0) - self.max_size
            if excess > 0:
                cursor = await conn.execute(
                    "DELETE FROM hermes.responses WHERE response_id IN ("
                    "SELECT response_id FROM hermes.responses ORDER BY accessed_at ASC LIMIT %s "
                    "FOR UPDATE SKIP LOCKED) RETURNING response_id",
                    (excess,),
                )
                victims = [victim for (victim,) in await cursor.fetchall()]
                await conn.execute("DELETE FROM hermes.conversations WHERE response_id = ANY(%s)", (victims,))

    async def delete(self, response_id: str) -> bool:
        async with self._db.transaction() as conn:
            cursor = await conn.execute("DELETE FROM hermes.responses WHERE response_id = %s", (response_id,))
            removed = bool(cursor.rowcount > 0)
            await conn.execute("DELETE FROM hermes.conversations WHERE response_id = %s", (response_id,))
        return removed

    async def count(self) -> int:
        async with self._db.connection() as conn:
            cursor = await conn.execute("SELECT count(*) FROM hermes.responses")
            row = await cursor.fetchone()
        return int(row[0]) if row else 0

    async def get_conversation(self, name: str) -> str | None:
        async with self._db.connection() as conn:
            cursor = await conn.execute("SELECT response_id FROM hermes.conversations WHERE name = %s", (name,))
            row = await cursor.fetchone()
        return None if row is None else str(row[0])

    async def set_conversation(self, name: str, response_id: str) -> None:
        async with self._db.connection() as conn:
            await conn.execute(
                "INSERT INTO hermes.conversations (name, response_id) VALUES (%s, %s) "
                "ON CONFLICT (name) DO UPDATE SET response_id = EXCLUDED.response_id",
                (name, response_id),
            )

    async def find_item(self, item_id: str) -> dict[str, Any] | None:
        """The output item with this id in any stored response (for ``item_reference``)."""
        async with self._db.connection() as conn:
            cursor = await conn.execute(
                "SELECT item::text FROM hermes.responses AS r, jsonb_array_elements("
                "CASE WHEN jsonb_typeof(r.data::jsonb #> '{response,output}') = 'array' "
                "THEN r.data::jsonb #> '{response,output}' ELSE '[]'::jsonb END) AS item "
                "WHERE jsonb_typeof(item) = 'object' AND item ->> 'id' = %s LIMIT 1",
                (item_id,),
            )
            row = await cursor.fetchone()
        if row is None:
            return None
        item = json.loads(row[0])
        return item if isinstance(item, dict) else None

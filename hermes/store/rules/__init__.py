"""Every storage rule, written once for both backends.

Each module here is written over `hermes.store.sql.Executor` (neutral SQL: `?`
placeholders, tables named `hermes.<table>`) and a `Dialect` (the few named differences),
so a storage operation is written once and runs on SQLite and PostgreSQL alike; the
backends (`hermes.store.sqlite`, `hermes.store.postgres`) only execute.

- Sessions and messages (`AsyncSessionStore`), in layers: `rows` (`SessionRows`: codecs,
  finding and inserting single rows), `turns` (`TurnRules`: the turn lifecycle) and
  `sessions` (`Sessions`: the session rules), with `session_record` (columns, a fresh
  record, titles, the store's clock) under them and the rules of their own tables beside
  them: `forks`, `compactions`, `conversation_marks`, `turn_undo`, `turn_repair`, `usage`.
- `runs` (run rows), `receipts` (Idempotency-Key receipts), `leases` (instance leases),
  `responses` (stored Responses API records and conversation names).
"""

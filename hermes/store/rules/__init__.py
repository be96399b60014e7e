"""The rules of the record kinds that are written once for both backends.

Each module here is written over `hermes.store.sql.Executor` (neutral SQL: `?`
placeholders, tables named `hermes.<table>`) and a `Dialect` (the few named differences),
so a storage operation is written once and runs on SQLite and PostgreSQL alike:
`runs` (run rows), `receipts` (Idempotency-Key receipts), `leases` (instance leases),
`responses` (stored Responses API records and conversation names).
"""

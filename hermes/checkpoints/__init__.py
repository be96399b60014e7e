"""File checkpoints of turns: snapshots in a shadow git repository, undo, redo and diffs.

- `shadow`: one working tree's shadow repository (git plumbing only).
- `turn`: the snapshots one running turn takes (before its first tool that can change
  files, and at its end) and records against the turn in the store.
- `undo`: undo, redo and diffs of a stored session's turns, for every front end.
- `files`: `SessionFiles`, the protocol front ends drive (local here, or a remote server's
  through `hermes.remote.sessions.RemoteSessions`), and its local implementation.

This package sits between the store and the engine: it imports `hermes.store`,
`hermes.errors`, `hermes.beneath` (writes beneath an opened folder) and nothing above them;
the confinement's answer on what may be restored comes from the front end (`RestoreGuard`).
"""

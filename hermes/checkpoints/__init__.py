"""File checkpoints of turns: snapshots in a shadow git repository, undo, redo and diffs.

- `shadow`: one working tree's shadow repository (git plumbing only).
- `isolated_git`: how every checkpoint `git` runs (no user config, hook, filter or pager).
- `scope`: what a snapshot may hold (no `/`, no folder holding $HOME, no hidden path; caps).
- `refs`: the ref names of a session's snapshots (any session id, encoded).
- `turn`: the snapshots one running turn takes (before its first tool that can change
  files, and at its end) and records against the turn in the store.
- `undo`: undo, redo and diffs of a stored session's turns, for every front end.
- `files`: `LocalSessionFiles`, the local `SessionFiles` (the protocol front ends drive is
  in hermes/backend.py; a remote server's is `hermes.remote.sessions.RemoteSessions`).

This package sits between the store and the engine: it imports `hermes.store`,
`hermes.errors`, `hermes.beneath` (writes beneath an opened folder) and nothing above them;
the confinement's answer on what may be restored comes from the front end (`RestoreGuard`).
"""

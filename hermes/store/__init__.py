"""Session storage. `SessionStore` is the interface; `open_session_store(path)` the SQLite one."""

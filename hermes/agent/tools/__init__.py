"""Tools the agent can call. `default_registry()` returns the core set."""

"""Tools the agent can call. `default_registry()` returns the core set."""

from hermes.agent.tools.registry import default_registry

__all__ = ["default_registry"]

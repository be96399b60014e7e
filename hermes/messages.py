"""The OpenAI Chat Completions message shape, shared by the engine and the store.

This module sits below both `hermes.agent` and `hermes.store` (it imports nothing from
hermes), so the store can persist messages without knowing about the engine.
"""

from __future__ import annotations

from typing import Any, TypeAlias

__all__ = ["ChatMessage", "UserContent"]

ChatMessage: TypeAlias = dict[str, Any]
"""An OpenAI Chat Completions message: {"role": ..., "content": ..., "tool_calls": [...], ...}.

Kept as a plain dict because that is the wire shape every provider and client speaks."""

UserContent: TypeAlias = str | list[dict[str, Any]]
"""User content: plain text, or OpenAI content parts
([{"type": "text", ...}, {"type": "image_url", ...}])."""

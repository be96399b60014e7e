"""Where hooks' text goes: in the model's copy of the turn's input (as plan mode's note),
never in the stored message, so the transcript shows what the person typed."""

from __future__ import annotations

from hermes.agent.types import ChatMessage

CONTEXT_HEADER = "Context added by a UserPromptSubmit hook:"
SESSION_HEADER = "Context added by a SessionStart hook:"


def with_prompt_context(inputs: list[ChatMessage], context: str) -> list[ChatMessage]:
    """`inputs` with `context` after the last user message's content (a copy)."""
    if not context:
        return inputs
    note = f"{CONTEXT_HEADER}\n{context}"
    for index in range(len(inputs) - 1, -1, -1):
        message = inputs[index]
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str):
            noted: ChatMessage = {**message, "content": f"{content}\n\n{note}"}
        elif isinstance(content, list):
            noted = {**message, "content": [*content, {"type": "text", "text": note}]}
        else:
            continue
        return [*inputs[:index], noted, *inputs[index + 1 :]]
    return inputs


def with_session_context(system_prompt: str, context: str) -> str:
    """A new session's system prompt with a SessionStart hook's `context` after it."""
    return f"{system_prompt}\n\n{SESSION_HEADER}\n{context}" if context else system_prompt

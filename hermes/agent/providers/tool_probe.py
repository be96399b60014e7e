"""Does the endpoint's model call tools natively? One tiny request tells (`hermes doctor`).

The probe offers one trivial tool, asks for it by name (`tool_choice: "auto"`, as the
engine sends tools), and reads the non-streamed answer:

    native      the answer has a real `tool_calls` entry
    json_text   no tool call, but the text holds the call as JSON (fenced block,
                `<tool_call>` tag, or a bare object): the model needs `tool_protocol = json`
    no_call     plain text only: the model ignored the tool
    error       the request failed (the message says why)

Small models behind llama.cpp, Ollama or LM Studio often answer `json_text`: the server
has no tool-call template for them, so the call arrives as prose and nothing runs.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, Literal

from hermes.agent.provider import ModelRequest, Provider, TextChunk, ToolCallChunk
from hermes.agent.providers.action_grammar import parse_action
from hermes.errors import HermesError

PROBE_TOOL = "get_time"

_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": PROBE_TOOL,
            "description": "Get the current time in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string", "description": "City name."}},
                "required": ["city"],
            },
        },
    }
]
_MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "You are an assistant that uses the tools you are given."},
    {"role": "user", "content": f"What time is it in Paris? Call the {PROBE_TOOL} tool."},
]

ProbeKind = Literal["native", "json_text", "no_call", "error"]


@dataclass(frozen=True, slots=True)
class ToolProbe:
    kind: ProbeKind
    detail: str
    """The tool call made, the text written, or the error (one line, clipped)."""


def probe_request(model: str) -> ModelRequest:
    """The probe's request: one tool, `tool_choice: "auto"`, a short answer, no sampling noise."""
    return ModelRequest(
        model=model,
        messages=[dict(m) for m in _MESSAGES],
        tools=_TOOLS,
        include_usage=False,
        extra={"tool_choice": "auto", "max_tokens": 128, "temperature": 0},
    )


def _one_line(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


async def probe_tool_calls(provider: Provider, model: str, *, timeout: float) -> ToolProbe:
    """Send the probe through `provider` (a plain OpenAI-compatible one) and classify the answer."""
    try:
        events = await asyncio.wait_for(provider.complete(probe_request(model)), timeout)
    except TimeoutError:
        return ToolProbe("error", f"the model did not answer the tool probe within {timeout:g} s")
    except HermesError as exc:
        return ToolProbe("error", _one_line(str(exc)))
    names = [event.name for event in events if isinstance(event, ToolCallChunk) and event.name]
    if names:
        return ToolProbe("native", f"called {names[0]} natively")
    text = "".join(event.text for event in events if isinstance(event, TextChunk))
    if not parse_action(text, {PROBE_TOOL}).is_reply:
        return ToolProbe("json_text", _one_line(text))
    return ToolProbe("no_call", _one_line(text) or "(empty answer)")

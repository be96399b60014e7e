"""Tools the client defines and runs itself (OpenAI function tools passed through a turn).

A front end that speaks the OpenAI API hands the client's function tools to the turn as
`ClientTools`. The model is offered them beside hermes' own tools. When a model response
calls one, the engine first runs hermes' own calls of that response, then ends the turn
with `ClientToolCalls` (an event, and `TurnResult.client_calls`): the client runs them
and starts the next turn with their results (`TurnRequest.tool_results`), which continues
the same session and agent loop.

Invariants:
- Client tool names never collide with hermes' tools (the front end refuses such a request).
- `required` and a named choice apply to the first model call of a turn only: after a
  tool result the model must be free to answer (`ClientTools.choice_for`).
- A turn that ends waiting for client calls stores the assistant message with all its
  calls and hermes' results; the client's calls stay unanswered in the store until the
  continuation records their results (a read of the history in between shows
  placeholders, which `merge_results` replaces).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeAlias, TypeVar, assert_never

from hermes.messages import ChatMessage, UserContent


@dataclass(frozen=True, slots=True)
class NamedChoice:
    """`tool_choice` naming one function the model must call."""

    name: str


ToolChoice: TypeAlias = Literal["auto", "none", "required"] | NamedChoice


@dataclass(frozen=True, slots=True)
class ClientTools:
    """The client's function tools and how the model may use tools."""

    schemas: tuple[dict[str, Any], ...] = ()
    """OpenAI function-tool schemas ({"type": "function", "function": {...}})."""
    choice: ToolChoice = "auto"
    parallel: bool | None = None
    """`parallel_tool_calls` as the client sent it (None: not sent)."""

    def names(self) -> frozenset[str]:
        return frozenset(str(schema["function"]["name"]) for schema in self.schemas)

    def choice_for(self, first_call: bool) -> str | dict[str, Any] | None:
        """The wire `tool_choice` of a model call (None: leave it out)."""
        choice = self.choice
        match choice:
            case "none":
                return "none"
            case "auto":
                return None
            case "required":
                return "required" if first_call else None
            case NamedChoice():
                return {"type": "function", "function": {"name": choice.name}} if first_call else None
            case _:
                assert_never(choice)


@dataclass(frozen=True, slots=True)
class ClientToolCall:
    """A call of a client tool the model made; the client runs it."""

    call_id: str
    name: str
    arguments: str
    """The arguments as the model wrote them (a JSON string)."""


@dataclass(frozen=True, slots=True)
class ClientToolResult:
    """What the client's tool returned, for the call with `call_id`."""

    call_id: str
    output: str
    name: str | None = None


def result_message(result: ClientToolResult, name: str | None) -> ChatMessage:
    message: ChatMessage = {"role": "tool", "tool_call_id": result.call_id, "content": result.output}
    if result.name or name:
        message["name"] = result.name or name or ""
    return message


def call_names(history: list[ChatMessage]) -> dict[str, str]:
    """Every tool call id of the history and its name."""
    names: dict[str, str] = {}
    for message in history:
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            names[str(call.get("id", ""))] = str(function.get("name", ""))
    return names


def first_results(history: list[ChatMessage]) -> list[ChatMessage]:
    """`history` without a second answer to a call (a client resending a result hermes
    already recorded for its own call)."""
    seen: set[str] = set()
    out: list[ChatMessage] = []
    for message in history:
        if message.get("role") == "tool":
            call_id = str(message.get("tool_call_id", ""))
            if call_id in seen:
                continue
            seen.add(call_id)
        out.append(message)
    return out


def merge_results(history: list[ChatMessage], results: tuple[ClientToolResult, ...]) -> list[ChatMessage]:
    """`history` without any earlier answer (a placeholder) to the calls `results` answer."""
    answered = {result.call_id for result in results}
    return [m for m in history if not (m.get("role") == "tool" and m.get("tool_call_id") in answered)]


class NamedCall(Protocol):
    """A tool call of a model response, as far as choosing who runs it needs (`_call.ToolSlot`)."""

    @property
    def name(self) -> str: ...


Call = TypeVar("Call", bound=NamedCall)


def client_calls(client: ClientTools, calls: list[Call]) -> list[Call]:
    """The calls of a model response that the client runs (calls of its tools)."""
    names = client.names()
    return [slot for slot in calls if slot.name in names]


def turn_inputs(
    user_input: UserContent, tool_results: tuple[ClientToolResult, ...] | None, history: list[ChatMessage]
) -> tuple[list[ChatMessage], list[ChatMessage]]:
    """(the turn's input messages, the history before them), from a turn's `input` and
    `tool_results` (`TurnRequest`).

    A continuation's input is its tool results, named after the calls they answer; the
    history loses any earlier answer to those calls (see `merge_results`).
    """
    if tool_results is None:
        return [{"role": "user", "content": user_input}], history
    names = call_names(history)
    inputs = [result_message(result, names.get(result.call_id)) for result in tool_results]
    return inputs, merge_results(history, tool_results)

"""The steps of a turn's loop: a model step, a tool step, and the answer that ends it.

    outcome = CallOutcome()
    if call.budget.over_limit(context, tools): ...compact...            # a model step: fit,
    request = model_request(turn, call, context, tools)                 # begin,
    async for event in call.caller.call(request, call.policy, outcome):
        model_streamed(turn, event); ...                                # each event of the call,
    model_done(turn, call, context, tools, outcome)                     # end
    async for event in tool_step(turn, run, outcome, context): ...     # its tool calls
    result = answer(turn, context, outcome, ending, max_iterations)        # or: the answer

The tool step is an async generator of engine events; the model step is three calls
around the model call's own events (so each passes one generator layer fewer). Both
write what they produced to the `TurnState` (and through it to the store) as it happens.

Invariants:
- The model step compacts the request first when it would exceed the budget; the text it
  streams is saved as a draft as it arrives; the call's usage (and the summaries') is added to
  the turn once the call ended.
- The answer is not written by its step: the turn's end writes it with the end itself.
- The tool step records the assistant message with its calls before any tool starts, and
  opens the calls only once they are stored: closing a stopped turn answers exactly these.
  Results are recorded in call order, each as soon as all before it are in.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncGenerator
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, Literal

from hermes.agent._call import CallOutcome, CallPolicy, ModelCaller, ToolSlot
from hermes.agent._tool_exec import as_registry_calls, run_batch
from hermes.agent._turn import TurnState
from hermes.agent.context import ContextBudget
from hermes.agent.events import AgentEvent, SegmentEnd, Status
from hermes.agent.output_format import OutputFormat
from hermes.agent.provider import ModelRequest
from hermes.agent.tools.base import ToolContext, ToolRegistry
from hermes.agent.turn_facts import failed_check_note, fallback_answer, turn_facts, unusable_answer
from hermes.agent.types import ChatMessage, TurnResult
from hermes.error_codes import MAX_ITERATIONS, OUTPUT_TRUNCATED, STREAM_STALLED
from hermes.store.records import NewMessage

SUMMARY_NUDGE = (
    "You have used the maximum number of tool steps for this request. Do not call any more tools. "
    "Summarise what you did, what you found, and what is left to do."
)
REPEAT_LIMIT = 3
"""The same tool call (name and arguments) this many times in a row ends the turn with a summary."""
REPEAT_NUDGE = (
    "You called {name} with the same arguments {times} times; its result will not change. Do not call any "
    "more tools. Reply to the user now: what you did, what you found, and what is left to do."
)


@dataclass(frozen=True, slots=True)
class ModelCall:
    """How the model steps of one turn call the model."""

    caller: ModelCaller
    policy: CallPolicy
    budget: ContextBudget
    output_format: OutputFormat | None = None
    """Sent on every call of the turn: the format constrains whichever call writes the answer."""


@dataclass(frozen=True, slots=True)
class ToolRun:
    """How the tool steps of one turn run tools."""

    registry: ToolRegistry
    context: ToolContext
    output_limit: int


Ending = Literal["answer", "max_iterations"]
"""Why a text answer ends the turn: the model answered, or the max_iterations summary."""


def model_request(
    turn: TurnState,
    call: ModelCall,
    context: list[ChatMessage],
    tools: list[dict[str, Any]] | None,
    *,
    tool_choice: str | dict[str, Any] | None = None,
    parallel_tool_calls: bool | None = None,
) -> ModelRequest:
    """Begin a model step (the request already fits: `call.budget.over_limit` came first): its request."""
    turn.api_calls += 1
    turn.text_parts = []
    return ModelRequest(
        model=turn.model,
        messages=context,
        tools=tools,
        tool_choice=tool_choice if tools else None,
        parallel_tool_calls=parallel_tool_calls if tools else None,
        output_format=call.output_format,
    )


def model_streamed(turn: TurnState, event: AgentEvent) -> None:
    """Note an event of the model call: its text is saved as a draft as it arrives."""
    if event.type == "text.delta":
        turn.text_parts.append(event.text)
        turn.recorder.streamed(turn.text_parts)


def model_done(
    turn: TurnState, call: ModelCall, context: list[ChatMessage], tools: list[dict[str, Any]] | None,
    outcome: CallOutcome,
) -> None:  # fmt: skip
    """End a model step: the call's usage (and the summaries') added to the turn."""
    turn.usage = turn.usage + outcome.usage + call.budget.take_usage()
    call.budget.observe(outcome.usage, context, tools)
    turn.context_tokens = call.budget.last_prompt_tokens
    if outcome.reasoning:
        turn.reasoning.append(outcome.reasoning)


async def tool_step(
    turn: TurnState,
    run: ToolRun,
    outcome: CallOutcome,
    context: list[ChatMessage],
    runnable: list[ToolSlot] | None = None,
) -> AsyncGenerator[AgentEvent, None]:
    """Record the assistant message with its calls, run them, record their results.

    `runnable`: the calls hermes runs (default: all); the others (client tools) are
    recorded with the message and left for the client.
    """
    calls = outcome.tool_calls if runnable is None else runnable
    assistant = assistant_message(outcome, with_calls=True)
    context.append(assistant)
    await turn.record(assistant, reasoning=outcome.reasoning, finish_reason=outcome.finish_reason)
    # Open only once the calls are stored: closing answers exactly these.
    turn.open_calls = [(slot.id, slot.name) for slot in calls]
    turn.text_parts = []
    yield SegmentEnd(last=len(calls) < len(outcome.tool_calls))
    results = turn.results = {}
    order = [slot.id for slot in calls]
    batch_calls = as_registry_calls(run.registry, calls)
    if turn.files is not None and any(c.tool is not None and not c.tool.read_only for c in batch_calls):
        notice = await turn.files.before_tools()
        if notice is not None:
            yield Status("checkpoint", notice)
    async with aclosing(run_batch(batch_calls, run.context, output_limit=run.output_limit, results=results)) as batch:
        async for event in batch:
            if event.type == "tool.started":
                turn.running_tools[event.call_id] = (event, time.monotonic())
            elif event.type == "tool.completed":
                turn.running_tools.pop(event.call_id, None)
            yield event
            # Results are written in call order, each as soon as all before it are in.
            while order and order[0] in results:
                await turn.record_tool_result(context, results[order.pop(0)])


def answer(
    turn: TurnState, context: list[ChatMessage], outcome: CallOutcome, ending: Ending, max_iterations: int
) -> TurnResult:
    """The model's text answer, for the turn's end to write; the turn's result (partial
    when it was cut off), which holds the answer."""
    assistant = assistant_message(outcome, with_calls=False)
    context.append(assistant)
    stored = NewMessage.from_openai(assistant, reasoning=outcome.reasoning or None, finish_reason=outcome.finish_reason)
    turn.answer = (assistant, stored)
    turn.text_parts = []
    turn.final_text = outcome.text
    if outcome.stalled:
        # Cut-off tool calls: the warning is already in the text and a StreamStalled event.
        return turn.result(
            "partial",
            error=outcome.warning or "the response stream broke off before the answer was complete",
            error_code=STREAM_STALLED if outcome.stalled_tools else OUTPUT_TRUNCATED,
        )
    if outcome.finish_reason == "length":
        return turn.result("partial", error="the model hit its output limit", error_code=OUTPUT_TRUNCATED)
    if ending == "max_iterations":
        return turn.result("partial", error=stopped_early(turn, max_iterations), error_code=MAX_ITERATIONS)
    return turn.result("completed")


def stopped_early(turn: TurnState, max_iterations: int) -> str:
    """Why a turn ended on its summary call: its time limit, else its number of model calls."""
    if turn.out_of_time is not None:
        return f"stopped at its time limit of {turn.out_of_time:.0f} s"
    return f"stopped after {max_iterations} model calls"


def hermes_answer(turn: TurnState, outcome: CallOutcome, ending: Ending, max_iterations: int) -> str | None:
    """The answer hermes writes itself when the model ends a turn that ran tools without one
    of its own (nothing, the request handed back, or hermes' words to it repeated); None
    when the model's answer stands. Sets `turn.answer_by`.

    Only a whole answer counts: a cut-off one (output limit, broken stream) is left as it is.
    """
    turn.answer_by = "model"  # a Stop hook may have made the turn go on after hermes' answer
    if outcome.stalled or outcome.finish_reason == "length" or outcome.tool_calls:
        return None
    facts = turn_facts(turn.messages)
    if not facts.ran_tools:
        return None
    first = turn.messages[0] if turn.messages else {}
    request = first.get("content") if first.get("role") == "user" else ""
    ours = [SUMMARY_NUDGE, REPEAT_NUDGE.format(name="the tool", times=REPEAT_LIMIT), *facts.guidance]
    if not unusable_answer(outcome.text, request if isinstance(request, str) else "", ours):
        return None
    turn.answer_by = "hermes"
    early = stopped_early(turn, max_iterations) if ending == "max_iterations" else None
    return fallback_answer(facts, stopped_early=early)


def hermes_postscript(turn: TurnState, outcome: CallOutcome) -> str | None:
    """hermes' marked line after the model's own answer when the turn's check, run after its
    last change, failed (`turn_facts.failed_check_note`); None otherwise. The answer stays
    the model's (`answer_by` "model"): the line only keeps "done" from being the last word."""
    if outcome.stalled or outcome.finish_reason == "length" or outcome.tool_calls or turn.answer_by != "model":
        return None
    return failed_check_note(turn_facts(turn.messages))


def assistant_message(outcome: CallOutcome, *, with_calls: bool) -> ChatMessage:
    message: ChatMessage = {"role": "assistant", "content": outcome.text or None}
    if with_calls:
        message["tool_calls"] = [
            {
                "id": slot.id,
                "type": "function",
                "function": {"name": slot.name, "arguments": slot.arguments or "{}"},
            }
            for slot in outcome.tool_calls
        ]
    elif message["content"] is None:
        message["content"] = ""
    return message


def repeated_call(repeats: list[str], calls: list[ToolSlot]) -> str | None:
    """Track `calls` in `repeats`; the name of one made REPEAT_LIMIT times in a row, else None.

    In a row: any other call in between (an edit, another command) starts the count again,
    so running the tests after each fix is never taken for a loop.
    """
    for slot in calls:
        parsed = slot.parsed_arguments()
        key = slot.name + "\0" + (json.dumps(parsed, sort_keys=True) if parsed is not None else slot.arguments)
        if repeats and repeats[-1] != key:
            repeats.clear()
        repeats.append(key)
        if len(repeats) >= REPEAT_LIMIT:
            return slot.name
    return None

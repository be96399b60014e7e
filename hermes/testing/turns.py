"""Helpers for driving a turn to its end in tests and benchmarks."""

from __future__ import annotations

from hermes.agent.engine import Agent
from hermes.agent.events import AgentEvent, TurnCompleted
from hermes.agent.types import TurnRequest, TurnResult


async def collect_turn(agent: Agent, request: TurnRequest | str) -> tuple[list[AgentEvent], TurnResult]:
    """Run a turn to the end; return every event and the result."""
    if isinstance(request, str):
        request = TurnRequest(input=request)
    events: list[AgentEvent] = []
    async for event in agent.run_turn(request):
        events.append(event)
    last = events[-1]
    if not isinstance(last, TurnCompleted):
        raise AssertionError(f"turn ended with {last.type}, not turn.completed")
    return events, last.result


def text_of(events: list[AgentEvent]) -> str:
    """All visible text of the events, joined."""
    return "".join(e.text for e in events if e.type == "text.delta")

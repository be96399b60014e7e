"""Client tools in the engine: offered beside hermes' tools, a call of one ends the turn
after hermes' own calls of the same response ran, and the next turn continues from the
client's results in the same session."""

from __future__ import annotations

from hermes.agent.client_tools import ClientToolResult, ClientTools, NamedChoice
from hermes.agent.events import ClientToolCalls, ToolCompleted, TurnCompleted
from hermes.agent.types import TurnRequest
from hermes.testing.turns import collect_turn as run
from hermes.testing.upstream import call, text_reply, tool_reply

WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}


async def test_mixed_response_runs_hermes_tool_then_ends_with_the_client_call(upstream, make_agent, store):
    upstream.enqueue(
        tool_reply([call("echo", {"text": "a"}, id="own"), call("get_weather", {"city": "Oslo"}, id="theirs")]),
        text_reply("Cold."),
    )
    agent = make_agent()
    client = ClientTools((WEATHER,))
    events, result = await run(agent, TurnRequest(input="go", client_tools=client))
    assert upstream.requests[0].tool_names[-1] == "get_weather"
    kinds = [type(e).__name__ for e in events if isinstance(e, (ToolCompleted, ClientToolCalls, TurnCompleted))]
    assert kinds == ["ToolCompleted", "ClientToolCalls", "TurnCompleted"]
    assert result.status == "completed"
    assert [(c.call_id, c.name, c.arguments) for c in result.client_calls] == [
        ("theirs", "get_weather", '{"city": "Oslo"}')
    ]
    assert [m["role"] for m in result.produced()] == ["assistant", "tool"]
    assert len(upstream.requests) == 1

    again = TurnRequest(
        input="", session_id=result.session_id, client_tools=client,
        tool_results=(ClientToolResult("theirs", "-5 C"),),
    )  # fmt: skip
    _, done = await run(agent, again)
    assert done.final_text == "Cold." and done.session_id == result.session_id
    sent = upstream.requests[1].messages
    assert [(m["role"], m.get("tool_call_id")) for m in sent[1:]] == [
        ("user", None), ("assistant", None), ("tool", "own"), ("tool", "theirs")
    ]  # fmt: skip
    assert sent[-1] == {"role": "tool", "tool_call_id": "theirs", "name": "get_weather", "content": "-5 C"}
    stored = [(m.role, m.tool_call_id) for m in store.get_messages(result.session_id)]
    assert stored == [("user", None), ("assistant", None), ("tool", "own"), ("tool", "theirs"), ("assistant", None)]


async def test_named_choice_is_for_the_first_call_only(upstream, make_agent):
    upstream.enqueue(tool_reply([call("echo", {"text": "a"})]), text_reply("ok"))
    client = ClientTools((WEATHER,), NamedChoice("get_weather"), parallel=False)
    await run(make_agent(), TurnRequest(input="go", client_tools=client))
    first, second = upstream.requests
    assert first.body["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert first.body["parallel_tool_calls"] is False
    assert "tool_choice" not in second.body and second.body["parallel_tool_calls"] is False


async def test_choice_none_stays_for_the_whole_turn(upstream, make_agent):
    upstream.enqueue(text_reply("plain"))
    await run(make_agent(), TurnRequest(input="go", client_tools=ClientTools(choice="none")))
    assert upstream.requests[0].body["tool_choice"] == "none"
    assert ClientTools(choice="none").choice_for(first_call=False) == "none"

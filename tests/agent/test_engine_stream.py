"""Streaming through the real openai SDK from a scripted upstream: deltas, tool calls, usage."""

from __future__ import annotations

import dataclasses

from hermes.agent.events import ReasoningDelta, SegmentEnd, TextDelta, ToolCallGenerating, ToolCompleted, ToolStarted
from hermes.testing.turns import collect_turn as run
from hermes.testing.turns import text_of as texts
from hermes.testing.upstream import Chunk, Reply, call, text_reply, tool_reply


async def test_text_deltas_arrive_in_order_and_form_the_answer(upstream, make_agent):
    upstream.enqueue(text_reply("The quick brown fox jumps", pieces=5))
    events, result = await run(make_agent(), "hello")
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert deltas == ["The q", "uick ", "brown", " fox ", "jumps"]
    assert result.status == "completed"
    assert result.final_text == "The quick brown fox jumps"
    assert result.messages[-1] == {"role": "assistant", "content": "The quick brown fox jumps"}
    assert events[0].type == "turn.started"


async def test_request_carries_system_prompt_history_tools_and_usage_option(upstream, make_agent):
    upstream.enqueue(text_reply("hi"))
    await run(make_agent(), "hello")
    body = upstream.requests[0].body
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["messages"][0]["role"] == "system"
    assert body["messages"][-1] == {"role": "user", "content": "hello"}
    assert {t["function"]["name"] for t in body["tools"]} >= {"echo", "nap"}
    assert upstream.requests[0].headers["Authorization"] == "Bearer test-key"


async def test_reasoning_fields_become_reasoning_never_text(upstream, make_agent):
    upstream.enqueue(text_reply("Answer.", reasoning="step one", reasoning_field="reasoning_content"))
    upstream.enqueue(text_reply("Second.", reasoning="other way", reasoning_field="reasoning"))
    agent = make_agent()
    events, result = await run(agent, "q1")
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "step one"
    assert texts(events) == "Answer."
    assert result.reasoning == "step one"
    events, result = await run(agent, "q2")
    assert "".join(e.text for e in events if isinstance(e, ReasoningDelta)) == "other way"
    assert texts(events) == "Second."


async def test_tool_call_deltas_accumulate_by_index(upstream, make_agent):
    upstream.enqueue(
        tool_reply([call("echo", {"text": "a b c"}, id="c1"), call("echo", {"text": "zz"}, id="c2")], arg_pieces=4),
        text_reply("done"),
    )
    events, result = await run(make_agent(), "go")
    generating = [e for e in events if isinstance(e, ToolCallGenerating)]
    assert [(g.call_id, g.name, g.index) for g in generating] == [("c1", "echo", 0), ("c2", "echo", 1)]
    completed = [e for e in events if isinstance(e, ToolCompleted)]
    assert [c.result for c in completed] == ["echo:a b c", "echo:zz"]
    assistant = result.messages[1]
    assert [tc["function"]["arguments"] for tc in assistant["tool_calls"]] == ['{"text": "a b c"}', '{"text": "zz"}']
    # The second request replays the assistant tool calls and both results in call order.
    replay = upstream.requests[1].messages
    assert [m["role"] for m in replay[-3:]] == ["assistant", "tool", "tool"]
    assert [m["tool_call_id"] for m in replay[-2:]] == ["c1", "c2"]


async def test_new_id_at_used_index_opens_a_new_slot_and_names_are_assigned(upstream, make_agent):
    def tc(**kw):
        return Chunk(delta={"tool_calls": [kw]})

    upstream.enqueue(
        Reply(
            [
                tc(index=0, id="first", type="function", function={"name": "echo", "arguments": '{"text":'}),
                tc(index=0, function={"name": "echo", "arguments": ' "one"}'}),  # name resent whole
                tc(index=0, id="second", type="function", function={"name": "echo", "arguments": '{"text": "two"}'}),
                Chunk(delta={}, finish_reason="tool_calls"),
            ]
        ),
        text_reply("ok"),
    )
    events, result = await run(make_agent(), "go")
    calls = result.messages[1]["tool_calls"]
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls] == [
        ("first", "echo", '{"text": "one"}'),
        ("second", "echo", '{"text": "two"}'),
    ]
    assert [e.result for e in events if isinstance(e, ToolCompleted)] == ["echo:one", "echo:two"]


async def test_text_before_tools_is_a_closed_segment(upstream, make_agent):
    upstream.enqueue(tool_reply([call("echo", {"text": "x"})], text="Let me look."), text_reply("Found it."))
    events, result = await run(make_agent(), "go")
    kinds = [e.type for e in events]
    seg = kinds.index("segment.end")
    assert kinds.index("tool.started") > seg
    assert all(k != "text.delta" for k in kinds[seg : kinds.index("tool.completed")])
    assert result.messages[1]["content"] == "Let me look."
    assert result.final_text == "Found it."
    assert isinstance(events[seg], SegmentEnd)
    assert any(isinstance(e, ToolStarted) and e.preview for e in events)


async def test_usage_is_summed_over_every_model_call(upstream, make_agent):
    upstream.enqueue(tool_reply([call("echo")], usage=(100, 7)), text_reply("ok", usage=(150, 9)))
    _, result = await run(make_agent(), "go")
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.total_tokens) == (250, 16, 266)
    assert result.api_calls == 2


async def test_stream_options_dropped_once_when_the_upstream_rejects_them(upstream, make_agent):
    upstream.reject_stream_options = True
    upstream.enqueue(text_reply("first", usage=None), text_reply("second", usage=None))
    agent = make_agent()
    _, result = await run(agent, "q1")
    assert result.final_text == "first"
    _, result = await run(agent, "q2")
    assert result.final_text == "second"
    with_options = ["stream_options" in r.body for r in upstream.requests]
    assert with_options == [True, False, False]


async def test_streaming_unsupported_switches_to_non_streaming(upstream, make_agent):
    upstream.streaming_unsupported = True
    upstream.enqueue(tool_reply([call("echo", {"text": "q"})]), text_reply("whole answer"))
    events, result = await run(make_agent(), "go")
    assert result.status == "completed"
    assert result.final_text == "whole answer"
    assert [bool(r.body.get("stream")) for r in upstream.requests] == [True, False, False]
    assert any(e.type == "status" and e.kind == "streaming_disabled" for e in events)
    assert [e.result for e in events if isinstance(e, ToolCompleted)] == ["echo:q"]


async def test_finish_reason_length_is_partial_output_truncated(upstream, make_agent):
    upstream.enqueue(text_reply("a long answer that was cut", finish_reason="length"))
    _, result = await run(make_agent(), "go")
    assert result.status == "partial"
    assert result.error_code == "output_truncated"
    assert result.final_text == "a long answer that was cut"


async def test_truncated_tool_call_is_not_executed(upstream, make_agent):
    upstream.enqueue(tool_reply([call("risky", {"command": "x"})], finish_reason="length"))
    events, result = await run(make_agent(), "go")
    assert not any(isinstance(e, ToolStarted) for e in events)
    assert result.status == "partial" and result.error_code == "output_truncated"


async def test_turns_continue_the_stored_history(upstream, make_agent, store):
    upstream.enqueue(text_reply("I am hermes."), text_reply("You asked who I am."))
    agent = make_agent()
    _, first = await run(agent, "who are you?")
    from hermes.agent.types import TurnRequest

    _, second = await run(agent, TurnRequest(input="what did I ask?", session_id=first.session_id))
    assert second.session_id == first.session_id
    sent = upstream.requests[1].messages
    assert [m["role"] for m in sent] == ["system", "user", "assistant", "user"]
    assert sent[1]["content"] == "who are you?" and sent[2]["content"] == "I am hermes."
    # The stored system prompt is reused byte for byte (prompt caching).
    assert sent[0] == upstream.requests[0].messages[0]
    assert store.get_session(first.session_id).message_count == 4


async def test_max_iterations_then_one_toolless_summary_call(upstream, make_agent, fast_options):
    upstream.default = tool_reply([call("echo", {"text": "again"})])
    upstream.enqueue(tool_reply([call("echo")]), tool_reply([call("echo")]))
    upstream.enqueue(text_reply("Summary: looped."))
    agent = make_agent(opts=dataclasses.replace(fast_options, max_iterations=2))
    events, result = await run(agent, "loop forever")
    assert len(upstream.requests) == 3
    assert "tools" in upstream.requests[1].body
    last = upstream.requests[2].body
    assert "tools" not in last
    assert last["messages"][-1]["role"] == "user" and "Do not call any more tools" in last["messages"][-1]["content"]
    assert result.final_text == "Summary: looped."
    assert result.status == "partial" and result.error_code == "max_iterations"
    assert any(e.type == "status" and e.kind == "max_iterations" for e in events)


async def test_a_plain_turn_writes_the_store_in_two_commits(upstream, make_agent, store):
    # Opening (session, turn row, user message); ending (the answer, turn end, usage, session end).
    commits = []
    store.executor.connection().set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
    upstream.enqueue(text_reply("Hello there."))
    _, result = await run(make_agent(), "hi")
    assert result.status == "completed"
    assert len(commits) == 2
    session = store.get_session(result.session_id)
    assert (session.message_count, session.end_reason, session.input_tokens) == (2, "completed", 10)


async def test_the_conversation_mark_is_written_with_the_turns_end(upstream, make_agent, store):
    from hermes.agent.types import TurnRequest

    commits = []
    store.executor.connection().set_trace_callback(lambda sql: commits.append(sql) if sql == "COMMIT" else None)
    upstream.enqueue(text_reply("Hello there."), Reply(status=400, error={"error": {"message": "bad request"}}))
    asked = []

    def mark(result):
        asked.append((result.status, result.final_text, [m["role"] for m in result.messages]))
        return "fp:" + result.final_text

    _, result = await run(make_agent(), TurnRequest(input="hi", conversation_mark=mark))
    assert asked == [("completed", "Hello there.", ["user", "assistant"])]
    assert result.conversation_mark == "fp:Hello there." and len(commits) == 2
    found = await store.sessions.find_conversation(["fp:Hello there."])
    answer = store.get_messages(result.session_id)[-1]
    assert found is not None and (found.session_id, found.message_id, found.latest) == (
        result.session_id, answer.id, True,
    )  # fmt: skip
    # A turn that fails still marks where the conversation stands (its input).
    _, failed = await run(
        make_agent(), TurnRequest(input="again", session_id=result.session_id, conversation_mark=lambda r: "fp:failed")
    )
    assert (failed.status, failed.conversation_mark) == ("failed", "fp:failed")
    again = await store.sessions.find_conversation(["fp:failed"])
    assert again is not None and again.message_id == store.get_messages(result.session_id)[-1].id
    # Without a persisted turn nothing is marked.
    upstream.enqueue(text_reply("Off the record."))
    _, unsaved = await run(make_agent(), TurnRequest(input="hi", persist=False, conversation_mark=mark))
    assert unsaved.conversation_mark is None and len(asked) == 1


async def test_the_same_tool_call_three_times_ends_the_turn_with_a_summary(upstream, make_agent, fast_options):
    upstream.enqueue(
        tool_reply([call("echo", {"text": "same"})]),
        tool_reply([call("echo", {"text": "other"})]),  # another call in between starts the count again
        tool_reply([call("echo", {"text": "same"})]),
        tool_reply([call("echo", {"text": "same"})]),
        tool_reply([call("echo", {"text": "same"}, id="call_third")]),
        text_reply("Done: echo said same."),
    )
    events, result = await run(make_agent(opts=dataclasses.replace(fast_options, max_iterations=20)), "echo it")

    assert len(upstream.requests) == 6
    last = upstream.requests[5].body
    assert "tools" not in last and "same arguments 3 times" in last["messages"][-1]["content"]
    assert "call_third" not in str(last["messages"])  # the repeated call was neither run nor kept
    assert [e.type for e in events].count("tool.completed") == 4
    assert result.status == "completed" and result.final_text == "Done: echo said same."
    assert any(e.type == "status" and e.kind == "repeated_tool_call" for e in events)

"""Upstream failures: retries, backoff, auth, stalls and the mid-tool-call warning."""

from __future__ import annotations

import asyncio
import dataclasses
import json

from hermes.agent.events import Retrying, StreamStalled, TextDelta, ToolStarted
from hermes.agent.types import TurnRequest
from hermes.testing.turns import collect_turn as run
from hermes.testing.turns import text_of
from hermes.testing.upstream import Drop, Reply, Stall, call, error_reply, text_reply, tool_reply

WARNING_TAIL = "the action was not executed. Ask me to retry if you want to continue."


async def test_dropped_connection_before_any_output_is_retried(upstream, make_agent):
    upstream.enqueue(Reply([Drop()]), Reply([Drop()]), text_reply("third time lucky"))
    events, result = await run(make_agent(), "go")
    assert result.status == "completed" and result.final_text == "third time lucky"
    retries = [e for e in events if isinstance(e, Retrying)]
    assert [(r.attempt, r.max_attempts) for r in retries] == [(2, 3), (3, 3)]
    assert len(upstream.requests) == 3


async def test_retries_are_bounded_then_the_turn_fails(upstream, make_agent):
    upstream.enqueue(Reply([Drop()]), Reply([Drop()]), Reply([Drop()]), text_reply("never requested"))
    _, result = await run(make_agent(), "go")
    assert result.status == "failed"
    assert result.error_code == "provider_unreachable"
    assert "3 attempts" in result.error
    assert len(upstream.requests) == 3


async def test_stream_retries_setting_controls_attempts(upstream, make_agent, fast_options):
    upstream.enqueue(Reply([Drop()]), text_reply("unused"))
    agent = make_agent(opts=dataclasses.replace(fast_options, stream_retries=0))
    _, result = await run(agent, "go")
    assert result.status == "failed"
    assert len(upstream.requests) == 1


async def test_server_errors_are_retried_honouring_retry_after(upstream, make_agent):
    upstream.enqueue(error_reply(503, "overloaded", retry_after=0.3), text_reply("recovered"))
    events, result = await run(make_agent(), "go")
    assert result.final_text == "recovered"
    # A lower bound on the upstream's own clock: load can only lengthen the gap, never fail it.
    assert upstream.requests[1].started - upstream.requests[0].started >= 0.3
    (retry,) = [e for e in events if isinstance(e, Retrying)]
    assert retry.delay == 0.3 and "503" in retry.reason


async def test_rate_limit_is_retried(upstream, make_agent):
    upstream.enqueue(error_reply(429, "slow down", type="rate_limit_error"), text_reply("ok"))
    _, result = await run(make_agent(), "go")
    assert result.status == "completed"
    assert len(upstream.requests) == 2


async def test_auth_failure_fails_at_once(upstream, make_agent):
    upstream.enqueue(error_reply(401, "bad key", type="invalid_request_error"), text_reply("unused"))
    _, result = await run(make_agent(), "go")
    assert result.status == "failed"
    assert result.error_code == "authentication_failed"
    assert "authentication failed" in result.error
    assert len(upstream.requests) == 1


async def test_other_client_errors_fail_at_once(upstream, make_agent):
    upstream.enqueue(error_reply(400, "context too long", type="invalid_request_error"), text_reply("unused"))
    _, result = await run(make_agent(), "go")
    assert result.status == "failed" and "context too long" in result.error
    assert len(upstream.requests) == 1


async def test_unreachable_upstream_fails_with_a_clear_error(make_agent, upstream):
    await upstream.stop()
    _, result = await run(make_agent(), "go")
    assert result.status == "failed"
    assert result.error_code == "provider_unreachable"
    assert "cannot reach the model endpoint" in result.error


async def test_stall_before_any_output_is_retried(upstream, make_agent, fast_options):
    upstream.enqueue(Reply([Stall()]), text_reply("fresh answer"))
    agent = make_agent(opts=dataclasses.replace(fast_options, stale_timeout=0.3))
    events, result = await run(agent, "go")
    assert result.final_text == "fresh answer"
    await asyncio.wait_for(upstream.requests[0].finished.wait(), 2)
    assert upstream.requests[0].client_disconnected  # the stalled request was closed
    assert any(isinstance(e, Retrying) and "no response" in e.reason for e in events)


async def test_stall_mid_tool_call_warns_and_does_not_execute(upstream, make_agent, fast_options):
    reply = tool_reply(
        [call("risky", {"command": "rm -r build", "extra": "x" * 50})], text="Let me clean up: ", arg_pieces=4
    )
    # text (3 words) + tool header + 1 argument fragment, then silence
    upstream.enqueue(reply.stall_after(5))
    agent = make_agent(opts=dataclasses.replace(fast_options, stale_timeout=0.3))
    events, result = await run(agent, "go")
    expected = f"⚠ Stream stalled mid tool-call (risky); {WARNING_TAIL}"
    assert result.status == "partial"
    assert not any(isinstance(e, ToolStarted) for e in events)
    (stalled,) = [e for e in events if isinstance(e, StreamStalled)]
    assert stalled.tool_names == ("risky",) and stalled.message == expected
    assert text_of(events).startswith("Let me clean up: ")
    assert text_of(events).endswith(expected)  # delivered live as text too
    assert result.final_text == text_of(events)
    assert result.messages[-1] == {"role": "assistant", "content": result.final_text}
    assert len(upstream.requests) == 1  # text was delivered: never retried


async def test_stall_warning_names_at_most_three_tools(upstream, make_agent, fast_options):
    calls = [call(name, {"text": "y" * 40}) for name in ("echo", "nap", "big", "risky", "fail")]
    reply = tool_reply(calls, text="Working: ", arg_pieces=2)
    steps = [s for s in reply.steps if getattr(s, "finish_reason", None) is None and getattr(s, "usage", None) is None]
    # keep every header and only the first argument fragment of each call
    kept = [
        s
        for s in steps
        if not (
            s.delta
            and s.delta.get("tool_calls")
            and s.delta["tool_calls"][0]["function"].get("arguments", "").endswith("}")
        )
    ]
    upstream.enqueue(Reply(kept + [Stall()]))
    agent = make_agent(opts=dataclasses.replace(fast_options, stale_timeout=0.3))
    events, result = await run(agent, "go")
    (stalled,) = [e for e in events if isinstance(e, StreamStalled)]
    assert stalled.message.startswith("⚠ Stream stalled mid tool-call (echo, nap, big, +2 more); ")
    assert result.status == "partial"


async def test_text_only_stall_keeps_text_without_warning(upstream, make_agent, fast_options):
    upstream.enqueue(text_reply("Here is my answer so far and more", pieces=6).stall_after(3))
    agent = make_agent(opts=dataclasses.replace(fast_options, stale_timeout=0.3))
    events, result = await run(agent, "go")
    assert result.status == "partial"
    assert result.final_text == text_of(events) == "Here is my answer "
    assert "Stream stalled" not in result.final_text
    assert not any(isinstance(e, StreamStalled) for e in events)
    assert len(upstream.requests) == 1


async def test_connection_drop_after_text_is_partial_not_retried(upstream, make_agent):
    upstream.enqueue(text_reply("one two three four").drop_after(2), text_reply("unused"))
    events, result = await run(make_agent(), "go")
    assert result.status == "partial"
    assert result.final_text == "one two "
    assert len(upstream.requests) == 1
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["one ", "two "]


async def test_failed_turn_keeps_the_user_message_in_the_session(upstream, make_agent, store):
    upstream.enqueue(error_reply(400, "nope"))
    _, result = await run(make_agent(), TurnRequest(input="remember me"))
    messages = store.get_messages(result.session_id)
    assert [(m.role, m.content) for m in messages] == [("user", "remember me")]
    assert store.get_session(result.session_id).end_reason == "failed"


def _sse_error(message: str) -> Reply:
    from hermes.testing.upstream import Raw

    payload = json.dumps({"error": {"message": message, "type": "server_error"}})
    return Reply([Raw(f"data: {payload}\n\n".encode())])


async def test_sse_connection_lost_error_is_retried_as_transient(upstream, make_agent):
    upstream.enqueue(_sse_error("upstream connect error or disconnect/reset before headers"), text_reply("back"))
    events, result = await run(make_agent(), "go")
    assert result.final_text == "back"
    assert len(upstream.requests) == 2
    assert any(isinstance(e, Retrying) for e in events)


async def test_sse_other_error_fails_at_once(upstream, make_agent):
    upstream.enqueue(_sse_error("invalid tool schema for function x"), text_reply("unused"))
    _, result = await run(make_agent(), "go")
    assert result.status == "failed" and "invalid tool schema" in result.error
    assert len(upstream.requests) == 1


async def test_malformed_stream_data_is_retried_then_reported(upstream, make_agent):
    from hermes.testing.upstream import Raw

    garbage = Reply([Raw(b"data: {not json\n\n")])
    upstream.enqueue(garbage, garbage, garbage)
    _, result = await run(make_agent(), "go")
    assert result.status == "failed" and "malformed streaming data" in result.error
    assert len(upstream.requests) == 3


async def test_keepalive_comments_and_event_lines_are_ignored(upstream, make_agent):
    from hermes.testing.upstream import Chunk, Raw

    upstream.enqueue(
        Reply(
            [
                Raw(b": keepalive\n\n"),
                Chunk(delta={"content": "hi"}),
                Raw(b"event: ping\ndata: {}\n\n"),
                Chunk(delta={}, finish_reason="stop"),
            ]
        )
    )
    _, result = await run(make_agent(), "go")
    assert result.status == "completed" and result.final_text == "hi"

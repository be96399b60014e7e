"""Real turns: the app from make_app, the real engine, the scripted upstream on loopback."""

from __future__ import annotations

from hermes.error_codes import INTERRUPTED, STREAM_STALLED
from hermes.testing.upstream import Sleep, call, error_reply, text_reply, tool_reply
from hermes.tui import app as tui_app
from hermes.tui import turn_controller
from hermes.tui.widgets.activity import Activity
from hermes.tui.widgets.assistant_message import AssistantMessage
from hermes.tui.widgets.notice import Notice
from hermes.tui.widgets.tool_card import ToolCard
from hermes.tui.widgets.user_message import UserMessage

from .conftest import send_turn, type_and_send, until, until_settled


async def test_prompt_streams_into_transcript(make_tui, upstream, store):
    upstream.enqueue(text_reply("Hello from **hermes**, nice to meet you.", chunk_delay=0.01))
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "hi there")
        await until(pilot, lambda: app.chat.query(AssistantMessage))
        await app.workers.wait_for_complete()
        answer = app.chat.transcript.query_one(AssistantMessage)
        await until(pilot, lambda: answer.rendered_text == "Hello from **hermes**, nice to meet you.")
        await until_settled(pilot)
        assert answer.rendered_text == "Hello from **hermes**, nice to meet you."
        assert app.chat.transcript.query_one(UserMessage).text == "hi there"
        assert app.chat.chat_input.text == ""
        assert not app.chat.turns.turn_running
        assert app.session_id is not None
        record = store.get_session(app.session_id)
        assert record.source == "tui"
        assert app.chat.status_bar.input_tokens == 10 and app.chat.status_bar.output_tokens == 5
    assert upstream.requests[0].messages[-1] == {"role": "user", "content": "hi there"}


async def test_tool_card_goes_generating_running_done(make_tui, upstream, gates):
    upstream.enqueue(
        tool_reply(
            [call("shell", {"command": "make test", "gate": "tests"})], text="Running the tests.", chunk_delay=0.02
        ),
        text_reply("All green."),
    )
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "test it")
        await until(pilot, lambda: app.chat.query(ToolCard))
        card = app.chat.transcript.query_one(ToolCard)
        await until(pilot, lambda: card.state == "running")
        assert "make test" in card.header_text
        # tool_stall_warning is 0.3 s in these tests; the tool runs until the test opens its gate
        await until(pilot, lambda: card.has_class("-slow"))
        assert card.state == "running"
        assert "still running after 0.3 s — Esc to interrupt" in str(card._warning.render())
        gates["tests"].set()
        await until(pilot, lambda: len(app.chat.transcript.query(AssistantMessage)) == 2)
        await app.workers.wait_for_complete()
        await until_settled(pilot)
        assert card.states == ["generating", "running", "done"]
        assert card.header_text.startswith("✓ shell")
        assert not card.has_class("-slow")
        assert "ran: make test" in card.result
        answers = [m.text for m in app.chat.transcript.query(AssistantMessage)]
        assert answers == ["Running the tests.", "All green."]


async def test_stream_stall_mid_tool_call_shows_warning_card(make_tui, upstream, settings):
    # 4 text chunks, the tool call's name, 1 of 6 argument fragments, then silence.
    reply = tool_reply(
        [call("write_file", {"path": "big.txt", "content": "x" * 400})], text="Writing the file now.", arg_pieces=6
    )
    upstream.enqueue(reply.stall_after(6))
    # the stall is detected after 1 s of silence: long enough that a loaded machine's
    # scheduling gaps between the scripted chunks are not mistaken for it
    app = make_tui(settings=settings.replace(stream_stale_timeout=1.0))
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "write a big file")
        await until(pilot, lambda: app.chat.query(ToolCard))
        await app.workers.wait_for_complete()
        await until_settled(pilot)
        warnings = [n.text for n in app.chat.transcript.query(Notice) if n.kind == "warning"]
        assert any("write_file" in w and "stalled" in w.lower() for w in warnings), warnings
        # shown once: no "⚠ partial answer: ⚠ Stream stalled…" repeating it
        assert len(warnings) == 1, warnings
        assert app.chat.turns.last_result is not None and app.chat.turns.last_result.error_code == STREAM_STALLED
        card = app.chat.transcript.query_one(ToolCard)
        assert card.state == "stalled"
        # the ⚠ line (also sent as text) is shown once, as the card, not inside the answer
        assert [m.text for m in app.chat.transcript.query(AssistantMessage)] == ["Writing the file now."]


async def test_escape_interrupts_and_the_engine_winds_down(make_tui, upstream, store, monkeypatch):
    # With the UI's grace timer out of reach, only the engine's own wind-down can end the turn.
    monkeypatch.setattr(turn_controller, "INTERRUPT_GRACE", 600.0)
    words = " ".join(f"word{i}" for i in range(400))
    upstream.enqueue(text_reply(words, chunk_delay=0.02))
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "talk a lot")
        # a generous wait: on a loaded CI machine the first words once took over 10 s to arrive;
        # the stream (8 s of words once it starts) still runs long after they do
        await until(
            pilot,
            lambda: app.chat.query(AssistantMessage) and len(app.chat.transcript.query_one(AssistantMessage).text) > 20,
            timeout=60,
        )
        await pilot.press("escape")
        await until(pilot, lambda: not app.chat.turns.turn_running)
        await app.workers.wait_for_complete()
        await until_settled(pilot)
        await until(pilot, lambda: upstream.requests[0].client_disconnected)
        answer = app.chat.transcript.query_one(AssistantMessage)
        assert answer.text.startswith("word0 word1")
        assert len(answer.text) < len(words)
        assert answer.has_class("-interrupted")
        assert any(n.kind == "interrupted" for n in app.chat.transcript.query(Notice))
        assert not app.chat.query_one(Activity).has_class("-active")
        # the product's promise: the engine itself ends the turn within the UI's grace (a
        # turn the grace timer declares interrupted has no engine result)
        assert app.chat.turns.last_result is not None and app.chat.turns.last_result.status == "interrupted"
        assert app.chat.turns.last_result.error_code == INTERRUPTED
    assert upstream.requests[0].client_disconnected


async def test_escape_while_a_tool_runs_completes_its_card_as_interrupted(make_tui, upstream, gates, store):
    upstream.enqueue(tool_reply([call("shell", {"command": "make test", "gate": "never"})], text="Running."))
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "test it")
        await until(
            pilot, lambda: app.chat.query(ToolCard) and app.chat.transcript.query_one(ToolCard).state == "running"
        )
        await pilot.press("escape")
        await until(pilot, lambda: not app.chat.turns.turn_running)
        await app.workers.wait_for_complete()
        await until_settled(pilot)
        # the engine's own final events arrived (not the UI's grace timer)
        assert app.chat.turns.last_result is not None and app.chat.turns.last_result.status == "interrupted"
        assert app.chat.transcript.query_one(ToolCard).state != "running"
        session_id = app.chat.turns.last_result.session_id
    tool_rows = [m for m in store.get_messages(session_id) if m.role == "tool"]
    assert len(tool_rows) == 1 and "interrupted" in tool_rows[0].content


async def test_ctrl_c_interrupts_then_twice_quits(make_tui, upstream):
    upstream.enqueue(text_reply(" ".join(["slow"] * 300), chunk_delay=0.02))
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "go")
        await until(pilot, lambda: app.chat.query(AssistantMessage))
        await pilot.press("ctrl+c")
        await until(pilot, lambda: not app.chat.turns.turn_running)
        assert app.is_running
        await pilot.press("ctrl+c")
        await until(pilot, lambda: not app.is_running)
    assert app.return_code == 0


async def test_silent_upstream_says_waiting_for_the_model(make_tui, upstream, settings):
    reply = text_reply("finally")
    reply.steps.insert(0, Sleep(2.0))  # 10x the 0.2 s silence warning
    upstream.enqueue(reply)
    # the stale-stream watchdog (2 s in the fixture) must not fire during that silence
    app = make_tui(silence_warning=0.2, settings=settings.replace(stream_stale_timeout=10.0))
    async with app.run_test(size=(100, 30)) as pilot:
        await type_and_send(pilot, "hello?")
        activity = app.chat.query_one(Activity)
        await until(pilot, lambda: "waiting for the model (" in str(activity.render()))
        await until(pilot, lambda: app.chat.query(AssistantMessage))
        await app.workers.wait_for_complete()
        await until_settled(pilot)
        assert app.chat.transcript.query_one(AssistantMessage).text == "finally"
        assert not activity.has_class("-active")


async def test_retry_shows_reconnecting(make_tui, upstream):
    upstream.enqueue(error_reply(503, "overloaded"), text_reply("back again"))
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        await send_turn(pilot, "hello")
        await until_settled(pilot)
        notices = [n.text for n in app.chat.transcript.query(Notice)]
        assert any(t.startswith("↻ reconnecting (2/3)") for t in notices), notices
        assert app.chat.transcript.query_one(AssistantMessage).text == "back again"


async def test_the_activity_line_shows_the_local_models_tokens_per_second(
    upstream, settings, sessions, tmp_path, gates
):
    # The local provider's metering (MeteredProvider) over a slow real stream: the waiting
    # line names the rate while the answer is generated.
    from hermes.agent.factory import build_agent
    from hermes.agent.providers.metered import MeteredProvider
    from hermes.agent.providers.openai_compat import OpenAICompatProvider

    from .conftest import test_tools

    upstream.enqueue(text_reply(" ".join(["tok"] * 60), chunk_delay=0.05))
    provider = MeteredProvider(OpenAICompatProvider(base_url=upstream.base_url, api_key="x"), interval=0.1)
    agent = build_agent(settings, sessions, provider=provider, tools=test_tools(gates))
    app = tui_app.make_app(agent, sessions, settings, cwd=str(tmp_path))
    try:
        async with app.run_test(size=(100, 30)) as pilot:
            await type_and_send(pilot, "count")
            activity = app.chat.query_one(Activity)
            await until(pilot, lambda: "tokens/s" in str(activity.render()))
            assert "answering (" in str(activity.render())
            await app.workers.wait_for_complete()
            await until_settled(pilot)
            assert not activity.has_class("-active")
    finally:
        await agent.aclose()

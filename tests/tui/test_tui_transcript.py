"""The transcript fed with engine events directly (no turn): streaming text, reasoning, notices."""

from __future__ import annotations

from hermes.agent.events import (
    ReasoningDelta,
    Retrying,
    SegmentEnd,
    Status,
    StreamStalled,
    TextDelta,
    ToolCallGenerating,
    TurnCompleted,
    TurnStarted,
)
from hermes.agent.types import TurnResult, Usage
from hermes.tui.widgets.assistant_message import AssistantMessage
from hermes.tui.widgets.notice import Notice
from hermes.tui.widgets.reasoning_block import ReasoningBlock
from hermes.tui.widgets.tool_card import ToolCard
from hermes.tui.widgets.user_message import UserMessage

from .conftest import until, until_settled


def block_kinds(message: AssistantMessage) -> set[str]:
    return {type(block).__name__ for chunk in message.chunks for block in chunk.children}


async def test_streamed_text_renders_as_markdown(make_tui):
    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        renderer = app.chat.turns.begin_turn("show me")
        renderer.handle(TurnStarted(session_id="s1", model="scripted-model"))
        answer = "# Title\n\nSome **bold** text.\n\n```python\nprint('hé')\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n"
        for ch in answer:
            renderer.handle(TextDelta(ch))
        renderer.handle(TurnCompleted(TurnResult("s1", "completed", answer, usage=Usage(12, 34, 46), api_calls=1)))
        expected = {"MarkdownH1", "MarkdownParagraph", "MarkdownFence", "MarkdownTable"}
        message = app.chat.transcript.query_one(AssistantMessage)
        await until(pilot, lambda: message.rendered_text == answer and expected <= block_kinds(message))
        await until_settled(pilot)
        assert message.rendered_text == answer
        assert expected <= block_kinds(message)
        assert app.chat.transcript.query_one(UserMessage).text == "show me"
        assert app.chat.status_bar.input_tokens == 12 and app.chat.status_bar.output_tokens == 34
        assert not app.chat.turns.turn_running


async def test_reasoning_is_a_separate_block(make_tui):
    app = make_tui()
    async with app.run_test() as pilot:
        renderer = app.chat.turns.begin_turn("think")
        renderer.handle(ReasoningDelta("let me "))
        renderer.handle(ReasoningDelta("think"))
        renderer.handle(TextDelta("The answer."))
        renderer.handle(TurnCompleted(TurnResult("s1", "completed", "The answer.")))
        await until_settled(pilot)  # the block is mounted before Ctrl+R toggles it
        block = app.chat.transcript.query_one(ReasoningBlock)
        assert block.text == "let me think"
        assert block.collapsed
        assert app.chat.transcript.query_one(AssistantMessage).text == "The answer."
        await pilot.press("ctrl+r")
        assert not block.display
        await pilot.press("ctrl+r")
        assert block.display


async def test_segments_tools_and_warnings(make_tui):
    app = make_tui()
    async with app.run_test() as pilot:
        renderer = app.chat.turns.begin_turn("write it")
        renderer.handle(TextDelta("Writing the file."))
        renderer.handle(SegmentEnd())
        renderer.handle(ToolCallGenerating("c1", "write_file", 0))
        warning = "⚠ Stream stalled mid tool-call (write_file); the action was not executed."
        renderer.handle(StreamStalled(("write_file",), warning))
        renderer.handle(TextDelta("\n\n" + warning))
        renderer.handle(Retrying(2, 3, "connection reset", 0.5))
        renderer.handle(Status("info", "streaming disabled"))
        renderer.handle(TurnCompleted(TurnResult("s1", "partial", "Writing the file.", error_code="stream_stalled")))
        await until_settled(pilot)
        card = app.chat.transcript.query_one(ToolCard)
        assert card.state == "stalled"
        texts = [n.text for n in app.chat.transcript.query(Notice)]
        assert any("Stream stalled" in t and "write_file" in t for t in texts)
        assert "reconnecting (2/3) — connection reset" in " ".join(texts)
        # the ⚠ line is a card, not part of the answer
        assert "Stream stalled" not in app.chat.transcript.query_one(AssistantMessage).text


async def test_interrupted_turn_keeps_partial_text(make_tui):
    app = make_tui()
    async with app.run_test() as pilot:
        renderer = app.chat.turns.begin_turn("long")
        renderer.handle(TextDelta("partial answ"))
        renderer.handle(TurnCompleted(TurnResult("s1", "interrupted", "partial answ")))
        await until_settled(pilot)
        message = app.chat.transcript.query_one(AssistantMessage)
        assert message.text == "partial answ"
        assert message.has_class("-interrupted")
        assert any(n.kind == "interrupted" for n in app.chat.transcript.query(Notice))


async def test_long_answer_streams_into_chunks_without_splitting_code(make_tui):
    app = make_tui()
    paragraph = "word " * 60 + "\n\n"
    fence = "```python\n" + "x = 1\n\n" * 40 + "```\n\n"
    answer = paragraph * 10 + fence + paragraph * 10
    async with app.run_test(size=(100, 30)) as pilot:
        renderer = app.chat.turns.begin_turn("long")
        for i in range(0, len(answer), 7):
            renderer.handle(TextDelta(answer[i : i + 7]))
        renderer.handle(TurnCompleted(TurnResult("s1", "completed", answer)))
        message = app.chat.transcript.query_one(AssistantMessage)
        await until(pilot, lambda: message.rendered_text == answer)
        await until_settled(pilot)  # the last append has finished mounting its blocks
        assert message.rendered_text == answer
        chunks = message.chunks
        assert len(chunks) > 2
        fences = [block for chunk in chunks for block in chunk.children if type(block).__name__ == "MarkdownFence"]
        assert len(fences) == 1  # the blank lines inside the fence never split it


async def test_subagent_tool_lines_nest_in_the_task_card(make_tui):
    from hermes.agent.events import ToolCompleted, ToolStarted

    app = make_tui()
    async with app.run_test(size=(100, 30)) as pilot:
        renderer = app.chat.turns.begin_turn("delegate")
        renderer.handle(TurnStarted(session_id="s1", model="scripted-model"))
        renderer.handle(ToolStarted("t1", "task", {"description": "look"}, "look"))
        await until_settled(pilot)
        renderer.handle(ToolStarted("t1/r1", "read_file", {"path": "a.py"}, "a.py", parent_call_id="t1"))
        renderer.handle(ToolCompleted("t1/r1", "read_file", "1|x", 0.01, False, parent_call_id="t1"))
        renderer.handle(ToolCompleted("t1", "task", "all good", 0.5, False))
        renderer.handle(TurnCompleted(TurnResult("s1", "completed", "", api_calls=1)))
        await until_settled(pilot)
        cards = {card.call_id: card for card in app.chat.transcript.query(ToolCard)}
        assert set(cards) == {"t1", "t1/r1"}
        assert cards["t1/r1"].parent is cards["t1"] and cards["t1/r1"].state == "done"
        assert cards["t1"].state == "done"

"""The JSON-action adapter: parsing, request rewriting, and the provider over real HTTP.

No model needed: a scripted OpenAI-compatible upstream plays what a small model
would write, and the real OpenAICompatProvider streams it.
"""

from __future__ import annotations

import json
import random
from collections.abc import AsyncIterator
from typing import Any

import pytest

from hermes.agent.provider import FinishChunk, ModelRequest, TextChunk, ToolCallChunk, UsageChunk
from hermes.agent.providers.action_grammar import Action, ReplyStreamer, action_schema, parse_action, repeating_tail
from hermes.agent.providers.action_steering import fit_context, is_loop, rewrite_messages, turn_actions
from hermes.agent.providers.json_actions import JsonActionProvider
from hermes.agent.providers.openai_compat import OpenAICompatProvider
from hermes.testing.upstream import ScriptedUpstream, text_reply

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file. Returns numbered lines; use offset for long files.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "File to read."},
                    "offset": {"type": "integer", "default": 1},
                },
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "terminal",
            "description": "Run a shell command.",
            "parameters": {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
        },
    },
]
NAMES = {"read_file", "terminal"}


def action_json(name: str, args: dict[str, Any], *, indent: int | None = None) -> str:
    return json.dumps({"action": name, "args": args}, indent=indent)


# ---- parse_action ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "raw",
    [
        '{"action": "read_file", "args": {"path": "pyproject.toml"}}',
        '{\n  "action": "read_file",\n  "args": {\n    "path": "pyproject.toml"\n  }\n}',
        'I will read it.\n```json\n{"action": "read_file", "args": {"path": "pyproject.toml"}}\n```',
        '```\n{"name": "read_file", "arguments": {"path": "pyproject.toml"}}\n```',
        '<tool_call>\n{"name": "read_file", "arguments": "{\\"path\\": \\"pyproject.toml\\"}"}\n</tool_call>',
        'Sure: {"type": "function", "function": {"name": "read_file", "parameters": {"path": "pyproject.toml"}}}',
    ],
)
def test_parse_action_reads_a_tool_call_in_every_shape_small_models_write(raw: str) -> None:
    assert parse_action(raw, NAMES) == Action("read_file", {"path": "pyproject.toml"})


def test_parse_action_reply_and_plain_text() -> None:
    assert parse_action('{"action": "reply", "args": {"text": "Hi!"}}', NAMES) == Action("reply", {"text": "Hi!"})
    assert parse_action("Hello there.", NAMES) == Action("reply", {"text": "Hello there."})


def test_json_naming_an_unknown_tool_stays_text() -> None:
    raw = 'Example config:\n```json\n{"name": "deploy", "arguments": {}}\n```'
    assert parse_action(raw, NAMES) == Action("reply", {"text": raw})


# ---- ReplyStreamer --------------------------------------------------------------------


@pytest.mark.parametrize("text", ['He said "hi"\n\tC:\\path', "emoji 😀, accents é, CJK 漢字", ""])
@pytest.mark.parametrize("ascii_only", [True, False])
def test_reply_text_is_decoded_incrementally_across_any_chunking(text: str, ascii_only: bool) -> None:
    raw = json.dumps({"action": "reply", "args": {"text": text}}, ensure_ascii=ascii_only, indent=2)
    rng = random.Random(7)
    for _ in range(50):
        streamer, out, i = ReplyStreamer(), "", 0
        while i < len(raw):
            step = rng.randint(1, 5)
            out += streamer.feed(raw[i : i + step])
            i += step
        assert out == text
        assert streamer.done


def test_reply_streams_before_the_object_is_complete() -> None:
    streamer = ReplyStreamer()
    assert streamer.feed('{"action": "reply", "args": {"text": "Hel') == "Hel"
    assert streamer.feed('lo') == "lo"
    assert not streamer.done


def test_tool_actions_are_not_streamed_as_text() -> None:
    streamer = ReplyStreamer()
    assert streamer.feed(action_json("read_file", {"path": "a"})) == ""
    assert not streamer.streamed and streamer.text == ""


# ---- request rewriting ----------------------------------------------------------------


def transcript() -> list[dict[str, Any]]:
    return [
        {"role": "system", "content": "You are hermes.\nWorking directory: /w"},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "Hello!"},
        {"role": "user", "content": "read pyproject.toml"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "pyproject.toml"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": 'version = "1.2.3"\n' + "x" * 9000},
    ]


def test_rewrite_folds_tools_into_a_compact_prompt_and_plain_messages() -> None:
    out = rewrite_messages(transcript(), TOOLS, tool_result_limit=100)
    system = out[0]["content"]
    assert out[0]["role"] == "system" and system.startswith("You are hermes.\nWorking directory: /w")
    assert '- read_file {"path": string, "offset"?: integer}: Read a text file.' in system
    assert "- terminal" in system and "- reply" in system
    assert len(system) < 2000  # well under ~1,000 tokens
    assert [m["role"] for m in out] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert json.loads(out[2]["content"]) == {"action": "reply", "args": {"text": "Hello!"}}
    assert json.loads(out[4]["content"]) == {"action": "read_file", "args": {"path": "pyproject.toml"}}
    assert out[5]["content"].startswith('Result of read_file:\nversion = "1.2.3"')
    assert "more characters not shown" in out[5]["content"] and len(out[5]["content"]) < 400
    assert out[5]["content"].endswith(
        'Answer the request "read pyproject.toml" with reply if this result is enough; otherwise take the next step.'
    )
    assert all("tool_calls" not in m for m in out)


def test_rewrite_is_a_stable_prefix_from_step_to_step() -> None:
    """Prompt-cache reuse: the next step's prompt starts with the previous one's."""
    messages = transcript()
    step1 = rewrite_messages(messages[:4], TOOLS)
    step2 = rewrite_messages(messages, TOOLS)
    assert step2[: len(step1)] == step1


def test_a_long_system_prompt_is_replaced_by_the_short_one() -> None:
    messages = [{"role": "system", "content": "rules " * 1000}, {"role": "user", "content": "hi"}]
    system = rewrite_messages(messages, TOOLS)[0]["content"]
    assert "rules rules" not in system and "Hermes" in system


def test_action_schema_has_a_branch_per_tool_with_its_own_args() -> None:
    schema = action_schema(TOOLS)
    branches = {b["properties"]["action"]["const"]: b["properties"]["args"] for b in schema["anyOf"]}
    assert set(branches) == {"read_file", "terminal", "reply"}
    assert branches["read_file"]["required"] == ["path"]
    assert "description" not in json.dumps(branches)
    assert action_schema(TOOLS, reply_only=True)["properties"]["action"] == {"const": "reply"}


def test_loop_detection_same_action_and_args() -> None:
    messages = transcript()
    previous = turn_actions(messages)
    assert previous == [Action("read_file", {"path": "pyproject.toml"}).key()]
    assert is_loop(Action("read_file", {"path": "pyproject.toml"}), previous)
    assert not is_loop(Action("read_file", {"path": "README.md"}), previous)
    assert not is_loop(Action("reply", {"text": "x"}), previous)
    assert turn_actions([*messages, {"role": "user", "content": "again"}]) == []


# ---- the provider over HTTP -------------------------------------------------------------


@pytest.fixture
async def upstream() -> AsyncIterator[ScriptedUpstream]:
    async with ScriptedUpstream() as server:
        yield server


@pytest.fixture
async def provider(upstream: ScriptedUpstream) -> AsyncIterator[JsonActionProvider]:
    wrapped = JsonActionProvider(OpenAICompatProvider(base_url=upstream.base_url, api_key="k"))
    yield wrapped
    await wrapped.aclose()


def request(messages: list[dict[str, Any]] | None = None) -> ModelRequest:
    messages = messages or [{"role": "system", "content": "sys"}, {"role": "user", "content": "read pyproject.toml"}]
    return ModelRequest(model="m", messages=messages, tools=TOOLS)


async def collect(provider: JsonActionProvider, req: ModelRequest) -> list[Any]:
    return [event async for event in provider.stream(req)]


async def test_a_tool_action_becomes_a_native_tool_call(
    provider: JsonActionProvider, upstream: ScriptedUpstream
) -> None:
    upstream.enqueue(text_reply(action_json("read_file", {"path": "pyproject.toml"}, indent=2), pieces=7))
    events = await collect(provider, request())

    calls = [e for e in events if isinstance(e, ToolCallChunk)]
    assert len(calls) == 1 and calls[0].index == 0 and calls[0].id and calls[0].name == "read_file"
    assert json.loads(calls[0].arguments) == {"path": "pyproject.toml"}
    assert not [e for e in events if isinstance(e, TextChunk)]
    assert FinishChunk("tool_calls") in events
    assert any(isinstance(e, UsageChunk) for e in events)

    body = upstream.requests[0].body
    assert "tools" not in body
    schema = body["response_format"]["json_schema"]["schema"]
    assert {b["properties"]["action"]["const"] for b in schema["anyOf"]} == {"read_file", "terminal", "reply"}
    assert "- read_file" in body["messages"][0]["content"]


async def test_a_reply_streams_as_text(provider: JsonActionProvider, upstream: ScriptedUpstream) -> None:
    upstream.enqueue(text_reply(action_json("reply", {"text": "The version is 0.1.0."}), pieces=9))
    events = await collect(provider, request())
    texts = [e.text for e in events if isinstance(e, TextChunk)]
    assert len(texts) > 1 and "".join(texts) == "The version is 0.1.0."
    assert events[-1] == FinishChunk("stop")
    assert not [e for e in events if isinstance(e, ToolCallChunk)]


async def test_fenced_json_from_an_unconstrained_endpoint_is_a_tool_call(
    provider: JsonActionProvider, upstream: ScriptedUpstream
) -> None:
    upstream.enqueue(text_reply('Let me look.\n```json\n{"name": "terminal", "arguments": {"command": "ls"}}\n```'))
    events = await collect(provider, request())
    call = next(e for e in events if isinstance(e, ToolCallChunk))
    assert (call.name, json.loads(call.arguments)) == ("terminal", {"command": "ls"})


async def test_a_repeated_action_is_sent_back_with_a_note(
    provider: JsonActionProvider, upstream: ScriptedUpstream
) -> None:
    messages = [{"role": "system", "content": "sys"}, *transcript()[3:]]
    upstream.enqueue(
        text_reply(action_json("read_file", {"path": "pyproject.toml"})),  # the loop
        text_reply(action_json("reply", {"text": "Version 1.2.3."})),
    )
    events = await collect(provider, request(messages))
    assert "".join(e.text for e in events if isinstance(e, TextChunk)) == "Version 1.2.3."
    assert not [e for e in events if isinstance(e, ToolCallChunk)]
    second = upstream.requests[1].body["messages"]
    assert "already ran read_file" in second[-1]["content"]
    usage = [e for e in events if isinstance(e, UsageChunk)]
    assert len(usage) == 1 and usage[0].usage.input_tokens == 20  # both calls counted


async def test_a_stubborn_loop_is_forced_to_reply(provider: JsonActionProvider, upstream: ScriptedUpstream) -> None:
    messages = [{"role": "system", "content": "sys"}, *transcript()[3:]]
    same = action_json("read_file", {"path": "pyproject.toml"})
    upstream.enqueue(text_reply(same), text_reply(same), text_reply(action_json("reply", {"text": "Done."})))
    events = await collect(provider, request(messages))
    assert "".join(e.text for e in events if isinstance(e, TextChunk)) == "Done."
    last_schema = upstream.requests[2].body["response_format"]["json_schema"]["schema"]
    assert last_schema["properties"]["action"] == {"const": "reply"}


async def test_complete_gives_the_same_events(provider: JsonActionProvider, upstream: ScriptedUpstream) -> None:
    upstream.enqueue(text_reply(action_json("terminal", {"command": "pwd"})))
    events = await provider.complete(request())
    assert isinstance(events[0], ToolCallChunk) and events[0].name == "terminal"
    assert events[1] == FinishChunk("tool_calls")
    assert upstream.requests[0].body.get("stream") in (None, False)


async def test_without_tools_requests_pass_through(provider: JsonActionProvider, upstream: ScriptedUpstream) -> None:
    upstream.enqueue(text_reply("plain answer"))
    events = [e async for e in provider.stream(ModelRequest(model="m", messages=[{"role": "user", "content": "hi"}]))]
    assert "".join(e.text for e in events if isinstance(e, TextChunk)) == "plain answer"
    assert "response_format" not in upstream.requests[0].body


async def test_padding_after_the_action_is_cut_off(provider: JsonActionProvider, upstream: ScriptedUpstream) -> None:
    """A model that pads with whitespace after the object (the schema allows it) is stopped."""
    from hermes.testing.upstream import Chunk, Reply, Stall

    done = action_json("reply", {"text": "ok"})
    upstream.enqueue(Reply([Chunk(delta={"content": done}), *[Chunk(delta={"content": "\n"})] * 40, Stall(30)]))
    events = await collect(provider, request())
    assert "".join(e.text for e in events if isinstance(e, TextChunk)) == "ok"
    assert events[-1] == FinishChunk("stop")


def test_repeating_tail_spots_a_sentence_loop_only() -> None:
    sentence = "The lighthouse was a place where people could feel a sense of peace. "
    assert repeating_tail("Once upon a time. " + sentence * 3)
    assert not repeating_tail("Once upon a time. " + sentence * 2)
    assert not repeating_tail("=" * 200)  # a long rule is a period-1 pattern, not a sentence loop
    assert not repeating_tail("def f():\n    return 1\n\n\ndef g():\n    return 2\n")


async def test_a_looping_reply_is_cut(provider: JsonActionProvider, upstream: ScriptedUpstream) -> None:
    from hermes.testing.upstream import Chunk, Reply, Stall

    sentence = "The lighthouse was a place where people could feel a sense of peace. "
    head = '{"action": "reply", "args": {"text": "Once. '
    upstream.enqueue(Reply([Chunk(delta={"content": head}), *[Chunk(delta={"content": sentence})] * 50, Stall(30)]))
    events = await collect(provider, request())
    text = "".join(e.text for e in events if isinstance(e, TextChunk))
    assert text.count(sentence) == 3
    assert events[-1] == FinishChunk("stop")


def test_old_exchanges_are_dropped_to_fit_the_context() -> None:
    system = {"role": "system", "content": "s" * 100}
    old = [{"role": "user", "content": "u" * 1000}, {"role": "assistant", "content": "a" * 1000}]
    current = [
        {"role": "user", "content": "now"},
        {"role": "assistant", "content": "{}"},
        {"role": "user", "content": "Result of read_file:\n" + "r" * 500},
    ]
    messages = [system, *old, *old, *current]
    assert fit_context(messages, 10_000) == messages  # fits: untouched (prompt cache prefix kept)
    fitted = fit_context(messages, 2_000)
    assert fitted[0] == system and fitted[-3:] == current
    assert fitted[1]["content"].startswith("[Earlier conversation omitted")
    assert len(fitted) == 5


def test_project_instructions_survive_the_short_prompt_swap() -> None:
    from hermes.agent.instructions import HEADER

    long_base = "You are hermes. " + "Be careful. " * 200  # over base_prompt_limit: replaced
    system = f"{long_base}\n\n{HEADER}\n\n## /repo/AGENTS.md\nAlways run pytest -q."
    out = rewrite_messages([{"role": "system", "content": system}, {"role": "user", "content": "hi"}], TOOLS)
    sent = out[0]["content"]
    assert "Be careful. Be careful." not in sent
    assert f"{HEADER}\n\n## /repo/AGENTS.md\nAlways run pytest -q." in sent
    assert sent.index("Always run pytest -q.") < sent.index("- read_file")

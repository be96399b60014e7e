"""The `openai-agents` SDK (Runner + both OpenAI model classes), unmodified, against a real
`hermes serve`. hermes runs its tools itself; the agent defines none, so a tool turn must
come back as a finished answer and never as a call the Runner has to make."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator

import pytest
from _clients_harness import TOOL_ANSWER, TOOL_OUTPUT, TOOL_PREAMBLE, HermesServe, tool_turn_script
from agents import (
    Agent,
    Model,
    OpenAIChatCompletionsModel,
    OpenAIResponsesModel,
    Runner,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

from hermes.testing.upstream import text_reply

set_tracing_disabled(True)

MODEL_KINDS = ["responses", "chat"]


@pytest.fixture
async def sdk(hermes_serve: HermesServe) -> AsyncIterator[AsyncOpenAI]:
    client = AsyncOpenAI(base_url=hermes_serve.base_url, api_key=hermes_serve.key, max_retries=0, timeout=30)
    yield client
    await client.close()


def _agent(kind: str, sdk: AsyncOpenAI, serve: HermesServe) -> Agent:
    model: Model
    if kind == "responses":
        model = OpenAIResponsesModel(model=serve.model, openai_client=sdk)
    else:
        model = OpenAIChatCompletionsModel(model=serve.model, openai_client=sdk)
    return Agent(name="hermes-client", instructions="Be brief.", model=model)


async def _run(
    agent: Agent, text: str, *, streamed: bool, previous_response_id: str | None = None
) -> tuple[str, str | None]:
    """Final output text and the last response id, via Runner.run or Runner.run_streamed."""
    if streamed:
        result = Runner.run_streamed(agent, text, previous_response_id=previous_response_id)
        async for _ in result.stream_events():
            pass
    else:
        result = await Runner.run(agent, text, previous_response_id=previous_response_id)  # type: ignore[assignment]
    return str(result.final_output), result.last_response_id


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
@pytest.mark.parametrize("kind", MODEL_KINDS)
async def test_text(kind: str, streamed: bool, sdk: AsyncOpenAI, hermes_serve: HermesServe) -> None:
    hermes_serve.script(text_reply("Hello from hermes"))
    output, _ = await _run(_agent(kind, sdk, hermes_serve), "hi", streamed=streamed)
    assert output == "Hello from hermes"


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
@pytest.mark.parametrize("kind", MODEL_KINDS)
async def test_server_tool_turn(kind: str, streamed: bool, sdk: AsyncOpenAI, hermes_serve: HermesServe) -> None:
    hermes_serve.script(*tool_turn_script())
    output, _ = await _run(_agent(kind, sdk, hermes_serve), "run echo", streamed=streamed)
    # Issue 18: the separator ends the earlier segment, so the last message item (all the
    # Runner keeps on Responses) never starts with a blank line.
    assert output == (TOOL_ANSWER if kind == "responses" else f"{TOOL_PREAMBLE}\n\n{TOOL_ANSWER}")
    results = hermes_serve.upstream_tool_results()
    assert len(results) == 1 and TOOL_OUTPUT in results[0], results
    # One turn, two model calls: the Runner did not loop back with a second request.
    assert hermes_serve.upstream_calls() == 2


@pytest.mark.parametrize("streamed", [False, True], ids=["run", "run_streamed"])
async def test_previous_response_id(streamed: bool, sdk: AsyncOpenAI, hermes_serve: HermesServe) -> None:
    hermes_serve.script(text_reply("2"), text_reply("3"))
    agent = _agent("responses", sdk, hermes_serve)
    first, first_id = await _run(agent, "What is 1+1?", streamed=streamed)
    assert first == "2" and first_id
    second, _ = await _run(agent, "Add one.", streamed=streamed, previous_response_id=first_id)
    assert second == "3"
    sent = [(m["role"], m["content"]) for m in hermes_serve.upstream.requests[1].messages if m["role"] != "system"]
    assert sent == [("user", "What is 1+1?"), ("assistant", "2"), ("user", "Add one.")]


@pytest.mark.parametrize("kind", MODEL_KINDS)
async def test_multi_turn_from_client_history(kind: str, sdk: AsyncOpenAI, hermes_serve: HermesServe) -> None:
    """The Runner's own `to_input_list()` carries the conversation into the next run."""
    hermes_serve.script(*tool_turn_script(), text_reply("You are welcome."))
    agent = _agent(kind, sdk, hermes_serve)
    first = await Runner.run(agent, "run echo")
    assert str(first.final_output).endswith(TOOL_ANSWER)
    history = first.to_input_list() + [{"role": "user", "content": "Thanks"}]
    second = await Runner.run(agent, history)
    assert second.final_output == "You are welcome."
    sent = [m for m in hermes_serve.upstream.requests[-1].messages if m["role"] != "system"]
    assert sent[0] == {"role": "user", "content": "run echo"}
    assert sent[-1] == {"role": "user", "content": "Thanks"}
    roles = [m["role"] for m in sent]
    assert all(not (a == b == "assistant") for a, b in itertools.pairwise(roles)), roles

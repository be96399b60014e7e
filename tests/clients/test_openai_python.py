"""The official `openai` Python SDK, unmodified, against a real `hermes serve` process."""

from __future__ import annotations

import itertools
from collections.abc import Iterator

import openai
import pytest
from _clients_harness import (
    TOOL_ANSWER,
    TOOL_OUTPUT,
    TOOL_PREAMBLE,
    HermesServe,
    tool_turn_script,
)
from openai.types.chat import ChatCompletionMessageParam

from hermes.testing.upstream import text_reply


@pytest.fixture
def client(hermes_serve: HermesServe) -> Iterator[openai.OpenAI]:
    with openai.OpenAI(base_url=hermes_serve.base_url, api_key=hermes_serve.key, max_retries=0, timeout=30) as sdk:
        yield sdk


def _tool_ran(serve: HermesServe) -> None:
    results = serve.upstream_tool_results()
    assert results and TOOL_OUTPUT in results[0], results


# ---- Responses ---------------------------------------------------------------------------


def test_responses_stream_helper_text(client: openai.OpenAI, hermes_serve: HermesServe) -> None:
    hermes_serve.script(text_reply("Hello from hermes", usage=(12, 4)))
    deltas: list[str] = []
    with client.responses.stream(model=hermes_serve.model, input="hi") as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
        final = stream.get_final_response()
    assert "".join(deltas) == "Hello from hermes"
    assert final.output_text == "Hello from hermes"
    assert final.status == "completed"
    assert final.usage is not None and final.usage.total_tokens == 16


def test_responses_stream_helper_tool_turn(client: openai.OpenAI, hermes_serve: HermesServe) -> None:
    hermes_serve.script(*tool_turn_script())
    deltas: list[str] = []
    with client.responses.stream(model=hermes_serve.model, input="run echo") as stream:
        for event in stream:
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
        final = stream.get_final_response()
    _tool_ran(hermes_serve)
    assert final.status == "completed"
    assert final.output_text.endswith(TOOL_ANSWER)
    assert "".join(deltas).endswith(TOOL_ANSWER)
    # Segments are separated, never glued ("Let me run that.The command…").
    assert TOOL_PREAMBLE + TOOL_ANSWER not in "".join(deltas)


def test_responses_create_json(client: openai.OpenAI, hermes_serve: HermesServe) -> None:
    hermes_serve.script(text_reply("Plain answer", usage=(7, 2)))
    resp = client.responses.create(model=hermes_serve.model, input="hi")
    assert resp.output_text == "Plain answer"
    assert resp.usage is not None and resp.usage.input_tokens == 7 and resp.usage.output_tokens == 2


def test_responses_create_stream_raw(client: openai.OpenAI, hermes_serve: HermesServe) -> None:
    hermes_serve.script(text_reply("Streamed answer"))
    text, completed = "", None
    for event in client.responses.create(model=hermes_serve.model, input="hi", stream=True):
        if event.type == "response.output_text.delta":
            text += event.delta
        elif event.type == "response.completed":
            completed = event.response
    assert text == "Streamed answer"
    assert completed is not None and completed.output_text == "Streamed answer"
    assert completed.usage is not None and completed.usage.total_tokens > 0


def test_responses_tool_turn_json_equals_streamed(client: openai.OpenAI, hermes_serve: HermesServe) -> None:
    hermes_serve.script(*tool_turn_script(), *tool_turn_script())
    plain = client.responses.create(model=hermes_serve.model, input="run echo")
    streamed = ""
    for event in client.responses.create(model=hermes_serve.model, input="run echo", stream=True):
        if event.type == "response.output_text.delta":
            streamed += event.delta
    assert plain.output_text.endswith(TOOL_ANSWER)
    assert plain.output_text == streamed


def test_responses_previous_response_id(client: openai.OpenAI, hermes_serve: HermesServe) -> None:
    hermes_serve.script(text_reply("2"), text_reply("3"))
    first = client.responses.create(model=hermes_serve.model, input="What is 1+1?")
    second = client.responses.create(model=hermes_serve.model, input="Add one.", previous_response_id=first.id)
    assert second.output_text == "3"
    sent = [(m["role"], m["content"]) for m in hermes_serve.upstream.requests[1].messages if m["role"] != "system"]
    assert sent == [("user", "What is 1+1?"), ("assistant", "2"), ("user", "Add one.")]


def test_responses_multi_turn_from_client_history(client: openai.OpenAI, hermes_serve: HermesServe) -> None:
    """The client resends the first response's output items as history (as the SDK docs show)."""
    hermes_serve.script(text_reply("Paris"), text_reply("About 2 million"))
    first = client.responses.create(model=hermes_serve.model, input="Capital of France?", store=False)
    history: list[object] = [{"role": "user", "content": "Capital of France?"}]
    history += [item.model_dump(exclude_none=True) for item in first.output]
    history.append({"role": "user", "content": "Population?"})
    second = client.responses.create(model=hermes_serve.model, input=history, store=False)  # type: ignore[arg-type]
    assert second.output_text == "About 2 million"
    sent = [(m["role"], m["content"]) for m in hermes_serve.upstream.requests[1].messages if m["role"] != "system"]
    assert sent == [("user", "Capital of France?"), ("assistant", "Paris"), ("user", "Population?")]


def test_responses_multi_turn_history_with_server_tool_items(client: openai.OpenAI, hermes_serve: HermesServe) -> None:
    """History that contains the first turn's tool items keeps the tool call and its result."""
    hermes_serve.script(*tool_turn_script(), text_reply("Done."))
    first = client.responses.create(model=hermes_serve.model, input="run echo", store=False)
    history: list[object] = [{"role": "user", "content": "run echo"}]
    history += [item.model_dump(exclude_none=True) for item in first.output]
    history.append({"role": "user", "content": "Thanks"})
    second = client.responses.create(model=hermes_serve.model, input=history, store=False)  # type: ignore[arg-type]
    assert second.output_text == "Done."
    sent = hermes_serve.upstream.requests[-1].messages
    roles = [m["role"] for m in sent if m["role"] != "system"]
    assert roles[0] == "user" and roles[-1] == "user"
    assert sent[-1]["content"] == "Thanks"
    assert "assistant" in roles
    # No two assistant messages in a row (the tool call/result must not be dropped).
    assert all(not (a == b == "assistant") for a, b in itertools.pairwise(roles)), roles


def test_responses_input_ending_with_assistant_is_400(client: openai.OpenAI, hermes_serve: HermesServe) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        client.responses.create(
            model=hermes_serve.model,
            input=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        )
    assert info.value.status_code == 400
    assert hermes_serve.upstream_calls() == 0


def test_responses_unknown_item_reference_is_400(client: openai.OpenAI, hermes_serve: HermesServe) -> None:
    with pytest.raises(openai.BadRequestError):
        client.responses.create(
            model=hermes_serve.model,
            input=[{"type": "item_reference", "id": "msg_does_not_exist"}, {"role": "user", "content": "hi"}],
        )
    assert hermes_serve.upstream_calls() == 0


# ---- Chat completions ----------------------------------------------------------------------


def test_chat_stream_helper_text(client: openai.OpenAI, hermes_serve: HermesServe) -> None:
    hermes_serve.script(text_reply("Hello chat", usage=(5, 2)))
    with client.chat.completions.stream(
        model=hermes_serve.model,
        messages=[{"role": "user", "content": "hi"}],
        stream_options={"include_usage": True},
    ) as stream:
        text = "".join(e.delta for e in stream if e.type == "content.delta")
        final = stream.get_final_completion()
    assert text == "Hello chat"
    assert final.choices[0].message.content == "Hello chat"
    assert final.usage is not None and final.usage.total_tokens == 7


def test_chat_stream_helper_tool_turn(client: openai.OpenAI, hermes_serve: HermesServe) -> None:
    hermes_serve.script(*tool_turn_script())
    with client.chat.completions.stream(
        model=hermes_serve.model, messages=[{"role": "user", "content": "run echo"}]
    ) as stream:
        text = "".join(e.delta for e in stream if e.type == "content.delta")
        final = stream.get_final_completion()
    _tool_ran(hermes_serve)
    assert final.choices[0].message.content == text
    assert text.endswith(TOOL_ANSWER)
    assert TOOL_PREAMBLE + TOOL_ANSWER not in text
    # hermes ran the tool itself: nothing is handed to the client to execute.
    assert not final.choices[0].message.tool_calls
    assert final.choices[0].finish_reason == "stop"


def test_chat_tool_turn_json_equals_streamed(client: openai.OpenAI, hermes_serve: HermesServe) -> None:
    hermes_serve.script(*tool_turn_script(), *tool_turn_script())
    messages: list[ChatCompletionMessageParam] = [{"role": "user", "content": "run echo"}]
    plain = client.chat.completions.create(model=hermes_serve.model, messages=messages)
    streamed = ""
    for chunk in client.chat.completions.create(model=hermes_serve.model, messages=messages, stream=True):
        streamed += chunk.choices[0].delta.content or ""
    assert (plain.choices[0].message.content or "").endswith(TOOL_ANSWER)
    assert plain.choices[0].message.content == streamed


def test_chat_multi_turn_from_client_history(client: openai.OpenAI, hermes_serve: HermesServe) -> None:
    hermes_serve.script(text_reply("Paris"), text_reply("About 2 million"))
    messages: list[dict[str, str]] = [{"role": "user", "content": "Capital of France?"}]
    first = client.chat.completions.create(model=hermes_serve.model, messages=messages)  # type: ignore[arg-type]
    messages += [{"role": "assistant", "content": first.choices[0].message.content or ""},
                 {"role": "user", "content": "Population?"}]
    second = client.chat.completions.create(model=hermes_serve.model, messages=messages)  # type: ignore[arg-type]
    assert second.choices[0].message.content == "About 2 million"
    sent = [(m["role"], m["content"]) for m in hermes_serve.upstream.requests[1].messages if m["role"] != "system"]
    assert sent == [("user", "Capital of France?"), ("assistant", "Paris"), ("user", "Population?")]


def test_chat_messages_ending_with_assistant_is_400(client: openai.OpenAI, hermes_serve: HermesServe) -> None:
    with pytest.raises(openai.BadRequestError):
        client.chat.completions.create(
            model=hermes_serve.model,
            messages=[{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
        )
    assert hermes_serve.upstream_calls() == 0


def test_chat_usage_present(client: openai.OpenAI, hermes_serve: HermesServe) -> None:
    hermes_serve.script(text_reply("Counted", usage=(9, 3)))
    completion = client.chat.completions.create(
        model=hermes_serve.model, messages=[{"role": "user", "content": "hi"}]
    )
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (9, 3)


# ---- Auth -----------------------------------------------------------------------------------


@pytest.mark.parametrize("call", ["models", "chat", "responses"])
def test_wrong_key_raises_authentication_error(hermes_serve: HermesServe, call: str) -> None:
    bad = openai.OpenAI(base_url=hermes_serve.base_url, api_key="sk-wrong", max_retries=0, timeout=30)
    with bad, pytest.raises(openai.AuthenticationError) as info:
        if call == "models":
            bad.models.list()
        elif call == "chat":
            bad.chat.completions.create(model=hermes_serve.model, messages=[{"role": "user", "content": "hi"}])
        else:
            bad.responses.create(model=hermes_serve.model, input="hi")
    assert info.value.code == "invalid_api_key"
    assert hermes_serve.upstream_calls() == 0

"""What Open WebUI reads in a stream: no frame with a top-level `error` for a failed
tool, and server-run tools as its own `<details type="tool_calls">` cards (raw HTTP
against the app on loopback, the scripted upstream as the model)."""

from __future__ import annotations

import html
import json
import re

import pytest
from _api_harness import Server, parse_sse

from hermes.server.openai.openwebui import is_open_webui
from hermes.testing.upstream import call, text_reply, tool_reply

CHAT = "/v1/chat/completions"
OPEN_WEBUI = {"X-OpenWebUI-User-Id": "u-1", "X-OpenWebUI-Chat-Id": "c-1"}


def failing_tool_turn(server: Server) -> None:
    server.upstream.enqueue(
        tool_reply([call("read_file", {"path": "missing.txt"}, id="call_missing")], text="Let me look."),
        text_reply("The file is not there."),
    )


def data_frames(body: str) -> list[dict]:
    return [f.json() for f in parse_sse(body) if f.data and f.data != "[DONE]"]


def content_of(body: str) -> str:
    return "".join(
        (frame["choices"][0]["delta"].get("content") or "") for frame in data_frames(body) if frame.get("choices")
    )


@pytest.mark.parametrize("path", [CHAT, "/v1/responses"])
@pytest.mark.parametrize("headers", [{}, OPEN_WEBUI, {"X-Hermes-Tool-Progress": "true"}])
async def test_a_failed_tool_puts_no_top_level_error_in_any_frame(server: Server, path: str, headers: dict) -> None:
    failing_tool_turn(server)
    body = {"messages" if path == CHAT else "input": [{"role": "user", "content": "read missing.txt"}],
            "stream": True}  # fmt: skip
    resp = await server.client.post(path, json=body, headers=headers)
    assert resp.status == 200
    frames = data_frames(await resp.text())
    assert frames and all("error" not in frame for frame in frames)
    last = frames[-1]
    assert last["choices"][0]["finish_reason"] == "stop" if path == CHAT else last["type"] == "response.completed"


async def test_tool_progress_says_is_error(server: Server) -> None:
    failing_tool_turn(server)
    resp = await server.client.post(
        CHAT,
        json={"messages": [{"role": "user", "content": "go"}], "stream": True},
        headers={"X-Hermes-Tool-Progress": "true"},
    )
    progress = [f.json() for f in parse_sse(await resp.text()) if f.event == "hermes.tool.progress"]
    assert progress[-1]["status"] == "completed" and progress[-1]["is_error"] is True


async def test_open_webui_gets_tool_cards_between_the_paragraphs(server: Server) -> None:
    failing_tool_turn(server)
    resp = await server.client.post(
        CHAT, json={"messages": [{"role": "user", "content": "read missing.txt"}], "stream": True}, headers=OPEN_WEBUI
    )
    content = content_of(await resp.text())
    card = re.search(r'\n\n<details type="tool_calls" done="true" ([^>]*)>\n<summary>Tool Executed</summary>\n'
                     r'(.*?)\n</details>\n\n', content, re.DOTALL)  # fmt: skip
    assert card is not None, content
    before, after = content[: card.start()], content[card.end() :]
    assert before.strip() == "Let me look." and after.strip() == "The file is not there."
    attributes = dict(re.findall(r'(\w+)="([^"]*)"', card.group(1)))
    assert (attributes["id"], attributes["name"], attributes["status"]) == ("call_missing", "read_file", "failed")
    assert json.loads(json.loads(html.unescape(attributes["arguments"]))) == {"path": "missing.txt"}
    result = json.loads(html.unescape(attributes["result"]))
    assert "cannot read missing.txt" in result
    assert json.loads(html.unescape(card.group(2))) == result


async def test_other_clients_get_no_cards(server: Server) -> None:
    failing_tool_turn(server)
    resp = await server.client.post(CHAT, json={"messages": [{"role": "user", "content": "x"}], "stream": True})
    assert "<details" not in content_of(await resp.text())


def test_detection() -> None:
    assert is_open_webui({"X-OpenWebUI-User-Name": "ann"})
    assert is_open_webui({"x-openwebui-chat-id": "c"})
    assert is_open_webui({"X-Hermes-Client": "open-webui"})
    assert not is_open_webui({"User-Agent": "Python/3.12 aiohttp/3.11"})
    assert not is_open_webui({"X-Stainless-Lang": "python"})


async def test_an_answer_resent_with_its_cards_continues_its_session(server: Server) -> None:
    failing_tool_turn(server)
    server.upstream.enqueue(text_reply("Second answer."))
    headers = {"X-Hermes-Client": "open-webui"}  # recognised, but no chat id: the history decides
    first = await server.client.post(
        CHAT, json={"messages": [{"role": "user", "content": "read missing.txt"}], "stream": True}, headers=headers
    )
    shown = content_of(await first.text())
    assert "<details" in shown
    second = await server.client.post(
        CHAT,
        json={"messages": [{"role": "user", "content": "read missing.txt"}, {"role": "assistant", "content": shown},
                           {"role": "user", "content": "and now?"}], "stream": True},
        headers=headers,
    )  # fmt: skip
    await second.read()
    assert second.headers["X-Hermes-Session-Id"] == first.headers["X-Hermes-Session-Id"]
    assert second.headers["X-Hermes-Session-Placement"] == "continued"

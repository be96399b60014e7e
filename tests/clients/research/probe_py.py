"""Drive one Python client against responses_stub.py and print one JSON line.

    python probe_py.py CLIENT VARIANT MODE BASE_URL
    CLIENT: openai | agents | pydantic_ai | langchain      MODE: json | stream | followup

`followup` runs a non-streamed turn, then a second turn built from the client's own history,
and reports the input item types the client sent back (what the server must parse).
"""

from __future__ import annotations

import asyncio
import json
import sys
import traceback
from typing import Any

KEY = "sk-stub"


def summarise_exc(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {str(exc)[:300]}"


async def run_openai(variant: str, mode: str, base: str) -> dict[str, Any]:
    import openai

    client = openai.AsyncOpenAI(base_url=base, api_key=KEY, max_retries=0)
    if mode == "json":
        resp = await client.responses.create(model=variant, input="run echo hi")
        return {"text": resp.output_text, "items": [i.type for i in resp.output]}
    if mode == "stream":
        async with client.responses.stream(model=variant, input="run echo hi") as stream:
            async for _ in stream:
                pass
            final = await stream.get_final_response()
        return {"text": final.output_text, "items": [i.type for i in final.output]}
    first = await client.responses.create(model=variant, input="run echo hi")
    history: list[Any] = [{"role": "user", "content": "run echo hi"}]
    history += [i.model_dump(exclude_none=True) for i in first.output]
    history.append({"role": "user", "content": "thanks"})
    second = await client.responses.create(model=variant, input=history)
    return {"text": second.output_text}


async def run_agents(variant: str, mode: str, base: str) -> dict[str, Any]:
    from agents import Agent, OpenAIResponsesModel, Runner, set_tracing_disabled
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=base, api_key=KEY, max_retries=0)
    agent = Agent(name="probe", model=OpenAIResponsesModel(model=variant, openai_client=client))
    if mode == "stream":
        result = Runner.run_streamed(agent, "run echo hi")
        async for _ in result.stream_events():
            pass
    else:
        result = await Runner.run(agent, "run echo hi")  # type: ignore[assignment,unused-ignore]
    items = [type(i).__name__ for i in result.new_items]
    if mode == "followup":
        history = result.to_input_list() + [{"role": "user", "content": "thanks"}]
        second = await Runner.run(agent, history)
        return {"text": str(second.final_output), "items": items}
    return {"text": str(result.final_output), "items": items}


async def run_pydantic_ai(variant: str, mode: str, base: str) -> dict[str, Any]:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIResponsesModel(variant, provider=OpenAIProvider(base_url=base, api_key=KEY))
    agent = Agent(model)
    if mode == "stream":
        async with agent.run_stream("run echo hi") as result:
            text = ""
            async for snapshot in result.stream_text():
                text = snapshot  # stream_text yields the text so far
            parts = [type(p).__name__ for m in result.all_messages() for p in getattr(m, "parts", [])]
        return {"text": text, "items": parts}
    res = await agent.run("run echo hi")
    parts = [type(p).__name__ for m in res.all_messages() for p in getattr(m, "parts", [])]
    if mode == "followup":
        second = await agent.run("thanks", message_history=res.all_messages())
        return {"text": str(second.output), "items": parts}
    return {"text": str(res.output), "items": parts}


async def run_langchain(variant: str, mode: str, base: str) -> dict[str, Any]:
    from langchain_core.messages import BaseMessage, HumanMessage
    from langchain_openai import ChatOpenAI

    llm = ChatOpenAI(model=variant, base_url=base, api_key=KEY, use_responses_api=True, max_retries=0)  # type: ignore[arg-type]
    msg: BaseMessage
    if mode == "stream":
        chunks = list(llm.stream("run echo hi"))
        merged = chunks[0]
        for chunk in chunks[1:]:
            merged = merged + chunk
        msg = merged
    else:
        msg = llm.invoke("run echo hi")
    calls = [c["name"] for c in getattr(msg, "tool_calls", [])]
    blocks = [b.get("type") for b in msg.content if isinstance(b, dict)] if isinstance(msg.content, list) else []
    out: dict[str, Any] = {"text": msg.text, "tool_calls": calls, "blocks": blocks}
    if mode == "followup":
        second = llm.invoke([HumanMessage("run echo hi"), msg, HumanMessage("thanks")])
        out["text"] = second.text
    return out


CLIENTS = {"openai": run_openai, "agents": run_agents, "pydantic_ai": run_pydantic_ai, "langchain": run_langchain}


def main() -> None:
    client, variant, mode, base = sys.argv[1:5]
    try:
        out: dict[str, Any] = {"ok": True, **asyncio.run(CLIENTS[client](variant, mode, base))}
    except BaseException as exc:  # noqa: BLE001 - the probe reports whatever the client raised
        out = {"ok": False, "error": summarise_exc(exc), "where": traceback.format_exc().splitlines()[-3:-1]}
    print(json.dumps(out, default=str))


if __name__ == "__main__":
    main()

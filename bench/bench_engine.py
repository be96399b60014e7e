"""Engine overhead: a 2,000-chunk answer read through `Agent.run_turn` vs a bare openai SDK loop.

    python bench/bench_engine.py [--chunks 2000] [--rounds 15]

Both read the same scripted stream from the same loopback upstream in the same
process; rounds alternate between the two so drift affects both alike. Target: the
median engine time is at most 1.3x the median bare-SDK time.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from pathlib import Path

import openai

from hermes.agent.engine import Agent, EngineOptions
from hermes.agent.providers.openai_compat import OpenAICompatProvider
from hermes.agent.tools.base import ToolRegistry
from hermes.agent.types import TurnRequest
from hermes.testing.state_db import open_sync_state
from hermes.testing.upstream import ScriptedUpstream, text_reply


async def bare_sdk(client: openai.AsyncOpenAI) -> float:
    started = time.perf_counter()
    stream = await client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "go"}], stream=True, stream_options={"include_usage": True}
    )
    parts = []
    async for chunk in stream:
        for choice in chunk.choices:
            if choice.delta.content:
                parts.append(choice.delta.content)
    assert parts
    return time.perf_counter() - started


async def through_engine(agent: Agent) -> float:
    started = time.perf_counter()
    count = 0
    async for event in agent.run_turn(TurnRequest(input="go")):
        if event.type == "text.delta":
            count += 1
        elif event.type == "turn.completed":
            assert event.result.status == "completed", event.result.error  # type: ignore[union-attr]
    assert count
    return time.perf_counter() - started


async def main(chunks: int, rounds: int) -> None:
    words = " ".join(f"w{i}" for i in range(chunks))
    async with ScriptedUpstream() as upstream:
        upstream.default = text_reply(words)  # one chunk per word
        client = openai.AsyncOpenAI(base_url=upstream.base_url, api_key="x", max_retries=0)
        with tempfile.TemporaryDirectory() as tmp:
            store = open_sync_state(Path(tmp) / "state.db")
            agent = Agent(
                OpenAICompatProvider(base_url=upstream.base_url, api_key="x"),
                store=store.sessions,
                model="m",
                tools=ToolRegistry(),
                options=EngineOptions(),
            )
            await bare_sdk(client)
            await through_engine(agent)  # warm-up
            bare, engine = [], []
            for _ in range(rounds):
                bare.append(await bare_sdk(client))
                engine.append(await through_engine(agent))
            await agent.aclose()
            store.close()
        await client.close()
    b, e = statistics.median(bare), statistics.median(engine)
    print(f"chunks per answer      {chunks}")
    print(f"bare openai SDK loop   median {b * 1000:8.1f} ms")
    print(f"Agent.run_turn         median {e * 1000:8.1f} ms")
    print(f"ratio                  {e / b:8.2f}x   (target <= 1.30x)")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    asyncio.run(main(args.chunks, args.rounds))

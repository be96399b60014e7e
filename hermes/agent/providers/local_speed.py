"""How fast the local model reads and writes on this machine: one short measured request.

`measure_speed(model_path, name)` loads the model in-process (as `hermes chat` does, without
a prompt cache), sends one streamed request of about 200 prompt tokens asking for at most
48 tokens, and times it: reading is the prompt tokens over the time to the first token,
generating the later tokens over the time after it. Bounded by `timeout` (the request;
loading takes what it takes, ~10 s). Used by `hermes doctor`.
"""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass
from pathlib import Path

from hermes.agent.provider import ModelRequest, TextChunk, UsageChunk

TYPICAL_PROMPT = 400
TYPICAL_ANSWER = 150
"""The "typical answer" doctor prices: a 400-token prompt (system prompt, question, a
small file) and a 150-token reply."""
_PROMPT = (
    "Here is a list of fruit and their colours: "
    + "; ".join(f"fruit {i} is {c}" for i, c in enumerate(["red", "green", "yellow", "orange", "purple"] * 7))
    + ". Name three colours from the list, in one short sentence."
)


@dataclass(frozen=True, slots=True)
class Speed:
    prompt_tokens: int
    prompt_seconds: float
    generated_tokens: int
    generate_seconds: float
    load_seconds: float

    @property
    def read_rate(self) -> float:
        return self.prompt_tokens / max(self.prompt_seconds, 1e-6)

    @property
    def write_rate(self) -> float:
        return self.generated_tokens / max(self.generate_seconds, 1e-6)

    def typical_seconds(self, prompt: int = TYPICAL_PROMPT, answer: int = TYPICAL_ANSWER) -> float:
        """Seconds for one model call reading `prompt` tokens and writing `answer` tokens."""
        return prompt / max(self.read_rate, 1e-6) + answer / max(self.write_rate, 1e-6)


def measure_speed(model_path: Path, name: str, *, timeout: float = 120.0, max_tokens: int = 48) -> Speed:
    """Load the model, time one request, stop the model. Raises LocalModelError, ProviderError, TimeoutError."""
    from hermes.agent.providers.local import LocalServer
    from hermes.agent.providers.openai_compat import OpenAICompatProvider

    started = time.monotonic()
    server = LocalServer(model_path, alias=name, n_ctx=2048).start()
    load_seconds = time.monotonic() - started
    try:
        provider = OpenAICompatProvider(base_url=f"{server.base_url}/v1", api_key="local", keep_alive=False)

        async def timed() -> Speed:
            request = ModelRequest(
                model=name,
                messages=[{"role": "user", "content": _PROMPT}],
                extra={"max_tokens": max_tokens, "temperature": 0.0},
            )
            sent = time.monotonic()
            first = last = 0.0
            tokens = 0
            prompt_tokens = 0
            try:
                async for event in provider.stream(request):
                    if isinstance(event, TextChunk):
                        last = time.monotonic()
                        first = first or last
                        tokens += 1
                    elif isinstance(event, UsageChunk):
                        prompt_tokens = event.usage.input_tokens
            finally:
                await provider.aclose()
            if not tokens:
                raise TimeoutError("the model wrote nothing")
            # The first token's time is the prompt's; the rate counts the tokens after it.
            return Speed(prompt_tokens, first - sent, tokens - 1, last - first, load_seconds)

        async def bounded() -> Speed:
            return await asyncio.wait_for(timed(), timeout)

        return asyncio.run(bounded())
    finally:
        server.close()

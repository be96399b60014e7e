"""Clients that bring their own tools (issue 18), unmodified, against a real `hermes serve`.

Not part of the test suite: instructor and llama-index pin their own `openai` range and
pull in heavy dependencies (llama-index-core: nltk, numpy, SQLAlchemy…), so they are not
project dependencies. Run it from a separate venv that has them:

    python3 -m venv .venv-tools
    .venv-tools/bin/pip install instructor llama-index-llms-openai-like aiohttp
    .venv-tools/bin/python tests/clients/matrix/client_tools_matrix.py [--hermes-python .venv/bin/python]

The driver runs the scripted upstream (`hermes.testing.upstream`) in a thread and
`hermes serve` as a subprocess under the project's interpreter. Checks:

- instructor TOOLS mode: the response model comes back parsed from the client tool call,
  and the forced `tool_choice` reached the upstream;
- llama-index `OpenAILike.predict_and_call`: the model's call of the client's
  `FunctionTool` comes back, llama-index runs it and returns its output;
- llama-index `structured_predict`: the output class comes back parsed.

Prints one line per check (PASS/FAIL and why); exit status 1 when any fails.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import threading
import traceback
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests" / "clients"))

from _clients_harness import MODEL_NAME, READY_PREFIX, SERVER_KEY, serve_env  # noqa: E402
from pydantic import BaseModel  # noqa: E402

from hermes.testing.upstream import ScriptedUpstream, call, tool_reply  # noqa: E402


class Weather(BaseModel):
    city: str
    celsius: int


def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def check_instructor(base_url: str, upstream: ScriptedUpstream) -> str:
    import instructor
    from openai import OpenAI

    upstream.enqueue(tool_reply([call("Weather", {"city": "Paris", "celsius": 21})]))
    client = instructor.from_openai(OpenAI(base_url=base_url, api_key=SERVER_KEY), mode=instructor.Mode.TOOLS)
    weather = client.chat.completions.create(
        model=MODEL_NAME, response_model=Weather, messages=[{"role": "user", "content": "Paris weather"}]
    )
    assert (weather.city, weather.celsius) == ("Paris", 21), weather
    sent = upstream.requests[-1].body
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "Weather"}}, sent.get("tool_choice")
    return "parsed Weather; the forced tool_choice reached the upstream"


def _llama(base_url: str):  # type: ignore[no-untyped-def]
    from llama_index.llms.openai_like import OpenAILike

    return OpenAILike(
        model=MODEL_NAME, api_base=base_url, api_key=SERVER_KEY, is_chat_model=True, is_function_calling_model=True
    )


def check_llama_predict_and_call(base_url: str, upstream: ScriptedUpstream) -> str:
    from llama_index.core.tools import FunctionTool

    upstream.enqueue(tool_reply([call("get_weather", {"city": "Oslo"})]))
    response = _llama(base_url).predict_and_call([FunctionTool.from_defaults(fn=get_weather)], "weather in Oslo?")
    assert "sunny in Oslo" in str(response), response
    assert "get_weather" in upstream.requests[-1].tool_names
    return f"ran get_weather: {str(response)!r}"


def check_llama_structured_predict(base_url: str, upstream: ScriptedUpstream) -> str:
    from llama_index.core.prompts import PromptTemplate

    upstream.enqueue(tool_reply([call("Weather", {"city": "Rome", "celsius": 30})]))
    weather = _llama(base_url).structured_predict(Weather, PromptTemplate("Weather in {city}?"), city="Rome")
    assert weather == Weather(city="Rome", celsius=30), weather
    return "parsed Weather"


CHECKS: dict[str, Callable[[str, ScriptedUpstream], str]] = {
    "instructor TOOLS": check_instructor,
    "llama-index predict_and_call": check_llama_predict_and_call,
    "llama-index structured_predict": check_llama_structured_predict,
}


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--hermes-python", default=str(REPO / ".venv" / "bin" / "python"))
    args = parser.parse_args()
    failed = 0
    with ScriptedUpstream.in_thread() as upstream, tempfile.TemporaryDirectory() as tmp:
        home, work = Path(tmp, "home"), Path(tmp, "work")
        work.mkdir()
        proc = subprocess.Popen(
            [args.hermes_python, "-m", "hermes", "serve", "--port", "0", "--key", SERVER_KEY,
             "--model-name", MODEL_NAME],
            env=serve_env(home, upstream), cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert proc.stderr is not None
        line = proc.stderr.readline()
        if not line.startswith(READY_PREFIX):
            proc.kill()
            raise SystemExit("hermes serve did not start: " + line + proc.stderr.read())
        threading.Thread(target=proc.stderr.read, daemon=True).start()
        base_url = line[len(READY_PREFIX) :].strip() + "/v1"
        try:
            for name, check in CHECKS.items():
                try:
                    print(f"PASS  {name}: {check(base_url, upstream)}")
                except Exception as exc:  # noqa: BLE001 - every failure is reported, the rest still run
                    failed += 1
                    print(f"FAIL  {name}: {type(exc).__name__}: {exc}")
                    traceback.print_exc(limit=3)
        finally:
            proc.terminate()
            proc.wait(10)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

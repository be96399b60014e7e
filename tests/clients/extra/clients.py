"""instructor and llama-index, unmodified, against `hermes serve`: one check per run.

Runs under the venv built from this folder's requirements.txt (tests/clients/_extra_venv.py),
never under the project's interpreter: these clients pin an `openai` of their own. The
driver (test_extra_clients.py, matrix/run_extra_clients.py) owns the server and the
upstream's route; this script only plays the client:

    .venv/bin/python clients.py CHECK '{"baseURL": …, "apiKey": …, "model": …, "person": {…}}'

CHECK is one of `CHECKS`. `person` is the object the route answers with (`name`, `age`).
Prints one JSON line, `{"ok": true, "detail": …}` or `{"ok": false, "error": …}`, and exits
0 either way; only a crash of the script itself exits non-zero.
"""

from __future__ import annotations

import json
import sys
import traceback
from collections.abc import Callable
from typing import Any


class CheckFailed(Exception):
    pass


def expect(cond: bool, what: str) -> None:
    if not cond:
        raise CheckFailed(what)


def person_model() -> Any:
    from pydantic import BaseModel

    class Person(BaseModel):
        name: str
        age: int

    return Person


def _instructor(cfg: dict[str, Any], mode_name: str) -> str:
    import instructor
    from openai import OpenAI

    openai = OpenAI(base_url=cfg["baseURL"], api_key=cfg["apiKey"], max_retries=0, timeout=60)
    client = instructor.from_openai(openai, mode=getattr(instructor.Mode, mode_name))
    person = client.chat.completions.create(
        model=cfg["model"],
        response_model=person_model(),
        max_retries=1,
        messages=[{"role": "user", "content": "Extract: Ada Lovelace, aged 36."}],
    )
    want = cfg["person"]
    expect((person.name, person.age) == (want["name"], want["age"]), f"got {person!r}")
    return repr(person)


def instructor_tools(cfg: dict[str, Any]) -> str:
    return _instructor(cfg, "TOOLS")


def instructor_json_schema(cfg: dict[str, Any]) -> str:
    return _instructor(cfg, "JSON_SCHEMA")


def _llama(cfg: dict[str, Any]) -> Any:
    from llama_index.llms.openai_like import OpenAILike

    return OpenAILike(
        model=cfg["model"],
        api_base=cfg["baseURL"],
        api_key=cfg["apiKey"],
        is_chat_model=True,
        is_function_calling_model=True,
        max_retries=0,
        timeout=60,
        context_window=32000,
    )


def llama_predict_and_call(cfg: dict[str, Any]) -> str:
    from llama_index.core.tools import FunctionTool

    ran: list[tuple[int, int]] = []

    def add(a: int, b: int) -> int:
        """Add two integers."""
        ran.append((a, b))
        return a + b

    response = _llama(cfg).predict_and_call([FunctionTool.from_defaults(fn=add)], user_msg="add 2 and 3")
    expect(ran == [(2, 3)], f"the client tool ran {ran}; response {str(response)[:200]!r}")
    expect(str(response).strip() == "5", f"response {str(response)[:200]!r}")
    return f"add(2, 3) ran in the client; response {str(response)!r}"


def llama_structured_predict(cfg: dict[str, Any]) -> str:
    from llama_index.core.prompts import PromptTemplate

    person = _llama(cfg).structured_predict(person_model(), PromptTemplate("Extract: {text}"), text="Ada Lovelace, 36.")
    want = cfg["person"]
    expect((person.name, person.age) == (want["name"], want["age"]), f"got {person!r}")
    return repr(person)


CHECKS: dict[str, Callable[[dict[str, Any]], str]] = {
    "instructor_tools": instructor_tools,
    "instructor_json_schema": instructor_json_schema,
    "llama_predict_and_call": llama_predict_and_call,
    "llama_structured_predict": llama_structured_predict,
}


def main(argv: list[str]) -> int:
    check, cfg = CHECKS[argv[1]], json.loads(argv[2])
    try:
        result: dict[str, Any] = {"ok": True, "detail": check(cfg)}
    except CheckFailed as exc:
        result = {"ok": False, "error": str(exc)}
    except Exception as exc:  # the client's own error is the finding: report it, with where it came from
        result = {"ok": False, "error": f"raised {type(exc).__name__}: {str(exc)[:500]}"}
        traceback.print_exc()
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

"""The JSON-action adapter steers a small model: a question gets no write tools, and after
an edit the check the request names is asked for before the answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hermes.agent.provider import ModelRequest
from hermes.agent.providers.json_actions import JsonActionProvider
from hermes.agent.providers.openai_compat import OpenAICompatProvider
from hermes.agent.providers.task_cues import named_check, wants_change
from hermes.agent.tools import default_registry
from hermes.testing.upstream import ScriptedUpstream, text_reply

TOOLS = default_registry().schemas()


def offered(body: dict[str, Any]) -> set[str]:
    schema = body["response_format"]["json_schema"]["schema"]
    return {branch["properties"]["action"]["const"] for branch in schema["anyOf"]}


async def inner_request(upstream: ScriptedUpstream, messages: list[dict[str, Any]]) -> dict[str, Any]:
    upstream.enqueue(text_reply(json.dumps({"action": "reply", "args": {"text": "ok"}})))
    provider = JsonActionProvider(OpenAICompatProvider(base_url=upstream.base_url))
    try:
        [event async for event in provider.stream(ModelRequest(model="m", messages=messages, tools=TOOLS))]
    finally:
        await provider.aclose()
    return upstream.requests[-1].body


@pytest.mark.parametrize(
    ("request_text", "writes"),
    [
        ("What port does settings.toml configure?", False),
        ("Which file defines parse_args?", False),
        ("Summarise README.md in one line", False),
        ("Fix the off-by-one in items.py", True),
        ("Rename mul to multiply in ops.py and main.py", True),
        ("Create hello.txt containing hi", True),
        # Other wording: what the request means decides, not its verbs or punctuation.
        ("paginate in pages.py is broken, can you sort it out?", True),
        ("I need a file called requirements.txt listing requests and click", True),
        ("Could you add fahrenheit_to_celsius(f) to units.py?", True),
        ("report.py blows up with ModuleNotFoundError when I run it", True),
        ("what's the max upload size set in settings.toml? just the number", False),
        ("give me a one-line summary of ratelimit.py", False),
        ("where is parse_duration defined?", False),
        ("Which functions call send_alert?", False),
        # A change named anywhere is a change, whatever the first word.
        ("Find and replace foo with bar in app.py", True),
        ("Where parse_config opens the file, add a try/except", True),
        ("List the TODOs in app.py and remove them", True),
        ("When the config file is missing, fall back to defaults in config.py", True),
        ("set DEBUG to False in settings.py", True),
        # A change verb inside an opening question asks for nothing to be changed.
        ("which functions write to the audit trail? I need the function names and their files", False),
        ("how do I add a flag to cli.py?", False),
        ("What does main.py print? Then add a --quiet flag.", True),
    ],
)
async def test_a_question_is_offered_no_write_tools(
    upstream: ScriptedUpstream, request_text: str, writes: bool
) -> None:
    body = await inner_request(upstream, [{"role": "user", "content": request_text}])

    assert {"read_file", "search_files", "terminal", "reply"} <= offered(body)
    assert ({"write_file", "patch"} <= offered(body)) is writes
    assert wants_change(request_text) is writes
    assert "write_file" in body["messages"][0]["content"]  # the prompt (and its cache) stays the same


def test_the_check_a_request_names() -> None:
    assert named_check("Fix calc.py so that `python -m pytest -q` passes") == "python -m pytest -q"
    assert named_check("make the tests pass (pytest -q)") == "pytest -q"
    assert named_check("use `foo_bar` and then run `npm test`") == "npm test"
    assert named_check("what does `foo` return?") is None


@pytest.mark.parametrize(
    ("request_text", "check"),
    [
        ("main.py fails with an ImportError; fix it so python main.py prints 42", "python main.py"),
        ("running python3 report.py blows up", "python3 report.py"),
        ("wire --min-count into wordcount.py: python wordcount.py --min-count 2 words.txt", None),
        ("make the tests pass with pytest -q", "pytest -q"),
        ("the tests fail, please fix stats.py", "python -m pytest -q"),  # a folder with tests
        ("summarise python.md", None),
        ("Make python app.py --verbose print the config", "python app.py --verbose"),  # "print" is English
        ("Fix it so python main.py -v works", "python main.py -v"),
    ],
)
def test_the_check_is_found_in_any_wording(tmp_path: Path, request_text: str, check: str | None) -> None:
    (tmp_path / "test_stats.py").write_text("def test_x():\n    pass\n")
    expected = check or ("python wordcount.py --min-count 2 words.txt" if "wordcount" in request_text else None)
    assert named_check(request_text, tmp_path) == expected


def test_failing_tests_name_no_check_in_a_folder_without_tests(tmp_path: Path) -> None:
    assert named_check("the tests fail, please fix stats.py", tmp_path) is None


def _edit_then(request: str, *after: dict[str, Any]) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "patch", "arguments": '{"path": "calc.py"}'}}
    return [
        {"role": "user", "content": request},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "Patched /w/calc.py: replaced 1 occurrence.\n-a\n+b"},
        *after,
    ]


async def test_after_an_edit_hermes_runs_the_named_check_itself(upstream: ScriptedUpstream) -> None:
    from hermes.agent.provider import ToolCallChunk

    provider = JsonActionProvider(OpenAICompatProvider(base_url=upstream.base_url))
    messages = _edit_then("Fix calc.py so `python -m pytest -q` passes")
    try:
        events = [e async for e in provider.stream(ModelRequest(model="m", messages=messages, tools=TOOLS))]
        # With the help off, the model is asked to run it instead.
        upstream.enqueue(text_reply(json.dumps({"action": "reply", "args": {"text": "ok"}})))
        plain = JsonActionProvider(OpenAICompatProvider(base_url=upstream.base_url), assist=False)
        [e async for e in plain.stream(ModelRequest(model="m", messages=messages, tools=TOOLS))]
        await plain.aclose()
    finally:
        await provider.aclose()

    (chunk,) = [e for e in events if isinstance(e, ToolCallChunk)]
    assert (chunk.name, json.loads(chunk.arguments)) == ("terminal", {"command": "python -m pytest -q"})
    assert len(upstream.requests) == 1  # only the assist-off provider called the model


async def test_once_the_check_ran_the_model_is_left_to_answer(upstream: ScriptedUpstream) -> None:
    command = '{"command": "python -m pytest -q"}'
    run = {"id": "c2", "type": "function", "function": {"name": "terminal", "arguments": command}}
    messages = _edit_then(
        "Fix calc.py so `python -m pytest -q` passes",
        {"role": "assistant", "content": None, "tool_calls": [run]},
        {"role": "tool", "tool_call_id": "c2", "content": "exit code: 0\n1 passed"},
    )
    body = await inner_request(upstream, messages)

    assert "run the check" not in body["messages"][-1]["content"]
    assert "`python -m pytest -q` passes now" in body["messages"][-1]["content"]
    assert "reply to the user: say which files you changed" in body["messages"][-1]["content"]


async def test_the_file_a_request_names_is_read_first_without_a_model_call(
    upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    from hermes.agent.prompt import default_system_prompt
    from hermes.agent.provider import ToolCallChunk

    (tmp_path / "jobs.py").write_text("class JobQueue: ...\n")
    system = {"role": "system", "content": default_system_prompt(str(tmp_path))}
    provider = JsonActionProvider(OpenAICompatProvider(base_url=upstream.base_url))
    try:
        named = [system, {"role": "user", "content": "Summarise jobs.py in one line"}]
        first = [e async for e in provider.stream(ModelRequest(model="m", messages=named, tools=TOOLS))]
        absent = [system, {"role": "user", "content": "Summarise other.py"}]
        missing = ModelRequest(model="m", messages=absent, tools=TOOLS)
        upstream.enqueue(text_reply(json.dumps({"action": "reply", "args": {"text": "no such file"}})))
        second = [e async for e in provider.stream(missing)]
    finally:
        await provider.aclose()

    calls = [e for e in first if isinstance(e, ToolCallChunk)]
    assert [(c.name, json.loads(c.arguments)) for c in calls] == [("read_file", {"path": "jobs.py"})]
    assert len(upstream.requests) == 1  # only the request naming a file that does not exist asked the model
    assert not any(isinstance(e, ToolCallChunk) for e in second)


async def test_a_fix_opens_with_the_named_check_then_the_named_file(upstream: ScriptedUpstream, tmp_path: Path) -> None:
    from hermes.agent.prompt import default_system_prompt
    from hermes.agent.provider import ToolCallChunk

    (tmp_path / "main.py").write_text("from helper import answer\n")
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": default_system_prompt(str(tmp_path))},
        {"role": "user", "content": "main.py fails. Fix the import so that `python main.py` prints 42."},
    ]
    provider = JsonActionProvider(OpenAICompatProvider(base_url=upstream.base_url))
    steps = []
    try:
        for n in range(2):
            events = [e async for e in provider.stream(ModelRequest(model="m", messages=messages, tools=TOOLS))]
            (chunk,) = [e for e in events if isinstance(e, ToolCallChunk)]
            steps.append((chunk.name, json.loads(chunk.arguments)))
            call = {"id": f"c{n}", "function": {"name": chunk.name, "arguments": chunk.arguments}}
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": "result"})
    finally:
        await provider.aclose()

    assert steps == [("terminal", {"command": "python main.py"}), ("read_file", {"path": "main.py"})]
    assert upstream.requests == []  # neither step asked the model


async def test_with_assist_off_only_the_protocol_is_left(upstream: ScriptedUpstream, tmp_path: Path) -> None:
    from hermes.agent.prompt import default_system_prompt

    (tmp_path / "jobs.py").write_text("class JobQueue: ...\n")
    system = {"role": "system", "content": default_system_prompt(str(tmp_path))}
    failing = {"role": "tool", "tool_call_id": "c2", "content": "exit code: 1\n--- stderr ---\nAssertionError: 3"}
    run = {"id": "c2", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "pytest"}'}}
    provider = JsonActionProvider(OpenAICompatProvider(base_url=upstream.base_url), assist=False)
    try:
        for messages in (
            [system, {"role": "user", "content": "Summarise jobs.py in one line"}],
            _edit_then("Fix calc.py so `python -m pytest -q` passes"),
            _edit_then("Fix calc.py", {"role": "assistant", "content": None, "tool_calls": [run]}, failing),
        ):
            upstream.enqueue(text_reply(json.dumps({"action": "reply", "args": {"text": "ok"}})))
            [e async for e in provider.stream(ModelRequest(model="m", messages=messages, tools=TOOLS))]
    finally:
        await provider.aclose()

    question, edited, failed = (request.body for request in upstream.requests)
    assert {"write_file", "patch"} <= offered(question)  # no tools withheld for a question
    assert question["messages"][-1]["content"] == "Summarise jobs.py in one line"  # no read first: the model asked
    assert "run the check" not in edited["messages"][-1]["content"]
    assert "still fails after your edit" not in failed["messages"][-1]["content"]
    assert "with reply if this result is enough" in failed["messages"][-1]["content"]


def test_small_model_assist_is_a_setting(tmp_path: Path) -> None:
    from hermes.agent.providers.json_actions import with_tool_protocol
    from hermes.config import Settings

    inner = OpenAICompatProvider(base_url="http://127.0.0.1:9/v1")
    for value, expected in (("false", False), ("true", True)):
        settings = Settings.load(env={"HERMES_HOME": str(tmp_path), "HERMES_SMALL_MODEL_ASSIST": value})
        wrapped = with_tool_protocol(inner, "json", assist=settings.small_model_assist)
        assert isinstance(wrapped, JsonActionProvider)
        assert wrapped.assist is expected
    assert Settings.load(env={"HERMES_HOME": str(tmp_path)}).small_model_assist is True


async def _opening_steps(
    upstream: ScriptedUpstream, folder: Path, request: str, results: list[str]
) -> list[tuple[str, dict[str, Any]]]:
    """The adapter's own steps for `request` in `folder`, each answered with the next of `results`."""
    from hermes.agent.prompt import default_system_prompt
    from hermes.agent.provider import ToolCallChunk

    messages: list[dict[str, Any]] = [
        {"role": "system", "content": default_system_prompt(str(folder))},
        {"role": "user", "content": request},
    ]
    provider = JsonActionProvider(OpenAICompatProvider(base_url=upstream.base_url))
    steps = []
    try:
        for n, result in enumerate(results):
            events = [e async for e in provider.stream(ModelRequest(model="m", messages=messages, tools=TOOLS))]
            (chunk,) = [e for e in events if isinstance(e, ToolCallChunk)]
            steps.append((chunk.name, json.loads(chunk.arguments)))
            call = {"id": f"c{n}", "function": {"name": chunk.name, "arguments": chunk.arguments}}
            messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": result})
    finally:
        await provider.aclose()
    assert upstream.requests == []  # none of these steps asked the model
    return steps


async def test_a_question_naming_code_but_no_file_opens_with_a_search(
    upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    steps = await _opening_steps(upstream, tmp_path, "Which functions call send_alert?", ["3 matches"])
    assert steps == [("search_files", {"pattern": r"\bsend_alert\b"})]


async def test_a_rename_across_two_named_files_reads_both(upstream: ScriptedUpstream, tmp_path: Path) -> None:
    (tmp_path / "db.py").write_text("def fetch_rows():\n    return [1]\n")
    (tmp_path / "report.py").write_text("from db import fetch_rows\n")
    request = "Rename fetch_rows to load_rows in db.py and in report.py, which calls it."
    steps = await _opening_steps(upstream, tmp_path, request, ["1|def fetch_rows():", "1|from db import fetch_rows"])
    assert steps == [("read_file", {"path": "db.py"}), ("read_file", {"path": "report.py"})]


async def test_a_long_named_file_is_read_around_the_code_it_names(upstream: ScriptedUpstream, tmp_path: Path) -> None:
    lines = [f"def helper_{n}():\n    return {n}\n" for n in range(150)]
    lines.insert(120, "def low_stock(items, limit):\n    return [i for i in items if i.count < limit]\n")
    (tmp_path / "inventory.py").write_text("\n".join(lines))
    request = "low_stock in inventory.py should include items exactly at the limit"
    found = "1 matches for /\\blow_stock\\b/ in inventory.py:\ninventory.py:361: def low_stock(items, limit):"
    steps = await _opening_steps(upstream, tmp_path, request, [found, "341|..."])
    assert steps == [
        ("search_files", {"pattern": r"\blow_stock\b", "path": "inventory.py"}),
        ("read_file", {"path": "inventory.py", "offset": 341, "limit": 60}),
    ]


async def test_a_check_failing_on_a_missing_module_is_followed_by_the_python_files(
    upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    (tmp_path / "main.py").write_text("from helper import answer\n")
    missing = "exit code: 1\n--- stderr ---\nModuleNotFoundError: No module named 'helper'"
    request = "main.py fails. Fix the import so that python main.py prints 42."
    steps = await _opening_steps(upstream, tmp_path, request, [missing, "helpers.py\nmain.py", "1|from helper import"])
    assert steps == [
        ("terminal", {"command": "python main.py"}),
        ("list_files", {"pattern": "*.py"}),
        ("read_file", {"path": "main.py"}),
    ]


async def test_a_command_the_model_ran_failing_on_a_missing_name_is_looked_up_once(
    upstream: ScriptedUpstream,
) -> None:
    from hermes.agent.provider import ToolCallChunk

    failed = "exit code: 1\n--- stderr ---\nImportError: cannot import name 'load_rows' from 'db' (/w/db.py)"
    run = {"id": "c1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "python x.py"}'}}
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "rename fetch_rows to load_rows"},
        {"role": "assistant", "content": None, "tool_calls": [run]},
        {"role": "tool", "tool_call_id": "c1", "content": failed},
    ]
    provider = JsonActionProvider(OpenAICompatProvider(base_url=upstream.base_url))
    try:
        events = [e async for e in provider.stream(ModelRequest(model="m", messages=messages, tools=TOOLS))]
        (chunk,) = [e for e in events if isinstance(e, ToolCallChunk)]
        assert (chunk.name, json.loads(chunk.arguments)) == ("search_files", {"pattern": r"\b(def|class) load_rows\b"})
        look = {"id": "c2", "type": "function", "function": {"name": chunk.name, "arguments": chunk.arguments}}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [look]},
            {"role": "tool", "tool_call_id": "c2", "content": "No matches"},
            {"role": "assistant", "content": None, "tool_calls": [{**run, "id": "c3"}]},
            {"role": "tool", "tool_call_id": "c3", "content": failed},
        ]
        upstream.enqueue(text_reply(json.dumps({"action": "reply", "args": {"text": "still failing"}})))
        again = [e async for e in provider.stream(ModelRequest(model="m", messages=messages, tools=TOOLS))]
    finally:
        await provider.aclose()
    assert not any(isinstance(e, ToolCallChunk) for e in again)  # once per turn: the model is asked now
    assert len(upstream.requests) == 1


async def test_an_edit_that_drops_a_definition_is_pointed_out(upstream: ScriptedUpstream) -> None:
    dropped = json.dumps(
        {"path": "mathx.py", "old_string": "def square(n: int) -> int:", "new_string": "def is_even(n):\n    return 1"}
    )
    edit = {"id": "c1", "type": "function", "function": {"name": "patch", "arguments": dropped}}
    messages = [
        {"role": "user", "content": "Add a function is_even(n) to mathx.py"},
        {"role": "assistant", "content": None, "tool_calls": [edit]},
        {"role": "tool", "tool_call_id": "c1", "content": "Patched mathx.py: replaced 1 occurrence."},
    ]
    body = await inner_request(upstream, messages)
    assert "Your edit took `square` out of mathx.py" in body["messages"][-1]["content"]

    renamed = [{**messages[0], "content": "Rename square to is_even in mathx.py"}, *messages[1:]]
    body = await inner_request(upstream, renamed)
    assert "took `square` out" not in body["messages"][-1]["content"]  # the request names it: meant


async def test_a_crash_is_followed_into_the_module_it_happens_in(upstream: ScriptedUpstream, tmp_path: Path) -> None:
    (tmp_path / "app.py").write_text("from pricing import total\nprint(total())\n")
    (tmp_path / "pricing.py").write_text("def total():\n    return 1 - '2'\n")
    crash = (
        "exit code: 1\n--- stderr ---\nTraceback (most recent call last):\n"
        f'  File "{tmp_path}/app.py", line 2, in <module>\n    print(total())\n'
        f"  File \"{tmp_path}/pricing.py\", line 2, in total\n    return 1 - '2'\n"
        "TypeError: unsupported operand type(s) for -: 'int' and 'str'"
    )
    steps = await _opening_steps(
        upstream, tmp_path, "python app.py crashes, please fix it", [crash, "1|def total():", "1|from pricing"]
    )
    assert steps == [
        ("terminal", {"command": "python app.py"}),
        ("read_file", {"path": "pricing.py"}),
        ("read_file", {"path": "app.py"}),
    ]


async def test_every_caller_is_searched_for_even_when_files_are_named(
    upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    (tmp_path / "money.py").write_text("def format_price(amount):\n    return f'{amount:.2f}'\n")
    request = "Give `format_price` in money.py a currency parameter and update every caller."
    steps = await _opening_steps(upstream, tmp_path, request, ["1|def format_price(amount):", "3 matches"])
    assert steps == [("read_file", {"path": "money.py"}), ("search_files", {"pattern": r"\bformat_price\b"})]


def test_the_rendered_transcript_depends_on_the_transcript_not_the_folder(tmp_path: Path) -> None:
    from hermes.agent.prompt import default_system_prompt
    from hermes.agent.providers.action_steering import rewrite_messages

    def call(n: int, name: str, args: dict[str, Any]) -> dict[str, Any]:
        return {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}

    messages: list[dict[str, Any]] = [
        {"role": "system", "content": default_system_prompt(str(tmp_path))},
        {"role": "user", "content": "the tests fail, please fix stats.py"},
        {"role": "assistant", "content": None, "tool_calls": [call(1, "terminal", {"command": "python -m pytest -q"})]},
        {"role": "tool", "tool_call_id": "c1", "content": "exit code: 1\n--- stdout ---\nE   assert 3 == 4"},
        {"role": "assistant", "content": None, "tool_calls": [call(2, "patch", {"path": "stats.py"})]},
        {"role": "tool", "tool_call_id": "c2", "content": "Patched stats.py: replaced 1 occurrence."},
    ]
    before = rewrite_messages(messages, TOOLS)
    (tmp_path / "test_stats.py").write_text("def test_x():\n    pass\n")  # the folder changes
    assert rewrite_messages(messages, TOOLS) == before
    # The command the turn opened with is its check: it is asked for again after the change.
    assert "run the check the request names with terminal: python -m pytest -q" in before[-1]["content"]
    assert "`python -m pytest -q` fails:\nE   assert 3 == 4" in before[-3]["content"]


async def test_an_edit_that_takes_a_named_code_name_out_is_followed_by_a_search_for_it(
    upstream: ScriptedUpstream,
) -> None:
    from hermes.agent.provider import ToolCallChunk

    def edited(old: str, new: str, request: str) -> list[dict[str, Any]]:
        args = json.dumps({"path": "db.py", "old_string": old, "new_string": new})
        edit = {"id": "c1", "type": "function", "function": {"name": "patch", "arguments": args}}
        return [
            {"role": "user", "content": request},
            {"role": "assistant", "content": None, "tool_calls": [edit]},
            {"role": "tool", "tool_call_id": "c1", "content": "Patched db.py: replaced 1 occurrence."},
        ]

    provider = JsonActionProvider(OpenAICompatProvider(base_url=upstream.base_url))
    try:
        request = "Rename fetch_rows to load_rows in db.py and report.py"
        rename = edited("def fetch_rows():", "def load_rows():", request)
        events = [e async for e in provider.stream(ModelRequest(model="m", messages=rename, tools=TOOLS))]
        (chunk,) = [e for e in events if isinstance(e, ToolCallChunk)]
        assert (chunk.name, json.loads(chunk.arguments)) == ("search_files", {"pattern": r"\bfetch_rows\b"})
        assert upstream.requests == []
        # An edit that keeps the name (or one the request does not name) asks the model.
        kept = edited("def fetch_rows():", "def fetch_rows(limit=None):", "Give fetch_rows a limit in db.py")
        upstream.enqueue(text_reply(json.dumps({"action": "reply", "args": {"text": "done"}})))
        [e async for e in provider.stream(ModelRequest(model="m", messages=kept, tools=TOOLS))]
        assert len(upstream.requests) == 1
    finally:
        await provider.aclose()


async def test_a_failed_edit_after_the_check_passed_is_told_the_work_is_in(upstream: ScriptedUpstream) -> None:
    def step(n: int, name: str, args: dict[str, Any], result: str) -> list[dict[str, Any]]:
        raw = {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        return [
            {"role": "assistant", "content": None, "tool_calls": [raw]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": result},
        ]

    fix = {"path": "stats.py", "old_string": "(len(values) - 1)", "new_string": "len(values)"}
    messages = [
        {"role": "user", "content": "Fix stats.py so that `python -m pytest -q` passes"},
        *step(1, "patch", fix, "Patched stats.py: replaced 1 occurrence."),
        *step(2, "terminal", {"command": "python -m pytest -q"}, "exit code: 0\n--- stdout ---\n1 passed"),
        *step(3, "patch", fix, "Error: no match for old_string in stats.py"),
    ]
    body = await inner_request(upstream, messages)  # no re-read first: the model is asked
    note = body["messages"][-1]["content"]
    assert "`python -m pytest -q` already passed after your last change" in note
    assert "call patch again" not in note


async def test_a_missing_module_with_a_near_name_is_named_to_the_model(
    upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    (tmp_path / "main.py").write_text("from helper import answer\n")
    missing = "exit code: 1\n--- stderr ---\nModuleNotFoundError: No module named 'helper'"
    listing = f"2 files under {tmp_path} matching '*.py':\nhelpers.py\nmain.py"
    request = "main.py fails. Fix the import so that python main.py prints 42."
    steps = await _opening_steps(upstream, tmp_path, request, [missing, listing, "1|from helper import answer"])
    assert [name for name, _ in steps] == ["terminal", "list_files", "read_file"]

    from hermes.agent.prompt import default_system_prompt

    messages: list[dict[str, Any]] = [
        {"role": "system", "content": default_system_prompt(str(tmp_path))},
        {"role": "user", "content": request},
    ]
    results = [missing, listing, "1|from helper import answer"]
    for n, ((name, args), result) in enumerate(zip(steps, results, strict=True)):
        raw = {"id": f"c{n}", "type": "function", "function": {"name": name, "arguments": json.dumps(args)}}
        messages += [
            {"role": "assistant", "content": None, "tool_calls": [raw]},
            {"role": "tool", "tool_call_id": f"c{n}", "content": result},
        ]
    body = await inner_request(upstream, messages)
    note = body["messages"][-1]["content"]
    assert "`python main.py` fails:\nModuleNotFoundError: No module named 'helper'" in note  # still, after the reads
    assert "There is no module `helper` here, but there is `helpers` (helpers.py)." in note


@pytest.mark.parametrize(
    ("request_text", "names"),
    [
        ("Which file defines the Scheduler class?", ["Scheduler"]),
        ("where is the class named Scheduler defined", ["Scheduler"]),
        ("Which file has the function parse?", ["parse"]),
        ("What does the class do?", []),
        ("use OpenAI and PostgreSQL for InvoiceBuilder", ["InvoiceBuilder"]),
        ("Give `format_price` a currency", ["format_price"]),
        ("I need the function names and the file each one is in", []),
    ],
)
def test_code_names_in_a_request(request_text: str, names: list[str]) -> None:
    from hermes.agent.providers.task_cues import named_identifiers

    assert named_identifiers(request_text) == names


async def test_an_add_request_whose_edit_drops_a_named_function_is_told_not_searched(
    upstream: ScriptedUpstream,
) -> None:
    dropped = json.dumps(
        {"path": "colors.py", "old_string": "def hex_to_rgb(value):", "new_string": "def rgb_to_hex(r, g, b):"}
    )
    edit = {"id": "c1", "type": "function", "function": {"name": "patch", "arguments": dropped}}
    messages = [
        {"role": "user", "content": "Add rgb_to_hex to colors.py, the inverse of hex_to_rgb"},
        {"role": "assistant", "content": None, "tool_calls": [edit]},
        {"role": "tool", "tool_call_id": "c1", "content": "Patched colors.py: replaced 1 occurrence."},
    ]
    body = await inner_request(upstream, messages)  # the model is asked: no search for hex_to_rgb's callers
    assert "Your edit took `hex_to_rgb` out of colors.py" in body["messages"][-1]["content"]


async def test_a_question_about_the_files_naming_none_opens_with_a_listing(
    upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    request = "how many retries does the uploader get? it's set somewhere in the deploy settings"
    steps = await _opening_steps(upstream, tmp_path, request, ["deploy/settings.toml"])
    assert steps == [("list_files", {})]


async def test_a_chat_question_opens_with_nothing(upstream: ScriptedUpstream, tmp_path: Path) -> None:
    from hermes.agent.prompt import default_system_prompt

    messages = [
        {"role": "system", "content": default_system_prompt(str(tmp_path))},
        {"role": "user", "content": "What can you help me with?"},
    ]
    await inner_request(upstream, messages)
    assert len(upstream.requests) == 1  # the model was asked at once


@pytest.mark.parametrize(
    ("found", "then"),
    [
        ("1 matches for /…/ in .:\napp/core/timing.py:4: class Scheduler:", []),
        ("No matches for /…/ in .; 6 files searched.", [("search_files", {"pattern": r"\bScheduler\b"})]),
    ],
)
async def test_where_a_name_is_defined_opens_with_a_search_for_its_definition(
    upstream: ScriptedUpstream, tmp_path: Path, found: str, then: list[tuple[str, dict[str, Any]]]
) -> None:
    from hermes.agent.providers.task_cues import definition_pattern

    request = "Where is the Scheduler class defined? Just tell me the file."
    steps = await _opening_steps(upstream, tmp_path, request, [found] + ["1 matches"] * len(then))
    assert steps == [("search_files", {"pattern": definition_pattern("Scheduler")}), *then]


def test_the_definition_pattern_finds_definitions_not_uses(tmp_path: Path) -> None:
    import re

    from hermes.agent.providers.task_cues import asks_for_definition, definition_pattern

    pattern = re.compile(definition_pattern("Scheduler"))
    assert [line for line in (
        "class Scheduler:", "    class Scheduler(Base):", "def Scheduler():", "export function Scheduler() {",
        "type Scheduler struct {", "Scheduler = make_scheduler()",
    ) if not pattern.search(line)] == []  # fmt: skip
    assert [line for line in (
        "from app.core.timing import Scheduler", "scheduler = Scheduler(60)", "# the Scheduler runs these",
        "class SchedulerError(Exception):",
    ) if pattern.search(line)] == []  # fmt: skip
    assert asks_for_definition("which file defines parse_args?")
    assert not asks_for_definition("Which functions call send_alert?")


async def test_a_name_that_cannot_be_imported_is_followed_by_what_its_module_defines(
    upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    from hermes.agent.providers.own_steps import DEFINED_NAMES

    (tmp_path / "money.py").write_text("VAT = 0.2\n\n\ndef gross_price(net):\n    return net * (1 + VAT)\n")
    (tmp_path / "shop.py").write_text("from money import price_with_vat\n")
    failed = (
        "exit code: 1\n--- stderr ---\nTraceback (most recent call last):\n"
        f'  File "{tmp_path}/shop.py", line 1, in <module>\n    from money import price_with_vat\n'
        f"ImportError: cannot import name 'price_with_vat' from 'money' ({tmp_path}/money.py)"
    )
    steps = await _opening_steps(upstream, tmp_path, "`python shop.py` dies with an ImportError. fix it", [failed, "…"])
    assert steps == [
        ("terminal", {"command": "python shop.py"}),
        ("search_files", {"pattern": DEFINED_NAMES, "path": "money.py"}),
    ]
    # What the search finds there: the module's own names, not its uses.
    import re

    defined = [line for line in (tmp_path / "money.py").read_text().splitlines() if re.search(DEFINED_NAMES, line)]
    assert defined == ["VAT = 0.2", "def gross_price(net):"]


def test_a_module_outside_the_project_is_not_searched(tmp_path: Path) -> None:
    from hermes.agent.providers.own_steps import _lookup_for

    failed = (
        "exit code: 1\n--- stderr ---\n"
        "ImportError: cannot import name 'nope' from 'json' (/usr/lib/python3.11/json/__init__.py)"
    )
    lookup = _lookup_for(failed, {"search_files"}, tmp_path)
    assert lookup is not None and lookup.args == {"pattern": r"\b(def|class) nope\b"}


@pytest.mark.parametrize(
    ("after", "no_progress"),
    [
        (
            "  File \"/w/shop.py\", line 1, in <module>\n    from money import price\nImportError: no 'price'",
            True,
        ),
        ("  File \"/w/shop.py\", line 4, in <module>\n    print(total)\nNameError: name 'total' is not defined", False),
        ("  File \"/w/shop.py\", line 1\n    from money import (\nSyntaxError: '(' was never closed", True),
    ],
)
def test_an_edit_made_no_progress_when_it_fails_in_the_same_place_the_same_way(after: str, no_progress: bool) -> None:
    from hermes.agent.providers.own_steps import no_better

    before = (
        'Traceback (most recent call last):\n  File "/w/shop.py", line 1, in <module>\n'
        "    from money import price_with_vat\nImportError: cannot import name 'price_with_vat'"
    )
    assert no_better(before, "Traceback (most recent call last):\n" + after) is no_progress

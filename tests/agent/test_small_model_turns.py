"""A small model's turn through the JSON-action adapter: a failed check after an edit is the
start of the next step, and a turn never ends on hermes' own words.

Through the real engine, the real core tools (files and terminal) and the real
OpenAICompatProvider, with a scripted upstream playing the small model.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from hermes.agent.engine import Agent, EngineOptions
from hermes.agent.events import AgentEvent, Status, TextDelta, ToolCompleted, TurnCompleted
from hermes.agent.providers.action_steering import FAILED_AFTER_EDIT_NOTE
from hermes.agent.providers.json_actions import ECHO_NOTE, RETRY_TEMPERATURE, JsonActionProvider
from hermes.agent.providers.openai_compat import OpenAICompatProvider
from hermes.agent.providers.own_steps import MAX_UNDOS
from hermes.agent.tools import default_registry
from hermes.agent.tools.edit_history import HERMES_UNDO_PREFIX
from hermes.agent.turn_facts import HERMES_MARK
from hermes.agent.types import TurnRequest, TurnResult
from hermes.testing.upstream import ScriptedUpstream, text_reply

STATS = "def mean(values):\n    return sum(values) / (len(values) - 1)\n"
CHECK = "from stats import mean\n\nassert mean([2, 4, 6]) == 4, mean([2, 4, 6])\nprint('mean ok')\n"
CHECK_COMMAND = f"{sys.executable} check_stats.py"
REQUEST = "mean in stats.py is off. Fix it; check_stats.py has to pass."


def action(name: str, args: dict[str, Any]) -> str:
    return json.dumps({"action": name, "args": args})


def patch(old: str, new: str) -> str:
    return action("patch", {"path": "stats.py", "old_string": old, "new_string": new})


RUN_CHECK = action("terminal", {"command": CHECK_COMMAND})


@pytest.fixture
async def upstream() -> AsyncIterator[ScriptedUpstream]:
    async with ScriptedUpstream() as server:
        yield server


def make_agent(upstream: ScriptedUpstream, *, assist: bool = True, max_iterations: int = 12) -> Agent:
    provider = JsonActionProvider(OpenAICompatProvider(base_url=upstream.base_url, api_key="k"), assist=assist)
    options = EngineOptions(max_iterations=max_iterations)
    return Agent(provider, store=None, model="m", tools=default_registry(), options=options)


async def run(agent: Agent, folder: Path, request: str = REQUEST) -> tuple[list[AgentEvent], TurnResult]:
    try:
        turn = TurnRequest(input=request, persist=False, cwd=str(folder), yolo=True)
        events = [e async for e in agent.run_turn(turn)]
    finally:
        await agent.aclose()
    assert isinstance(events[-1], TurnCompleted)
    return events, events[-1].result


def last_user_text(body: dict[str, Any]) -> str:
    return str(body["messages"][-1]["content"])


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "stats.py").write_text(STATS, encoding="utf-8")
    (tmp_path / "check_stats.py").write_text(CHECK, encoding="utf-8")
    return tmp_path


async def test_a_failed_check_after_an_edit_leads_to_a_second_edit(upstream: ScriptedUpstream, project: Path) -> None:
    upstream.enqueue(
        text_reply(patch("(len(values) - 1)", "(len(values) - 2)")),  # a wrong fix
        text_reply(RUN_CHECK),
        text_reply(patch("(len(values) - 2)", "len(values)")),  # changed, not undone
        text_reply(RUN_CHECK),
        text_reply(action("reply", {"text": "mean divided by len - 1; it divides by len now and the check passes."})),
    )

    events, result = await run(make_agent(upstream), project)

    assert result.status == "completed", result.error
    fixed = "def mean(values):\n    return sum(values) / len(values)\n"
    assert (project / "stats.py").read_text(encoding="utf-8") == fixed
    assert result.final_text.startswith("mean divided by len - 1")
    assert result.answer_by == "model"
    # The step after the failed check saw its essential lines next to the edit it made.
    after_failure = last_user_text(upstream.requests[2].body)
    assert "still fails after your edit of stats.py" in after_failure
    assert "you replaced `(len(values) - 1)` with `(len(values) - 2)`" in after_failure
    assert "AssertionError: 12.0" in after_failure  # the exception line, with its message
    assert 'check_stats.py", line 3' in after_failure  # the last frame
    assert "Do not just undo your edit" in after_failure
    # Once it passes, the model is asked to say what it changed.
    assert "passes now" in last_user_text(upstream.requests[4].body)
    failed = [e.is_error for e in events if isinstance(e, ToolCompleted) and e.name == "terminal"]
    assert len(failed) == 2


async def test_the_note_is_only_for_a_failure_after_a_change(upstream: ScriptedUpstream, project: Path) -> None:
    upstream.enqueue(
        text_reply(RUN_CHECK),  # fails, but nothing was changed yet
        text_reply(action("reply", {"text": "The check fails: mean([2, 4, 6]) is 6.0, not 4."})),
    )

    _, result = await run(make_agent(upstream), project, "Why does check_stats.py fail?")

    note = last_user_text(upstream.requests[1].body)
    assert "still fails after your edit" not in note
    assert result.final_text.startswith("The check fails")
    assert (project / "stats.py").read_text(encoding="utf-8") == STATS


async def test_a_turn_the_model_ends_with_the_request_echoed_gets_hermes_answer(
    upstream: ScriptedUpstream, project: Path
) -> None:
    echo = action("reply", {"text": REQUEST})
    upstream.enqueue(
        text_reply(patch("(len(values) - 1)", "(len(values) - 2)")),
        text_reply(RUN_CHECK),
        text_reply(echo),  # the request handed back ...
        text_reply(echo),  # ... again after being told so ...
        text_reply(echo),  # ... and a third time, with only `reply` allowed
    )

    events, result = await run(make_agent(upstream), project)

    assert result.status == "completed"
    assert result.answer_by == "hermes"
    text = result.final_text
    assert text.startswith(HERMES_MARK)
    assert "Changed: stats.py." in text
    assert f"`{CHECK_COMMAND}` failed (exit code 1)" in text
    assert "AssertionError" in text
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert REQUEST not in shown  # the echo was held back, never shown
    assert shown.strip() == text
    assert last_user_text(upstream.requests[3].body) == ECHO_NOTE


async def test_hermes_own_steering_text_is_never_the_answer(upstream: ScriptedUpstream, project: Path) -> None:
    upstream.enqueue(
        text_reply(patch("(len(values) - 1)", "(len(values) - 2)")),
        text_reply(RUN_CHECK),
    )
    # The model answers with the note it was just given, word for word.
    note = FAILED_AFTER_EDIT_NOTE.split("\n")[2].format(path="stats.py", request=REQUEST)
    assert note.startswith("Your edit is kept.")
    upstream.enqueue(*(text_reply(action("reply", {"text": note})) for _ in range(3)))

    _, result = await run(make_agent(upstream), project)

    assert result.answer_by == "hermes"
    assert "Your edit is kept" not in result.final_text
    assert "Changed: stats.py." in result.final_text


async def test_an_echo_followed_by_a_real_answer_keeps_the_model_answer(
    upstream: ScriptedUpstream, project: Path
) -> None:
    upstream.enqueue(
        text_reply(patch("(len(values) - 1)", "len(values)")),
        text_reply(RUN_CHECK),
        text_reply(action("reply", {"text": REQUEST})),
        text_reply(action("reply", {"text": "Fixed mean in stats.py: it divides by len(values); the check passes."})),
    )

    events, result = await run(make_agent(upstream), project)

    assert result.answer_by == "model"
    assert result.final_text.startswith("Fixed mean in stats.py")
    assert REQUEST not in "".join(e.text for e in events if isinstance(e, TextDelta))


async def test_a_reply_that_restates_the_request_before_answering_is_the_model_answer(
    upstream: ScriptedUpstream, project: Path
) -> None:
    reply = f"{REQUEST} Done: mean now divides by len(values), and check_stats.py prints mean ok."
    upstream.enqueue(
        text_reply(patch("(len(values) - 1)", "len(values)")),
        text_reply(RUN_CHECK),
        text_reply(action("reply", {"text": reply})),
    )

    events, result = await run(make_agent(upstream), project)

    assert result.answer_by == "model"
    assert result.final_text == reply
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == reply  # held, then shown whole
    assert len(upstream.requests) == 3  # not asked again


async def test_an_empty_answer_after_tools_gets_hermes_answer(upstream: ScriptedUpstream, project: Path) -> None:
    upstream.enqueue(text_reply(RUN_CHECK), text_reply(action("reply", {"text": ""})))

    _, result = await run(make_agent(upstream), project, "run check_stats.py")

    assert result.answer_by == "hermes"
    assert "No file was changed." in result.final_text
    assert "failed (exit code 1)" in result.final_text


async def test_a_turn_without_tools_keeps_an_echo(upstream: ScriptedUpstream, tmp_path: Path) -> None:
    # "Say it back" gets the words back: no tool ran, so nothing steered the model.
    words = "the quick brown fox jumps over the lazy dog"
    upstream.enqueue(text_reply(action("reply", {"text": words})))

    _, result = await run(make_agent(upstream), tmp_path, words)

    assert result.answer_by == "model"
    assert result.final_text == words
    assert len(upstream.requests) == 1


async def test_running_out_of_steps_says_what_changed_and_what_still_fails(
    upstream: ScriptedUpstream, project: Path
) -> None:
    upstream.enqueue(
        text_reply(patch("(len(values) - 1)", "(len(values) - 2)")),
        text_reply(RUN_CHECK),
        text_reply(""),  # the tool-less summary call: the model writes nothing
    )

    _, result = await run(make_agent(upstream, max_iterations=4), project)

    assert result.status == "partial", (result.final_text, result.error)
    assert result.answer_by == "hermes", (result.final_text, result.error, len(upstream.requests))
    assert "stopped after 4 model calls" in result.final_text
    assert "Changed: stats.py." in result.final_text
    assert "failed (exit code 1)" in result.final_text


class _LocalLike(OpenAICompatProvider):
    """A provider that names itself "local", as the bundled model's does."""

    name = "local"
    model_name = "tiny"
    recommended_max_iterations = 14
    recommended_turn_seconds = 170.0


@pytest.mark.parametrize(("configured", "expected", "seconds"), [(None, 14, 170.0), ("40", 40, None)])
async def test_the_local_model_gets_a_short_turn_unless_max_iterations_is_set(
    tmp_path: Path, configured: str | None, expected: int, seconds: float | None
) -> None:
    from hermes.agent.factory import build_agent
    from hermes.config import Settings

    env = {"HERMES_HOME": str(tmp_path)} | ({"HERMES_MAX_ITERATIONS": configured} if configured else {})
    agent = build_agent(Settings.load(env=env), None, provider=_LocalLike(base_url="http://127.0.0.1:9/v1"))
    try:
        assert agent.options.max_iterations == expected
        assert agent.options.turn_seconds == seconds
    finally:
        await agent.aclose()


async def test_a_turn_past_its_time_limit_ends_on_a_summary_that_says_so(
    upstream: ScriptedUpstream, project: Path
) -> None:
    upstream.enqueue(
        text_reply(patch("(len(values) - 1)", "(len(values) - 2)")),
        text_reply(action("terminal", {"command": "sleep 1.5"})),  # the time goes by
        text_reply(""),  # the summary call: the model writes nothing
    )
    provider = JsonActionProvider(OpenAICompatProvider(base_url=upstream.base_url, api_key="k"))
    options = EngineOptions(max_iterations=30, turn_seconds=1.0)
    agent = Agent(provider, store=None, model="m", tools=default_registry(), options=options)

    events, result = await run(agent, project)

    assert len(upstream.requests) == 3
    assert upstream.requests[2].body.get("response_format") is None  # the summary call offers no tools
    statuses = [e.text for e in events if isinstance(e, Status)]
    assert "reached the turn's time limit of 1 s; asking for a summary" in statuses
    assert result.status == "partial" and result.error == "stopped at its time limit of 1 s"
    assert result.answer_by == "hermes"
    assert "(stopped at its time limit of 1 s)" in result.final_text.splitlines()[0]
    assert "Changed: stats.py." in result.final_text


NAMED = f"mean in stats.py is off. Fix it so `{CHECK_COMMAND}` passes."


async def test_an_edit_the_check_shows_did_not_help_is_undone_and_a_fresh_one_made(
    upstream: ScriptedUpstream, project: Path
) -> None:
    # hermes runs the named check first, reads the file, and after each edit runs the check
    # itself: the model only edits and answers.
    upstream.enqueue(
        text_reply(patch("(len(values) - 1)", "(len(values) - 2)")),  # fails the same way: undone
        text_reply(patch("(len(values) - 1)", "len(values)")),  # from the file as it was
        text_reply(action("reply", {"text": "mean divided by len - 1; it divides by len now."})),
    )

    events, result = await run(make_agent(upstream), project, NAMED)

    assert result.status == "completed", result.error
    assert (project / "stats.py").read_text(encoding="utf-8") == STATS.replace("(len(values) - 1)", "len(values)")
    assert result.final_text.startswith("mean divided by len - 1") and result.answer_by == "model"
    assert len(upstream.requests) == 3  # the check runs and the undo took no model call
    calls = [(e.name, e.call_id.startswith(HERMES_UNDO_PREFIX)) for e in events if isinstance(e, ToolCompleted)]
    assert calls.count(("patch", True)) == 1
    # The model's next step reads why, with the file back as it was; it did not write the undo.
    retry = upstream.requests[1].body
    note = last_user_text(retry)
    assert "That edit did not fix it, so hermes undid it: stats.py is as it was before" in note
    assert "you replaced `(len(values) - 1)` with `(len(values) - 2)`" in note
    assert "AssertionError" in note
    assert '(len(values) - 2)", "new_string"' not in json.dumps(retry["messages"])  # no undo action shown
    assert retry["temperature"] == RETRY_TEMPERATURE and upstream.requests[0].body["temperature"] < RETRY_TEMPERATURE
    # The first request's text renders the same in the next one (the prompt cache holds).
    first, second = upstream.requests[0].body["messages"], retry["messages"]
    assert second[: len(first) - 1] == first[:-1]


async def test_an_edit_that_changes_the_failure_is_kept(upstream: ScriptedUpstream, tmp_path: Path) -> None:
    # Two bugs: fixing one moves the failure on. That edit is progress: it stays.
    (tmp_path / "stats.py").write_text(STATS + "\n\ndef total(values):\n    return sum(values) + 1\n")
    check = CHECK + "from stats import total\n\nassert total([1, 2]) == 3, total([1, 2])\n"
    (tmp_path / "check_stats.py").write_text(check, encoding="utf-8")
    upstream.enqueue(
        text_reply(patch("(len(values) - 1)", "len(values)")),
        text_reply(patch("sum(values) + 1", "sum(values)")),
        text_reply(action("reply", {"text": "Fixed mean and total."})),
    )

    events, result = await run(make_agent(upstream), tmp_path, NAMED)

    assert not any(isinstance(e, ToolCompleted) and e.call_id.startswith(HERMES_UNDO_PREFIX) for e in events)
    assert "len(values)\n" in (tmp_path / "stats.py").read_text(encoding="utf-8")
    assert "still fails after your edit of stats.py" in last_user_text(upstream.requests[1].body)
    assert result.final_text == "Fixed mean and total."


async def test_undone_edits_are_not_reported_as_changes(upstream: ScriptedUpstream, project: Path) -> None:
    wrong = [patch("(len(values) - 1)", f"(len(values) - {n})") for n in (2, 4, 5, 6)]
    upstream.enqueue(*(text_reply(w) for w in wrong), text_reply(action("reply", {"text": ""})))

    events, result = await run(make_agent(upstream, max_iterations=30), project, NAMED)

    undos = [e for e in events if isinstance(e, ToolCompleted) and e.call_id.startswith(HERMES_UNDO_PREFIX)]
    assert len(undos) == MAX_UNDOS  # the fourth wrong edit stays: hermes stops undoing
    assert "(len(values) - 6)" in (project / "stats.py").read_text(encoding="utf-8")
    assert result.answer_by == "hermes"
    assert "Changed: stats.py." in result.final_text
    # Each later note lists what was tried before.
    assert "Edits already tried and undone: in stats.py, you replaced `(len(values) - 1)` with `(len(values) - 2)`" in (
        last_user_text(upstream.requests[2].body)
    )


async def test_an_undone_edit_alone_leaves_no_change_in_hermes_answer(
    upstream: ScriptedUpstream, project: Path
) -> None:
    upstream.enqueue(
        text_reply(patch("(len(values) - 1)", "(len(values) - 2)")), text_reply(action("reply", {"text": ""}))
    )

    _, result = await run(make_agent(upstream), project, NAMED)

    assert (project / "stats.py").read_text(encoding="utf-8") == STATS
    assert result.answer_by == "hermes"
    assert "No file was changed." in result.final_text


async def test_the_models_own_revert_is_still_refused_once(upstream: ScriptedUpstream, project: Path) -> None:
    # Only hermes' own step passes the edit guard: the same undo written by the model is refused.
    upstream.enqueue(
        text_reply(patch("(len(values) - 1)", "len(values)")),
        text_reply(patch("len(values)", "(len(values) - 1)")),  # "fixes" the fix back
        text_reply(action("reply", {"text": "mean divides by len."})),
    )

    events, _ = await run(make_agent(upstream), project, NAMED)

    refused = [e for e in events if isinstance(e, ToolCompleted) and e.name == "patch" and "would undo" in e.result]
    assert len(refused) == 1
    assert (project / "stats.py").read_text(encoding="utf-8") == STATS.replace("(len(values) - 1)", "len(values)")


COLORS = (
    'def hex_to_rgb(value):\n    value = value.lstrip("#")\n'
    "    return tuple(int(value[i : i + 2], 16) for i in (0, 2, 4))\n"
)


@pytest.mark.parametrize(
    ("request_text", "kept"),
    [
        ("Add an rgb_to_hex(r, g, b) function to colors.py, the reverse of hex_to_rgb.", True),
        ("Replace hex_to_rgb in colors.py with rgb_to_hex(r, g, b).", False),  # meant: it goes
    ],
)
async def test_a_new_function_written_over_an_old_one_goes_in_before_it(
    upstream: ScriptedUpstream, tmp_path: Path, request_text: str, kept: bool
) -> None:
    (tmp_path / "colors.py").write_text(COLORS, encoding="utf-8")
    new = "def rgb_to_hex(r, g, b):\n    return f'#{r:02x}{g:02x}{b:02x}'"
    over = action("patch", {"path": "colors.py", "old_string": "def hex_to_rgb(value):", "new_string": new})
    upstream.enqueue(text_reply(over), text_reply(action("reply", {"text": "Done."})))

    await run(make_agent(upstream), tmp_path, request_text)

    namespace: dict[str, Any] = {}
    exec((tmp_path / "colors.py").read_text(encoding="utf-8"), namespace)
    assert namespace["rgb_to_hex"](26, 43, 60) == "#1a2b3c"
    assert ("hex_to_rgb" in namespace) is kept
    if kept:
        assert namespace["hex_to_rgb"]("#1a2b3c") == (26, 43, 60)


async def test_a_patch_that_changes_nothing_is_not_run_and_the_model_is_asked_again(
    upstream: ScriptedUpstream, project: Path
) -> None:
    same = patch("(len(values) - 1)", "(len(values) - 1)")
    upstream.enqueue(
        text_reply(same),
        text_reply(patch("(len(values) - 1)", "len(values)")),
        text_reply(action("reply", {"text": "mean divides by len now."})),
    )

    events, result = await run(make_agent(upstream), project, "mean in stats.py divides by the wrong count. fix it")

    assert not any(isinstance(e, ToolCompleted) and "identical" in e.result for e in events)
    assert "That patch changes nothing" in last_user_text(upstream.requests[1].body)
    assert (project / "stats.py").read_text(encoding="utf-8") == STATS.replace("(len(values) - 1)", "len(values)")
    assert result.final_text == "mean divides by len now."


async def test_a_file_written_with_read_files_line_numbers_gets_them_taken_out(
    upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    (tmp_path / "CHANGELOG.md").write_text("# Changelog\n\n## Unreleased\n", encoding="utf-8")
    numbered = "1|# Changelog\n2|\n3|## Unreleased\n4|\n5|- Fixed mean.\n"
    upstream.enqueue(
        text_reply(action("write_file", {"path": "CHANGELOG.md", "content": numbered})),
        text_reply(action("reply", {"text": "Noted in CHANGELOG.md."})),
    )

    await run(make_agent(upstream), tmp_path, "add a line 'Fixed mean.' to CHANGELOG.md under Unreleased")

    text = (tmp_path / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text == "# Changelog\n\n## Unreleased\n\n- Fixed mean.\n"


def test_only_content_numbered_line_by_line_counts_as_copied_line_numbers() -> None:
    from hermes.agent.providers.action_grammar import Action
    from hermes.agent.providers.action_steering import align_patch

    def written(content: str) -> str:
        fitted = align_patch(Action("write_file", {"path": "t.md", "content": content}), [])
        return str(fitted.args["content"])

    assert written("7|a\n8|b") == "a\nb\n"
    assert written("1|only\n") == "only\n"
    for kept in ("1|a\n3|b\n", "1|a\nb\n", "| a | b |\n|---|---|\n", "2024|x\n"):
        assert written(kept) == kept


@pytest.mark.parametrize(
    ("fix", "noted"),
    [("(len(values) - 2)", True), ("len(values)", False)],
)
async def test_a_done_said_over_a_failing_check_gets_hermes_line_after_it(
    upstream: ScriptedUpstream, project: Path, fix: str, noted: bool
) -> None:
    upstream.enqueue(
        text_reply(patch("(len(values) - 1)", fix)),
        text_reply(RUN_CHECK),
        text_reply(action("terminal", {"command": "grep -c nothing-here stats.py"})),  # fails; not a check
        text_reply(action("reply", {"text": "Fixed: mean is right now."})),
    )

    events, result = await run(make_agent(upstream), project)

    assert result.answer_by == "model"
    assert result.final_text.startswith("Fixed: mean is right now.")
    shown = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert shown == result.final_text  # what was shown is what is kept
    if noted:
        assert result.final_text.splitlines()[2] == (
            f"{HERMES_MARK} after the changes (stats.py), `{CHECK_COMMAND}` failed (exit code 1):"
        )
        assert "AssertionError: 12.0" in result.final_text
    else:
        assert HERMES_MARK not in result.final_text


async def test_once_a_renamed_name_is_found_nowhere_the_model_is_told_the_rename_is_done(
    upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    (tmp_path / "db.py").write_text("def fetch_rows():\n    return [1, 2]\n", encoding="utf-8")
    (tmp_path / "report.py").write_text("from db import fetch_rows\n\nprint(fetch_rows())\n", encoding="utf-8")

    def rename(path: str) -> str:
        return action(
            "patch", {"path": path, "old_string": "fetch_rows", "new_string": "load_rows", "replace_all": True}
        )

    upstream.enqueue(
        text_reply(rename("db.py")),
        text_reply(rename("report.py")),
        text_reply(action("reply", {"text": "Renamed fetch_rows to load_rows in db.py and report.py."})),
    )

    events, result = await run(make_agent(upstream), tmp_path, "rename fetch_rows to load_rows everywhere")

    searches = [e.result for e in events if isinstance(e, ToolCompleted) and e.name == "search_files"]
    assert searches[-1].startswith("No matches for /\\bfetch_rows\\b/")
    assert "No `fetch_rows` is left in any file" not in last_user_text(upstream.requests[1].body)  # report.py left
    assert "No `fetch_rows` is left in any file: every use is changed." in last_user_text(upstream.requests[2].body)
    assert result.final_text.startswith("Renamed")


async def test_a_patch_that_the_fit_to_the_file_makes_a_no_op_is_not_run(
    upstream: ScriptedUpstream, project: Path
) -> None:
    # Seen with the bundled model after hermes undid its edit: old_string is the line as its edit
    # left it, new_string the line as the file has it again; fitted to the file, they are the same.
    same = patch("    return sum(values) / (len(values) - 2)", "    return sum(values) / (len(values) - 1)")
    upstream.enqueue(
        text_reply(same),
        text_reply(action("reply", {"text": "stats.py already divides by len - 1; I changed nothing."})),
    )

    events, _ = await run(make_agent(upstream), project, "look at mean in stats.py and fix it if needed")

    assert [e.name for e in events if isinstance(e, ToolCompleted)] == ["read_file"]  # hermes' read of stats.py
    assert "That patch changes nothing" in last_user_text(upstream.requests[1].body)


async def test_a_test_file_without_tests_is_explained(upstream: ScriptedUpstream, tmp_path: Path) -> None:
    (tmp_path / "slug.py").write_text("def slugify(text):\n    return text.lower()\n", encoding="utf-8")
    upstream.enqueue(
        text_reply(action("write_file", {"path": "test_slug.py", "content": "from slug import slugify\n"})),
        text_reply(action("reply", {"text": "Wrote test_slug.py."})),
    )
    request = f"Write a pytest file test_slug.py for slugify in slug.py, so `{sys.executable} -m pytest -q` checks it."

    await run(make_agent(upstream), tmp_path, request)

    note = last_user_text(upstream.requests[1].body)
    assert "(exit code 5: pytest found no tests. It runs functions named test_…" in note


async def test_after_a_failed_patch_a_long_file_is_read_around_the_edit(
    upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    body = "".join(f"def helper_{n}(x):\n    return x + {n}\n\n\n" for n in range(100))
    (tmp_path / "big.py").write_text(body, encoding="utf-8")  # 400 lines, over LONG_FILE_BYTES
    upstream.enqueue(
        text_reply(action("patch", {"path": "big.py", "old_string": "return x + 41", "new_string": "return x - 41"})),
        text_reply(
            action("patch", {"path": "big.py", "old_string": "return x", "new_string": "return -x"})
        ),  # 100 matches
        text_reply(action("reply", {"text": "Done."})),
    )

    events, _ = await run(make_agent(upstream), tmp_path, "in big.py make helper_41 and helper_42 subtract")

    reads = [e.arguments for e in events if isinstance(e, ToolCompleted) and e.name == "read_file"]
    # After the ambiguous patch: around the line the change before it made (helper_41's return).
    assert reads[-1] == {"path": "big.py", "offset": 166 - 20, "limit": 60}


def test_after_a_patch_that_matched_nothing_a_long_file_is_read_around_the_lines_most_like_it(
    tmp_path: Path,
) -> None:
    from hermes.agent.prompt import default_system_prompt
    from hermes.agent.providers.own_steps import edit_repair

    (tmp_path / "big.py").write_text("x = 1\n" * 1000, encoding="utf-8")
    error = "Error: no match for old_string in big.py; … The lines of the file most like it are:\n170|x = 1\nCopy …"
    call = {"id": "c1", "type": "function", "function": {"name": "patch", "arguments": '{"path": "big.py"}'}}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": default_system_prompt(str(tmp_path))},
        {"role": "user", "content": "fix big.py"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": error},
    ]
    repair = edit_repair(messages, {"read_file", "patch"})  # type: ignore[arg-type]
    assert repair is not None and repair.args == {"path": "big.py", "offset": 150, "limit": 60}
    (tmp_path / "big.py").write_text("x = 1\n", encoding="utf-8")  # short: read whole
    repair = edit_repair(messages, {"read_file", "patch"})  # type: ignore[arg-type]
    assert repair is not None and repair.args == {"path": "big.py"}


CHECK_THAT_SWAPS = """import os, shutil, sys
sys.path.insert(0, "pkg")
from stats import mean
result = mean([2, 4, 6])
if "- 2)" in open("pkg/stats.py").read() and not os.path.islink("pkg"):
    # The attacker: once the model's edit is in, pkg/ becomes a link to a folder outside.
    shutil.rmtree("pkg")
    os.symlink(os.path.abspath("../outside"), "pkg")
assert result == 4, result
"""


async def test_hermes_undo_through_a_folder_swapped_for_a_symlink_writes_nothing_outside(
    upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    work, outside = tmp_path / "work", tmp_path / "outside"
    (work / "pkg").mkdir(parents=True)
    outside.mkdir()
    (work / "pkg" / "stats.py").write_text(STATS, encoding="utf-8")
    (work / "check_stats.py").write_text(CHECK_THAT_SWAPS, encoding="utf-8")
    wrong = STATS.replace("(len(values) - 1)", "(len(values) - 2)")
    (outside / "stats.py").write_text(wrong, encoding="utf-8")  # what the undo would find there
    upstream.enqueue(
        text_reply(action("patch", {"path": "pkg/stats.py", "old_string": "- 1)", "new_string": "- 2)"})),
        text_reply(action("reply", {"text": "Done."})),
    )
    request = f"mean in pkg/stats.py is off. Fix it so `{sys.executable} check_stats.py` passes."
    agent = make_agent(upstream)
    try:  # nobody to approve, no --yolo
        turn = TurnRequest(input=request, persist=False, cwd=str(work), yolo=False)
        events = [e async for e in agent.run_turn(turn)]
    finally:
        await agent.aclose()

    undos = [e for e in events if isinstance(e, ToolCompleted) and e.call_id.startswith(HERMES_UNDO_PREFIX)]
    assert len(undos) == 1 and not undos[0].result.startswith("Patched"), undos
    assert undos[0].result.startswith("DENIED") and "outside_write" in undos[0].result
    assert (outside / "stats.py").read_text(encoding="utf-8") == wrong  # not written through the link
    assert isinstance(events[-1], TurnCompleted)

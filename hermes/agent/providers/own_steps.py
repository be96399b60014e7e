"""The steps the JSON-action adapter takes itself, with no model call: each returns the next
tool call (an `Action`) or None, read from the turn's transcript alone.

- `opening_step`: the named check first when a change is asked for (and, when it fails, the
  Python files for a missing module, what a module defines for a name it lacks, or the file
  the traceback ends in), then the named files (a long one around the code name the
  request mentions), then a search for that code name (its definition, when asked where it
  is defined) when no file is named or every use is asked about.
- `edit_repair`: a re-read after a failed edit (a long file around the edit; at most
  `MAX_EDIT_REPAIRS` a turn). `failure_lookup`: what exists, after a command the model ran
  fails for something missing (once a turn). `leftover_lookup`: where a renamed name is
  still used, after an edit takes it out.
- `check_after_edit`: the turn's check, after each change the model makes.
  `undo_failed_edit`: hermes' undo of a change that check shows did not help (`no_better`;
  at most `MAX_UNDOS` a turn).
- `steps_allowed`: whether the adapter may take a step (not under a `tool_choice` of
  ``none`` or a named function).

The calls go through the engine's tools like the model's: the same policy, approvals and
sandbox. Only files inside the working folder are looked at here, and only their size and
existence (never their text).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from hermes.agent.check_output import command_result, essential_lines
from hermes.agent.prompt import working_directory_of
from hermes.agent.provider import ModelRequest
from hermes.agent.providers.action_grammar import Action, as_args, choice_mode
from hermes.agent.providers.action_steering import (
    EDIT_TOOLS,
    ERROR_PREFIX,
    LIST_TOOL,
    MISSING_MODULE,
    READ_TOOL,
    SEARCH_TOOL,
    changed_a_file,
    turn_actions,
    turn_start,
)
from hermes.agent.providers.task_cues import (
    WRITE_TOOLS,
    about_the_files,
    asks_for_definition,
    asks_for_every_use,
    asks_to_rename,
    definition_pattern,
    existing_files,
    looks_like_check,
    named_check,
    named_identifiers,
    wants_change,
)
from hermes.agent.tools.edit_history import HERMES_UNDO_PREFIX
from hermes.agent.turn_facts import text_of
from hermes.agent.types import ChatMessage
from hermes.ids import new_call_id

MAX_EDIT_REPAIRS = 2
"""Re-reads the adapter starts after failed edits in one turn before letting the model answer."""


def steps_allowed(request: ModelRequest) -> bool:
    """Whether the adapter may take a step of its own (opening, edit repair) this call."""
    mode, named = choice_mode(request.tool_choice)
    return mode != "none" and named is None


LONG_FILE_BYTES = 3500
"""A named file longer than this (about what the model reads of one result) is read around
the code name the request mentions, found by a search of that file, rather than from its top."""
WINDOW_BEFORE, WINDOW_LINES = 20, 60
OPENING_FILES = 2
"""Named files read first (a rename across two files needs both)."""
_HIT = re.compile(r"^[^\n:]*:(\d+): ", re.MULTILINE)


def opening_step(messages: list[ChatMessage], tool_names: Iterable[str]) -> Action | None:
    """The next of the turn's opening steps the adapter takes itself (no model call), or None.

    A small model asked to fix something answers or patches from memory. So a turn opens
    with what a careful person does first (`_opening_plan`): run the check the request
    names when it asks for a change (`python main.py` shows the ImportError), read the files
    it names that exist (a long one around the code name it mentions), or, when it names no
    file, search for the code name it mentions. Each is taken only while every tool call of
    the turn so far was one of them, in order.
    """
    start = turn_start(messages)
    if start == 0:
        return None
    request = text_of(messages[start - 1].get("content"))
    cwd = _cwd_of(messages)
    done = turn_actions(messages)
    results = _turn_results(messages)
    planned = _opening_plan(request, cwd, set(tool_names), results)
    if len(done) < len(planned) and done == [action.key() for action in planned[: len(done)]]:
        return planned[len(done)]
    return None


def _opening_plan(request: str, cwd: Path | None, names: set[str], results: list[str]) -> list[Action]:
    """The opening steps for `request`, as far as the results so far (`results`, in order)
    decide them. A file is read once: a later read of a file already read is left out."""
    planned: list[Action] = []

    def add(action: Action) -> None:
        path = action.args.get("path")
        if action.name == READ_TOOL and any(k.name == READ_TOOL and k.args.get("path") == path for k in planned):
            return
        if action.key() not in {k.key() for k in planned}:
            planned.append(action)

    def result_of_last() -> str | None:
        return results[len(planned) - 1] if len(results) >= len(planned) else None

    check = named_check(request, cwd)
    if check is not None and "terminal" in names and wants_change(request):
        add(Action("terminal", {"command": check}))
        failure = result_of_last()
        if failure is None:
            return planned  # what comes next depends on how the check ends
        follow = _lookup_for(failure, names, cwd)
        if follow is None and cwd is not None and READ_TOOL in names:
            follow = _failing_frame(failure, cwd)
        if follow is not None:
            add(follow)
    if cwd is None:
        return planned
    files = existing_files(request, cwd)[:OPENING_FILES] if READ_TOOL in names else []
    identifiers = named_identifiers(request) if SEARCH_TOOL in names else []
    for path in files:
        if identifiers and _size(cwd / path) > LONG_FILE_BYTES:
            add(Action(SEARCH_TOOL, {"pattern": rf"\b{identifiers[0]}\b", "path": path}))
            found = result_of_last()
            if found is None:
                return planned  # where to read depends on what the search finds
            hit = _HIT.search(found)
            if hit is not None:
                offset = max(1, int(hit.group(1)) - WINDOW_BEFORE)
                add(Action(READ_TOOL, {"path": path, "offset": offset, "limit": WINDOW_LINES}))
                continue
        add(Action(READ_TOOL, {"path": path}))
    if identifiers and not files and asks_for_definition(request) and not wants_change(request):
        # "Where is the Scheduler class defined?": the definition first, not every mention.
        add(Action(SEARCH_TOOL, {"pattern": definition_pattern(identifiers[0])}))
        found = result_of_last()
        if found is None or _HIT.search(found) is not None:
            return planned
    if identifiers and (not files or asks_for_every_use(request)):
        add(Action(SEARCH_TOOL, {"pattern": rf"\b{identifiers[0]}\b"}))
    elif not files and not identifiers and LIST_TOOL in names and about_the_files(request) and not planned:
        add(Action(LIST_TOOL, {}))  # "somewhere in the deploy settings": what is here, before a guess
    return planned


_FRAME = re.compile(r'File "([^"]+)", line (\d+)')


def _failing_frame(result: str, cwd: Path) -> Action | None:
    """A read of the file a failed command's traceback ends in, when it is in `cwd` (around
    the line, when the file is long); None without such a traceback."""
    run = command_result(result)
    if run is None or not run.failed:
        return None
    frames = _FRAME.findall(run.output)
    if not frames:
        return None
    path, line = frames[-1]
    if path.startswith("<"):
        return None  # "<string>", "<frozen …>": no file
    root = cwd.resolve()
    target = (cwd / path).resolve()
    if not target.is_relative_to(root) or not target.is_file():
        return None  # the failure is outside the project (a library), or in no file
    relative = target.relative_to(root)
    if relative.parts and relative.parts[0] in (".venv", "venv", "site-packages", "node_modules"):
        return None
    if _size(cwd / relative) > LONG_FILE_BYTES:
        offset = max(1, int(line) - WINDOW_BEFORE)
        return Action(READ_TOOL, {"path": str(relative), "offset": offset, "limit": WINDOW_LINES})
    return Action(READ_TOOL, {"path": str(relative)})


_MISSING_NAME = re.compile(r"cannot import name '(\w+)'")


def _lookup_for(result: str, names: set[str], cwd: Path | None = None) -> Action | None:
    """What finds the thing a failed command says is missing: the Python files for a module
    that is not there; for a name that cannot be imported from a module of the project,
    the names that module does define, else a search for the name; None for other results."""
    run = command_result(result)
    if run is None or not run.failed:
        return None
    if MISSING_MODULE.search(run.output) and LIST_TOOL in names:
        return Action(LIST_TOOL, {"pattern": "*.py"})
    missing = _MISSING_NAME.search(run.output)
    if missing is None or SEARCH_TOOL not in names:
        return None
    source = _MODULE_FILE.search(run.output)
    if source is not None and cwd is not None:
        root, module = cwd.resolve(), Path(source.group(1)).resolve()
        if module.is_relative_to(root) and module.is_file() and not _SITE.intersection(module.parts):
            return Action(SEARCH_TOOL, {"pattern": DEFINED_NAMES, "path": str(module.relative_to(root))})
    return Action(SEARCH_TOOL, {"pattern": rf"\b(def|class) {missing.group(1)}\b"})


_MODULE_FILE = re.compile(r"cannot import name '\w+' from '[\w.]+' \(([^()\n]+\.py)\)")
_SITE = frozenset({".venv", "venv", "site-packages", "node_modules"})
DEFINED_NAMES = r"^(?:async\s+)?(?:def|class)\s+\w+|^[A-Za-z_]\w*\s*[:=]"
"""A search pattern for what a Python module defines at its top level (functions, classes, names)."""


def failure_lookup(messages: list[ChatMessage], tool_names: Iterable[str]) -> Action | None:
    """After a command the model ran fails for something missing (`No module named 'helper'`),
    the step that shows what exists (`_lookup_for`), taken by the adapter once per turn."""
    last = _latest_step(messages)
    if last is None or last.action.name != "terminal":
        return None
    lookup = _lookup_for(last.result, set(tool_names), _cwd_of(messages))
    if lookup is None or lookup.key() in turn_actions(messages):
        return None
    return lookup


def leftover_lookup(messages: list[ChatMessage], tool_names: Iterable[str]) -> Action | None:
    """After an edit took a code name the request mentions out of a file (a rename, a changed
    signature), the search that shows where else it is still used; None when it is not due.

    Taken by the adapter (no model call) right after each such edit: the model then sees
    what is left to change, or that nothing is.
    """
    if SEARCH_TOOL not in set(tool_names):
        return None
    start = turn_start(messages)
    step = _latest_step(messages) if start > 0 else None
    if step is None or step.action.name not in EDIT_TOOLS or not changed_a_file(step.result):
        return None
    last = step.action
    old, new = str(last.args.get("old_string") or ""), str(last.args.get("new_string") or "")
    request = text_of(messages[start - 1].get("content"))
    if not asks_to_rename(request):
        return None  # an edit that takes a name out unasked is pointed out instead (REMOVED_NOTE)
    gone = [n for n in named_identifiers(request) if re.search(rf"\b{n}\b", old) and not re.search(rf"\b{n}\b", new)]
    if not gone:
        return None
    return Action(SEARCH_TOOL, {"pattern": rf"\b{gone[0]}\b"})


def _latest_step(messages: list[ChatMessage]) -> _Step | None:
    """The step whose result is the transcript's last message, or None."""
    steps = turn_steps(messages)
    last = messages[-1] if messages else {}
    if not steps or last.get("role") != "tool" or steps[-1].call_id != (last.get("tool_call_id") or ""):
        return None
    return steps[-1]


def _cwd_of(messages: list[ChatMessage]) -> Path | None:
    """The working folder the system prompt names, or None."""
    system = next((text_of(m.get("content")) for m in messages if m.get("role") == "system"), "")
    cwd = working_directory_of(system)
    return Path(cwd) if cwd else None


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _turn_results(messages: list[ChatMessage]) -> list[str]:
    """The text of every tool result since the last user message, in order."""
    return [text_of(m.get("content")) for m in messages[turn_start(messages) :] if m.get("role") == "tool"]


def edit_repair(messages: list[ChatMessage], tool_names: Iterable[str]) -> Action | None:
    """The `read_file` call that follows a failed edit, or None when the model should answer.

    Due when the latest step of the turn was an edit (`EDIT_TOOLS`) whose result is an
    error, `read_file` is offered, and fewer than `MAX_EDIT_REPAIRS` failed edits came
    before it in this turn (so a model that keeps failing gets to answer). A file longer
    than `LONG_FILE_BYTES` is read around the lines the error shows (the ones most like
    old_string), else around the turn's latest change to it (the model's place in it), so
    a 200-line module is not read whole after each slip (each read is ~2,500 prompt tokens).
    """
    if READ_TOOL not in set(tool_names):
        return None
    turn = messages[turn_start(messages) :]
    calls: dict[str, Action] = {}
    failures: list[Action] = []
    latest_failed: Action | None = None
    error = ""
    anchors: dict[str, int] = {}  # path -> first line of the latest change made to it this turn
    passed = False  # a command passed after the latest change: the work is in, nothing to repair
    for message in turn:
        if message.get("role") == "assistant":
            latest_failed = None
            for raw_call in message.get("tool_calls") or ():
                fn = raw_call.get("function") or {}
                calls[raw_call.get("id") or ""] = Action(fn.get("name") or "", as_args(fn.get("arguments")) or {})
        elif message.get("role") == "tool":
            call = calls.get(message.get("tool_call_id") or "")
            content = text_of(message.get("content"))
            failed = content.startswith(ERROR_PREFIX)
            if call is not None and call.name in EDIT_TOOLS and failed:
                failures.append(call)
                latest_failed, error = call, content
            elif call is not None and call.name in WRITE_TOOLS and changed_a_file(content):
                passed = False
                changed_at = _first_changed_line(content)
                if changed_at is not None:
                    anchors[str(call.args.get("path"))] = changed_at
            elif call is not None and call.name == "terminal":
                run = command_result(content)
                checked = run is not None and not run.failed and looks_like_check(str(call.args.get("command")))
                passed = passed or checked
    if latest_failed is None or len(failures) > MAX_EDIT_REPAIRS or passed:
        return None
    path = latest_failed.args.get("path")
    if not isinstance(path, str) or not path:
        return None
    cwd = _cwd_of(messages)
    if cwd is None or _size(cwd / path) <= LONG_FILE_BYTES:
        return Action(READ_TOOL, {"path": path})
    # A long file is read around the lines the error shows, else around the latest change to it.
    shown = _SHOWN_LINE.search(error)
    anchor = int(shown.group(1)) if shown is not None else anchors.get(path)
    if anchor is None:
        return Action(READ_TOOL, {"path": path})
    return Action(READ_TOOL, {"path": path, "offset": max(1, anchor - WINDOW_BEFORE), "limit": WINDOW_LINES})


_HUNK = re.compile(r"^@@ -(\d+)")


def _first_changed_line(result: str) -> int | None:
    """The line number (before the change) of the first line a write's diff removes or adds."""
    line: int | None = None
    for text in result.splitlines():
        hunk = _HUNK.match(text)
        if hunk is not None:
            line = int(hunk.group(1))
        elif line is not None and text.startswith(("-", "+")) and not text.startswith(("---", "+++")):
            return line
        elif line is not None and text.startswith(" "):
            line += 1
    return None


_SHOWN_LINE = re.compile(r"^(\d+)\|", re.MULTILINE)


MAX_UNDOS = 3
"""Edits hermes undoes in one turn (`undo_failed_edit`); after that a failed one stays."""
_FAILED_COUNT = re.compile(r"\b(\d+) (?:failed|errors?)\b")
_BROKEN_SOURCE = re.compile(r"^\s*(?:SyntaxError|IndentationError|TabError)\b", re.MULTILINE)
_SUMMARY_ID = re.compile(r"^(?:FAILED|ERROR) (\S+)", re.MULTILINE)
_EXCEPTION_NAME = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception|Exit|Failure)):.*$")
_ONE_REPLACED = re.compile(r"^Patched [^\n]*: replaced 1 occurrence")


@dataclass(frozen=True, slots=True)
class _Step:
    """One tool call of the turn and its result."""

    call_id: str
    action: Action
    result: str


def turn_steps(messages: list[ChatMessage]) -> list[_Step]:
    calls: dict[str, Action] = {}
    steps: list[_Step] = []
    for message in messages[turn_start(messages) :]:
        for raw in message.get("tool_calls") or ():
            fn = raw.get("function") or {}
            calls[raw.get("id") or ""] = Action(fn.get("name") or "", as_args(fn.get("arguments")) or {})
        if message.get("role") == "tool":
            call_id = message.get("tool_call_id") or ""
            action = calls.get(call_id)
            if action is not None:
                steps.append(_Step(call_id, action, text_of(message.get("content"))))
    return steps


def _failing_count(output: str) -> int:
    return sum(int(n) for n in _FAILED_COUNT.findall(output))


def _failed_tests(output: str) -> set[str]:
    """pytest's short summary ids (`FAILED test_x.py::test_y`), without their messages."""
    return {match.group(1) for match in _SUMMARY_ID.finditer(output)}


def _where_and_what(output: str) -> list[str]:
    """Where a failure happens and how: a traceback's last frame (file and line, not its code,
    which the edit may have changed) and the exception's name (not its message: a wrong fix
    changes `12.0` to `6.0`); else its essential lines."""
    lines = essential_lines(output)
    if not any(_FRAME_LINE.match(line) for line in lines):
        return lines
    return [
        _EXCEPTION_NAME.sub(r"\1", line) for line in lines if _FRAME_LINE.match(line) or _EXCEPTION_NAME.match(line)
    ]


_FRAME_LINE = re.compile(r'^File "[^"]+", line \d+')


def no_better(before: str, after: str) -> bool:
    """Whether a check's output `after` an edit shows no progress over `before` it: a file that
    no longer parses; more failing tests, or every test that failed still failing; or, with no
    test summary, the same place and exception."""
    if _BROKEN_SOURCE.search(after) and not _BROKEN_SOURCE.search(before):
        return True
    if _failing_count(after) > _failing_count(before):
        return True
    failed_before, failed_after = _failed_tests(before), _failed_tests(after)
    if failed_before or failed_after:
        return bool(failed_before) and failed_before <= failed_after
    return _where_and_what(before) == _where_and_what(after)


def undo_failed_edit(messages: list[ChatMessage], tool_names: Iterable[str]) -> Action | None:
    """hermes' undo of the model's edit that a check showed did not help, or None.

    Due when the latest result is a failing check, the same command failed before the
    turn's one change since then, that change was one replacement by `patch`, and the failure
    is `no_better`; at most `MAX_UNDOS` a turn. A small model asked to change a wrong edit
    piles a second guess on the first (or patches a line to itself); from the file as it was,
    and told what did not work, it makes a fresh attempt. The call's id begins with
    `HERMES_UNDO_PREFIX`: the edit guard lets it through, and the model's transcript shows
    the undo only as the note that follows (`FAILED_ATTEMPT_NOTE`).
    """
    if "patch" not in set(tool_names):
        return None
    steps = turn_steps(messages)
    if not steps or undos_this_turn(steps) >= MAX_UNDOS:
        return None
    last = steps[-1]
    command = str(last.action.args.get("command") or "")
    after = command_result(last.result) if last.action.name == "terminal" else None
    if after is None or not after.failed or not looks_like_check(command):
        return None
    # The check's result for the files as they were before the latest changes: a run is
    # forgotten once hermes undid the edit before it (the files are back as at the run before).
    runs: list[str] = []
    changes: list[_Step] = []
    for step in steps[:-1]:
        if step.call_id.startswith(HERMES_UNDO_PREFIX):
            if changed_a_file(step.result) and runs:
                runs.pop()
                changes = []
        elif step.action.name == "terminal" and str(step.action.args.get("command") or "") == command:
            runs.append(step.result)
            changes = []
        elif step.action.name in WRITE_TOOLS and changed_a_file(step.result):
            changes.append(step)
    before = command_result(runs[-1]) if runs else None
    if before is None or not before.failed or len(changes) != 1 or not no_better(before.output, after.output):
        return None
    edit = changes[0]
    path, old, new = (edit.action.args.get(key) for key in ("path", "old_string", "new_string"))
    if edit.call_id.startswith(HERMES_UNDO_PREFIX) or not _ONE_REPLACED.match(edit.result):
        return None
    if not isinstance(path, str) or not isinstance(old, str) or not isinstance(new, str) or not new.strip():
        return None
    return Action("patch", {"path": path, "old_string": new, "new_string": old})


def check_after_edit(messages: list[ChatMessage], tool_names: Iterable[str]) -> Action | None:
    """The turn's check, run by hermes right after the model changed a file, or None.

    The check is the one the request names, else the command the turn opened with when it
    reads as one; due after each change the model made (not after hermes' undo) while the
    request asks for a change. Its result is what the next note reads (pass: say what
    changed; fail: `undo_failed_edit` or the failure next to the edit).
    """
    if "terminal" not in set(tool_names):
        return None
    steps = turn_steps(messages)
    if not steps:
        return None
    last = steps[-1]
    if last.call_id.startswith(HERMES_UNDO_PREFIX) or last.action.name not in WRITE_TOOLS:
        return None
    if not changed_a_file(last.result):
        return None
    start = turn_start(messages)
    request = text_of(messages[start - 1].get("content"))
    if not wants_change(request):
        return None
    first = steps[0].action
    opened = str(first.args.get("command") or "") if first.name == "terminal" else ""
    check = opened if looks_like_check(opened) else named_check(request)
    return Action("terminal", {"command": check}) if check else None


def undos_this_turn(steps: list[_Step]) -> int:
    """How many of the turn's steps (`turn_steps`) were hermes' undos."""
    return sum(step.call_id.startswith(HERMES_UNDO_PREFIX) for step in steps)


def next_own_step(messages: list[ChatMessage], names: set[str]) -> tuple[Action, str | None] | None:
    """The adapter's own next step (no model call) and its call id (None: a fresh one), or
    None: an undo first, then a re-read after a failed edit, the opening steps, a lookup after
    a failure, a leftover search after a rename, the check after an edit.

    hermes' undo of a failed attempt gets an id the edit guard knows (`HERMES_UNDO_PREFIX`).
    """
    undo = undo_failed_edit(messages, names)
    if undo is not None:
        return undo, HERMES_UNDO_PREFIX + new_call_id().removeprefix("call_")
    step = (
        edit_repair(messages, names)
        or opening_step(messages, names)
        or failure_lookup(messages, names)
        or leftover_lookup(messages, names)
        or check_after_edit(messages, names)
    )
    return (step, None) if step is not None else None

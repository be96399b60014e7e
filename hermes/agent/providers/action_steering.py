"""The JSON-action adapter's steering: what the small model reads (see
`hermes.agent.providers.json_actions` for the why; the steps the adapter takes itself, with
no model call, are in `hermes.agent.providers.own_steps`).

What the model reads is decided by what the request means (`task_cues`: a check it names in
any wording, the files and code names it mentions, whether it asks for a change) and by
what the tools returned (a failed command's essential lines, `hermes.agent.check_output`),
never by how the request is typed.

- `rewrite_messages`: the transcript as the model sees it: a short system prompt plus the
  protocol and the tool catalogue, earlier calls as the actions the model would have
  written, tool results as user messages ending in one note (`_reminder`, most pressing
  first): retry a failed edit after its re-read; put back a definition an edit dropped; an
  edit hermes undid and why; a check that still fails after an edit, with its essential
  lines next to that edit (change the edit, do not undo it); a failing check before any
  edit (find the cause); a check that passes now (say what changed); run the named check
  after a change; a renamed name found nowhere now; else restate the request.
  Deterministic, and earlier messages render the same on every step (prompt cache); hermes'
  own undo calls are not shown, only the note after them. With `assist` off, only the
  restatement.
- `fit_context`: the oldest exchanges left out to fit a character budget.
- `align_patch`: a `patch` fitted to the text the model last read (and a new definition
  written over an old one put in before it; a `write_file` of numbered lines unnumbered);
  `is_loop`: a repeated call; `no_op_edit`: a patch that changes nothing.
- `steering_notes`: the notes the model read this turn (a reply that only repeats them,
  or the request, is not an answer: `json_actions` asks again).
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hermes.agent.check_output import command_result, essential_lines
from hermes.agent.instructions import HEADER as INSTRUCTIONS_HEADER
from hermes.agent.providers.action_grammar import REPLY, Action, as_args, catalogue, first_sentence
from hermes.agent.providers.task_cues import (
    WRITE_TOOLS,
    asks_to_rename,
    looks_like_check,
    named_check,
    named_identifiers,
    wants_change,
)
from hermes.agent.tools.edit_history import HERMES_UNDO_PREFIX
from hermes.agent.tools.edit_match import fit_edit
from hermes.agent.turn_facts import text_of
from hermes.agent.types import ChatMessage

DEFAULT_BASE_PROMPT = (
    "You are Hermes, a coding assistant working in the user's terminal, on their computer. "
    "Be brief and accurate. Use tools to look at files or run commands when the answer "
    "depends on them; never guess file contents."
)

PROTOCOL = (
    'Answer every message with exactly one JSON object: {{"action": NAME, "args": {{...}}}}.\n'
    "Actions:\n"
    '- reply {{"text": string}}: answer the user: greetings, questions, explanations, '
    "and the answer once tool results are in.\n"
    "{catalogue}\n"
    "Use a tool only for files, code or commands on this computer, with paths relative to the "
    "working directory; never invent them. Change files only when asked to. To add code with patch, "
    "new_string is old_string with the new lines added: the old lines stay. "
    "Reply as soon as you can answer. Never repeat an action with the same args."
)

RESULT_REMINDER = 'Answer the request "{request}" with reply if this result is enough; otherwise take the next step.'
LOOP_NOTE = (
    "You already ran {name} with exactly these args; its result is above. "
    "Do not run it again: use the result to reply, or choose a different action."
)
NO_OP_NOTE = (
    "That patch changes nothing: its old_string and new_string are the same. If {path} already "
    "does what the request asks, reply to the user; otherwise make the change that is still "
    "missing, in this file or another."
)
FORCE_REPLY_NOTE = "Stop using tools now. Reply to the user with what you know."
EDIT_RETRY_NOTE = (
    "Your patch of {path} failed: {reason} The current content of {path} (around your edit, when it is long) "
    'is above. Do the request "{request}" '
    "now: call patch again with old_string copied exactly from that content (without the line-number "
    "prefixes), or reply if the file already does what was asked."
)

CHECK_NOTE = (
    "You changed files. Before you reply, run the check the request names with terminal: {check}. "
    'Then answer the request "{request}" with what it printed.'
)
FAILED_AFTER_EDIT_NOTE = (
    "`{command}` still fails after your edit of {path} ({edit}):\n{why}\n"
    "Your edit is kept. Change it so this passes: patch {path} again with old_string copied from "
    "its current text, or fix the file the failure points to. Do not just undo your edit. "
    'The request: "{request}"'
)
FAILING_NOTE = (
    "`{command}` fails:\n{why}\n"
    'Find the cause in the files (read the one the failure points to), then fix it for the request "{request}".'
)
FAILED_ATTEMPT_NOTE = (
    "`{command}` still failed after your edit of {path} ({edit}):\n{why}\n"
    "That edit did not fix it, so hermes undid it: {path} is as it was before. Find the cause in "
    "the failure's lines and the code, then make a different edit.{tried} "
    'The request: "{request}"'
)
TRIED_NOTE = " Edits already tried and undone: {edits}."
REMOVED_NOTE = (
    "Your edit took {names} out of {path}, and the request does not ask to remove it. Put it back: "
    "patch {path} again so new_string keeps that definition and adds what was asked. "
    'The request: "{request}"'
)
SETTLED_NOTE = (
    "`{command}` already passed after your last change: the files have your fix. Do not edit them again "
    'unless the request "{request}" asks for more; otherwise reply to the user: say which files you '
    "changed and what the check printed."
)
PYTEST_NO_TESTS = 5
"""pytest's exit code when it collected no tests."""
NO_TESTS_HINT = (
    "(exit code 5: pytest found no tests. It runs functions named test_… in files named test_*.py; "
    "each imports the code it tests and asserts what that code returns.)"
)
GONE_NOTE = (
    'No `{name}` is left in any file: every use is changed. If the request "{request}" is done, '
    "reply to the user: say which files you changed; otherwise take the next step."
)
PASSED_AFTER_EDIT_NOTE = (
    '`{command}` passes now. If the request "{request}" is done, reply to the user: say which files '
    "you changed and what the check printed; otherwise take the next step."
)

EDIT_TOOLS = frozenset({"patch"})
"""Edit tools whose failure a fresh read can fix: their arguments quote the file's text."""
READ_TOOL = "read_file"
ERROR_PREFIX = "Error:"
"""How the engine starts the result of a tool call that failed."""


def _clip(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n[… {len(text) - limit} more characters not shown]"


def _clip_line(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(slots=True)
class _RequestState:
    """What the steering notes of one request depend on (reset by each user message)."""

    request: str = ""
    check: str | None = None
    """The check the request names, else the command its turn opened with."""
    acted: bool = False
    """A tool ran since the request."""
    unchecked: bool = False
    """A file changed since the check last ran."""
    last_edit: tuple[str, str] | None = None
    """(path, what the latest change did) of this request's latest change of a file."""
    failed_edit: tuple[str, str] | None = None
    """(path, error) of the latest failed edit not yet followed by a read of that path."""
    reread: tuple[str, str] | None = None
    """A failed edit whose file was read back in the results now pending."""
    command: tuple[str, bool, list[str], bool] | None = None
    """The latest command since the latest change: (command, failed, why, after a change)."""
    missing: str | None = None
    """The module a failed command could not import (`No module named 'helper'`)."""
    near: str | None = None
    """A Python module here whose name is close to `missing` (from a listing)."""
    removed: tuple[str, list[str]] | None = None
    """(path, names) when the latest change took out definitions the request does not name."""
    passed: str | None = None
    """A check that passed after the latest change (the work is in)."""
    settled: bool = False
    """An edit failed after `passed`: the model is editing work that is done."""
    gone: str | None = None
    """A name the request renames or removes that a search after the latest change found nowhere."""
    undone: list[str] = field(default_factory=list)
    """What each edit hermes undid this request did (`undo_failed_edit`), oldest first."""
    undo_note: tuple[str, str, str, list[str]] | None = None
    """(command, path, edit, why) of the latest undo, until the next change or command."""


def rewrite_messages(
    messages: list[ChatMessage],
    tools: list[dict[str, Any]] | None,
    *,
    base_prompt_limit: int = 1500,
    tool_result_limit: int = 4000,
    assist: bool = True,
) -> list[ChatMessage]:
    """The transcript as a small model following the JSON-action protocol sees it.

    Deterministic for a given transcript, and earlier messages render the same way on
    every step, so consecutive requests share a prefix (prompt cache). With `assist` off the
    results only restate the request (no notes about checks, failures or retries).
    """
    original_system = next((text_of(m.get("content")) for m in messages if m.get("role") == "system"), "")
    # Project instructions (AGENTS.md) are the user's words: they stay even when the
    # prompt before them is too long for a small model and replaced by the short one.
    prompt, marker, project = original_system.partition(INSTRUCTIONS_HEADER)
    base = prompt.strip() if 0 < len(prompt.strip()) <= base_prompt_limit else DEFAULT_BASE_PROMPT
    if marker:
        base += "\n\n" + (marker + project).strip()
    system = base + "\n\n" + PROTOCOL.format(catalogue=catalogue(tools or []))
    out: list[ChatMessage] = [{"role": "system", "content": system}]
    calls_by_id: dict[str, Action] = {}
    pending_results: list[str] = []
    state = _RequestState()

    def flush_results() -> None:
        # Small models lose the thread after a long result: restate what was asked.
        if pending_results:
            reminder = _reminder(state) if assist else RESULT_REMINDER.format(request=_clip_line(state.request, 300))
            out.append({"role": "user", "content": "\n\n".join([*pending_results, reminder])})
            pending_results.clear()
            # The latest command's note stays until a change or another command: the opening
            # steps' reads after a failing check keep showing why it failed.
            state.reread = state.removed = None
            state.settled = False

    for message in messages:
        role = message.get("role")
        if role == "system":
            continue
        if role == "tool" and str(message.get("tool_call_id") or "").startswith(HERMES_UNDO_PREFIX):
            _observe_undo(state, text_of(message.get("content")))  # told in the next note, not shown
            continue
        if role == "assistant" and _only_undos(message):
            continue  # hermes' own step: the model did not write it
        if role == "tool":
            call = calls_by_id.get(message.get("tool_call_id") or "")
            name = call.name if call is not None else message.get("name") or "tool"
            content = text_of(message.get("content"))
            if call is not None:
                _observe(state, call, content)
            pending_results.append(f"Result of {name}:\n{_clip(content, tool_result_limit)}")
            continue
        flush_results()
        if role == "assistant":
            calls = message.get("tool_calls") or []
            if not calls:
                text = text_of(message.get("content"))
                out.append({"role": "assistant", "content": Action(REPLY, {"text": text}).to_json()})
                continue
            rendered = []
            for raw_call in calls:
                fn = raw_call.get("function") or {}
                action = Action(fn.get("name") or "tool", as_args(fn.get("arguments")) or {})
                calls_by_id[raw_call.get("id") or ""] = action
                rendered.append(action.to_json())
            out.append({"role": "assistant", "content": "\n".join(rendered)})
        else:
            request = text_of(message.get("content"))
            # Only the transcript decides (not the folder, which changes): a check inferred from
            # the folder (`named_check` with a cwd) is the command the turn opened with.
            state = _RequestState(request=request, check=named_check(request))
            out.append({"role": "user", "content": request})
    flush_results()
    return out


def _only_undos(message: ChatMessage) -> bool:
    calls = message.get("tool_calls") or []
    return bool(calls) and all(str(call.get("id") or "").startswith(HERMES_UNDO_PREFIX) for call in calls)


def _observe_undo(state: _RequestState, content: str) -> None:
    """hermes undid the latest edit (`undo_failed_edit`): the note says so, and why."""
    if not changed_a_file(content) or state.last_edit is None or state.command is None:
        return  # the undo did not apply: the edit and its failing check stand
    path, edit = state.last_edit
    command, _failed, why, _after = state.command
    state.undone.append(f"in {path}, {edit}")
    state.undo_note = (command, path, edit, why)
    state.last_edit = None
    state.unchecked = False
    state.command = (command, True, why, False)


def _observe(state: _RequestState, call: Action, content: str) -> None:
    """Update `state` with one tool call and its result."""
    path = str(call.args.get("path", ""))
    if call.name == "terminal" or (call.name in WRITE_TOOLS and changed_a_file(content)):
        state.undo_note = None
    if call.name in WRITE_TOOLS and changed_a_file(content):
        state.passed = state.command = state.gone = None
        state.unchecked = True
        state.last_edit = (path, _describe_edit(call))
        renames = asks_to_rename(state.request)
        gone = [name for name in removed_definitions(call) if not (renames and name in state.request)]
        state.removed = (path, gone) if gone else None
    opened, state.acted = not state.acted, True
    if call.name == "terminal":
        command = str(call.args.get("command") or "")
        if state.check is None and opened and looks_like_check(command):
            state.check = command
        if state.check and state.check in command:
            state.unchecked = False
        run = command_result(content)
        if run is not None and (looks_like_check(command) or command == state.check):
            why = essential_lines(run.output)
            if run.exit_code == PYTEST_NO_TESTS and "pytest" in command:
                why.append(NO_TESTS_HINT)
            state.command = (command, run.failed, why, state.last_edit is not None)
            missing = MISSING_MODULE.search(run.output) if run.failed else None
            state.missing = missing.group(1) if missing else None
            if not run.failed and state.last_edit is not None and looks_like_check(command):
                state.passed = command
    if call.name == LIST_TOOL and state.missing is not None:
        stems = [Path(line.strip()).stem for line in content.splitlines()[1:] if line.strip().endswith(".py")]
        close = difflib.get_close_matches(state.missing.rsplit(".", 1)[-1], stems, n=1, cutoff=0.6)
        state.near = close[0] if close else None
    if call.name == SEARCH_TOOL and state.last_edit is not None and content.startswith(NO_MATCHES):
        pattern = str(call.args.get("pattern") or "")
        named = [n for n in named_identifiers(state.request) if pattern == rf"\b{n}\b"]
        if named and asks_to_rename(state.request) and not call.args.get("path"):
            state.gone = named[0]
    if call.name in EDIT_TOOLS and content.startswith(ERROR_PREFIX):
        state.failed_edit = (path, content)
        state.settled = state.passed is not None
    elif call.name == READ_TOOL and state.failed_edit and call.args.get("path") == state.failed_edit[0]:
        state.reread, state.failed_edit = state.failed_edit, None


def _reminder(state: _RequestState) -> str:
    """The note after a batch of results: the most pressing of retry, failure, check, restatement."""
    request = _clip_line(state.request, 300)
    if state.settled and state.passed is not None:
        return SETTLED_NOTE.format(command=_clip_line(state.passed, 120), request=request)
    if state.reread is not None:
        reason = first_sentence(state.reread[1].removeprefix(ERROR_PREFIX).strip(), 200)
        return EDIT_RETRY_NOTE.format(path=state.reread[0], reason=reason, request=request)
    if state.removed is not None:
        path, names = state.removed
        return REMOVED_NOTE.format(path=path, names=", ".join(f"`{name}`" for name in names), request=request)
    if state.undo_note is not None:
        command, path, edit, why = state.undo_note
        earlier = state.undone[:-1]
        tried = TRIED_NOTE.format(edits="; ".join(earlier)) if earlier else ""
        return FAILED_ATTEMPT_NOTE.format(
            command=_clip_line(command, 120),
            path=path,
            edit=edit,
            why="\n".join(why) or "(no output)",
            tried=tried,
            request=request,
        )
    if state.command is not None:
        command, failed, why, after_edit = state.command
        shown = _clip_line(command, 120)
        lines = "\n".join(why) or "(no output)"
        if failed and state.missing and state.near and state.near != state.missing:
            lines += f"\nThere is no module `{state.missing}` here, but there is `{state.near}` ({state.near}.py)."
        if failed and after_edit and state.last_edit is not None:
            path, edit = state.last_edit
            return FAILED_AFTER_EDIT_NOTE.format(command=shown, path=path, edit=edit, why=lines, request=request)
        if failed and wants_change(state.request):
            return FAILING_NOTE.format(command=shown, why=lines, request=request)
        if not failed and after_edit:
            return PASSED_AFTER_EDIT_NOTE.format(command=shown, request=request)
    if state.check is not None and state.unchecked:
        return CHECK_NOTE.format(check=state.check, request=request)
    if state.gone is not None:
        return GONE_NOTE.format(name=state.gone, request=request)
    return RESULT_REMINDER.format(request=request)


_DEFINITION = re.compile(r"^\s*(?:async\s+)?(?:def|class)\s+(\w+)", re.MULTILINE)


def removed_definitions(call: Action) -> list[str]:
    """Names a `patch` took out: defined (def/class) in its old_string, not in its new_string."""
    old, new = call.args.get("old_string"), call.args.get("new_string")
    if call.name not in EDIT_TOOLS or not isinstance(old, str) or not isinstance(new, str):
        return []
    kept = set(_DEFINITION.findall(new))
    return [name for name in _DEFINITION.findall(old) if name not in kept]


def _describe_edit(call: Action) -> str:
    """One line on what a write call did: "replaced `a - 1` with `a`", "wrote the file"."""
    old, new = call.args.get("old_string"), call.args.get("new_string")
    if call.name in EDIT_TOOLS and isinstance(old, str) and isinstance(new, str):
        return f"you replaced `{_clip_line(old, 120)}` with `{_clip_line(new, 120)}`"
    return "you wrote the whole file"


def steering_notes(rewritten: list[ChatMessage]) -> tuple[str, list[str]]:
    """(the latest request, the notes the adapter added after tool results since it), each
    note with the request it quotes taken out: for telling an answer that only repeats them
    from one of the model's own, which may well restate the request in its own words."""
    notes: list[str] = []
    request = ""
    for message in reversed(rewritten):
        content = text_of(message.get("content"))
        if message.get("role") != "user":
            continue
        if not content.startswith("Result of "):
            request = content
            break
        notes.append(content.rsplit("\n\n", 1)[-1])
    quoted = _clip_line(request, 300)
    return request, [note.replace(quoted, "") for note in notes]


def changed_a_file(result: str) -> bool:
    return result.startswith(("Patched ", "Created ", "Overwrote "))


def latest_request(messages: list[ChatMessage]) -> str:
    return next((text_of(m.get("content")) for m in reversed(messages) if m.get("role") == "user"), "")


OMITTED_NOTE = "[Earlier conversation omitted to fit the context window.]"


def fit_context(messages: list[ChatMessage], budget_chars: int) -> list[ChatMessage]:
    """Drop the oldest exchanges until the prompt fits `budget_chars`.

    The system message and everything from the latest user request on are always
    kept; whole user-led exchanges go first, oldest first, replaced by one note. While
    the prompt fits, nothing changes (so the prompt cache keeps its prefix).
    """

    def size(items: list[ChatMessage]) -> int:
        return sum(len(text_of(m.get("content"))) + 16 for m in items)

    if size(messages) <= budget_chars or len(messages) < 3:
        return messages
    system, rest = messages[:1], messages[1:]
    starts = [
        i
        for i, m in enumerate(rest)
        if m.get("role") == "user" and not text_of(m.get("content")).startswith("Result of ")
    ]
    note: list[ChatMessage] = [{"role": "user", "content": OMITTED_NOTE}]
    for start in starts[1:]:
        kept = rest[start:]
        if size(system + note + kept) <= budget_chars:
            return system + note + kept
    return system + note + rest[starts[-1] :] if starts else messages


def turn_actions(messages: list[ChatMessage]) -> list[tuple[str, str]]:
    """(name, canonical args) of every tool call since the last user message."""
    keys = []
    for message in messages[turn_start(messages) :]:
        for call in message.get("tool_calls") or ():
            fn = call.get("function") or {}
            keys.append(Action(fn.get("name") or "", as_args(fn.get("arguments")) or {}).key())
    return keys


def turn_start(messages: list[ChatMessage]) -> int:
    return max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1) + 1


SEARCH_TOOL = "search_files"
NO_MATCHES = "No matches for "
"""How a search that found nothing begins (hermes.agent.tools.file_search)."""
LIST_TOOL = "list_files"
MISSING_MODULE = re.compile(r"No module named '([\w.]+)'")
_NUMBERED_LINE = re.compile(r"^(\d+)\|(.*)$")


def _last_read(messages: list[ChatMessage], path: str) -> list[str] | None:
    """The file's lines as the latest `read_file` of `path` in `messages` showed them (None: never read)."""
    calls: dict[str, Action] = {}
    lines: list[str] | None = None
    for message in messages:
        for raw_call in message.get("tool_calls") or ():
            fn = raw_call.get("function") or {}
            calls[raw_call.get("id") or ""] = Action(fn.get("name") or "", as_args(fn.get("arguments")) or {})
        call = calls.get(message.get("tool_call_id") or "") if message.get("role") == "tool" else None
        if call is None or call.name != READ_TOOL or call.args.get("path") != path:
            continue
        numbered = [_NUMBERED_LINE.match(line) for line in text_of(message.get("content")).splitlines()]
        if numbered and numbered[0] is not None:  # not an error, not an empty file
            lines = [m.group(2) for m in numbered if m is not None]
    return lines


def align_patch(action: Action, messages: list[ChatMessage]) -> Action:
    """A `patch` whose old_string is fitted to the text the model last read of that file.

    Small models copy read_file's "N|" line prefixes into old_string, or get the
    indentation wrong. When the file was read in this conversation and old_string is not
    in that text as written, `edit_match.fit_edit` finds the one place it stands for and
    old_string becomes the file's own text, with new_string indented like the file.
    Anything else is left for the tool (which fits against the file itself) to refuse.
    """
    action = _kept_definitions(_without_line_numbers(action), latest_request(messages))
    path, old, new = action.args.get("path"), action.args.get("old_string"), action.args.get("new_string")
    if action.name not in EDIT_TOOLS or not isinstance(path, str) or not isinstance(old, str) or not old.strip():
        return action
    if not isinstance(new, str):
        return action
    lines = _last_read(messages, path)
    if lines is None or old in "\n".join(lines):
        return action
    fit = fit_edit(lines, old, new, similar=True)
    if fit is None:
        return action
    return Action(action.name, {**action.args, "old_string": fit.old, "new_string": fit.new})


_LINE_PREFIX = re.compile(r"^(\d+)\|")


def _without_line_numbers(action: Action) -> Action:
    """A `write_file` whose content is read_file's output copied, "N|" prefixes and all
    (every line, numbered one by one; a single line only as line 1): the content without them."""
    content = action.args.get("content")
    if action.name != "write_file" or not isinstance(content, str):
        return action
    lines = content.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line
    numbers = [_LINE_PREFIX.match(line) for line in lines]
    if not lines or any(m is None for m in numbers):
        return action
    first = int(numbers[0].group(1)) if numbers[0] else 0
    if [int(m.group(1)) for m in numbers if m] != list(range(first, first + len(lines))):
        return action
    if len(lines) == 1 and first != 1:
        return action  # "2024|x" alone is a line of data more likely than a copied read
    stripped = [line[m.end() :] for line, m in zip(lines, numbers, strict=True) if m]
    return Action(action.name, {**action.args, "content": "\n".join(stripped) + "\n"})


def _kept_definitions(action: Action, request: str) -> Action:
    """A `patch` that writes a new definition the request names over an existing one it does
    not ask to change: the new code goes in before the old, which stays.

    Asked to add `rgb_to_hex`, a small model replaces `def hex_to_rgb(value):` with the new
    function; a request to add keeps what is there. Not for a request that renames, replaces
    or removes (`asks_to_rename`), nor when the old definition's name is kept.
    """
    old, new = action.args.get("old_string"), action.args.get("new_string")
    if action.name not in EDIT_TOOLS or not isinstance(old, str) or not isinstance(new, str):
        return action
    if not removed_definitions(action) or asks_to_rename(request) or not wants_change(request):
        return action
    added = set(_DEFINITION.findall(new)) - set(_DEFINITION.findall(old))
    if not added & set(named_identifiers(request)) or not re.match(r"\s*(?:async\s+)?(?:def|class)\s", old):
        return action
    return Action(action.name, {**action.args, "new_string": new.rstrip("\n") + "\n\n\n" + old})


def no_op_edit(action: Action) -> bool:
    """A `patch` whose new_string is its old_string: it can only fail ("nothing to change")."""
    old, new = action.args.get("old_string"), action.args.get("new_string")
    return action.name in EDIT_TOOLS and isinstance(old, str) and old == new


def is_loop(action: Action, previous: list[tuple[str, str]]) -> bool:
    """Same tool and arguments as the last call of the turn, or made twice already."""
    if action.is_reply:
        return False
    key = action.key()
    return bool(previous) and (previous[-1] == key or previous.count(key) >= 2)

"""What a turn did, read from its transcript, and the answer hermes writes from it.

    facts = turn_facts(turn.messages)   # this turn's messages (OpenAI shape), input first
    facts.changed                        # ("stats.py",): files a write tool changed, once each, in order
    facts.last_command                   # the last `terminal` call and its result, or None
    facts.ran_tools                      # whether any tool ran
    fallback_answer(facts)               # the answer when the model gave none (marked as hermes')
    failed_check_note(facts)             # the line after the model's answer when the last check failed
    unusable_answer(text, request, ours) # empty, a bare refusal, or hermes' words / the request handed back

A model that stops without an answer of its own (nothing, the user's prompt echoed back,
or hermes' steering text repeated) leaves the user nothing true to read. hermes then
writes the answer from the facts alone: what changed and what the last check printed,
under a first line that says the words are hermes', not the model's.

Invariants:
- Only the transcript decides; no file is read.
- A file counts as changed when its write call's result says so ("Patched", "Created",
  "Overwrote"); a refused or failed write does not count, nor one hermes undid
  (`HERMES_UNDO_PREFIX`) with no later change of that file.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from hermes.agent.check_output import CommandResult, command_result, essential_lines
from hermes.agent.providers.action_grammar import as_args
from hermes.agent.providers.task_cues import looks_like_check
from hermes.agent.tools.edit_history import HERMES_UNDO_PREFIX
from hermes.messages import ChatMessage

WRITE_TOOLS = frozenset({"write_file", "patch"})
CHANGED_PREFIXES = ("Patched ", "Created ", "Overwrote ")
HERMES_MARK = "hermes (not the model):"
"""How the first line of an answer hermes wrote itself begins."""
ECHO_NGRAM = 4
ECHO_SHARE = 0.7
"""An answer whose word 4-grams are at least this share of another text's repeats that text."""
NOTES_SHARE = 0.3
"""With the request's 4-grams counted too, at least this share must still be hermes' own."""


@dataclass(frozen=True, slots=True)
class CommandRun:
    command: str
    result: CommandResult


@dataclass(frozen=True, slots=True)
class TurnFacts:
    changed: tuple[str, ...] = ()
    last_command: CommandRun | None = None
    ran_tools: bool = False
    guidance: tuple[str, ...] = field(default_factory=tuple)
    """Tool results that are hermes' words to the model (refusals, errors): never an answer."""
    last_check: CommandRun | None = None
    """The last command that reads as a check (`task_cues.looks_like_check`: tests, a script)."""
    checked_after_change: bool = False
    """`last_check` ran after the turn's last change of a file (it tells how the changes fared)."""


def text_of(content: Any) -> str:
    """The text of a message's content: a string as is, the text parts of a list joined."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part.get("text", "") for part in content if isinstance(part, dict) and part.get("type") == "text"
        )
    return "" if content is None else str(content)


def turn_facts(messages: Iterable[ChatMessage]) -> TurnFacts:
    """The files changed, the last command run and hermes' own guidance of a turn's messages."""
    calls: dict[str, tuple[str, dict[str, Any]]] = {}
    changes: dict[str, int] = {}  # path -> changes the model made, less those hermes undid (in order)
    last: CommandRun | None = None
    ran = False
    check: CommandRun | None = None
    after_change = False
    guidance: list[str] = []
    for message in messages:
        if message.get("role") == "assistant":
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                calls[str(call.get("id"))] = (str(function.get("name") or ""), as_args(function.get("arguments")) or {})
        elif message.get("role") == "tool":
            ran = True
            name, args = calls.get(str(message.get("tool_call_id")), (str(message.get("name") or ""), {}))
            result = text_of(message.get("content"))
            if result.startswith(("Error:", "Not patched:", "Not written:")):
                guidance.append(result)
            if name in WRITE_TOOLS and result.startswith(CHANGED_PREFIXES):
                path = args.get("path")
                if isinstance(path, str) and path:
                    undo = str(message.get("tool_call_id")).startswith(HERMES_UNDO_PREFIX)
                    changes[path] = changes.get(path, 0) + (-1 if undo else 1)
                    after_change = False
            elif name == "terminal":
                parsed = command_result(result)
                if parsed is not None:
                    last = CommandRun(str(args.get("command") or ""), parsed)
                    if looks_like_check(last.command):
                        check, after_change = last, True
    changed = tuple(path for path, count in changes.items() if count > 0)
    return TurnFacts(changed, last, ran, tuple(guidance), check, after_change and bool(changed))


def describe_command(run: CommandRun) -> list[str]:
    """`command` and how it ended, with the lines that say why it failed."""
    code = run.result.exit_code
    if run.result.timed_out:
        head = f"`{run.command}` timed out"
    elif not run.result.failed:
        return [f"`{run.command}` succeeded (exit code {code})."]
    else:
        head = f"`{run.command}` failed (exit code {code})"
    why = essential_lines(run.result.output)
    return [head + (":" if why else "."), *(f"    {line}" for line in why)]


def fallback_answer(facts: TurnFacts, *, stopped_early: str | None = None) -> str:
    """The answer hermes writes from `facts` when the model gave none of its own.

    `stopped_early`: why the turn ended before the model finished (e.g. "after 8 model calls").
    """
    lines = [
        f"{HERMES_MARK} the model ended the turn without an answer of its own"
        + (f" ({stopped_early})" if stopped_early else "")
        + ". What the turn did:"
    ]
    if facts.changed:
        lines.append("Changed: " + ", ".join(facts.changed) + ".")
    else:
        lines.append("No file was changed.")
    if facts.last_command is not None:
        lines += ["Last command: " + describe_command(facts.last_command)[0], *describe_command(facts.last_command)[1:]]
    return "\n".join(lines)


def failed_check_note(facts: TurnFacts) -> str | None:
    """hermes' line after the model's own answer when the turn changed files and the check
    run after the last change failed (a model that says "done" then is not the last word);
    None otherwise."""
    run = facts.last_check
    if run is None or not run.result.failed or not facts.checked_after_change:
        return None
    head, *why = describe_command(run)
    return "\n".join([f"{HERMES_MARK} after the changes ({', '.join(facts.changed)}), {head}", *why[:4]])


_WORD = re.compile(r"[\w'.-]+")


def _ngrams(text: str, n: int = ECHO_NGRAM) -> list[tuple[str, ...]]:
    words = [w.lower().strip(".") for w in _WORD.findall(text)]
    return [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]


def repeats_text(answer: str, sources: Sequence[str], request: str = "") -> bool:
    """True when `answer` is `sources` said again: most of its word 4-grams are one source's,
    or are the sources' and the request's together with a good part from the sources (hermes'
    notes pieced together around the quoted request; a restatement of the request alone is
    an answer), for an answer of at least 8 words (shorter ones share a command line and no
    more); or its first sentence, of 5 words or more, stands in a source word for word."""
    grams = _ngrams(answer)
    first = _plain(_SENTENCE_END.split(answer.strip(), maxsplit=1)[0])
    enough = len(grams) >= 5
    pooled: set[tuple[str, ...]] = set()
    for source in sources:
        known = set(_ngrams(source))
        pooled |= known
        if enough and known and sum(gram in known for gram in grams) >= ECHO_SHARE * len(grams):
            return True
        if len(first.split()) >= 5 and first in _plain(source):
            return True
    if not enough or not pooled:
        return False
    ours = sum(gram in pooled for gram in grams)
    asked = set(_ngrams(request))
    return ours >= NOTES_SHARE * len(grams) and sum(g in pooled or g in asked for g in grams) >= ECHO_SHARE * len(grams)


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


_CANNED_REFUSAL = re.compile(
    r"^\W*(?:I'?m sorry|I am sorry|sorry|I apologi[sz]e)\b[^.!?]{0,40}\b(?:can(?:no|')?t|unable to|not able to) "
    r"(?:assist|help|perform|do|complete|fulfil?l)(?: you)?"
    r"(?: (?:with )?(?:that|this|the|your)(?: (?:request|task|action))?)?\W*$",
    re.IGNORECASE,
)
_HELP_OFFER = re.compile(
    r"^\W*(?:please )?(?:let me know|is there anything|if you (?:have|need))\b[^.!?]{0,80}[.!?]?\W*$", re.IGNORECASE
)


def _canned_refusal(text: str) -> bool:
    """A bare "I'm sorry, but I can't assist with that.", alone or with an offer of help after it."""
    first, *rest = _SENTENCE_END.split(text)
    return _CANNED_REFUSAL.match(first) is not None and all(_HELP_OFFER.match(sentence) for sentence in rest)


def _plain(text: str) -> str:
    return " ".join(text.lower().split()).strip(" .!?\"'`")


def echoes_request(answer: str, request: str) -> bool:
    """True when `answer` is the request handed back: the same words, or the request with a
    few characters around it, or most of it cut short. A reply that restates it in other
    words ("Renamed fetch_rows…" for "Rename fetch_rows…") is an answer, not an echo."""
    said, asked = _plain(answer), _plain(request)
    if not said or not asked:
        return False
    if said == asked:
        return True
    if len(asked.split()) < 4:
        return False  # "go" answered "All good.": a short request is only echoed word for word
    # Whole words: the request inside the answer, or most of the request cut short.
    if f" {asked} " in f" {said} " and len(said) <= len(asked) + 40:
        return True
    return f" {said} " in f" {asked} " and len(said) >= 0.6 * len(asked)


def unusable_answer(text: str, request: str, hermes_texts: Sequence[str]) -> bool:
    """An answer that tells the user nothing of its own: empty, the request handed back,
    hermes' words to the model (`hermes_texts`) repeated, or a bare "I'm sorry, but I can't
    assist with that." after tools ran (it says nothing of what they did)."""
    stripped = text.strip()
    if not stripped or _canned_refusal(stripped):
        return True
    return echoes_request(stripped, request) or repeats_text(stripped, hermes_texts, request)

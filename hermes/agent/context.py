"""Keeping every model request inside the model's context window.

    budget = ContextBudget(policy, summarizer, session_id=..., store=store)
    if budget.over_limit(context, tools):               # before each model call
        async for event in budget.compact(context, tools, "threshold"):
            ...                                           # ContextCompacted when it compacted
    budget.observe(outcome.usage, context)                # after the call

The window and the threshold:
- `context_window_for(model, configured, provider_window)`: the configured
  `context_window`, else the window the provider reports (the local model's real `n_ctx`,
  which also caps a configured value), else a small table of known models, else 128k.
- A request is compacted when its estimate exceeds `compact_at × window` (the limit).

Invariants:
- The estimate of a request is never below characters / 4 of every message's content, tool
  names and arguments (plus the tool schemas and a small per-message overhead); after a
  model call that reported `prompt_tokens`, the real number (plus the estimate of what was
  added since) is used when it is larger.
- Compaction replaces the older messages of the request (not of the store) with one
  summary message; the request becomes system prompt + summary + recent messages. The
  split never falls between an assistant message with tool calls and its tool results
  (the recent part never starts with a tool message).
- Summaries are incremental: the previous summary is the first of the older messages, so
  the summariser gets it plus what came after it, never the whole transcript.
- Every summary request fits the limit: older messages are summarised in chunks, each
  chunk folded into the running summary; a message too long for one chunk is cut in the
  middle for the summariser only.
- When the recent messages alone still exceed the limit, the longest message contents of
  the request are cut in the middle until it fits (the store keeps them whole).
- The store keeps every original message; a compaction adds a marker (summary, id of
  the first kept message). Resuming a session sends the latest summary plus the messages
  from that id on (`resume_history`). Compaction never changes the session id.
"""

from __future__ import annotations

import functools
import json
import logging
import math
import re
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from hermes.agent.events import ContextCompacted
from hermes.agent.prefix_memo import PrefixMemo
from hermes.agent.types import ChatMessage, Usage
from hermes.errors import ContextLengthExceeded, ProviderError
from hermes.store.api import AsyncSessionStore
from hermes.store.records import CompactionRecord, HistoryMark, MessageRecord, NewCompaction
from hermes.store.transcript import valid_transcript

log = logging.getLogger(__name__)

DEFAULT_CONTEXT_WINDOW = 128_000
DEFAULT_COMPACT_AT = 0.8
KNOWN_CONTEXT_WINDOWS: dict[str, int] = {
    "gpt-3.5-turbo": 16_385,
    "gpt-4": 8_192,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "claude": 200_000,
    "gemini": 1_048_576,
    "deepseek": 128_000,
    "llama": 128_000,
    "mistral": 32_768,
    "qwen": 32_768,
}
"""Context windows of known models by name prefix (the longest matching prefix wins)."""

CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD_CHARS = 16
"""Role, separators and the like of one message, in characters."""
SUMMARY_HEADER = "[Summary of the earlier conversation, written when it was compacted]\n"
SUMMARY_SHARE = 0.15
"""Share of the limit the summary may take (its output budget, at most MAX_SUMMARY_TOKENS)."""
MAX_SUMMARY_TOKENS = 4096
RECENT_SHARE = 0.5
"""Share of the room left (limit − system prompt − tools − summary) kept as recent messages."""

SUMMARIZER_PROMPT = (
    "You compact the history of a conversation between a user and a coding agent so the agent "
    "can continue the work with only your summary and the most recent messages. Write a concise "
    "summary in plain text with these parts: the task (what the user asked, in their words where "
    "it matters); decisions made and facts learned; files touched (paths, and what changed in "
    "each); commands run and their outcome when it matters; open items (what is left to do, "
    "errors not yet fixed). Keep names, paths, numbers and error messages exact. Do not invent "
    "anything, do not address the user, and do not call tools."
)

CompactReason = Literal["threshold", "overflow", "manual"]

_OVERFLOW = re.compile(
    r"context[_ ]length[_ ]exceeded|maximum context length|context window|context length|"
    r"exceeds? the (available )?context|too many tokens|prompt is too long|exceed_context_size|"
    r"input is too long|reduce the length of the messages",
    re.IGNORECASE,
)


# ---- window and estimate -------------------------------------------------------------


@functools.lru_cache(maxsize=64)
def known_context_window(model: str) -> int:
    """The window of a known model (by name prefix, provider prefix ignored), else 128k."""
    name = model.lower().rsplit("/", 1)[-1]
    best = ""
    for prefix in KNOWN_CONTEXT_WINDOWS:
        if name.startswith(prefix) and len(prefix) > len(best):
            best = prefix
    return KNOWN_CONTEXT_WINDOWS[best] if best else DEFAULT_CONTEXT_WINDOW


def context_window_for(model: str, configured: int | None = None, provider_window: int | None = None) -> int:
    """The window to keep requests in; see the module docstring for the order."""
    if provider_window:
        return min(configured, provider_window) if configured else provider_window
    return configured or known_context_window(model)


IMAGE_PART_CHARS = 3_000
"""What an image counts for in the estimate: about 765 tokens, a common vision price of a
detailed image (its data URL's length would count a photo as hundreds of thousands)."""


def _content_chars(content: Any) -> int:
    if content is None:
        return 0
    if isinstance(content, str):
        return len(content)
    if isinstance(content, list):
        total = 0
        for part in content:
            if isinstance(part, dict) and isinstance(part.get("text"), str):
                total += len(part["text"])
            elif isinstance(part, dict) and part.get("type") == "image_url":
                total += IMAGE_PART_CHARS  # a model reads an image as tiles, not as its base64 text
            else:
                total += len(json.dumps(part, ensure_ascii=False, default=str))
        return total
    return len(str(content))


def message_chars(message: ChatMessage) -> int:
    """Characters of a message's content, tool names and arguments, plus its overhead."""
    chars = MESSAGE_OVERHEAD_CHARS + _content_chars(message.get("content"))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {} if isinstance(call, dict) else {}
        chars += len(str(function.get("name") or "")) + len(str(function.get("arguments") or ""))
    return chars


def estimate_tokens(messages: list[ChatMessage], tools: list[dict[str, Any]] | None = None) -> int:
    """The size of a request in tokens: characters / 4 (see the module docstring)."""
    chars = sum(message_chars(m) for m in messages)
    if tools:
        chars += tools_chars(tools)
    return math.ceil(chars / CHARS_PER_TOKEN)


_HISTORY_CHARS: PrefixMemo[list[int]] = PrefixMemo(entries=256, max_weight=64 * 1024 * 1024)
"""The running total of characters of a request's messages after the system prompt, by
their leading messages (`prefix_memo`): a stored session's history comes as the same
dicts turn after turn (`hermes.agent.history`), and the context of a turn grows at its end."""


def request_tokens(messages: list[ChatMessage], tools: list[dict[str, Any]] | None = None) -> int:
    """`estimate_tokens(messages, tools)`, measuring only the messages that do not follow
    the system prompt as they did in an earlier request (`_HISTORY_CHARS`)."""
    rest = messages[1:]
    found = _HISTORY_CHARS.find(rest)
    shared, totals = found if found is not None else (0, [])
    if shared < len(rest):
        totals = totals[:shared]
        running = totals[-1] if totals else 0
        for size in map(message_chars, rest[shared:]):
            running += size
            totals.append(running)
        _HISTORY_CHARS.keep(rest, totals, weight=totals[-1])
    chars = (totals[len(rest) - 1] if rest else 0) + sum(map(message_chars, messages[:1]))
    if tools:
        chars += tools_chars(tools)
    return math.ceil(chars / CHARS_PER_TOKEN)


_TOOL_CHARS: dict[int, tuple[dict[str, Any], int]] = {}
"""id(tool schema) -> (the schema, the length of its JSON): the same schemas come with
every request (`ToolRegistry.schemas()`), and a schema is never changed in place."""
_TOOL_CHARS_KEPT = 256


def tools_chars(tools: list[dict[str, Any]]) -> int:
    """`len(json.dumps(tools, ensure_ascii=False, default=str))`, each schema measured once."""
    total = 2 * len(tools)  # the brackets, and ", " between two schemas
    for tool in tools:
        hit = _TOOL_CHARS.get(id(tool))
        if hit is None or hit[0] is not tool:
            if len(_TOOL_CHARS) >= _TOOL_CHARS_KEPT:
                _TOOL_CHARS.clear()  # a client's own tools come new with every request
            hit = _TOOL_CHARS[id(tool)] = (tool, len(json.dumps(tool, ensure_ascii=False, default=str)))
        total += hit[1]
    return total


def is_context_overflow(error: ProviderError) -> bool:
    """The upstream refused the request because it does not fit the model's context."""
    if isinstance(error, ContextLengthExceeded):
        return True
    return error.status in (400, 413, None) and bool(_OVERFLOW.search(str(error)))


def compacted_text(event: ContextCompacted) -> str:
    """One line saying what a compaction did (status frames, `chat -q`'s stderr)."""
    plural = "s" if event.summarized_messages != 1 else ""
    why = " after the model refused the long request" if event.reason == "overflow" else ""
    return (
        f"context compacted{why}: {event.summarized_messages} older message{plural} summarised, "
        f"~{event.before_tokens} → ~{event.after_tokens} tokens"
    )


# ---- summary messages and resume -----------------------------------------------------


def summary_message(summary: str) -> ChatMessage:
    return {"role": "user", "content": SUMMARY_HEADER + summary}


def is_summary_message(message: ChatMessage) -> bool:
    content = message.get("content")
    return message.get("role") == "user" and isinstance(content, str) and content.startswith(SUMMARY_HEADER)


class StoredHistory(Protocol):
    """What `resume_history` reads: a session store, local or a remote server's."""

    async def compactions(self, session_id: str) -> list[CompactionRecord]: ...

    async def get_messages(
        self, session_id: str, *, limit: int | None = None, offset: int = 0
    ) -> list[MessageRecord]: ...

    async def history(self, session_id: str) -> list[ChatMessage]: ...


async def resume_history(store: StoredHistory, session_id: str) -> list[ChatMessage]:
    """What a resumed session sends: the latest summary + the messages after its marker."""
    markers = await store.compactions(session_id)
    if markers:
        marker = markers[-1]
        messages = await store.get_messages(session_id)
        kept = [m.to_openai() for m in messages if m.id >= marker.first_kept_message_id]
        return [summary_message(marker.summary), *valid_transcript(kept)]
    return await store.history(session_id)


class CompactedHistory(Protocol):
    """What the compacted form of a session's history is read from, from the compaction
    point on (`AsyncSessionStore`'s bounded reads)."""

    async def history_mark(self, session_id: str) -> HistoryMark: ...

    async def history_since(
        self, session_id: str, first_message_id: int, *, large: bool = False
    ) -> list[MessageRecord]: ...

    async def latest_compaction(self, session_id: str) -> CompactionRecord | None: ...


async def read_compacted_history(store: CompactedHistory, session_id: str) -> list[ChatMessage]:
    """`resume_history`, reading the store from the latest compaction's first kept message
    on (never from the start; drafts left out). A long-lived process keeps these per
    session: `hermes.agent.history.SessionHistories`."""
    marker = await store.latest_compaction(session_id)
    rows = await store.history_since(session_id, marker.first_kept_message_id if marker is not None else 0)
    kept = valid_transcript([row.to_openai() for row in rows])
    return kept if marker is None else [summary_message(marker.summary), *kept]


# ---- the summariser ------------------------------------------------------------------

Summarize = Callable[[list[ChatMessage]], Awaitable[tuple[str, Usage]]]
"""(messages of a tool-less request) -> (text, usage). Raises ProviderError."""


def render_message(message: ChatMessage) -> str:
    """A message as plain transcript text for the summariser."""
    role = str(message.get("role") or "?")
    content = message.get("content")
    if isinstance(content, list):
        text = "\n".join(str(p.get("text", "[non-text part]")) for p in content if isinstance(p, dict))
    else:
        text = "" if content is None else str(content)
    if is_summary_message(message):
        return "PREVIOUS SUMMARY:\n" + text[len(SUMMARY_HEADER) :]
    if role == "tool":
        return f"TOOL RESULT ({message.get('name') or message.get('tool_call_id') or 'tool'}):\n{text}"
    lines = [f"{role.upper()}:\n{text}" if text else f"{role.upper()}:"]
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        lines.append(f"  → calls {function.get('name')}({function.get('arguments') or ''})")
    return "\n".join(lines)


def cut_middle(text: str, max_chars: int) -> str:
    """`text` within `max_chars`, its middle replaced by a note saying how much was left out."""
    if len(text) <= max_chars:
        return text
    note = "\n[… {} characters left out …]\n"
    room = max(0, max_chars - len(note.format(len(text))))
    head = room * 2 // 3
    tail = room - head
    return text[:head] + note.format(len(text) - room) + (text[len(text) - tail :] if tail else "")


@dataclass(frozen=True, slots=True)
class ContextPolicy:
    window: int
    compact_at: float = DEFAULT_COMPACT_AT

    @property
    def limit(self) -> int:
        """The largest request (estimated tokens) sent without compacting first."""
        return max(1, int(self.window * self.compact_at))

    @property
    def summary_tokens(self) -> int:
        return max(64, min(MAX_SUMMARY_TOKENS, int(self.limit * SUMMARY_SHARE)))


@dataclass(frozen=True, slots=True)
class Compaction:
    """What one compaction did to a request."""

    messages: list[ChatMessage]
    """The new request messages: system prompt, summary, recent messages."""
    summary: str
    kept: int
    """How many of the original messages were kept after the summary."""
    summarized: int
    usage: Usage


async def summarize_older(
    older: list[ChatMessage], policy: ContextPolicy, summarize: Summarize
) -> tuple[str, Usage]:
    """One summary of `older` (which may start with the previous summary), chunked to fit."""
    out_tokens = policy.summary_tokens
    prompt_tokens = estimate_tokens([{"role": "system", "content": SUMMARIZER_PROMPT}]) + 64
    # Room for the transcript text of one chunk, besides the running summary and the answer.
    room_chars = max(400, (policy.limit - prompt_tokens - 2 * out_tokens) * CHARS_PER_TOKEN)
    texts = [cut_middle(render_message(m), room_chars) for m in older]
    chunks: list[list[str]] = [[]]
    used = 0
    for text in texts:
        if chunks[-1] and used + len(text) + 2 > room_chars:
            chunks.append([])
            used = 0
        chunks[-1].append(text)
        used += len(text) + 2
    summary = ""
    usage = Usage()
    for chunk in chunks:
        parts = []
        if summary:
            parts.append("PREVIOUS SUMMARY:\n" + summary)
        parts.append("\n\n".join(chunk))
        request: list[ChatMessage] = [
            {"role": "system", "content": SUMMARIZER_PROMPT},
            {
                "role": "user",
                "content": "Conversation so far:\n\n"
                + "\n\n".join(parts)
                + "\n\nWrite the updated summary of everything above (previous summary included), "
                f"in at most {out_tokens * 3 // 4} words.",
            },
        ]
        text, used_now = await summarize(request)
        usage = usage + used_now
        summary = cut_middle(text.strip(), out_tokens * CHARS_PER_TOKEN) or summary
    return summary, usage


def _split_point(rest: list[ChatMessage], budget_tokens: int) -> int | None:
    """Index in `rest` where the recent messages start, or None when nothing can be summarised.

    The recent part is the longest suffix within `budget_tokens` that starts at a non-tool
    message (so no tool result loses its call); at least one message is kept, and at least
    one message other than a previous summary is summarised.
    """
    first_new = 1 if rest and is_summary_message(rest[0]) else 0
    candidates = [i for i in range(first_new + 1, len(rest)) if rest[i].get("role") != "tool"]
    if not candidates:
        return None
    suffix_tokens = [0] * (len(rest) + 1)
    for i in range(len(rest) - 1, -1, -1):
        suffix_tokens[i] = suffix_tokens[i + 1] + math.ceil(message_chars(rest[i]) / CHARS_PER_TOKEN)
    for i in candidates:
        if suffix_tokens[i] <= budget_tokens:
            return i
    return candidates[-1]


def shrink_to_fit(messages: list[ChatMessage], tools: list[dict[str, Any]] | None, limit: int) -> list[ChatMessage]:
    """The request with its longest contents cut in the middle until it fits `limit` (best effort)."""
    out = [dict(m) for m in messages]
    for _ in range(64):
        over = estimate_tokens(out, tools) - limit
        if over <= 0:
            break
        index = max(range(1, len(out)), key=lambda i: _content_chars(out[i].get("content")), default=None)
        if index is None:
            break
        content = out[index].get("content")
        if not isinstance(content, str) or len(content) < 200:
            break
        out[index]["content"] = cut_middle(content, max(100, len(content) - over * CHARS_PER_TOKEN - 200))
    return out


async def compact_messages(
    context: list[ChatMessage],
    tools: list[dict[str, Any]] | None,
    policy: ContextPolicy,
    summarize: Summarize,
    *,
    recent_tokens: int | None = None,
) -> Compaction | None:
    """Summarise the older part of `context` (system prompt first); None when nothing is older."""
    system, rest = context[:1], context[1:]
    fixed = estimate_tokens(system, tools) + policy.summary_tokens + 32
    budget = recent_tokens if recent_tokens is not None else max(0, int((policy.limit - fixed) * RECENT_SHARE))
    split = _split_point(rest, budget)
    if split is None:
        return None
    older, recent = rest[:split], rest[split:]
    summary, usage = await summarize_older(older, policy, summarize)
    messages = [*system, summary_message(summary), *recent]
    messages = shrink_to_fit(messages, tools, policy.limit)
    summarized = len(older) - (1 if older and is_summary_message(older[0]) else 0)
    return Compaction(messages=messages, summary=summary, kept=len(recent), summarized=summarized, usage=usage)


# ---- per turn ------------------------------------------------------------------------


class ContextBudget:
    """The context bookkeeping of one turn (or of one `/compact`); see the module docstring."""

    def __init__(
        self,
        policy: ContextPolicy,
        summarize: Summarize,
        *,
        session_id: str,
        store: AsyncSessionStore | None,
        reported: tuple[int, int] = (0, 0),
    ) -> None:
        """`reported`: (prompt_tokens, message count) of the session's last request, as
        `reported` held after the previous turn (so a turn starts from real numbers)."""
        self.policy = policy
        self.summarize = summarize
        self.session_id = session_id
        self.store = store
        self.usage = Usage()
        """Tokens spent on summaries."""
        self.overflow_retried = False
        self.last_prompt_tokens = 0
        """The size of the last request sent: the provider's prompt_tokens, else the estimate."""
        self._reported, self._reported_len = reported

    @property
    def reported(self) -> tuple[int, int]:
        """(prompt_tokens, message count) of the last request the provider reported on."""
        return self._reported, self._reported_len

    def take_usage(self) -> Usage:
        """Tokens spent on summaries since the last call (then reset)."""
        usage, self.usage = self.usage, Usage()
        return usage

    def estimate(self, context: list[ChatMessage], tools: list[dict[str, Any]] | None) -> int:
        estimate = request_tokens(context, tools)
        if self._reported and self._reported_len <= len(context):
            estimate = max(estimate, self._reported + estimate_tokens(context[self._reported_len :]))
        return estimate

    def observe(self, usage: Usage, context: list[ChatMessage], tools: list[dict[str, Any]] | None) -> None:
        """Remember what the provider reported for the request `context` just had."""
        self._reported = usage.input_tokens
        self._reported_len = len(context)
        self.last_prompt_tokens = usage.input_tokens or request_tokens(context, tools)

    def over_limit(self, context: list[ChatMessage], tools: list[dict[str, Any]] | None) -> bool:
        """True when `context` is estimated above the limit: compact it ("threshold") first."""
        return self.estimate(context, tools) > self.policy.limit

    async def compact(
        self,
        context: list[ChatMessage],
        tools: list[dict[str, Any]] | None,
        reason: CompactReason,
        *,
        recent_tokens: int | None = None,
    ) -> AsyncGenerator[ContextCompacted, None]:
        """Compact `context` in place, record the marker, and report it."""
        before = self.estimate(context, tools)
        done = await compact_messages(context, tools, self.policy, self.summarize, recent_tokens=recent_tokens)
        if done is None:
            # Nothing older to summarise: only cutting long contents can help.
            context[:] = shrink_to_fit(context, tools, self.policy.limit)
            return
        self.usage = self.usage + done.usage
        context[:] = done.messages
        self._reported = 0
        after = estimate_tokens(context, tools)
        await self._mark(done, before, after)
        yield ContextCompacted(
            before_tokens=before,
            after_tokens=after,
            summarized_messages=done.summarized,
            kept_messages=done.kept,
            reason=reason,
            summary=done.summary,
        )

    async def _mark(self, done: Compaction, before: int, after: int) -> None:
        """Store the marker at the first kept message (when the store holds this transcript)."""
        store = self.store
        if store is None:
            return
        try:
            records = await store.get_messages(self.session_id)
            kept = done.messages[len(done.messages) - done.kept :]
            if done.kept > len(records):
                return
            tail = records[len(records) - done.kept :]
            if [(r.role, r.tool_call_id or None) for r in tail] != [
                (m.get("role"), m.get("tool_call_id") or None) for m in kept
            ]:
                log.info("session %s: transcript differs from the store; compaction not marked", self.session_id)
                return
            await store.add_compaction(
                self.session_id,
                NewCompaction(
                    summary=done.summary,
                    first_kept_message_id=tail[0].id,
                    summarized_messages=done.summarized,
                    before_tokens=before,
                    after_tokens=after,
                ),
            )
        except Exception:  # the marker is bookkeeping: a store failure must not fail the turn
            log.exception("could not record the compaction of session %s", self.session_id)


# ---- on demand -----------------------------------------------------------------------


async def compact_session(
    store: AsyncSessionStore,
    session_id: str,
    *,
    prompt: str,
    policy: ContextPolicy,
    summarize: Summarize,
    tools: list[dict[str, Any]] | None,
    reported: tuple[int, int] = (0, 0),
) -> ContextCompacted | None:
    """Compact a stored session now (`/compact`): everything but the last exchange is summarised.

    `prompt` is the session's system prompt; the tokens the summary took are added to the
    session's usage. Returns the event, or None when there is nothing older to summarise.
    Raises ProviderError when the summary call fails.
    """
    history = await read_compacted_history(store, session_id)
    context: list[ChatMessage] = [{"role": "system", "content": prompt}, *history]
    budget = ContextBudget(policy, summarize, session_id=session_id, store=store, reported=reported)
    compacted: ContextCompacted | None = None
    async for event in budget.compact(context, tools, "manual", recent_tokens=0):
        compacted = event
    usage = budget.take_usage()
    await store.add_usage(session_id, input_tokens=usage.input_tokens, output_tokens=usage.output_tokens)
    return compacted

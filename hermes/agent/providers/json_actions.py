"""Tool use for small models: one JSON action per reply instead of native tool calls.

Small local models (1–2B) asked with a native `tools` field write fenced JSON instead
of real tool calls and invent calls for "hello". Asked instead for exactly one JSON
object constrained by a schema,

    {"action": "<tool name>" | "reply", "args": {...}}

they choose well. `JsonActionProvider` wraps any OpenAI-compatible provider and does
that translation both ways, so the engine, TUI and server see the native shape:

    request  tools → a compact catalogue in the system prompt + `response_format`
             (a JSON schema with one branch per tool, whose `args` is that tool's
             parameter schema, plus `reply`); no `tools` field. Earlier assistant
             tool calls are written back as the JSON actions the model would have
             produced, tool results become user messages ("Result of read_file: …").
    response `reply` → TextChunk(s), streamed as the JSON string arrives
             (escape-aware), then FinishChunk("stop");
             a tool → one ToolCallChunk(index 0, fresh id, name, JSON arguments)
             + FinishChunk("tool_calls"), emitted once the object is complete.

`tool_choice` (`ModelRequest.tool_choice`) is honoured in the schema: ``none`` allows
only `reply`; ``required`` allows only tool actions; a named function allows only that
tool's action. Under ``none`` or a named function the adapter takes no steps of its own
(opening steps, edit repairs: they call other tools).

When the endpoint ignores the schema, `parse_action` falls back to fenced JSON,
`<tool_call>` tags, the first JSON object in the text, and finally plain text.

Loops: an action identical (name and arguments) to the previous tool call of this
turn, or already made twice in it, is not passed on. The model is asked again with a
note that it is repeating itself; if it still repeats, it is asked once more with a
schema that only allows `reply`. The prompt stays a stable prefix across steps (same
system text, history only appended), so the server's prompt cache is reused.

Failed edits: small models patch from memory, get "no match", and give that error as
their answer. When the latest tool result of the turn is a failed `patch`, the adapter
does not ask the model yet: it answers the step itself with a `read_file` call for that
file (a real tool call the engine runs and the front ends show), and the model's next
request ends with a note to retry the edit using the text it now sees. At most
`MAX_EDIT_REPAIRS` such re-reads per turn; after that the model answers as it likes.
A `patch` on a file the model has read is first fitted to that text (`align_patch`:
copied "N|" line prefixes dropped, indentation taken from the file).

Echoes: once a tool ran in the turn, a reply that only hands back the request or the notes
the model read (`repeats_text`: most of its word 4-grams are theirs) is not an answer. The
first `HOLD_CHARS` of every reply are held back until that is known, so an echo is never
shown; the model is asked again (`ECHO_NOTE`), and if it still has no answer of its own
the adapter ends the step with no text, and the engine writes the answer from the facts
of the turn (`hermes.agent.turn_facts`).

`assist` (the `small_model_assist` setting) turns the steps read from the request off:
opening steps, re-reads, lookups, fitted patches, notes, withheld write tools.

This module is the adapter (the `Provider`); the grammar (the action schema,
`tool_choice`, parsing) is `hermes.agent.providers.action_grammar`, the prompt rewriting
and the adapter's own steps are `hermes.agent.providers.action_steering`.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, ClassVar

from hermes.agent.provider import (
    FinishChunk,
    ModelRequest,
    ProgressChunk,
    Provider,
    ProviderEvent,
    ReasoningChunk,
    TextChunk,
    ToolCallChunk,
    UsageChunk,
)
from hermes.agent.providers.action_grammar import (
    REPLY,
    Action,
    ReplyStreamer,
    action_schema,
    allowed_names,
    choice_mode,
    complete_object,
    parse_action,
    repeating_tail,
    response_format,
    tool_functions,
    tool_name_of,
)
from hermes.agent.providers.action_steering import (
    FORCE_REPLY_NOTE,
    LOOP_NOTE,
    NO_OP_NOTE,
    align_patch,
    fit_context,
    is_loop,
    latest_request,
    no_op_edit,
    rewrite_messages,
    steering_notes,
    turn_actions,
)
from hermes.agent.providers.format_actions import format_note, formatted_reply_text, reply_branch, root_definitions
from hermes.agent.providers.own_steps import next_own_step, steps_allowed, turn_steps, undos_this_turn
from hermes.agent.providers.task_cues import WRITE_TOOLS, wants_change
from hermes.agent.turn_facts import echoes_request, repeats_text, text_of
from hermes.agent.types import ChatMessage, Usage
from hermes.errors import ConfigError
from hermes.ids import new_call_id

MAX_TRAILING_CHUNKS = 16
"""Chunks accepted after the action object is complete before the stream is cut."""
HOLD_CHARS = 120
"""Characters of a reply held back before any is shown: enough to tell the model's own
words from hermes' notes or the request handed back (`repeats_text`)."""
ECHO_NOTE = (
    "That reply repeats the instructions instead of answering. Reply to the user in your own words: "
    "what you did, what you found, and whether the request is done."
)


@contextlib.asynccontextmanager
async def closing_stream(events: AsyncIterator[ProviderEvent]) -> AsyncIterator[AsyncIterator[ProviderEvent]]:
    """`contextlib.aclosing` for a provider stream: leaving the block closes the request now."""
    try:
        yield events
    finally:
        aclose = getattr(events, "aclose", None)
        if aclose is not None:
            await aclose()


# ---- parsing ---------------------------------------------------------------------------


class JsonActionProvider(Provider):
    """Wraps an OpenAI-compatible provider so small models can use tools via JSON actions."""

    name: ClassVar[str] = "json-actions"

    def __init__(
        self,
        inner: Provider,
        *,
        tool_result_limit: int = 4000,
        base_prompt_limit: int = 1500,
        sampling: dict[str, Any] | None = None,
        context_chars: int | None = None,
        assist: bool = True,
    ) -> None:
        """
        Args:
            inner: the provider that talks to the model (OpenAI-compatible).
            tool_result_limit: characters of each tool result the model reads.
            base_prompt_limit: a system prompt longer than this is replaced by a short
                built-in one (small models read ~100 tokens/s on two cores).
            sampling: body fields added to every request unless the request sets them.
            context_chars: prompt budget in characters (about 3 per token); older turns
                are left out to stay under it. None: no limit.
            assist: take the steps read from what the request means (`small_model_assist`):
                opening steps, re-reads after failed edits, patches fitted to the text read,
                notes after checks, no write tools for a question. Off: only the protocol
                (and its guards against loops and echoed instructions).
        """
        self.inner = inner
        self.tool_result_limit = tool_result_limit
        self.base_prompt_limit = base_prompt_limit
        self.context_chars = context_chars
        self.assist = assist
        self.sampling = {"temperature": 0.2, "max_tokens": 2048} if sampling is None else dict(sampling)

    def describe(self) -> str:
        return f"{self.inner.describe()} (JSON-action tool protocol)"

    async def aclose(self) -> None:
        await self.inner.aclose()

    # ---- request building ----

    def action_request(
        self,
        request: ModelRequest,
        extra_messages: list[ChatMessage] | None = None,
        *,
        reply_only: bool = False,
    ) -> ModelRequest:
        """The inner request: rewritten messages, the action schema, no `tools`."""
        messages = rewrite_messages(
            request.messages,
            request.tools,
            base_prompt_limit=self.base_prompt_limit,
            tool_result_limit=self.tool_result_limit,
            assist=self.assist,
        )
        messages.extend(extra_messages or ())
        if self.context_chars is not None:
            messages = fit_context(messages, self.context_chars)
        extra = {**self.sampling, **request.extra}
        if "temperature" not in request.extra and undos_this_turn(turn_steps(request.messages)):
            # After an attempt that did not work, a fresh one, not the same guess again.
            extra["temperature"] = max(float(extra.get("temperature", 0.0)), RETRY_TEMPERATURE)
        # A question gets no write tools (in the grammar only: the prompt, and so the cache, stay).
        offered = request.tools
        mode, named = choice_mode(request.tool_choice)
        if named is not None:  # tool_choice names one function: only its action
            offered = [t for t in offered or () if tool_name_of(t) == named]
        elif offered and self.assist and not wants_change(latest_request(request.messages)):
            offered = [t for t in offered if tool_name_of(t) not in WRITE_TOOLS]
        fmt = request.output_format
        forced = mode == "required" and bool(tool_functions(offered))
        schema = action_schema(
            offered,
            reply_only=mode == "none" or (reply_only and not forced),
            reply=reply_branch(fmt) if fmt else None,
            tools_only=forced,
        )
        if fmt is not None:  # the answer's format is the reply branch (hermes/agent/providers/format_actions.py)
            schema = {**schema, **root_definitions(fmt)}
            messages[0] = {**messages[0], "content": f"{text_of(messages[0].get('content'))}\n{format_note(fmt)}"}
        extra["response_format"] = response_format(schema)
        return ModelRequest(
            model=request.model,
            messages=messages,
            tools=None,
            include_usage=request.include_usage,
            extra=extra,
        )

    @staticmethod
    def _loop_messages(action: Action, force_reply: bool) -> list[ChatMessage]:
        if force_reply:
            note = FORCE_REPLY_NOTE
        elif no_op_edit(action):
            note = NO_OP_NOTE.format(path=action.args.get("path") or "the file")
        else:
            note = LOOP_NOTE.format(name=action.name)
        return [{"role": "assistant", "content": action.to_json()}, {"role": "user", "content": note}]

    @staticmethod
    def _call_events(action: Action, call_id: str | None = None) -> list[ProviderEvent]:
        call_id = call_id or new_call_id()
        arguments = json.dumps(action.args, ensure_ascii=False)
        return [ToolCallChunk(index=0, id=call_id, name=action.name, arguments=arguments), FinishChunk("tool_calls")]

    # ---- Provider ----

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        if not tool_functions(request.tools):
            async with closing_stream(self.inner.stream(request)) as events:
                async for event in events:
                    yield event
            return
        names = allowed_names(request)
        repair = next_own_step(request.messages, names) if self.assist and steps_allowed(request) else None
        if repair is not None:
            for event in self._call_events(*repair):
                yield event
            return
        previous = turn_actions(request.messages)
        formatted = request.output_format is not None
        echo = self._echo_check(request)
        # Nothing to tell an echo from (no tool ran, or a formatted answer): stream at once.
        hold = HOLD_CHARS if echo.active and not formatted else 0
        extra_messages: list[ChatMessage] = []
        usage = Usage()
        saw_usage = False
        for attempt in range(3):
            inner_request = self.action_request(request, extra_messages, reply_only=attempt == 2)
            streamer = ReplyStreamer()
            finish = "stop"
            trailing = 0
            held = ""  # reply text not shown yet: the first HOLD_CHARS are checked first
            shown = echoed = False
            async with closing_stream(self.inner.stream(inner_request)) as events:
                async for event in events:
                    if isinstance(event, TextChunk):
                        if formatted:  # the answer is the whole args object: parsed at the end
                            streamer.raw += event.text
                        text = "" if formatted else streamer.feed(event.text)
                        if text and shown:
                            yield TextChunk(text)
                        elif text:
                            held += text
                            # A beginning that repeats the notes is held to the end: the
                            # whole reply decides (a restated request may lead to an answer).
                            if len(held) >= hold and not echo.suspect(held):
                                shown = True
                                yield TextChunk(held)
                                held = ""
                        if text and repeating_tail(streamer.text):
                            break  # a degenerate loop: end the answer rather than fill max_tokens
                        if streamer.done or ("}" in event.text and complete_object(streamer.raw)):
                            # A schema allows unbounded whitespace after the object; stop a
                            # model that pads instead of ending (closing the stream stops it).
                            trailing += 1
                            if trailing > MAX_TRAILING_CHUNKS:
                                break
                    elif isinstance(event, UsageChunk):
                        usage, saw_usage = usage + event.usage, True
                    elif isinstance(event, FinishChunk):
                        finish = event.reason
                    elif isinstance(event, (ReasoningChunk, ProgressChunk)):
                        yield event
                    # ToolCallChunk: impossible without `tools`; ignored if a server sends one.
            if held and not echoed:
                if echo.repeats(held):
                    echoed = True
                else:
                    shown = True
                    yield TextChunk(held)
            echo_text = held
            if not echoed and not shown and not streamer.done:
                action = _parse(streamer.raw, names, formatted)
                echoed = not formatted and action.is_reply and echo.repeats(action.text)
                echo_text = action.text
            if echoed:
                if attempt < 2:
                    extra_messages += self._echo_messages(echo_text)
                    continue
                break  # no answer of the model's own: the engine writes one from the turn's facts
            if shown or streamer.done:
                break  # the reply text is out already
            if not action.is_reply:
                action = self._aligned(action, request)  # fitted first: a fit can make old and new the same
            if attempt < 2 and (is_loop(action, previous) or no_op_edit(action)):
                extra_messages += self._loop_messages(action, force_reply=attempt == 1)
                continue
            if action.is_reply:
                if action.text:
                    yield TextChunk(action.text)
            elif finish == "length":
                pass  # a half-written action: nothing to run; the engine sees the truncation
            else:
                for event in self._call_events(action):
                    yield event
                if saw_usage:
                    yield UsageChunk(usage)
                return
            break
        if saw_usage:
            yield UsageChunk(usage)
        yield FinishChunk("length" if finish == "length" else "stop")

    def _echo_check(self, request: ModelRequest) -> EchoCheck:
        """What a reply must not merely repeat: the request and the notes the model read, once
        a tool ran this turn (before that nothing steered the model: "say it back" is answered)."""
        if not turn_actions(request.messages):
            return EchoCheck("", [])
        asked, notes = steering_notes(rewrite_messages(request.messages, request.tools, assist=self.assist))
        return EchoCheck(asked, [*notes, LOOP_NOTE, NO_OP_NOTE, FORCE_REPLY_NOTE, ECHO_NOTE])

    @staticmethod
    def _echo_messages(text: str) -> list[ChatMessage]:
        return [
            {"role": "assistant", "content": Action(REPLY, {"text": text}).to_json()},
            {"role": "user", "content": ECHO_NOTE},
        ]

    def _aligned(self, action: Action, request: ModelRequest) -> Action:
        return align_patch(action, request.messages) if self.assist else action

    async def complete(self, request: ModelRequest) -> list[ProviderEvent]:
        if not tool_functions(request.tools):
            return await self.inner.complete(request)
        names = allowed_names(request)
        repair = next_own_step(request.messages, names) if self.assist and steps_allowed(request) else None
        if repair is not None:
            return self._call_events(*repair)
        previous = turn_actions(request.messages)
        echo = self._echo_check(request)
        extra_messages: list[ChatMessage] = []
        usage = Usage()
        saw_usage = False
        events: list[ProviderEvent] = []
        for attempt in range(3):
            inner_request = self.action_request(request, extra_messages, reply_only=attempt == 2)
            raw, finish = "", "stop"
            formatted = request.output_format is not None
            for event in await self.inner.complete(inner_request):
                if isinstance(event, TextChunk):
                    raw += event.text
                elif isinstance(event, UsageChunk):
                    usage, saw_usage = usage + event.usage, True
                elif isinstance(event, FinishChunk):
                    finish = event.reason
                elif isinstance(event, ReasoningChunk):
                    events.append(event)
            action = _parse(raw, names, formatted)
            if not formatted and action.is_reply and echo.repeats(action.text):
                if attempt < 2:
                    extra_messages += self._echo_messages(action.text)
                    continue
                action = Action(REPLY, {"text": ""})  # the engine writes the answer from the turn's facts
            if not action.is_reply:
                action = self._aligned(action, request)  # fitted first: a fit can make old and new the same
            if attempt < 2 and (is_loop(action, previous) or no_op_edit(action)):
                extra_messages += self._loop_messages(action, force_reply=attempt == 1)
                continue
            if action.is_reply or finish == "length":
                if action.is_reply and action.text:
                    events.append(TextChunk(action.text))
                events.append(FinishChunk("length" if finish == "length" else "stop"))
            else:
                events += self._call_events(action)
            break
        if saw_usage:
            events.append(UsageChunk(usage))
        return events


RETRY_TEMPERATURE = 0.6
"""Sampling temperature of a turn's model calls after hermes undid a failed edit in it."""


@dataclass(frozen=True, slots=True)
class EchoCheck:
    """Tells a reply that only repeats the request or the notes from one of the model's own."""

    request: str
    notes: list[str]

    @property
    def active(self) -> bool:
        return bool(self.request or self.notes)

    def repeats(self, reply: str) -> bool:
        """The whole reply is the request handed back or hermes' notes said again."""
        return self.active and (echoes_request(reply, self.request) or repeats_text(reply, self.notes, self.request))

    def suspect(self, beginning: str) -> bool:
        """The reply's beginning could be an echo: hold it until the whole reply is in."""
        if not self.active:
            return False
        asked, said = " ".join(self.request.lower().split()), " ".join(beginning.lower().split())
        return asked.startswith(said) or said.startswith(asked) or repeats_text(beginning, self.notes)


def _parse(raw: str, names: set[str], formatted: bool) -> Action:
    """The action of a whole reply; a formatted reply's text is its args as JSON."""
    if formatted:
        text = formatted_reply_text(raw)
        if text is not None:
            return Action(REPLY, {"text": text})
    return parse_action(raw, names)


TOOL_PROTOCOLS = ("native", "json")
"""Values of the `tool_protocol` setting."""


def with_tool_protocol(provider: Provider, protocol: str, *, assist: bool = True) -> Provider:
    """`provider` as is (`native`), or wrapped in the JSON-action adapter (`json`).

    The local provider always speaks JSON actions, so it is never wrapped twice.

    Raises:
        ConfigError: `protocol` is neither native nor json.
    """
    if protocol not in TOOL_PROTOCOLS:
        raise ConfigError(f"unknown tool_protocol {protocol!r}: use native or json")
    if protocol == "native" or provider.name in ("local", JsonActionProvider.name):
        return provider
    return JsonActionProvider(provider, assist=assist)

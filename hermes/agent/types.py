"""Request and result types of a turn, and the OpenAI message shape used throughout."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Literal, TypeAlias

from hermes.agent.client_tools import ClientToolCall, ClientToolResult, ClientTools
from hermes.agent.modes import DEFAULT_MODE, Mode
from hermes.agent.output_format import OutputFormat
from hermes.agent.tool_host import ToolHost
from hermes.messages import ChatMessage as ChatMessage
from hermes.messages import UserContent as UserContent

TurnStatus = Literal["completed", "partial", "failed", "interrupted"]
AnswerBy = Literal["model", "hermes"]


@dataclass(frozen=True, slots=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    cached_input_tokens: int = 0
    """The part of `input_tokens` the provider served from its prompt cache."""

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.total_tokens + other.total_tokens,
            self.cached_input_tokens + other.cached_input_tokens,
        )


class ApprovalDecision(StrEnum):
    ONCE = "once"
    """Run this command this one time."""
    SESSION = "session"
    """Run it, and allow what ApprovalRequest.grant names for the rest of the session (ONCE when
    the request offers no grant; see hermes/agent/safety/grants.py)."""
    DENY = "deny"


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """What a front end is asked to approve."""

    session_id: str
    call_id: str
    tool_name: str
    command: str
    reason: str
    """Why approval is needed, e.g. "recursive delete"."""
    rule: str
    """Stable key of the rule that matched (shown; grants never cover a whole rule)."""
    grant: str | None = None
    """What a SESSION answer allows for the rest of the session (e.g. "this exact command: …");
    None: no grant is offered (the action always asks) and SESSION counts as ONCE."""


ApprovalCallback: TypeAlias = Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]


@dataclass(frozen=True, slots=True)
class SpawnedBy:
    """What runs a subagent's turn (hermes/agent/subagents): the parent's session, its
    `task` call, and how deep the child is (1: a child of a top-level turn)."""

    session_id: str
    call_id: str
    depth: int = 1


@dataclass(slots=True)
class TurnRequest:
    """One user turn.

    History comes from the session store unless `history` is given (the OpenAI-compatible
    server passes the client's transcript). The user message and every finished step are
    written to the store as they happen when `persist` is true.
    """

    input: UserContent
    session_id: str | None = None
    """Existing session to continue; None creates a new one."""
    fresh_if_taken: bool = False
    """With `session_id`: the turn creates a new session with that id, or with a fresh id
    when a session has it already (never continuing that one), decided by the write that
    creates it; `TurnStarted.session_id` and `TurnResult.session_id` name the one used."""
    history: list[ChatMessage] | None = None
    """Explicit prior transcript (without system prompt); overrides the store's history."""
    system_prompt: str | None = None
    """Replaces the default system prompt for this turn."""
    model: str | None = None
    source: str = "cli"
    """Session source for a new session: cli, tui, api_server, acp."""
    title: str | None = None
    persist: bool = True
    approve: ApprovalCallback | None = None
    """Asked for commands that need approval; None means deny."""
    yolo: bool = False
    max_iterations: int | None = None
    cwd: str | None = None
    """Working directory for tools; defaults to the process's."""
    host: ToolHost | None = None
    """The front end's own file access and command runner for the tools (an editor's, over
    ACP); None: the tools use this machine's files and run commands here."""
    output_format: OutputFormat | None = None
    """The format the answer must take; every model call of the turn sends it (None: free text)."""
    client_tools: ClientTools | None = None
    """The client's own tools (OpenAI front ends): offered beside hermes' tools; a call
    of one ends the turn with `TurnResult.client_calls` (see hermes/agent/client_tools.py)."""
    tool_results: tuple[ClientToolResult, ...] | None = None
    """A continuation: the results of the previous turn's client calls are this turn's
    input (recorded as tool messages) instead of a user message; `input` is not used."""
    mode: Mode = DEFAULT_MODE
    """default, accept-edits or plan (hermes/agent/modes.py): plan refuses every write and
    every command that is not known to only read, and tells the model it is planning."""
    conversation_mark: Callable[[TurnResult], str | None] | None = None
    """The front end's fingerprint of the conversation a client will resend after this
    turn, given its result: the session is marked with it in the turn's end write (see
    `AsyncSessionStore.finish_turn`); None from the callable marks nothing."""
    tools: tuple[str, ...] | None = None
    """Only these of the agent's tools are offered and run this turn (a subagent's); None: all."""
    spawned_by: SpawnedBy | None = None
    """A subagent's turn: its new session is stored with the parent's ids (hermes/agent/subagents)."""


@dataclass(slots=True)
class TurnResult:
    """How a turn ended.

    status:
        completed   the model answered in text (or, with `client_calls`, called
                    client tools and waits for their results)
        partial     some text was delivered but the answer is incomplete
                    (error_code OUTPUT_TRUNCATED, STREAM_STALLED or MAX_ITERATIONS)
        failed      no usable answer (error / error_code say why; INTERNAL_ERROR or a
                    HermesError's code for an unexpected exception)
        interrupted stopped through its TurnHandle (error_code = the stop's code);
                    final_text holds what was delivered
    error_code is one of hermes.error_codes (or a HermesError's `code`).
    """

    session_id: str
    status: TurnStatus
    final_text: str
    messages: list[ChatMessage] = field(default_factory=list)
    """This turn's transcript in OpenAI shape, its input first (the user message, or a
    continuation's tool results)."""
    usage: Usage = field(default_factory=Usage)
    api_calls: int = 0
    model: str = ""
    error: str | None = None
    error_code: str | None = None
    reasoning: str | None = None
    context_tokens: int = 0
    """Size of the turn's last model request in tokens (the provider's prompt_tokens, else
    the engine's estimate): what the context window holds now."""
    client_calls: tuple[ClientToolCall, ...] = ()
    """The turn ended (status completed) waiting for the client to run these calls of its
    own tools; the next turn continues with their results (`TurnRequest.tool_results`)."""
    answer_by: AnswerBy = "model"
    """Who wrote `final_text`: the model, or hermes from the facts of the turn when the model
    ended it without an answer of its own (`hermes.agent.turn_facts`)."""
    conversation_mark: str | None = None
    """The fingerprint the turn's end marked the session with (`TurnRequest.conversation_mark`);
    None when it marked none (not asked, or the turn ended another way: a stop, a failure)."""

    @property
    def completed(self) -> bool:
        return self.status == "completed"

    def produced(self) -> list[ChatMessage]:
        """What the turn produced: its transcript after its input (the user message, or a
        continuation's tool results)."""
        for index, message in enumerate(self.messages):
            if message.get("role") == "assistant":
                return self.messages[index:]
        return []

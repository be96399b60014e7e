"""The `task` tool: run a subagent, a child turn with a fresh context, and return its answer.

    task({"description": "find the config loader", "prompt": "…", "agent": "reviewer"})

A child turn runs on the same Agent (same provider, store and tool policy) as its own
session, stored with `parent_session_id` and `parent_call_id` (the `task` call). Invariants:

- Fresh context: the child's model sees the system prompt (the agent definition's body, or
  the agent's default prompt; the project instructions either way) and the `prompt` only,
  never the parent's history.
- Tools: an agent definition's `tools`, else READ_ONLY_TOOLS (and `task`); only those the
  Agent has. A child gets `task` only while `subagent_depth` allows one more level
  (default 1: never).
- Mode: `plan` (read-only: writes and changing commands are refused by the plan gate)
  unless the child's tools include one that is not read-only; a parent in plan mode gives
  plan mode to every child.
- Approvals go to the parent's approver (`ctx.approve`; none: refused), yolo as the parent's;
  the request and the forwarded ApprovalRequested both name the call "<task call>/<child call>".
- The child's usage counts in the parent turn's (`ctx.add_usage`), also when it was stopped.
- Cancelling the call (the parent stopped) stops the child, which ends its session
  "interrupted"; the call waits at most STOP_GRACE seconds for that.
- The child's tool calls go to the parent's stream as ToolStarted/ToolCompleted with
  `parent_call_id` (call ids "<task call>/<child call>"), and its approval requests as they are.
- At most `subagent_concurrency` children of one parent session run at once (the tool is
  read-only for the batch planner, so the calls of one step start together); others wait.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from hermes.agent.events import AgentEvent, ApprovalRequested, ToolCompleted, ToolStarted
from hermes.agent.modes import Mode
from hermes.agent.prompt import build_system_prompt
from hermes.agent.subagents.definitions import AgentCatalog, AgentDefinition
from hermes.agent.tools.args import require_str
from hermes.agent.tools.base import Tool, ToolContext
from hermes.agent.types import (
    ApprovalCallback,
    ApprovalDecision,
    ApprovalRequest,
    SpawnedBy,
    TurnRequest,
    TurnResult,
)
from hermes.error_codes import INTERRUPTED
from hermes.errors import ToolError

if TYPE_CHECKING:
    from hermes.agent.engine import Agent

TASK = "task"
READ_ONLY_TOOLS: tuple[str, ...] = ("read_file", "list_files", "search_files", "terminal")
"""A child's tools when its definition names none; `terminal` runs under plan mode's rules."""
DEFAULT_TOOLS: tuple[str, ...] = (*READ_ONLY_TOOLS, TASK)
"""The default child's tools: the read-only ones, and `task` where the depth allows one more level."""
STOP_GRACE = 4.0
"""Seconds a stopped child gets to end its session before its task is cancelled."""
MAX_PROMPT_CHARS = 100_000

_DESCRIPTION = (
    "Run a subagent: a separate agent with a fresh context (it sees only your prompt, not this "
    "conversation) that works on one task with its own tools and returns its final answer as the "
    "result. Use it for self-contained research or review that would fill your context. Write a "
    "complete prompt: what to do, where to look, and what to report. Several task calls in one "
    "step run at the same time. Without `agent`, the subagent only reads (read_file, list_files, "
    "search_files, read-only terminal commands)."
)


@dataclasses.dataclass(slots=True)
class _SessionSlots:
    """Per parent session: a semaphore of `limit` slots and how many calls use it."""

    semaphore: asyncio.Semaphore
    users: int = 0


class SubagentRunner:
    """Runs `task` calls on `agent` (set once the Agent is built: the tool is in its registry)."""

    def __init__(self, catalog: AgentCatalog, *, depth: int, concurrency: int) -> None:
        self.catalog = catalog
        self.depth = depth
        self.concurrency = concurrency
        self.agent: Agent | None = None
        self._slots: dict[str, _SessionSlots] = {}

    def tool(self) -> Tool:
        return Tool(
            name=TASK,
            description=task_description(self.catalog),
            parameters={
                "type": "object",
                "properties": {
                    "description": {"type": "string", "description": "A short (3-8 word) title of the task."},
                    "prompt": {"type": "string", "description": "The complete task for the subagent."},
                    "agent": {
                        "type": "string",
                        "description": "The name of one of the agents listed above; omit for the read-only default.",
                    },
                },
                "required": ["description", "prompt"],
                "additionalProperties": False,
            },
            handler=self.run,
            read_only=True,
            preview_key="description",
        )

    async def run(self, args: dict[str, Any], ctx: ToolContext) -> str:
        agent = self.agent
        if agent is None:
            raise ToolError("subagents are not available in this agent")
        description = require_str(args, "description").strip()
        prompt = require_str(args, "prompt")
        if not prompt.strip():
            raise ToolError("prompt is empty: give the subagent its complete task")
        if len(prompt) > MAX_PROMPT_CHARS:
            raise ToolError(f"prompt is {len(prompt):,} characters, over the cap of {MAX_PROMPT_CHARS:,}")
        if ctx.depth >= self.depth:
            raise ToolError(f"subagents may not start subagents here (subagent_depth = {self.depth})")
        definition = self._definition(args.get("agent"))
        tools = self.child_tools(definition, ctx.depth + 1)
        request = TurnRequest(
            input=prompt,
            model=definition.model if definition is not None else None,
            system_prompt=self._system_prompt(definition, str(ctx.cwd)),
            source=ctx.source,
            title=description or None,
            approve=_parent_approver(ctx),
            yolo=ctx.yolo,
            cwd=str(ctx.cwd),
            host=ctx.host,
            mode=self.child_mode(definition, tools, ctx.mode),
            tools=tools,
            spawned_by=SpawnedBy(ctx.session_id, ctx.call_id, ctx.depth + 1),
        )
        async with self._slot(ctx.session_id):
            result = await self._run_child(agent, request, ctx)
        return _answer(result)

    # ---- the child's setup -------------------------------------------------------------

    def _definition(self, name: object) -> AgentDefinition | None:
        if name is None or name == "":
            return None
        if not isinstance(name, str):
            raise ToolError("agent must be a string: the name of one of the listed agents")
        definition = self.catalog.get(name)
        if definition is None:
            names = ", ".join(a.name for a in self.catalog.agents) or "none are defined"
            raise ToolError(f"no agent named {name[:64]!r} (agents: {names}); omit agent for the default")
        return definition

    def child_tools(self, definition: AgentDefinition | None, depth: int) -> tuple[str, ...]:
        """The tools a child at `depth` gets (see the module docstring)."""
        assert self.agent is not None
        wanted = definition.tools if definition is not None and definition.tools is not None else DEFAULT_TOOLS
        have = set(self.agent.tools.names())
        return tuple(name for name in wanted if name in have and (name != TASK or depth < self.depth))

    def child_mode(self, definition: AgentDefinition | None, tools: tuple[str, ...], parent: Mode) -> Mode:
        """plan, unless the child's definition names a tool that can change something
        (write_file, patch, terminal, …) and the parent is not planning: then the parent's."""
        assert self.agent is not None
        if parent == "plan" or definition is None or definition.tools is None:
            return "plan"
        registry = self.agent.tools
        writes = any((tool := registry.get(name)) is not None and not tool.read_only and name != TASK for name in tools)
        return parent if writes else "plan"

    def _system_prompt(self, definition: AgentDefinition | None, cwd: str) -> str:
        assert self.agent is not None
        if definition is None:
            return self.agent.new_session_prompt(cwd)
        return build_system_prompt(definition.prompt, cwd, self.agent.instructions)

    # ---- running -----------------------------------------------------------------------

    async def _run_child(self, agent: Agent, request: TurnRequest, ctx: ToolContext) -> TurnResult:
        forward = _forwarder(ctx)
        handle = agent.start(request)
        try:
            async for event in handle.events():
                forward(event)
        except asyncio.CancelledError:
            # The parent was stopped: the child stops too and ends its session "interrupted".
            handle.stop(INTERRUPTED, "the parent turn was stopped")
            raise
        finally:
            await handle.aclose(STOP_GRACE)
            if handle.result is not None and ctx.add_usage is not None:
                ctx.add_usage(handle.result.usage)
        if handle.result is None:
            raise ToolError("the subagent's turn could not be run")
        return handle.result

    def _slot(self, session_id: str) -> _Slot:
        slots = self._slots.get(session_id)
        if slots is None:
            slots = self._slots[session_id] = _SessionSlots(asyncio.Semaphore(self.concurrency))
        return _Slot(self, session_id, slots)

    def _release(self, session_id: str, slots: _SessionSlots) -> None:
        if slots.users == 0 and self._slots.get(session_id) is slots:
            del self._slots[session_id]


class _Slot:
    """One of a parent session's `subagent_concurrency` slots, held while a child runs."""

    def __init__(self, runner: SubagentRunner, session_id: str, slots: _SessionSlots) -> None:
        self._runner, self._session_id, self._slots = runner, session_id, slots

    async def __aenter__(self) -> None:
        self._slots.users += 1
        try:
            await self._slots.semaphore.acquire()
        except BaseException:
            self._slots.users -= 1
            self._runner._release(self._session_id, self._slots)
            raise

    async def __aexit__(self, *exc: object) -> None:
        self._slots.semaphore.release()
        self._slots.users -= 1
        self._runner._release(self._session_id, self._slots)


def _forwarder(ctx: ToolContext) -> Callable[[AgentEvent], None]:
    """Puts the child's tool lines and approval requests into the parent's stream."""
    parent = ctx.call_id

    def forward(event: AgentEvent) -> None:
        if ctx.on_event is None:
            return
        if isinstance(event, (ToolStarted, ToolCompleted)):
            ctx.on_event(dataclasses.replace(event, call_id=f"{parent}/{event.call_id}", parent_call_id=parent))
        elif isinstance(event, ApprovalRequested):
            ctx.on_event(dataclasses.replace(event, call_id=f"{parent}/{event.call_id}"))

    return forward


def _parent_approver(ctx: ToolContext) -> ApprovalCallback | None:
    """The parent's approver, asked about a child's call by the id its line has in the
    parent's stream ("<task call>/<child call>"), as the forwarded ApprovalRequested names it."""
    approve = ctx.approve
    if approve is None:
        return None  # nobody to ask: the child's approvals are refused
    parent = ctx.call_id

    async def ask(request: ApprovalRequest) -> ApprovalDecision:
        return await approve(dataclasses.replace(request, call_id=f"{parent}/{request.call_id}"))

    return ask


def _answer(result: TurnResult) -> str:
    text = result.final_text.strip()
    if result.status == "completed":
        return text or "(the subagent ended without an answer)"
    why = result.error or result.status
    if result.status == "interrupted":
        raise ToolError(f"the subagent was stopped: {why}")
    if text:
        return f"{text}\n\n[the subagent's answer may be incomplete: {why}]"
    raise ToolError(f"the subagent failed: {why}")


def task_description(catalog: AgentCatalog) -> str:
    """The `task` tool's description: what it does and the agents the model may name."""
    if not catalog.agents:
        return _DESCRIPTION
    lines = [_DESCRIPTION, "", "Agents (pass the name as `agent`):"]
    lines.extend(f"- {agent.name}: {agent.description}" for agent in catalog.agents)
    return "\n".join(lines)


def add_subagents(agent: Agent, catalog: AgentCatalog, *, depth: int, concurrency: int) -> SubagentRunner | None:
    """Give `agent` the `task` tool over `catalog` (none when `depth` is 0 or it has one)."""
    if depth <= 0 or agent.tools.get(TASK) is not None:
        return None
    runner = SubagentRunner(catalog, depth=depth, concurrency=concurrency)
    runner.agent = agent
    agent.tools.register(runner.tool())
    return runner

"""The one place the chat TUI talks to the engine's turn: start it, render it, stop it, queue behind it.

A turn runs in an exclusive worker (group "turn") owned by the chat screen; it starts the turn
(`agent.start(...)`: a `TurnHandle`, local or remote alike) and hands each of its events to a
`TurnRenderer`. Esc (or Ctrl+C) calls the handle's `stop()`, and the engine winds the turn down
and ends it with TurnCompleted("interrupted"). If the engine has not finished `INTERRUPT_GRACE`
seconds after a stop, the UI marks the turn interrupted anyway, cancels the worker (which closes
the handle: the engine still cleans up) and is usable again.

Invariants:
- at most one turn or one `/compact` runs at a time (`busy`); prompts submitted meanwhile are
  queued, oldest first, and sent one per turn when the running one ends;
- the next queued prompt starts only once the previous worker has fully ended (turn workers are
  exclusive: starting one earlier would cancel the old one);
- after an interrupt the queued prompts are not sent: they go back into the prompt box.

The controller knows the chat screen only as a `TurnScreen` (what it reads and drives of the
screen), so it does not import the screen that owns it.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from textual.worker import Worker, WorkerState

from hermes.agent.attach.images import ImageAttachment
from hermes.agent.events import ContextCompacted, TurnCompleted, TurnStarted
from hermes.agent.turn_handle import TurnCrashed, TurnHandle
from hermes.agent.types import ApprovalDecision, ApprovalRequest, TurnRequest, TurnResult
from hermes.errors import HermesError
from hermes.tui.prompt_attachments import prepare_prompt, show_prepared
from hermes.tui.renderer import TurnCallbacks, TurnRenderer, compacted_notice
from hermes.tui.screens.approval import ApprovalScreen
from hermes.tui.widgets.user_message import UserMessage
from hermes.tui.workers import RunsWorkers

if TYPE_CHECKING:
    from textual import Logger
    from textual.app import App
    from textual.notifications import SeverityLevel
    from textual.timer import Timer

    from hermes.agent.modes import Mode
    from hermes.backend import ChatAgent
    from hermes.config import Settings
    from hermes.tui.notifier import TurnNotifier
    from hermes.tui.widgets.activity import Activity
    from hermes.tui.widgets.image_chips import ImageChips
    from hermes.tui.widgets.notice import Notice, NoticeKind
    from hermes.tui.widgets.queued_prompts import QueuedPrompts
    from hermes.tui.widgets.status_bar import StatusBar
    from hermes.tui.widgets.transcript import Transcript

INTERRUPT_GRACE = 1.0
"""Seconds the engine gets to wind a turn down before the UI declares it interrupted."""
TURN_RUNNING = "A turn is running — Esc to interrupt it first."
"""What the user is told when something must wait for the running turn."""


class PromptBox(Protocol):
    """The prompt the user types in (`ChatInput`), as the controller and the commands edit it."""

    @property
    def text(self) -> str: ...

    def load_text(self, text: str) -> None: ...

    def put_back(self, value: str) -> None: ...

    def clear(self) -> object: ...

    def insert(self, text: str) -> object: ...

    def focus(self) -> object: ...


class TurnScreen(RunsWorkers, Protocol):
    """What the controller needs of the chat screen (`ChatScreen` is one): the open session,
    the widgets a turn shows itself in, and the screen's own workers, timers and notices."""

    agent: ChatAgent
    settings: Settings
    session_id: str | None
    pending_title: str | None
    """The title of the session the next turn creates (None once it exists)."""
    cwd: str
    mode: Mode
    """The mode the next turn starts in (hermes/tui/mode_control.py)."""
    notifier: TurnNotifier
    approval_timeout: float
    mcp_worker: Worker[None] | None
    """Starts the MCP servers; the first turn waits for it."""

    @property
    def app(self) -> App[object]: ...

    @property
    def log(self) -> Logger: ...

    @property
    def transcript(self) -> Transcript: ...

    @property
    def image_chips(self) -> ImageChips: ...

    @property
    def activity(self) -> Activity: ...

    @property
    def status_bar(self) -> StatusBar: ...

    @property
    def chat_input(self) -> PromptBox: ...

    @property
    def queue_view(self) -> QueuedPrompts: ...

    def say(self, text: str, kind: NoticeKind = "info") -> Notice: ...

    async def refresh_session_info(self, *, tokens: bool = True) -> None: ...

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = True,
    ) -> None: ...

    def call_later(self, callback: Callable[..., object], *args: Any, **kwargs: Any) -> bool: ...

    def set_timer(
        self,
        delay: float,
        callback: Callable[[], object] | None = None,
        *,
        name: str | None = None,
        pause: bool = False,
    ) -> Timer: ...


class TurnController:
    """Runs the chat screen's turns and `/compact`, and keeps the prompts queued behind them."""

    def __init__(self, chat: TurnScreen) -> None:
        self.chat = chat
        self.turn_worker: Worker[None] | None = None
        self.turn_handle: TurnHandle | None = None
        self.renderer: TurnRenderer | None = None
        self.last_result: TurnResult | None = None
        self.queued: list[str] = []
        """Prompts submitted while a turn (or /compact) ran, oldest first; sent one per turn
        when the running one ends, handed back to the prompt when it is interrupted."""
        self.compact_worker: Worker[None] | None = None
        self.prompt_widget: UserMessage | None = None
        """The transcript's widget of the latest prompt sent (its attachment cards go under it)."""
        self._interrupted = False
        """The user interrupted the running turn: queued prompts are not sent on their own."""

    @property
    def turn_running(self) -> bool:
        return self.renderer is not None and not self.renderer.done

    @property
    def busy(self) -> bool:
        """A turn or a `/compact` is running: new prompts are queued."""
        return self.turn_running or (self.compact_worker is not None and not self.compact_worker.is_finished)

    # -- the queue ------------------------------------------------------------------------

    def submit(self, text: str, *, origin: str | None = None) -> None:
        """Send `text` now, or queue it behind the running turn (and any queued prompts).

        `origin` names the custom command or skill the text was expanded from (shown above it).
        """
        if self.busy or self.queued:
            if origin is not None:
                self.chat.say(f"queued: {origin}")
            self.queue_prompt(text)
            return
        self.send(text, origin=origin)

    def queue_prompt(self, text: str) -> None:
        """Keep `text` to send when the running turn ends (as Claude Code and Codex do)."""
        self.queued.append(text)
        self.chat.queue_view.show_prompts(self.queued)
        if not self.busy:
            self.chat.call_later(self._send_next_queued)

    def take_back_queued(self) -> None:
        """Take the newest queued prompt back into the prompt box (to edit or drop it)."""
        if not self.queued:
            return
        text = self.queued.pop()
        self.chat.queue_view.show_prompts(self.queued)
        chat_input = self.chat.chat_input
        current = chat_input.text
        chat_input.put_back(f"{text}\n{current}" if current.strip() else text)
        chat_input.focus()

    def _send_next_queued(self) -> None:
        if self.busy or not self.queued:
            return
        text = self.queued.pop(0)
        self.chat.queue_view.show_prompts(self.queued)
        self.send(text)

    def _return_queued_to_input(self) -> None:
        """After an interrupt the user decides: queued prompts go back into the prompt box."""
        if not self.queued:
            return
        chat_input = self.chat.chat_input
        texts = [*self.queued]
        if chat_input.text.strip():
            texts.append(chat_input.text)
        self.queued.clear()
        self.chat.queue_view.show_prompts([])
        chat_input.put_back("\n".join(texts))
        self.chat.notify("Interrupted — the queued prompts are back in the prompt box.", timeout=3)

    def worker_ended(self, event: Worker.StateChanged) -> None:
        """A worker of the chat screen changed state: after a turn or /compact, send the next prompt."""
        if event.state not in (WorkerState.SUCCESS, WorkerState.ERROR, WorkerState.CANCELLED):
            return
        if event.worker is not self.turn_worker and event.worker is not self.compact_worker:
            return
        if self._interrupted:
            self._interrupted = False
            self._return_queued_to_input()
        elif self.queued:
            self.chat.call_later(self._send_next_queued)

    # -- a turn ---------------------------------------------------------------------------

    def send(self, text: str, *, origin: str | None = None) -> Worker[None]:
        """Show the prompt and start a turn for it."""
        self._interrupted = False
        images = self.chat.image_chips.take()  # the chip row's images go with the prompt sent next
        renderer = self.begin_turn(text, origin=origin)
        self.turn_handle = None
        self.turn_worker = self.chat.run_worker(
            self._run_turn(text, renderer, images),
            name="_run_turn",
            group="turn",
            exclusive=True,
            exit_on_error=False,
        )
        return self.turn_worker

    def begin_turn(self, text: str, *, origin: str | None = None) -> TurnRenderer:
        """Show the prompt and return the renderer the turn's events go to."""
        chat = self.chat
        self.prompt_widget = UserMessage(text, origin=origin)
        chat.transcript.add(self.prompt_widget)
        chat.transcript.scroll_end(animate=False)
        self.renderer = TurnRenderer(
            chat.transcript,
            chat.activity,
            TurnCallbacks(
                on_started=self._turn_started, on_completed=self._turn_completed, on_compacted=self._compacted
            ),
            stall_after=chat.settings.tool_stall_warning,
            show_reasoning_live=not chat.transcript.has_class("-hide-reasoning"),
        )
        chat.activity.start("thinking")
        chat.status_bar.start_turn()
        chat.notifier.turn_started()
        return self.renderer

    async def _run_turn(self, text: str, renderer: TurnRenderer, images: tuple[ImageAttachment, ...] = ()) -> None:
        chat = self.chat
        prompt_widget = self.prompt_widget
        handle: TurnHandle | None = None
        try:
            prepared = await prepare_prompt(chat, text, images)  # @ mentions and images, read here
            show_prepared(chat, prompt_widget, prepared)
            request = TurnRequest(
                input=prepared.content,
                session_id=chat.session_id,
                source="tui",
                title=chat.pending_title if chat.session_id is None else None,
                approve=self._approve,
                yolo=chat.settings.yolo,
                cwd=chat.cwd,
                mode=chat.mode,
            )
            if chat.mcp_worker is not None and not chat.mcp_worker.is_finished:
                await chat.mcp_worker.wait()  # the first turn gets the MCP tools
            handle = self.turn_handle = chat.agent.start(request)
            if self._interrupted:  # Esc while waiting for MCP
                handle.stop()
            async for event in handle.events():
                opens_session = isinstance(event, TurnStarted) and event.session_id != chat.session_id
                renderer.handle(event)
                # The status bar's title and tokens come from the store: read once the
                # turn's session exists, and again when it ends (a first turn titles it).
                if opens_session:
                    await chat.refresh_session_info()
                elif isinstance(event, TurnCompleted):
                    await chat.refresh_session_info(tokens=False)
        except asyncio.CancelledError:
            renderer.interrupted()
            raise
        except Exception as exc:  # noqa: BLE001 - the UI's edge: show it, keep the app usable
            cause = exc.cause if isinstance(exc, TurnCrashed) else exc  # the turn's, or this code's own
            if isinstance(cause, HermesError):
                renderer.failed(str(cause))
            else:
                renderer.failed(f"internal error: {cause!r}")
                chat.log.error(cause)
        finally:
            if handle is not None:
                # A stop's grace was INTERRUPT_GRACE (the UI's timer); an ended turn is done already.
                await handle.aclose(grace=0)
            if self.renderer is renderer:
                self._turn_finished()

    def _turn_started(self, event: TurnStarted) -> None:
        chat = self.chat
        if chat.session_id != event.session_id:
            chat.session_id = event.session_id
            chat.pending_title = None
        chat.status_bar.model = event.model

    def _turn_completed(self, result: TurnResult) -> None:
        chat = self.chat
        self.last_result = result
        chat.session_id = result.session_id or chat.session_id
        usage = result.usage
        bar = chat.status_bar
        bar.input_tokens += usage.input_tokens
        bar.output_tokens += usage.output_tokens
        bar.turn_tokens = (usage.input_tokens, usage.output_tokens)
        bar.turn_cost = chat.settings.prices.cost(
            bar.model, usage.input_tokens, usage.output_tokens, usage.cached_input_tokens
        )
        if result.context_tokens:
            chat.status_bar.context_tokens = result.context_tokens  # the last request's prompt tokens
        self._turn_finished()

    def _compacted(self, event: ContextCompacted) -> None:
        self.chat.status_bar.context_tokens = event.after_tokens

    def _turn_finished(self) -> None:
        self.chat.notifier.turn_ended(interrupted=self._interrupted)
        self.chat.status_bar.end_turn()
        self.chat.activity.stop()
        self.renderer = None

    # -- interrupting ---------------------------------------------------------------------

    def interrupt(self) -> None:
        """Stop the running /compact or turn (the turn gets `INTERRUPT_GRACE` to wind down)."""
        if self.compact_worker is not None and not self.compact_worker.is_finished:
            self._interrupted = True
            self.compact_worker.cancel()
            return
        if not self.turn_running or self.turn_worker is None:
            return
        renderer, worker = self.renderer, self.turn_worker
        self.chat.activity.set_phase("interrupting", waiting_for_model=False, warning=True)
        self._interrupted = True
        if self.turn_handle is not None:
            self.turn_handle.stop()
        self.chat.set_timer(INTERRUPT_GRACE, lambda: self._force_interrupted(renderer, worker))

    def _force_interrupted(self, renderer: TurnRenderer | None, worker: Worker[None]) -> None:
        """The engine did not finish within the grace: stop waiting for it."""
        if renderer is not None and renderer is self.renderer and not renderer.done:
            renderer.interrupted()
            self._turn_finished()
        if worker.is_running:
            worker.cancel()

    # -- approvals ------------------------------------------------------------------------

    async def ask_approval(self, request: ApprovalRequest) -> ApprovalDecision:
        """The approval dialog for what is not a turn's tool call (a `!` command)."""
        return await self._approve(request)

    async def _approve(self, request: ApprovalRequest) -> ApprovalDecision:
        """The engine's approval callback: a modal, denied on timeout or interrupt."""
        future: asyncio.Future[ApprovalDecision] = asyncio.get_running_loop().create_future()

        def decided(decision: ApprovalDecision | None) -> None:
            if not future.done():
                future.set_result(decision or ApprovalDecision.DENY)

        timeout = self.chat.approval_timeout
        self.chat.notifier.approval_waiting(request.command)
        screen = ApprovalScreen(request, timeout=timeout)
        self.chat.app.push_screen(screen, decided)
        unanswered = False
        try:
            decision = await asyncio.wait_for(future, timeout + 1.0)
        except TimeoutError:
            decision, unanswered = ApprovalDecision.DENY, True
        finally:
            if screen.is_current:
                screen.dismiss(ApprovalDecision.DENY)
        if decision == ApprovalDecision.DENY and (screen.timed_out or unanswered):
            # The card says "denied" (once); only a denial nobody chose is worth a line of its own.
            self.chat.say(f"no answer in {timeout:g} s: denied", "warning")
        elif decision == ApprovalDecision.SESSION:
            self.chat.say(f"✓ allowed for this session: {request.grant or request.command}", "info")
        return decision

    # -- /compact -------------------------------------------------------------------------

    def compact(self, session_id: str) -> None:
        """Summarise the session's older messages now, in a worker that Esc cancels."""
        self.chat.activity.start("compacting the context")
        self.compact_worker = self.chat.run_worker(self._compact(session_id), group="compact", exit_on_error=False)

    async def _compact(self, session_id: str) -> None:
        chat = self.chat
        try:
            event = await chat.agent.compact(session_id)
        except HermesError as exc:
            chat.say(f"✗ compaction failed: {exc}", "error")
            return
        except asyncio.CancelledError:
            chat.say("⏹ compaction interrupted — nothing changed", "interrupted")
            raise
        finally:
            chat.activity.stop()
        if event is None:
            chat.say("nothing to compact yet — the conversation is short", "info")
            return
        chat.transcript.add(compacted_notice(event))
        chat.transcript.scroll_end(animate=False)
        chat.status_bar.context_tokens = event.after_tokens

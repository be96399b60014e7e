"""One card per tool call: generating → running (spinner, elapsed, preview) → done ✓ / failed ✗.

The result sits in a collapsed block under the card; patch and write_file show an inline
diff, and `todo` (the model's plan) an open checklist with its progress in the header.
A call still running after `stall_after` seconds grows a warning line.
"""

from __future__ import annotations

import difflib
import json
import re
import time
from typing import Any, Literal

from rich.console import RenderableType
from rich.syntax import Syntax
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.timer import Timer
from textual.widgets import Collapsible, Static

from hermes.agent.mcp.naming import split_name
from hermes.agent.tools.todo import TODO, plan_summary, read_plan
from hermes.tui.widgets.activity import SPINNER
from hermes.tui.widgets.find_bar import highlighted
from hermes.tui.widgets.todo_list import checklist, todo_preview
from hermes.turn_outcomes import ToolOutcome, failure_summary, tool_outcome

ToolState = Literal["generating", "running", "approval", "done", "failed", "stalled", "interrupted"]

PREVIEW_LINES = 24
PREVIEW_CHARS = 4000
DIFF_TOOLS = frozenset({"patch", "write_file", "edit_file", "apply_patch"})


ONE_LINE = 120


def one_line(text: str, limit: int = ONE_LINE) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def clip(text: str, lines: int = PREVIEW_LINES, chars: int = PREVIEW_CHARS) -> str:
    """The head of a long result, saying how much was left out."""
    head = text[:chars]
    kept = head.splitlines()[:lines]
    shown = "\n".join(kept)
    hidden = text.count("\n") + 1 - len(kept)
    if hidden > 0 or len(text) > len(shown) + 1:
        shown += f"\n… {max(hidden, 1)} more line{'s' if hidden != 1 else ''} ({len(text):,} chars in all)"
    return shown


TAIL_LINES = 4
NO_TAIL_TOOLS = frozenset({"read_file"})
"""Tools whose result is a file's text, not output: their folded result shows no tail."""


def result_tail(result: str, lines: int = TAIL_LINES) -> str:
    """The last `lines` non-empty lines of a result, each cut to ONE_LINE characters; "" when
    the whole result is that short (its one line is in the header)."""
    kept = [line for line in result.splitlines() if line.strip()]
    if len(kept) <= 1:
        return ""
    return "\n".join(line if len(line) <= ONE_LINE else line[: ONE_LINE - 1] + "…" for line in kept[-lines:])


def tool_label(name: str) -> Text:
    """The tool's name in bold; an MCP tool (`mcp__server__tool`) also names its server."""
    mcp = split_name(name)
    if mcp is None:
        return Text(name, style="bold")
    server, tool = mcp
    return Text.assemble((tool, "bold"), (f" [MCP {server}]", "dim"))


def argument_preview(arguments: dict[str, Any]) -> str:
    for key in ("command", "path", "pattern", "query", "url"):
        value = arguments.get(key)
        if isinstance(value, str) and value:
            return value
    return json.dumps(arguments, ensure_ascii=False) if arguments else ""


def embedded_diff(result: str) -> str | None:
    """The unified diff a file tool put in its result (from its `--- ` header on), if any."""
    lines = result.splitlines()
    for i, line in enumerate(lines[:-1]):
        if line.startswith("--- ") and lines[i + 1].startswith("+++ "):
            return "\n".join(lines[i:])
    return None


def diff_for(name: str, arguments: dict[str, Any], result: str) -> str | None:
    """The diff a file-editing tool's card shows: the tool's own diff of the change (computed
    against the file as it was, so its line numbers are real); a created file's whole content;
    None when the result carries no change (e.g. "No change: …")."""
    if name not in DIFF_TOOLS:
        return None
    found = embedded_diff(result)
    if found is not None:
        return found
    if result.lstrip().startswith(("diff ", "@@")):
        return result
    path = str(arguments.get("path") or arguments.get("file_path") or "file")
    content = arguments.get("content")
    if isinstance(content, str) and result.startswith("Created "):
        lines = difflib.unified_diff([], content.splitlines(), "/dev/null", f"b/{path}", lineterm="", n=0)
        return "\n".join(lines)
    diff = arguments.get("patch") or arguments.get("diff")
    if name == "apply_patch" and isinstance(diff, str):
        return diff
    return None


class ToolCard(Vertical):
    DEFAULT_CSS = """
    ToolCard {
        height: auto;
        margin: 1 0 0 2;
        padding: 0 1;
        border-left: wide $secondary;
    }
    ToolCard.-nested { margin: 0 0 0 1; }
    ToolCard.-done { border-left: wide $success; }
    ToolCard.-failed, ToolCard.-stalled { border-left: wide $error; }
    ToolCard.-interrupted, ToolCard.-approval { border-left: wide $warning; }
    ToolCard .tool-header { height: auto; }
    ToolCard .tool-warning {
        display: none;
        color: $text-warning;
    }
    ToolCard.-slow .tool-warning { display: block; }
    ToolCard .tool-error { color: $text-error; display: none; }
    ToolCard.-failed .tool-error, ToolCard.-stalled .tool-error { display: block; }
    ToolCard .tool-tail { display: none; color: $text-muted; padding: 0 0 0 2; }
    ToolCard.-has-tail .tool-tail { display: block; }
    ToolCard.-open .tool-tail { display: none; }
    ToolCard Collapsible {
        display: none;
        border: none;
        padding: 0;
        margin: 0;
        background: transparent;
    }
    ToolCard.-has-result Collapsible { display: block; }
    ToolCard Collapsible > Contents { padding: 0 0 0 2; }
    ToolCard CollapsibleTitle { padding: 0; color: $text-muted; }
    """

    def __init__(self, call_id: str, name: str, *, stall_after: float = 30.0) -> None:
        super().__init__(classes="-generating")
        self.call_id = call_id
        self.tool_name = name
        self.state: ToolState = "generating"
        self.states: list[ToolState] = ["generating"]
        """Every state the card went through, in order."""
        self.historic = False
        """Rebuilt from a stored session: no timings are known."""
        self.preview = ""
        self.arguments: dict[str, Any] = {}
        self.result = ""
        self.outcome: ToolOutcome | None = None
        """How the call ended (a failure, a denial, a policy block…); None until it did."""
        self.diff: str | None = None
        """The change a file tool's result shows (None: not a file change)."""
        self.error = ""
        self.duration: float | None = None
        self.stall_after = stall_after
        self._started_at = time.monotonic()
        self._frame = 0
        self._ticker: Timer | None = None
        self._header = Static("", classes="tool-header", markup=False)
        self._warning = Static("", classes="tool-warning", markup=False)
        self._error = Static("", classes="tool-error", markup=False)
        self._tail = Static("", classes="tool-tail", markup=False)
        self.tail = ""
        """The last lines of the output shown under the header while the result is folded:
        live while the call runs, kept after an interrupt, the result's own when it ends."""
        self._result_body = Static("", classes="tool-result", markup=False)
        self._details = Collapsible(self._result_body, title="result", collapsed=True)
        self._body: RenderableType = ""
        """What the result block shows (restored when a find highlight is removed)."""

    def compose(self) -> ComposeResult:
        yield self._header
        yield self._warning
        yield self._error
        yield self._tail
        yield self._details

    def on_collapsible_expanded(self, event: Collapsible.Expanded) -> None:
        self.add_class("-open")

    def on_collapsible_collapsed(self, event: Collapsible.Collapsed) -> None:
        self.remove_class("-open")

    def live_output(self, text: str) -> None:
        """The newest lines the running call wrote (a ToolOutput event)."""
        if self.state in ("running", "approval"):
            self._set_tail(text)

    def _set_tail(self, text: str) -> None:
        self.tail = text
        self._tail.update(Text(text))
        self.set_class(bool(text.strip()), "-has-tail")

    def on_mount(self) -> None:
        self._ticker = self.set_interval(0.1, self._tick)
        self._render_header()
        if self.state not in ("generating", "running", "approval"):
            self._stop_ticker()

    # -- lifecycle --------------------------------------------------------------------

    def _set_state(self, state: ToolState) -> None:
        self.remove_class(f"-{self.state}")
        self.state = state
        self.states.append(state)
        self.add_class(f"-{state}")
        self._render_header()

    def start(self, preview: str, arguments: dict[str, Any]) -> None:
        self.preview = todo_preview(arguments) if self.tool_name == TODO else preview or argument_preview(arguments)
        self.arguments = arguments
        self._started_at = time.monotonic()
        self._set_state("running")

    def awaiting_approval(self) -> None:
        self._set_state("approval")

    def complete(self, result: str, duration: float, is_error: bool, arguments: dict[str, Any] | None = None) -> None:
        if arguments:
            self.arguments = arguments
            if not self.preview:
                self.preview = argument_preview(arguments)
        self.result = result
        self.duration = duration
        self._stop_ticker()
        self.remove_class("-slow")
        self.outcome = tool_outcome(result) if is_error else "done"
        if self.outcome == "interrupted":
            self._set_state("interrupted")  # the live tail stays: what it printed before the stop
            return
        refused = self.outcome in ("denied", "blocked")
        if is_error:
            self.error = result
            # A refusal is said once, in a few words; the text the model got is in the folded result.
            shown = failure_summary(result) if refused else clip(result, lines=6, chars=800)
            self._error.update(Text("✗ " + shown))
        if not is_error or refused or result.count("\n") >= 6 or len(result) > 800:
            self._show_result(result, is_error)
        if is_error or self.diff is not None or self._details.title == "plan" or self.tool_name in NO_TAIL_TOOLS:
            self._set_tail("")
        else:
            self._set_tail(result_tail(result))
        self._set_state("failed" if is_error else "done")

    def not_executed(self, message: str) -> None:
        """The stream stalled while this call's arguments were streaming."""
        self._stop_ticker()
        self.error = message
        self._error.update(Text(message))
        self._set_state("stalled")

    def interrupt(self) -> None:
        if self.state in ("generating", "running", "approval"):
            self._stop_ticker()
            self.remove_class("-slow")
            self.duration = time.monotonic() - self._started_at
            self._set_state("interrupted")

    def _show_result(self, result: str, is_error: bool) -> None:
        plan = None if is_error or self.tool_name != TODO else read_plan(result)
        if plan is not None:
            self.preview = plan_summary(plan)
            self._details.title = "plan"
            self._details.collapsed = False
            self._body = checklist(plan)
            self._result_body.update(self._body)
            self.add_class("-has-result")
            return
        diff = None if is_error else diff_for(self.tool_name, self.arguments, result)
        self.diff = diff or None
        body: RenderableType
        if diff:
            body = Syntax(
                clip(diff, lines=60, chars=8000), "diff", theme="ansi_dark", background_color="default", word_wrap=True
            )
            self._details.title = "diff"
            self._details.collapsed = False
        else:
            lines = result.count("\n") + 1 if result.strip() else 0
            text = Text(clip(result)) if lines else Text("(no output)", style="dim")
            self._details.title = f"result ({lines} line{'s' if lines != 1 else ''})"
            if is_error and self.outcome in ("denied", "blocked"):
                self._details.title = "what the model was told"
            if self.tool_name in DIFF_TOOLS and result.startswith("No change"):
                self._details.title = "no change: the file already read this way"
            full = argument_preview(self.arguments)
            if len(full) > ONE_LINE or "\n" in full:
                # The header shows one line; what actually ran is never hidden.
                text = Text.assemble((full + "\n", "bold"), text)
            body = text
        self._body = body
        self._result_body.update(body)
        self.add_class("-has-result")

    # -- find (`find_bar.Findable`) ------------------------------------------------------

    @property
    def find_text(self) -> str:
        """The header, the whole command or arguments where the header cuts them, the whole
        result and the error (each text once)."""
        full = argument_preview(self.arguments)
        shown = full if len(full) > ONE_LINE or "\n" in full else ""
        return "\n".join((self.header_text, shown, self.result, self.error))

    @property
    def details(self) -> Collapsible:
        """The foldable block under the header (the result, the diff, the plan)."""
        return self._details

    @property
    def expanded(self) -> bool:
        return not self._details.collapsed

    def find_highlight(self, pattern: re.Pattern[str] | None, current: int | None) -> None:
        """Highlight matches in a plain result; the card holding the current match opens its result."""
        if isinstance(self._body, Text):
            self._result_body.update(self._body if pattern is None else highlighted(self._body.plain, pattern))
        if current is not None and self.has_class("-has-result"):
            self._details.collapsed = False

    def _stop_ticker(self) -> None:
        if self._ticker is not None:
            self._ticker.stop()
            self._ticker = None

    # -- drawing ----------------------------------------------------------------------

    @property
    def elapsed(self) -> float:
        return self.duration if self.duration is not None else time.monotonic() - self._started_at

    def _tick(self) -> None:
        self._frame = (self._frame + 1) % len(SPINNER)
        if self.state == "running" and self.elapsed >= self.stall_after and not self.has_class("-slow"):
            after = f"{self.stall_after:.0f}" if self.stall_after >= 1 else f"{self.stall_after:.1f}"
            self._warning.update(Text(f"⚠ still running after {after} s — Esc to interrupt"))
            self.add_class("-slow")
        self._render_header()

    @property
    def header_text(self) -> str:
        return self._header_renderable().plain

    def _header_renderable(self) -> Text:
        name = tool_label(self.tool_name)
        preview = Text(one_line(self.preview), style="dim") if self.preview else Text("")
        if self.state == "generating":
            return Text.assemble((SPINNER[self._frame] + " ", "bold"), "generating ", name, "…")
        if self.state == "approval":
            return Text.assemble(("? ", "bold yellow"), name, "  ", preview, ("  awaiting approval", "yellow"))
        icon, style = {
            "running": (SPINNER[self._frame], "bold"),
            "done": ("✓", "bold green"),
            "failed": ("✗", "bold red"),
            "stalled": ("⚠", "bold red"),
            "interrupted": ("⏹", "bold yellow"),
        }[self.state]
        suffix = {
            "stalled": "  not executed",
            "interrupted": "  interrupted",
        }.get(self.state, "")
        if self.state == "failed" and self.outcome in ("denied", "blocked"):
            suffix = f"  {self.outcome}"
        elapsed = self.elapsed
        if self.historic:
            timing = ""
        elif elapsed < 1 and self.duration is not None:
            timing = f"  {elapsed * 1000:.0f}ms"
        else:
            timing = f"  {elapsed:.1f}s"
        return Text.assemble((icon + " ", style), name, "  ", preview, (timing, "dim"), (suffix, style))

    def _render_header(self) -> None:
        self._header.update(self._header_renderable())

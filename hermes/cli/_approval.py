"""Asking the person at the terminal to approve a risky command (for `chat -q`).

Reads the answer from /dev/tty, not stdin, so it works when stdin is piped. With no
terminal there is nobody to ask: the callback is None and the engine denies.
"""

from __future__ import annotations

import asyncio
import os
import sys

from hermes.agent.types import ApprovalCallback, ApprovalDecision, ApprovalRequest
from hermes.terminal_text import for_terminal

APPROVAL_TIMEOUT = 120.0
"""The default of the `approval_timeout` setting (the TUI's dialog waits as long)."""
_ANSWERS = {
    "o": ApprovalDecision.ONCE, "once": ApprovalDecision.ONCE, "y": ApprovalDecision.ONCE,
    "s": ApprovalDecision.SESSION, "session": ApprovalDecision.SESSION,
    "d": ApprovalDecision.DENY, "deny": ApprovalDecision.DENY, "n": ApprovalDecision.DENY, "": ApprovalDecision.DENY,
}


def tty_approver(timeout: float = APPROVAL_TIMEOUT) -> ApprovalCallback | None:
    try:
        fd = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY)
    except OSError:
        return None

    async def approve(request: ApprovalRequest) -> ApprovalDecision:
        # The command is the model's: shown with its control characters made visible.
        grant = f"  [s]ession allows {for_terminal(request.grant)}\n" if request.grant else "  (asked every time)\n"
        choices = "[o]nce / [s]ession / [d]eny" if request.grant else "[o]nce / [d]eny"
        prompt = (
            f"\n⚠ {for_terminal(request.tool_name)} wants to run a risky command ({for_terminal(request.reason)}):\n"
            f"    {for_terminal(request.command)}\n{grant}"
            f"  {choices} (deny in {timeout:g} s): "
        )
        os.write(fd, prompt.encode())
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[str] = loop.create_future()

        def readable() -> None:
            data = os.read(fd, 1024).decode(errors="replace")
            if not answer.done():
                answer.set_result(data.strip().lower())

        loop.add_reader(fd, readable)
        try:
            text = await asyncio.wait_for(answer, timeout)
        except TimeoutError:
            os.write(fd, b"\n  no answer: denied\n")
            return ApprovalDecision.DENY
        finally:
            loop.remove_reader(fd)
        return _ANSWERS.get(text, ApprovalDecision.DENY)

    return approve if sys.platform != "win32" else None


ORDER_WAIT = 2.0
"""Seconds an approval question waits for its ApprovalRequested to be shown (a safety net:
the event comes first on every path, local and remote)."""


class ApprovalOrder:
    """Asks an approval question only once the lines before it are on the screen.

    The engine asks the approver from the tool's task, while the event loop of `chat -q`
    may not yet have printed that tool's "→ tool" line: the question and the line then
    ran together. `shown(event)` is called for each ApprovalRequested after the lines
    before it were written; `ordered(approve)` makes `approve` wait for that (at most
    ORDER_WAIT seconds) before it writes its question.
    """

    def __init__(self) -> None:
        self._shown: dict[str, asyncio.Event] = {}

    def _event(self, call_id: str) -> asyncio.Event:
        return self._shown.setdefault(call_id, asyncio.Event())

    def shown(self, call_id: str) -> None:
        self._event(call_id).set()

    def ordered(self, approve: ApprovalCallback | None) -> ApprovalCallback | None:
        if approve is None:
            return None

        async def after_its_line(request: ApprovalRequest) -> ApprovalDecision:
            try:
                await asyncio.wait_for(self._event(request.call_id).wait(), ORDER_WAIT)
            except TimeoutError:
                pass  # ask anyway: an unasked question would deny
            self._shown.pop(request.call_id, None)
            return await approve(request)

        return after_its_line

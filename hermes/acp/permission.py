"""hermes' approval requests as ACP `session/request_permission` (allow once, always, reject).

Invariants:
- Every approval the tools ask for (a command the policy says needs one, a write outside
  the working directory, an MCP server set to ask) becomes one permission request on the
  tool call's id, with the options allow once (ApprovalDecision.ONCE), allow always
  (SESSION: what the request's grant names, e.g. this exact command, is not asked again in
  this session; offered only with a grant, and its text says what it covers) and reject (DENY).
- A cancelled request (the client cancelled the turn) and any failure to ask are DENY.
"""

from __future__ import annotations

import logging
from typing import assert_never

from acp import text_block, tool_content
from acp.interfaces import Client
from acp.schema import AllowedOutcome, DeniedOutcome, PermissionOption, ToolCallUpdate

from hermes.acp.updates import tool_kind
from hermes.agent.types import ApprovalCallback, ApprovalDecision, ApprovalRequest

log = logging.getLogger(__name__)

ALLOW_ONCE = "allow_once"
ALLOW_ALWAYS = "allow_always"
REJECT = "reject_once"

OPTIONS = (
    PermissionOption(option_id=ALLOW_ONCE, name="Allow once", kind="allow_once"),
    PermissionOption(option_id=ALLOW_ALWAYS, name="Allow for this session", kind="allow_always"),
    PermissionOption(option_id=REJECT, name="Reject", kind="reject_once"),
)

_DECISIONS = {ALLOW_ONCE: ApprovalDecision.ONCE, ALLOW_ALWAYS: ApprovalDecision.SESSION}


def approver(conn: Client, session_id: str) -> ApprovalCallback:
    """The approval callback of a turn of `session_id`: it asks the client."""

    async def approve(request: ApprovalRequest) -> ApprovalDecision:
        covers = (
            f"Allow for this session covers {request.grant}."
            if request.grant
            else "This is asked every time (no session grant)."
        )
        call = ToolCallUpdate(
            tool_call_id=request.call_id,
            title=request.command,
            kind=tool_kind(request.tool_name),
            status="pending",
            content=[tool_content(text_block(f"hermes asks before this: {request.reason}. {covers}"))],
            raw_input={
                "tool": request.tool_name,
                "command": request.command,
                "reason": request.reason,
                "grant": request.grant,
            },
        )
        options = [o for o in OPTIONS if o.option_id != ALLOW_ALWAYS or request.grant]
        try:
            response = await conn.request_permission(session_id=session_id, tool_call=call, options=options)
        except Exception:  # noqa: BLE001 - a client that cannot answer has not approved
            log.exception("session/request_permission failed")
            return ApprovalDecision.DENY
        outcome = response.outcome
        match outcome:
            case AllowedOutcome():
                return _DECISIONS.get(outcome.option_id, ApprovalDecision.DENY)
            case DeniedOutcome():
                return ApprovalDecision.DENY
            case _:
                assert_never(outcome)

    return approve

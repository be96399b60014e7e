"""The safety policy's answer for one action (a command, a write): allow, approve or block.

    block    never happens, not even with --yolo or a SESSION approval (hard floor);
    approve  happens only if ToolContext.request_approval says yes;
    allow    happens.

One type for the command policy (approval.py) and the confinement policy
(confinement.py), so a refusal reads the same whichever found it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Level = Literal["allow", "approve", "block"]


@dataclass(frozen=True, slots=True)
class Verdict:
    level: Level
    reason: str = ""
    """Why, for people and the model, e.g. "recursive delete (rm -r)"."""
    rule: str = ""
    """Stable key of the matched rule(s); SESSION approvals are remembered by it."""


ALLOW = Verdict("allow")

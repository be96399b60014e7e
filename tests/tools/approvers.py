"""A scripted front end for approval tests (imported by name; pytest puts this folder on sys.path)."""

from __future__ import annotations

from hermes.agent.types import ApprovalDecision, ApprovalRequest


class Approver:
    """A front end that answers every request with a fixed decision and remembers what it saw."""

    def __init__(self, decision: ApprovalDecision) -> None:
        self.decision = decision
        self.requests: list[ApprovalRequest] = []

    async def __call__(self, request: ApprovalRequest) -> ApprovalDecision:
        self.requests.append(request)
        return self.decision

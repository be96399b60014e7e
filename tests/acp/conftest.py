"""Fixtures of the ACP tests: the scripted upstream on the test's loop (see _acp_harness.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from hermes.testing.upstream import ScriptedUpstream


@pytest.fixture
async def upstream() -> AsyncIterator[ScriptedUpstream]:
    async with ScriptedUpstream() as server:
        yield server

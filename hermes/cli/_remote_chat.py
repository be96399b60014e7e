"""`hermes chat -q … --server URL`: one turn run by a remote `hermes serve`, streamed to stdout.

The same renderers and exit codes as a local one-shot turn (`hermes.cli.chat`): the
answer on stdout (JSON lines with `--json`), notices on stderr, 0 completed, 1 failed or
partial, 130 interrupted. The first Ctrl+C stops the run on the server (its own
`run.cancelled` ends the turn), a second one stops waiting. An unreachable server or a
wrong key is one line on stderr and exit 1, before anything is streamed.
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

from hermes.errors import SessionNotFound


async def one_shot_remote(
    settings: Any,
    prompt: str,
    *,
    server: str,
    key: str | None,
    model: str | None,
    as_json: bool,
    continue_last: bool,
    resume: str | None,
) -> int:
    from hermes.agent.types import TurnRequest
    from hermes.cli._approval import tty_approver
    from hermes.cli._render import make_renderer
    from hermes.cli._turn_signals import TurnSignals
    from hermes.cli.chat import _report
    from hermes.remote.agent import RemoteAgent
    from hermes.remote.client import RemoteClient
    from hermes.remote.sessions import RemoteSessions
    from hermes.remote.turn import RemoteTurn

    async with RemoteClient(server, key) as client:
        sessions = RemoteSessions(client)
        session_id: str | None = None
        if resume:
            session_id = (await sessions.get_session(resume)).id
        elif continue_last:
            latest = await sessions.latest_session()
            if latest is None:
                raise SessionNotFound("(newest)")
            session_id = latest.id
        else:
            await sessions.count_sessions()  # reachable, and the key is right
        agent = RemoteAgent(client, model=model)
        request = TurnRequest(input=prompt, session_id=session_id, source="cli", approve=tty_approver())
        renderer = make_renderer(as_json)
        handle: RemoteTurn | None = None
        result = None
        with TurnSignals() as signals:
            try:
                handle = agent.start(request)
                signals.attach(handle)
                async for event in handle.events():
                    if event.type == "turn.completed":
                        result = event.result
                        if not as_json:
                            continue
                    renderer.handle(event)
            except asyncio.CancelledError:
                if not signals.stop_asked:
                    raise
                if not as_json:
                    sys.stderr.write("hermes: interrupted\n")
                return 130
            finally:
                if handle is not None:
                    await handle.aclose(grace=0)
                renderer.close()
    assert result is not None
    if as_json:
        from hermes.cli._common import json_line
        from hermes.cli._usage import result_line

        line = result_line(result, settings.prices)
        sys.stdout.write(json_line(line))
    return int(_report(result, as_json))

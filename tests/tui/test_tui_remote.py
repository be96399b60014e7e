"""The TUI attached to a real `hermes serve` process (`hermes chat --server`), SQLite and PostgreSQL.

The app is the one `hermes chat --server URL` builds (`make_app` over `RemoteAgent` and
`RemoteSessions`); the server is a real subprocess on loopback whose model is the scripted
upstream and whose tools are its own (`terminal` runs in the server's working directory).
Nothing is mocked: a dropped connection is a proxy that resets it, a server restart is a
SIGKILL and a new process on the same port.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from hermes.config import Settings
from hermes.errors import NothingToUndo
from hermes.remote.agent import NOT_OFFERED, RemoteAgent
from hermes.remote.client import RemoteClient
from hermes.remote.sessions import RemoteSessions
from hermes.testing.upstream import Chunk, Reply, ScriptedUpstream, Sleep, call, text_reply, tool_reply
from hermes.tui.app import HermesApp, make_app
from hermes.tui.screens.approval import ApprovalScreen
from hermes.tui.screens.confirm_overwrite import ConfirmOverwrite
from hermes.tui.widgets.assistant_message import AssistantMessage
from hermes.tui.widgets.diff_view import DiffView
from hermes.tui.widgets.notice import Notice
from hermes.tui.widgets.reasoning_block import ReasoningBlock
from hermes.tui.widgets.remote_line import RemoteLine
from hermes.tui.widgets.tool_card import ToolCard
from hermes.tui.widgets.user_message import UserMessage

from ._remote_serve import KEY, CuttingProxy, ServeProcess, serve_env
from .conftest import send_turn, type_and_send, until, until_settled

SIZE = (110, 32)


@pytest.fixture(params=["sqlite", "postgres"])
def backend_env(request: pytest.FixtureRequest) -> dict[str, str]:
    if request.param == "postgres":
        return {"HERMES_DATABASE_URL": request.getfixturevalue("pg_url")}
    return {}


@pytest.fixture
def workdir(tmp_path: Path) -> Path:
    path = tmp_path / "work"
    path.mkdir()
    return path


@pytest.fixture
async def serve(
    tmp_path: Path, upstream: ScriptedUpstream, workdir: Path, backend_env: dict[str, str]
) -> AsyncIterator[ServeProcess]:
    process = ServeProcess(serve_env(tmp_path / "server-home", upstream, **backend_env), workdir)
    await process.start()
    yield process
    await process.kill()


@pytest.fixture
async def remote_tui(tmp_path: Path) -> AsyncIterator[Callable[..., HermesApp]]:
    clients: list[RemoteClient] = []
    settings = Settings(home=tmp_path / "client-home", tool_stall_warning=0.3)

    def build(url: str, key: str = KEY) -> HermesApp:
        """The app `hermes chat --server URL --key KEY` runs."""
        client = RemoteClient(url, key)
        clients.append(client)
        sessions = RemoteSessions(client)
        app = make_app(RemoteAgent(client), sessions, settings, remote=client.base_url, files=sessions)
        app.startup_notice = NOT_OFFERED
        return app

    yield build
    for client in clients:
        await client.aclose()


def answers(app: HermesApp) -> list[str]:
    return [m.text for m in app.chat.transcript.query(AssistantMessage)]


def notices(app: HermesApp) -> list[str]:
    return [n.text for n in app.chat.transcript.query(Notice)]


async def test_streamed_tool_turn_with_result_context_and_footer(
    serve: ServeProcess, upstream: ScriptedUpstream, workdir: Path, remote_tui: Callable[..., HermesApp]
) -> None:
    # The server's terminal runs until the test creates `gate` in its working directory.
    command = "while [ ! -e gate ]; do sleep 0.05; done; echo remote-$((40+2))"
    upstream.enqueue(
        tool_reply([call("terminal", {"command": command})], text="Checking.", usage=(900, 10)),
        text_reply("It printed remote-42.", reasoning="the tool said so", usage=(1200, 6)),
    )
    app = remote_tui(serve.url)
    async with app.run_test(size=SIZE) as pilot:
        await until(pilot, lambda: NOT_OFFERED in notices(app))
        line = app.chat.query_one(RemoteLine)
        assert line.text == f"⇄ remote session · {serve.url}"
        await type_and_send(pilot, "What does the command print?")
        await until(pilot, lambda: app.chat.transcript.query(ToolCard), timeout=30)
        card = app.chat.transcript.query_one(ToolCard)
        await until(pilot, lambda: card.has_class("-slow"), timeout=30)  # the stalled-tool warning (0.3 s)
        assert card.state == "running"
        assert "still running after 0.3 s" in str(card._warning.render())
        (workdir / "gate").touch()
        await until(pilot, lambda: not app.chat.turns.turn_running, timeout=30)
        await until_settled(pilot)
        assert card.state == "done" and not card.has_class("-slow")
        assert [block.text for block in app.chat.transcript.query(ReasoningBlock)] == ["the tool said so"]
        assert "remote-42" in card.result
        assert answers(app) == ["Checking.", "It printed remote-42."], answers(app)
        bar = app.chat.status_bar
        assert bar.model == "scripted-model"
        assert bar.context_tokens == 1200
        assert bar.input_tokens == 2100 and bar.output_tokens == 16
        session_id = app.session_id
        assert session_id is not None
        async with RemoteClient(serve.url, KEY) as client:
            record = await RemoteSessions(client).get_session(session_id)
        assert record.source == "tui" and record.message_count == 4  # user, call, result, answer
        assert record.title == "What does the command print?" == bar.title  # titled as a local turn is


async def test_diff_undo_and_redo_act_on_the_servers_files(
    serve: ServeProcess, upstream: ScriptedUpstream, workdir: Path, remote_tui: Callable[..., HermesApp]
) -> None:
    notes = workdir / "notes.txt"
    notes.write_text("old\n")
    upstream.enqueue(
        tool_reply([call("write_file", {"path": "notes.txt", "content": "new\n"})]),
        text_reply("Rewritten."),
    )
    app = remote_tui(serve.url)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, "rewrite the notes")
        await until(pilot, lambda: "Rewritten." in answers(app), timeout=30)
        await until_settled(pilot)
        assert notes.read_text() == "new\n"
        session_id = app.session_id
        assert session_id is not None

        await type_and_send(pilot, "/diff")  # the server's checkpoint, through GET …/diff
        await until(pilot, lambda: len(app.chat.transcript.query(DiffView)) == 1, timeout=30)
        view = app.chat.transcript.query_one(DiffView)
        assert [(c.path, c.added, c.removed) for c in view.changes] == [("notes.txt", 1, 1)]
        assert "-old\n+new\n" in view.patch

        await type_and_send(pilot, "/undo")
        await until(pilot, lambda: "↶ undid 1 turn: notes.txt" in notices(app), timeout=30)
        await until_settled(pilot)
        assert notes.read_text() == "old\n"
        assert not app.chat.transcript.query(UserMessage)  # the turn left the transcript

        await type_and_send(pilot, "/redo")
        await until(pilot, lambda: "↷ redid 1 turn: notes.txt" in notices(app), timeout=30)
        await until_settled(pilot)
        assert notes.read_text() == "new\n"
        assert len(app.chat.transcript.query(UserMessage)) == 1

        notes.write_text("edited on the server\n")  # 409 files_changed: the same dialog
        await type_and_send(pilot, "/undo")
        await until(pilot, lambda: isinstance(app.screen, ConfirmOverwrite), timeout=30)
        assert app.screen.paths == ["notes.txt"]
        await pilot.press("n")
        await until(pilot, lambda: "undo cancelled: nothing was changed" in notices(app))
        assert notes.read_text() == "edited on the server\n"
        await type_and_send(pilot, "/undo")
        await until(pilot, lambda: isinstance(app.screen, ConfirmOverwrite), timeout=30)
        await pilot.press("y")  # retried with force
        await until(pilot, lambda: notes.read_text() == "old\n", timeout=30)
        await until_settled(pilot)
    async with RemoteClient(serve.url, KEY) as client:  # no visible turn left: 409 nothing_to_undo, as locally
        with pytest.raises(NothingToUndo):
            await RemoteSessions(client).turn_changes(session_id)


async def test_esc_stops_the_run_on_the_server(
    serve: ServeProcess, upstream: ScriptedUpstream, remote_tui: Callable[..., HermesApp]
) -> None:
    upstream.enqueue(text_reply("one two three four five six seven").stall_after(3))
    app = remote_tui(serve.url)
    async with RemoteClient(serve.url, KEY) as client:
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "Count slowly.")
            await until(pilot, lambda: "".join(answers(app)).startswith("one two"), timeout=30)
            handle = app.chat.turns.turn_handle
            run_id = getattr(handle, "run_id", None)
            assert run_id is not None
            await pilot.press("escape")
            await until(pilot, lambda: not app.chat.turns.turn_running, timeout=10)
            status: dict[str, object] = {}

            async def settled() -> bool:
                status.update(await client.request("GET", f"/v1/runs/{run_id}"))
                return status["status"] == "cancelled"

            for _ in range(200):
                if await settled():
                    break
                await pilot.pause(0.05)
            assert status["status"] == "cancelled"
            assert any("interrupted" in text.lower() for text in notices(app)), notices(app)


async def test_approval_opens_the_dialog_and_answers_the_server(
    serve: ServeProcess, upstream: ScriptedUpstream, workdir: Path, remote_tui: Callable[..., HermesApp]
) -> None:
    (workdir / "scratch").mkdir()
    (workdir / "scratch" / "old.txt").write_text("x")
    upstream.enqueue(
        tool_reply([call("terminal", {"command": "rm -rf scratch"})]),
        text_reply("Removed it."),
    )
    app = remote_tui(serve.url)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, "Remove scratch.")
        await until(
            pilot,
            lambda: isinstance(app.screen, ApprovalScreen) and app.screen.is_mounted,
            timeout=30,
            what="the approval dialog",
        )
        await pilot.press("y")
        await until(pilot, lambda: not app.chat.turns.turn_running, timeout=30)
        await until_settled(pilot)
        assert not (workdir / "scratch").exists()
        (card,) = app.chat.transcript.query(ToolCard)
        assert card.state == "done"
        assert answers(app)[-1] == "Removed it."


async def test_a_cut_connection_resumes_with_the_text_exactly_once(
    serve: ServeProcess, upstream: ScriptedUpstream, remote_tui: Callable[..., HermesApp]
) -> None:
    words = ["Hello ", "brave ", "new ", "world."]
    upstream.enqueue(
        Reply(
            [
                Chunk(delta={"role": "assistant", "content": words[0]}),
                Chunk(delta={"content": words[1]}),
                Sleep(1.5),
                Chunk(delta={"content": words[2]}),
                Chunk(delta={"content": words[3]}),
                Chunk(delta={}, finish_reason="stop"),
                Chunk(usage={"prompt_tokens": 10, "completion_tokens": 4, "total_tokens": 14}),
            ]
        )
    )
    proxy = await CuttingProxy(serve.port).start()
    try:
        app = remote_tui(proxy.url)
        async with app.run_test(size=SIZE) as pilot:
            await type_and_send(pilot, "Greet the world.")
            await until(pilot, lambda: "".join(answers(app)) == "Hello brave ", timeout=30)
            proxy.cut()
            await until(pilot, lambda: not app.chat.turns.turn_running, timeout=30)
            await until_settled(pilot)
            assert answers(app) == ["Hello brave new world."]
            assert sum("lost" in text for text in notices(app)) == 1
            result = app.chat.turns.last_result
            assert result is not None and result.status == "completed"
            assert result.final_text == "Hello brave new world."
    finally:
        await proxy.aclose()


@pytest.mark.parametrize("backend_env", ["sqlite"], indirect=True)  # the key is checked before any storage
async def test_a_wrong_key_is_one_line(serve: ServeProcess, remote_tui: Callable[..., HermesApp]) -> None:
    app = remote_tui(serve.url, key="wrong")
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, "/sessions")
        await until(pilot, lambda: app.screen is not app.chat)
        status = app.screen.query_one("#status")
        await until(pilot, lambda: "refused the key" in str(status.render()))
        assert "\n" not in str(status.render()).strip()


async def test_a_server_restart_gets_a_notice_and_a_retry(
    serve: ServeProcess, upstream: ScriptedUpstream, remote_tui: Callable[..., HermesApp]
) -> None:
    upstream.enqueue(text_reply("First answer."), text_reply("Second answer."))
    app = remote_tui(serve.url)
    async with app.run_test(size=SIZE) as pilot:
        await send_turn(pilot, "First?", timeout=30)
        session_id = app.session_id
        await serve.kill()
        await type_and_send(pilot, "Second?")
        await until(pilot, lambda: any("lost" in text for text in notices(app)), timeout=10)
        await serve.start()  # the same port
        await until(pilot, lambda: not app.chat.turns.turn_running, timeout=40)
        await until_settled(pilot)
        assert answers(app) == ["First answer.", "Second answer."]
        assert app.session_id == session_id
        assert sum("lost" in text for text in notices(app)) == 1


@pytest.mark.parametrize("backend_env", ["sqlite"], indirect=True)  # on SQLite a run lives in its process
async def test_a_server_restarted_mid_turn_ends_the_turn_in_one_line(
    serve: ServeProcess, upstream: ScriptedUpstream, remote_tui: Callable[..., HermesApp]
) -> None:
    upstream.enqueue(text_reply("never finished answer").stall_after(1), text_reply("Back again."))
    app = remote_tui(serve.url)
    async with app.run_test(size=SIZE) as pilot:
        await type_and_send(pilot, "Start something.")
        await until(pilot, lambda: "".join(answers(app)).startswith("never"), timeout=30)
        session_id = app.session_id
        await serve.kill()
        await until(pilot, lambda: any("lost" in text for text in notices(app)), timeout=10)
        await serve.start()  # the same port, a new process: the run is gone with the old one
        await until(pilot, lambda: not app.chat.turns.turn_running, timeout=40)
        (gone,) = [text for text in notices(app) if "no longer has this turn" in text]
        assert "\n" not in gone
        await send_turn(pilot, "Again?", timeout=30)
        assert answers(app)[-1] == "Back again."
        assert app.session_id == session_id

"""Notifications: a turn that ran `notify_after` seconds rings the bell (or writes an OSC 9
notification) when it ends or waits for an approval; short or interrupted turns, and
`notify = "off"`, write nothing. The clock and the terminal are the test's."""

from __future__ import annotations

from hermes.testing.upstream import call, text_reply, tool_reply
from hermes.tui.notifier import osc9
from hermes.tui.screens.approval import ApprovalScreen

from .conftest import send_turn, type_and_send, until


def _watch(app) -> tuple[list[str], list[float]]:
    """Record what the notifier writes; return (written, the clock's value to move)."""
    written: list[str] = []
    now = [1000.0]
    app.chat.notifier.write = written.append
    app.chat.notifier.clock = lambda: now[0]
    return written, now


async def _gated_turn(pilot, gates, now, seconds: float) -> None:
    """A turn whose tool waits on a gate while the clock moves `seconds` on."""
    app = pilot.app
    await type_and_send(pilot, "work")
    await until(pilot, lambda: app.chat.turns.turn_running)
    await until(pilot, lambda: "g" in gates)
    now[0] += seconds
    gates["g"].set()
    await until(pilot, lambda: not app.chat.turns.turn_running, timeout=15)


async def test_a_long_turn_rings_the_bell_and_a_short_one_does_not(make_tui, upstream, gates, settings):
    upstream.enqueue(
        tool_reply([call("shell", {"command": "build", "gate": "g"})]), text_reply("built"),
        text_reply("quick"),
    )  # fmt: skip
    app = make_tui(app_settings=settings.replace(notify="bell", notify_after=10))
    async with app.run_test(size=(100, 30)) as pilot:
        written, now = _watch(app)
        await _gated_turn(pilot, gates, now, 11)
        assert written == ["\a"]
        now[0] += 1
        await send_turn(pilot, "short one")
        assert written == ["\a"]  # under notify_after: nothing more


async def test_osc_notification_when_an_approval_waits_after_a_long_turn(make_tui, upstream, gates, settings):
    upstream.enqueue(
        tool_reply([call("shell", {"command": "build", "gate": "g"}, id="a"),
                    call("shell", {"command": "rm -r build", "risky": True}, id="b")]),
        text_reply("done"),
    )  # fmt: skip
    app = make_tui(app_settings=settings.replace(notify="osc", notify_after=5))
    async with app.run_test(size=(100, 30)) as pilot:
        written, now = _watch(app)
        await type_and_send(pilot, "work")
        await until(pilot, lambda: "g" in gates)
        now[0] += 6
        gates["g"].set()
        await until(pilot, lambda: isinstance(app.screen, ApprovalScreen), timeout=15)
        assert written == [osc9("hermes: approval needed: rm -r build")]
        assert written[0] == "\x1b]9;hermes: approval needed: rm -r build\a"
        await pilot.press("n")
        await until(pilot, lambda: not app.chat.turns.turn_running, timeout=15)
        assert written[1:] == ["\x1b]9;hermes: the turn is done\a"]


async def test_an_interrupted_turn_writes_nothing(make_tui, upstream, gates, settings):
    upstream.enqueue(tool_reply([call("shell", {"command": "build", "gate": "g"})]), text_reply("never"))
    app = make_tui(app_settings=settings.replace(notify="bell", notify_after=1))
    async with app.run_test(size=(100, 30)) as pilot:
        written, now = _watch(app)
        await type_and_send(pilot, "work")
        await until(pilot, lambda: "g" in gates)
        now[0] += 30
        await pilot.press("escape")
        await until(pilot, lambda: not app.chat.turns.turn_running, timeout=15)
        assert written == []


async def test_notify_off_writes_nothing(make_tui, upstream, gates, settings):
    upstream.enqueue(tool_reply([call("shell", {"command": "build", "gate": "g"})]), text_reply("built"))
    app = make_tui(app_settings=settings.replace(notify="off", notify_after=1))
    async with app.run_test(size=(100, 30)) as pilot:
        written, now = _watch(app)
        await _gated_turn(pilot, gates, now, 30)
        assert written == []


def test_osc9_text_cannot_break_out_of_its_sequence():
    assert osc9("rm \x1b]0;evil\x07 -rf\nx") == "\x1b]9;rm  ]0;evil  -rf x\a"
    assert len(osc9("x" * 1000)) == len("\x1b]9;\a") + 200

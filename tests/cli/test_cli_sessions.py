"""`hermes sessions …` against a real state.db in HERMES_HOME, and against a real
PostgreSQL database (`database_url`): the same commands, output and exit codes.

The `store` fixture is parametrised over both backends; on PostgreSQL it is the async
session store driven synchronously from a helper thread (`BlockingSessions`), and
HERMES_DATABASE_URL points the CLI at the same database.
"""

from __future__ import annotations

import asyncio
import json
import os
import pty
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Coroutine, Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes.errors import SessionNotFound
from hermes.store.records import NewMessage, SessionRecord
from hermes.testing.state_db import SyncStateDb, open_sync_state


class BlockingSessions:
    """`storage.sessions` of a PostgreSQL storage, called like the sync `SyncStateDb`."""

    def __init__(self, url: str) -> None:
        from hermes.store.postgres import open_postgres_storage

        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self._storage = self._call(open_postgres_storage(url))

    def _call(self, step: Coroutine[Any, Any, Any]) -> Any:
        return asyncio.run_coroutine_threadsafe(step, self._loop).result(timeout=60)

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._storage.sessions, name)
        return lambda *args, **kwargs: self._call(method(*args, **kwargs))

    def close(self) -> None:
        try:
            self._call(self._storage.aclose())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=60)
            self._loop.close()


@pytest.fixture(params=["sqlite", "postgres"])
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def store(
    backend: str, request: pytest.FixtureRequest, hermes_home: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[SyncStateDb]:
    """The store the CLI will open: $HERMES_HOME/state.db, or the PostgreSQL database that
    HERMES_DATABASE_URL names."""
    if backend == "sqlite":
        sqlite_store = open_sync_state(hermes_home / "state.db")
        yield sqlite_store
        sqlite_store.close()
        return
    url = request.getfixturevalue("pg_url")
    monkeypatch.setenv("HERMES_DATABASE_URL", url)
    pg_store = BlockingSessions(url)
    yield pg_store  # type: ignore[misc]
    pg_store.close()


CALL = {"id": "call_1", "type": "function", "function": {"name": "terminal", "arguments": '{"command": "ls -la"}'}}


def session_json(record: SessionRecord, cost_usd: float | None = 0.0) -> dict[str, Any]:
    """The session object of `--json`: the record's JSON plus its cost (0 without usage)."""
    return {**record.to_json(), "cost_usd": cost_usd}


def when(timestamp: float) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(timestamp))


def chat(store: SyncStateDb, session: SessionRecord, *texts: str) -> SessionRecord:
    """Append alternating user/assistant messages; return the refreshed record."""
    for i, text in enumerate(texts):
        store.append_message(session.id, NewMessage(role="user" if i % 2 == 0 else "assistant", content=text))
    return store.get_session(session.id)


@pytest.fixture
def tool_session(store: SyncStateDb) -> SessionRecord:
    """A session with a tool call and a 12-line tool result."""
    session = store.create_session(source="cli", title="List files", model="gpt-test")
    store.append_message(session.id, NewMessage(role="user", content="Please list the files"))
    store.append_message(session.id, NewMessage(role="assistant", content="Let me look.", tool_calls=[CALL]))
    store.append_message(
        session.id,
        NewMessage(
            role="tool", content="\n".join(f"file{i}" for i in range(12)), tool_call_id="call_1", tool_name="terminal"
        ),
    )
    store.append_message(session.id, NewMessage(role="assistant", content="There are twelve files."))
    return store.get_session(session.id)


# ---- list ---------------------------------------------------------------------------------


def test_list_prints_an_aligned_table_newest_activity_first(invoke, store):
    old = chat(store, store.create_session(source="cli", title="Old one"), "hi", "hello")
    api = store.create_session(source="api_server")
    old = chat(store, old, "again")  # activity moves "Old one" to the top

    result = invoke("sessions", "list")

    assert result.exit_code == 0
    assert result.stderr == ""
    assert result.stdout.splitlines() == [
        "ID                      UPDATED           SOURCE      MSGS  FOLDER  TITLE",
        f"{old.id}  {when(old.updated_at)}  cli            3  -       Old one",
        f"{api.id}  {when(api.updated_at)}  api_server     0  -",
    ]


def test_list_shows_each_folder_and_here_keeps_this_folders(invoke, store, tmp_path, monkeypatch):
    here = tmp_path / "project"
    here.mkdir()
    monkeypatch.chdir(here)
    mine = store.create_session(source="tui", title="Mine", cwd=str(here.resolve()))
    other = store.create_session(source="cli", title="Other", cwd="/srv/elsewhere")
    old = store.create_session(source="cli", title="Old")

    listed = invoke("sessions", "list").stdout.splitlines()
    assert listed[0].split() == ["ID", "UPDATED", "SOURCE", "MSGS", "FOLDER", "TITLE"]
    rows = {line.split()[0]: line for line in listed[1:]}
    assert str(here.resolve()) in rows[mine.id] and "/srv/elsewhere" in rows[other.id]
    assert rows[old.id].split()[-2:] == ["-", "Old"]

    result = invoke("sessions", "list", "--here")
    assert result.exit_code == 0
    assert [line.split()[0] for line in result.stdout.splitlines()[1:]] == [mine.id]
    data = json.loads(invoke("sessions", "list", "--here", "--json").stdout)["data"]
    assert [item["id"] for item in data] == [mine.id] and data[0]["cwd"] == str(here.resolve())
    assert json.loads(invoke("sessions", "show", other.id, "--json").stdout)["cwd"] == "/srv/elsewhere"
    assert f"folder {here.resolve()}" in invoke("sessions", "show", mine.id).stdout


def test_a_session_id_resolves_from_a_unique_prefix(invoke, store):
    first = store.create_session(source="cli", title="First", session_id="20260101_101010_aaaaaa")
    store.create_session(source="cli", title="Second", session_id="20260101_101010_abbbbb")
    store.create_session(source="cli", title="Third", session_id="20260102_090000_cccccc")

    shown = invoke("sessions", "show", "20260101_101010_a", "--json")
    assert shown.exit_code == 2, shown.stdout
    assert "ambiguous" in shown.stderr and "20260101_101010_aaaaaa (First)" in shown.stderr
    assert "20260101_101010_abbbbb (Second)" in shown.stderr and "Third" not in shown.stderr
    assert len(shown.stderr.strip().splitlines()) == 1
    assert json.loads(invoke("sessions", "show", "20260101_101010_aa", "--json").stdout)["id"] == first.id
    assert invoke("sessions", "rename", "20260102", "Renamed").stdout.startswith("Renamed 20260102_090000_cccccc")
    missing = invoke("sessions", "show", "2027")
    assert missing.exit_code == 1 and "2027" in missing.stderr


def test_list_limit_offset_and_footer(invoke, store):
    ids = [store.create_session(source="cli", title=f"s{i}").id for i in range(5)]
    newest_first = ids[::-1]

    result = invoke("sessions", "list", "--limit", "2", "--offset", "1")

    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines[1:3]] == newest_first[1:3]
    assert lines[3] == "… 2 more (next page: --offset 3)"
    assert len(lines) == 4
    assert invoke("sessions", "list", "--limit", "0").stdout.splitlines() == [
        "ID  UPDATED  SOURCE  MSGS  FOLDER  TITLE",
        "… 5 more (next page: --offset 0)",
    ]


def test_list_json_shape_and_has_more(invoke, store):
    a = store.create_session(source="cli", title="a")
    b = store.create_session(source="tui", title="b")

    page = json.loads(invoke("sessions", "list", "--json", "--limit", "1").stdout)
    assert page == {"object": "list", "data": [session_json(store.get_session(b.id))], "has_more": True}

    full = json.loads(invoke("sessions", "list", "--json").stdout)
    assert full["has_more"] is False
    assert [item["id"] for item in full["data"]] == [b.id, a.id]
    assert full["data"][1]["object"] == "session"


def test_list_source_filter(invoke, store):
    store.create_session(source="cli", title="from cli")
    api = store.create_session(source="api_server", title="from api")

    data = json.loads(invoke("sessions", "list", "--source", "api_server", "--json").stdout)["data"]

    assert [item["id"] for item in data] == [api.id]


def test_list_empty_store(invoke, store):
    result = invoke("sessions", "list")
    assert (result.exit_code, result.stdout) == (0, "No sessions.\n")
    assert json.loads(invoke("sessions", "list", "--json").stdout) == {"object": "list", "data": [], "has_more": False}


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["sessions", "list", "--limit", "-1"], "'--limit'"),
        (["sessions", "list", "--limit", "ten"], "'--limit'"),
        (["sessions", "list", "--offset", "-3"], "'--offset'"),
        (["sessions", "fork", "x", "--at", "abc"], "'--at'"),
        (["sessions", "list", "--bogus"], "--bogus"),
        (["sessions", "show"], "Missing argument 'ID'"),
        (["sessions", "bogus"], "bogus"),
    ],
)
def test_bad_options_are_one_line_exit_2(invoke, args, fragment):
    result = invoke(*args)

    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("hermes: ")
    assert fragment in result.stderr


# ---- show -----------------------------------------------------------------------------------


def test_show_prints_header_and_readable_transcript(invoke, tool_session):
    s = tool_session
    messages = invoke("sessions", "show", s.id, "--json")
    ids = [m["id"] for m in json.loads(messages.stdout)["messages"]]

    result = invoke("sessions", "show", s.id)

    assert result.exit_code == 0
    assert result.stdout.splitlines() == [
        f"{s.id}  List files",
        "source cli · model gpt-test · 4 messages · 1 tool call · tokens 0 in / 0 out",
        f"started {when(s.started_at)} · updated {when(s.updated_at)}",
        "",
        f"#{ids[0]} user",
        "  Please list the files",
        "",
        f"#{ids[1]} assistant",
        "  Let me look.",
        '  → terminal {"command": "ls -la"}',
        "",
        f"#{ids[2]} tool (terminal)",
        *[f"  file{i}" for i in range(8)],
        "  … 4 more lines",
        "",
        f"#{ids[3]} assistant",
        "  There are twelve files.",
    ]


def test_show_json_is_the_session_with_its_messages(invoke, store, tool_session):
    data = json.loads(invoke("sessions", "show", tool_session.id, "--json").stdout)

    expected = session_json(store.get_session(tool_session.id))
    expected["messages"] = [m.to_json() for m in store.get_messages(tool_session.id)]
    assert data == expected
    assert data["messages"][1]["tool_calls"] == [CALL]


def test_show_marks_forks_and_ends(invoke, store, tool_session):
    child = store.fork_session(tool_session.id)
    parent = store.get_session(tool_session.id)

    child_lines = invoke("sessions", "show", child.id).stdout.splitlines()
    parent_lines = invoke("sessions", "show", parent.id).stdout.splitlines()

    assert child_lines[3] == f"forked from {parent.id}"
    assert parent_lines[2].endswith(f"· ended {when(parent.ended_at)} (branched)")


# ---- unknown ids ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["show", "nope"],
        ["show", "nope", "--json"],
        ["rename", "nope", "Title"],
        ["delete", "nope", "--yes"],
        ["delete", "nope"],
        ["fork", "nope"],
        ["export", "nope"],
    ],
)
def test_unknown_id_is_one_line_exit_1(invoke, store, args):
    result = invoke("sessions", *args)

    assert result.exit_code == 1
    assert result.stdout == ""
    assert result.stderr == f"hermes: {SessionNotFound('nope')}\n"


def test_fork_at_a_message_of_another_session_exit_1(invoke, store, tool_session):
    other = chat(store, store.create_session(source="cli"), "elsewhere")
    foreign = store.get_messages(other.id)[0].id

    result = invoke("sessions", "fork", tool_session.id, "--at", str(foreign))

    assert result.exit_code == 1
    assert result.stderr == f"hermes: no message with id {foreign!r} in session {tool_session.id!r}\n"


# ---- search -----------------------------------------------------------------------------------


def test_search_json(invoke, store):
    s = chat(store, store.create_session(source="cli", title="Bananas"), "I like bananas", "Yellow fruit")
    chat(store, store.create_session(source="cli"), "nothing relevant")
    hit_id = store.get_messages(s.id)[0].id

    data = json.loads(invoke("sessions", "search", "banana", "--json").stdout)

    assert data["object"] == "list"
    assert data["has_more"] is False
    assert data["data"] == [
        {
            "object": "search_hit",
            "session": session_json(store.get_session(s.id)),
            "message_id": hit_id,
            "role": "user",
            "snippet": "I like >>>bananas<<<",
        }
    ]


def test_search_human_and_limit(invoke, store):
    a = chat(store, store.create_session(source="cli", title="Apples"), "apple pie recipe")
    b = chat(store, store.create_session(source="cli"), "an apple a day")

    result = invoke("sessions", "search", "apple", "--limit", "1")
    lines = result.stdout.splitlines()

    assert result.exit_code == 0
    assert len(lines) == 3
    hit_session = lines[0].split()[0]
    assert hit_session in {a.id, b.id}
    assert lines[1] in {"  >>>apple<<< pie recipe", "  an >>>apple<<< a day"}
    assert lines[2] == "… more matches (raise --limit above 1)"
    assert json.loads(invoke("sessions", "search", "apple", "--json", "--limit", "1").stdout)["has_more"] is True


def test_search_without_matches(invoke, store):
    chat(store, store.create_session(source="cli"), "hello")
    assert invoke("sessions", "search", "zebra").stdout == "No matches.\n"
    assert json.loads(invoke("sessions", "search", "zebra", "--json").stdout)["data"] == []


# ---- rename / delete --------------------------------------------------------------------------


def test_rename(invoke, store, tool_session):
    result = invoke("sessions", "rename", tool_session.id, "New  title")

    assert result.stdout == f"Renamed {tool_session.id}: New title\n"
    assert store.get_session(tool_session.id).title == "New title"


def test_rename_to_blank_is_exit_2(invoke, store, tool_session):
    result = invoke("sessions", "rename", tool_session.id, "   ")

    assert (result.exit_code, result.stderr) == (2, "hermes: the title must not be empty\n")
    assert store.get_session(tool_session.id).title == "List files"


def test_delete_with_yes(invoke, store, tool_session):
    child = store.fork_session(tool_session.id)

    result = invoke("sessions", "delete", tool_session.id, "--yes")

    assert (result.exit_code, result.stdout) == (0, f"Deleted {tool_session.id}\n")
    assert store.find_session(tool_session.id) is None
    assert store.get_session(child.id).parent_session_id is None


def test_delete_without_yes_refuses_when_stdin_is_not_a_terminal(invoke, store, tool_session):
    result = invoke("sessions", "delete", tool_session.id, input="y\n")

    assert result.exit_code == 2
    assert result.stderr == (
        f"hermes: refusing to delete {tool_session.id} without confirmation: stdin is not a terminal; pass --yes\n"
    )
    assert store.find_session(tool_session.id) is not None


@pytest.mark.parametrize(("answer", "deleted", "code"), [("y", True, 0), ("n", False, 1), ("", False, 1)])
def test_delete_asks_on_a_terminal(store, tool_session, answer, deleted, code):
    main, secondary = pty.openpty()
    try:
        os.write(main, answer.encode() + b"\n")
        proc = subprocess.run(
            [sys.executable, "-m", "hermes", "sessions", "delete", tool_session.id],
            stdin=secondary,
            capture_output=True,
            text=True,
            timeout=60,
            env=dict(os.environ),
        )
    finally:
        os.close(secondary)
        os.close(main)

    assert proc.returncode == code, proc.stderr
    assert f'Delete session {tool_session.id} ("List files", 4 messages)? [y/N]' in proc.stdout
    assert (store.find_session(tool_session.id) is None) is deleted
    if not deleted:
        assert proc.stderr == "Not deleted.\n"


# ---- fork -------------------------------------------------------------------------------------


def test_fork_whole_session(invoke, store, tool_session):
    result = invoke("sessions", "fork", tool_session.id)

    children = [s for s in store.list_sessions() if s.parent_session_id == tool_session.id]
    assert len(children) == 1
    child = children[0]
    assert result.stdout.splitlines() == [
        f"Forked {tool_session.id} → {child.id}  List files #2",
        f"4 messages copied; continue it with: hermes chat --resume {child.id}",
    ]
    assert child.message_count == 4


def test_fork_at_with_title_json(invoke, store, tool_session):
    second = store.get_messages(tool_session.id)[1]

    result = invoke("sessions", "fork", tool_session.id, "--at", str(second.id), "--title", "Branch", "--json")

    data = json.loads(result.stdout)
    assert data == session_json(store.get_session(data["id"]))
    assert (data["title"], data["message_count"], data["parent_session_id"]) == ("Branch", 2, tool_session.id)
    assert [m.content for m in store.get_messages(data["id"])] == ["Please list the files", "Let me look."]


# ---- export -----------------------------------------------------------------------------------


def test_export_json_default(invoke, store, tool_session):
    result = invoke("sessions", "export", tool_session.id)

    expected = session_json(store.get_session(tool_session.id))
    expected["messages"] = [m.to_json() for m in store.get_messages(tool_session.id)]
    assert json.loads(result.stdout) == expected


def test_export_jsonl(invoke, store, tool_session):
    lines = invoke("sessions", "export", tool_session.id, "--format", "jsonl").stdout.splitlines()

    assert [json.loads(line) for line in lines] == [
        session_json(store.get_session(tool_session.id)),
        *[m.to_json() for m in store.get_messages(tool_session.id)],
    ]


def test_export_markdown(invoke, store):
    s = store.create_session(source="cli", title="Fences")
    store.append_message(s.id, NewMessage(role="user", content="Show ``` in a file"))
    store.append_message(s.id, NewMessage(role="assistant", content=None, tool_calls=[CALL]))
    store.append_message(
        s.id, NewMessage(role="tool", content="a ``` b\n````", tool_call_id="call_1", tool_name="terminal")
    )
    s = store.get_session(s.id)

    result = invoke("sessions", "export", s.id, "-f", "markdown")

    assert result.stdout == "\n".join(
        [
            "# Fences",
            "",
            f"- id: `{s.id}`",
            "- source: cli",
            f"- started: {when(s.started_at)}",
            f"- updated: {when(s.updated_at)}",
            "- messages: 3",
            "",
            "## User",
            "",
            "Show ``` in a file",
            "",
            "## Assistant",
            "",
            "Tool call `terminal`:",
            "",
            "```json",
            '{"command": "ls -la"}',
            "```",
            "",
            "## Tool result (terminal)",
            "",
            "`````",
            "a ``` b\n````",
            "`````",
            "",
        ]
    )


@pytest.mark.parametrize("fmt", ["json", "jsonl", "markdown"])
def test_export_to_a_private_file(invoke, tmp_path, tool_session, fmt):
    target = tmp_path / "out" / f"export.{fmt}"
    target.parent.mkdir()
    target.write_text("old contents")
    os.chmod(target, 0o644)

    result = invoke("sessions", "export", tool_session.id, "--format", fmt, "-o", str(target))
    on_stdout = invoke("sessions", "export", tool_session.id, "--format", fmt).stdout

    assert result.exit_code == 0
    assert result.stdout == ""
    assert result.stderr == f"Wrote 4 messages of {tool_session.id} to {target}\n"
    assert target.read_text() == on_stdout
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    assert sorted(p.name for p in target.parent.iterdir()) == [target.name]


def test_export_unknown_format_exit_2(invoke, tool_session):
    result = invoke("sessions", "export", tool_session.id, "--format", "xml")

    assert (result.exit_code, result.stdout) == (2, "")
    assert result.stderr == "hermes: unknown export format 'xml': use json, jsonl or markdown\n"


def test_export_to_a_missing_folder_exit_2(invoke, tmp_path, tool_session):
    result = invoke("sessions", "export", tool_session.id, "-o", str(tmp_path / "missing" / "x.json"))

    assert result.exit_code == 2
    assert result.stderr.startswith(f"hermes: cannot write {tmp_path / 'missing' / 'x.json'}: ")
    assert result.stderr.count("\n") == 1


# ---- stats ------------------------------------------------------------------------------------


def test_stats(invoke, store, hermes_home: Path, tool_session, backend):
    store.create_session(source="api_server")
    store.add_usage(tool_session.id, input_tokens=120, output_tokens=30)

    data = json.loads(invoke("sessions", "stats", "--json").stdout)
    lines = invoke("sessions", "stats").stdout.splitlines()
    where = str(hermes_home / "state.db") if backend == "sqlite" else os.environ["HERMES_DATABASE_URL"]
    today = time.strftime("%Y-%m-%d", time.gmtime())
    unpriced = {"input_tokens": 120, "cached_input_tokens": 0, "output_tokens": 30, "cost_usd": None}

    assert data["db_bytes"] > 0
    assert data == {
        "object": "stats",
        "sessions": 2,
        "messages": 4,
        "tool_calls": 1,
        "input_tokens": 120,
        "output_tokens": 30,
        "by_source": {"api_server": 1, "cli": 1},
        "db_bytes": data["db_bytes"],
        "path": where,
        "cached_input_tokens": 0,
        "cost_usd": None,  # gpt-test has no price: tokens only, never a guess
        "by_model": [{"model": "gpt-test", **unpriced}],
        "by_day": [{"day": today, **unpriced}],
    }
    assert lines[:11] == [
        "sessions      2",
        "  api_server  1",
        "  cli         1",
        "messages      4",
        "tool calls    1",
        "tokens        120 in / 30 out",
        "cost          $0 priced + the tokens of gpt-test (no price in config.toml)",
        "by model      ",
        "  gpt-test    120 in / 30 out  ? (no price)",
        "by day        ",
        f"  {today}  120 in / 30 out  ? (no price)",
    ]
    assert lines[11].startswith("database      ") and lines[11].endswith(f" ({where})")
    if backend == "sqlite":
        assert lines[11].endswith(f" KB ({where})")


def test_cost_from_a_configured_price(invoke, store, hermes_home: Path, tool_session):
    """`[prices."MODEL"]` in config.toml prices the session's turns: show, list, stats."""
    hermes_home.mkdir(parents=True, exist_ok=True)
    (hermes_home / "config.toml").write_text(
        '[prices."gpt-test"]\ninput = 2.0\ncached_input = 0.5\noutput = 10.0\n', encoding="utf-8"
    )
    # 1M prompt tokens of which 400k cached, 100k output: 0.6*2 + 0.4*0.5 + 0.1*10 = 2.4 dollars.
    store.add_usage(tool_session.id, input_tokens=1_000_000, output_tokens=100_000, cached_input_tokens=400_000)
    other = store.create_session(source="cli", model="gpt-4o-mini")  # a built-in price
    store.add_usage(other.id, input_tokens=1_000_000, output_tokens=0)

    shown = json.loads(invoke("sessions", "show", tool_session.id, "--json").stdout)
    listed = json.loads(invoke("sessions", "list", "--json").stdout)["data"]
    stats = json.loads(invoke("sessions", "stats", "--json").stdout)
    header = invoke("sessions", "show", tool_session.id).stdout.splitlines()[1]

    assert shown["cost_usd"] == pytest.approx(2.4)
    assert {item["id"]: item["cost_usd"] for item in listed} == pytest.approx({tool_session.id: 2.4, other.id: 0.15})
    assert header.endswith("tokens 1000000 in / 100000 out · cost $2.40")
    assert stats["cost_usd"] == pytest.approx(2.55)
    assert [(m["model"], m["cached_input_tokens"], m["cost_usd"]) for m in stats["by_model"]] == [
        ("gpt-test", 400_000, pytest.approx(2.4)),
        ("gpt-4o-mini", 0, pytest.approx(0.15)),
    ]
    assert [day["cost_usd"] for day in stats["by_day"]] == [pytest.approx(2.55)]


def test_a_bad_price_table_is_one_line_exit_2(invoke, hermes_home: Path):
    hermes_home.mkdir(parents=True, exist_ok=True)
    (hermes_home / "config.toml").write_text('[prices."m"]\ninput = "cheap"\noutput = 1\n', encoding="utf-8")
    result = invoke("sessions", "stats")
    assert result.exit_code == 2
    assert 'prices."m"]: input must be a number of dollars' in result.stderr


# ---- real processes ---------------------------------------------------------------------------


def test_subprocess_exit_codes_and_no_tracebacks(run_hermes, store, tool_session):
    ok = run_hermes("sessions", "list", "--json")
    missing = run_hermes("sessions", "show", "does-not-exist")
    bad = run_hermes("sessions", "list", "--limit", "-5")
    refused = run_hermes("sessions", "delete", tool_session.id)

    assert ok.returncode == 0
    assert [item["id"] for item in json.loads(ok.stdout)["data"]] == [tool_session.id]
    assert (missing.returncode, missing.stdout, missing.stderr) == (
        1,
        "",
        "hermes: no session with id 'does-not-exist'\n",
    )
    assert (bad.returncode, bad.stdout) == (2, "")
    assert bad.stderr.startswith("hermes: ") and bad.stderr.count("\n") == 1
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1
    assert store.find_session(tool_session.id) is not None
    assert all("Traceback" not in p.stderr for p in (ok, missing, bad, refused))


def test_damaged_database_is_one_line_exit_1(run_hermes, hermes_home):
    hermes_home.mkdir(mode=0o700)
    (hermes_home / "state.db").write_bytes(b"not a database at all" * 200)

    proc = run_hermes("sessions", "list")

    assert (proc.returncode, proc.stdout) == (1, "")
    assert proc.stderr.startswith(f"hermes: cannot open session database {hermes_home / 'state.db'}: ")
    assert proc.stderr.endswith("(run `hermes doctor`)\n")
    assert proc.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("url", "code", "fragment"),
    [
        ("postgresql://u:pw-secret@127.0.0.1:1/x", 1, "hermes: cannot connect to postgresql://u:****@127.0.0.1:1/x: "),
        ("mysql://u:pw-secret@127.0.0.1/x", 2, "hermes: invalid value for database_url: 'mysql://u:****@127.0.0.1/x'"),
    ],
)
@pytest.mark.usefixtures("pg_driver")  # the driver is what reports an unreachable server
def test_bad_database_url_is_one_masked_line(run_hermes, monkeypatch, url, code, fragment):
    monkeypatch.setenv("HERMES_DATABASE_URL", url)

    proc = run_hermes("sessions", "list")

    assert (proc.returncode, proc.stdout) == (code, "")
    assert proc.stderr.startswith(fragment) and proc.stderr.count("\n") == 1, proc.stderr
    assert "pw-secret" not in proc.stderr

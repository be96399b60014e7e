"""`hermes sessions list|show|search|rename|delete|fork|export|stats` (and `undo|redo|diff`,
from hermes/cli/sessions_undo.py).

Every command opens the backend (hermes/backend.py: the configured storage —
`database_url`: the SQLite files in $HERMES_HOME by default, or a PostgreSQL database
shared with `hermes serve` — or with `--server` a hermes serve), does one thing through
its sessions and prints, identically on each:
an aligned plain-text view for people, or with `--json` one JSON document on stdout for
scripts. Errors are one line on stderr (`hermes: …`):

    exit 0  success
    exit 1  unknown session or message id (SessionNotFound / MessageNotFound), store errors
            (including an unreachable database, named with its password masked), a
            declined delete confirmation
    exit 2  bad input: a malformed or out-of-range option, an unknown --format, an empty
            title, `delete` without --yes when stdin is not a terminal, an unsupported
            database_url

JSON shapes (stable; new keys may be added, none removed or renamed):

    sessions list --json, sessions search --json
        {"object": "list", "data": [...], "has_more": bool}
        `list` data items are session objects; `search` data items are search hits:
        {"object": "search_hit", "session": <session>, "message_id": int,
         "role": str, "snippet": str}           (the match is wrapped in >>> <<<)
        `has_more` is true when more items exist past --limit (and --offset).

    session object (sessions show --json without "messages", fork --json, first line of
    export --format jsonl, export --format json with "messages")
        {"object": "session", "id": str, "source": str, "title": str|null,
         "model": str|null, "parent_session_id": str|null,
         "started_at": float, "updated_at": float,        (Unix seconds)
         "ended_at": float|null, "end_reason": str|null,
         "message_count": int, "tool_call_count": int,
         "input_tokens": int, "output_tokens": int, "system_prompt": str|null,
         "cwd": str|null,          (the folder the session belongs to; null: not recorded)
         "parent_call_id": str|null,   (a subagent's session: its parent's `task` call)
         "cost_usd": float|null}   (US dollars from the model prices; null when a model
                                    the session used has no price)

    sessions show --json, export --format json
        the session object plus "messages": [<message>, ...] (oldest first); `show --json`
        of a compacted session also has "compactions": [<compaction>, ...] (oldest first), where
        <compaction> = {"object": "compaction", "id": int, "session_id": str,
                        "summary": str, "first_kept_message_id": int,
                        "summarized_messages": int, "before_tokens": int,
                        "after_tokens": int, "created_at": float}
        (the messages before first_kept_message_id were replaced by summary in what
        the model saw from then on; they are all still in "messages"), and
        <message> = {"object": "message", "id": int, "session_id": str, "role": str,
                     "content": str|list|null, "tool_calls": list|null,
                     "tool_call_id": str|null, "tool_name": str|null,
                     "reasoning": str|null, "finish_reason": str|null,
                     "timestamp": float, "token_count": int|null}

    export --format jsonl
        line 1 the session object, then one message object per line.

    sessions stats --json
        {"object": "stats", "sessions": int, "messages": int, "tool_calls": int,
         "input_tokens": int, "output_tokens": int, "by_source": {source: int},
         "db_bytes": int, "path": str, "cached_input_tokens": int, "cost_usd": float|null,
         "by_model": [{"model": str|null, <tokens>}, ...]   (most expensive first),
         "by_day": [{"day": "YYYY-MM-DD", <tokens>}, ...]}  (UTC, oldest first)
        where <tokens> = "input_tokens": int, "cached_input_tokens": int,
                         "output_tokens": int, "cost_usd": float|null
        (`path`: state.db, or on PostgreSQL the database URL with its password masked;
        `db_bytes`: that file's or that database's size)

`export -o FILE` writes FILE with mode 0600 (a transcript can hold secrets, like
state.db itself), atomically through a temporary file in the same folder, replacing
any existing file; stdout stays empty and one confirmation line goes to stderr.

The plain-text views show model, tool and repository text (titles, messages, snippets)
with their control characters replaced by visible stand-ins (`hermes.terminal_text`), so
a transcript cannot drive the terminal; `--json` and `export` keep the text exact.

Nothing heavy is imported at module import: the storage is opened inside each command.
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer
from typer.core import TyperGroup

from hermes.attachment_blocks import summary_text
from hermes.cli import sessions_undo
from hermes.cli._common import json_line, load_settings, print_json
from hermes.cli._sessions_source import KEY_FILE_OPTION, KEY_OPTION, SERVER_OPTION, OpenedSessions, opened_sessions
from hermes.cli._usage import session_costs, usage_json, usage_lines
from hermes.errors import UsageError
from hermes.pricing import format_cost
from hermes.session_folder import short_folder
from hermes.terminal_text import for_terminal, json_for_terminal
from hermes.transcript_markdown import call_summary, content_text, local_time, one_line, session_markdown

if TYPE_CHECKING:
    from hermes.config import Settings
    from hermes.store.records import CompactionRecord, MessageRecord, SessionRecord

try:  # recent typer (0.29 here) vendors click as typer._click
    from typer._click.exceptions import UsageError as _ClickUsageError
except ImportError:  # pragma: no cover - older typer releases use click itself
    from click.exceptions import UsageError as _ClickUsageError  # type: ignore[assignment, no-redef, unused-ignore]


class _OneLineUsageErrors(TyperGroup):
    """Reports click's parse errors (bad option values, unknown options) as UsageError,
    so the root group prints them as one `hermes: …` line with exit 2."""

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except _ClickUsageError as exc:
            where = f" (see `{exc.ctx.command_path} --help`)" if exc.ctx is not None else ""
            raise UsageError(exc.format_message() + where) from None


app = typer.Typer(
    cls=_OneLineUsageErrors,
    help="List, search, fork and export saved sessions.",
    no_args_is_help=True,
    rich_markup_mode=None,
)

app.command("undo")(sessions_undo.undo)
app.command("redo")(sessions_undo.redo)
app.command("diff")(sessions_undo.diff)

EXPORT_FORMATS = ("json", "jsonl", "markdown")
TOOL_RESULT_LINES = 8
"""Lines of a tool result `show` prints before summarising the rest."""
ARGUMENTS_CHARS = 120
"""Characters of a tool call's arguments `show` prints."""


# ---- helpers ----------------------------------------------------------------------------


@contextlib.contextmanager
def _opened(
    settings: Settings | None = None,
    *,
    server: str | None = None,
    key: str | None = None,
    key_file: Path | None = None,
) -> Iterator[OpenedSessions]:
    """The configured storage, repaired (so what is read shows crashed turns as interrupted),
    or with `server` (else `server_url`) that hermes serve's sessions."""
    with opened_sessions(settings or load_settings(), server=server, key=key, key_file=key_file) as opened:
        yield opened


def _clip(text: str, width: int) -> str:
    if width <= 0 or len(text) <= width:
        return text
    return text[: max(width - 1, 0)] + "…"


def _plural(count: int, word: str) -> str:
    return f"{count} {word}" if count == 1 else f"{count} {word}s"


def _session_json(
    record: SessionRecord, cost_usd: float | None, messages: list[MessageRecord] | None = None
) -> dict[str, Any]:
    data = record.to_json()
    data["cost_usd"] = cost_usd
    if messages is not None:
        data["messages"] = [message.to_json() for message in messages]
    return data


def _list_json(items: list[dict[str, Any]], has_more: bool) -> dict[str, Any]:
    return {"object": "list", "data": items, "has_more": has_more}


def _terminal_width() -> int | None:
    """The terminal's width when stdout is one, else None (no clipping when piped)."""
    if not sys.stdout.isatty():
        return None
    import shutil

    return shutil.get_terminal_size().columns


# ---- list -------------------------------------------------------------------------------


def _table(rows: list[tuple[str, ...]], right_aligned: set[int], width: int | None) -> list[str]:
    """Rows as aligned columns (two spaces apart); the last column is clipped to `width`."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    lines = []
    for row in rows:
        cells = [
            cell.rjust(widths[i]) if i in right_aligned else cell.ljust(widths[i])
            for i, cell in enumerate(row[:-1])
        ]
        head = "  ".join(cells) + "  "
        last = row[-1] if width is None else _clip(row[-1], width - len(head))
        lines.append((head + last).rstrip())
    return lines


def _session_rows(records: list[SessionRecord]) -> list[tuple[str, ...]]:
    rows: list[tuple[str, ...]] = [("ID", "UPDATED", "SOURCE", "MSGS", "FOLDER", "TITLE")]
    for record in records:
        rows.append(
            (record.id, local_time(record.updated_at), record.source, str(record.message_count),
             short_folder(record.cwd), record.title or "")
        )  # fmt: skip
    return rows


@app.command("list")
def list_(
    limit: int = typer.Option(20, "--limit", "-n", min=0, help="How many sessions to show."),
    offset: int = typer.Option(0, "--offset", min=0, help="Skip this many (newest first)."),
    source: str | None = typer.Option(
        None, "--source", help="Only sessions from this source (cli, tui, api_server, acp)."
    ),
    here: bool = typer.Option(False, "--here", help="Only sessions of this folder (whose tools run here)."),
    as_json: bool = typer.Option(False, "--json", help='Print {"object": "list", "data": [...], "has_more": bool}.'),
    server: str | None = SERVER_OPTION,
    key: str | None = KEY_OPTION,
    key_file: Path | None = KEY_FILE_OPTION,
) -> None:
    """List sessions, newest activity first, with the folder each belongs to."""
    from hermes.store.configured import open_state_db_at_once

    folder = os.path.realpath(os.getcwd()) if here else None
    settings = load_settings()
    state = None if server or settings.server_url else open_state_db_at_once(settings)
    if state is not None:
        # A local state.db: the same rules and repair, each run to its end in this thread
        # (`StateDb.run`: no event loop, no asyncio), so the command most often run from
        # scripts starts fast (bench/bench_cli.py).
        with state:
            local = state.sessions
            state.run(local.repair_abandoned_turns())
            _print_list(
                state.run(local.list_sessions(limit=limit + 1, offset=offset, source=source, cwd=folder)),
                lambda: state.run(local.count_sessions(source=source, cwd=folder)),
                lambda ids: settings.prices.per_session(state.run(local.session_usage(ids)), ids),
                limit, offset, as_json,
            )  # fmt: skip
        return
    with _opened(settings, server=server, key=key, key_file=key_file) as opened:
        sessions = opened.sessions
        _print_list(
            opened.run(sessions.list_sessions(limit=limit + 1, offset=offset, source=source, cwd=folder)),
            lambda: opened.run(sessions.count_sessions(source=source, cwd=folder)),
            lambda ids: session_costs(opened, settings.prices, ids),
            limit, offset, as_json,
        )  # fmt: skip


def _print_list(
    records: list[SessionRecord], count: Callable[[], int], costs: Callable[[list[str]], dict[str, float | None]],
    limit: int, offset: int, as_json: bool,
) -> None:  # fmt: skip
    """`list`'s output from up to `limit + 1` records (`count`: how many there are in all;
    `costs`: each listed session's `cost_usd`)."""
    has_more = len(records) > limit
    records = records[:limit]
    if as_json:
        cost = costs(list(dict.fromkeys(record.id for record in records)))
        print_json(_list_json([_session_json(record, cost[record.id]) for record in records], has_more))
        return
    if not records and not has_more:
        typer.echo("No sessions." if offset == 0 else f"No sessions past offset {offset}.")
        return
    for line in _table(_session_rows(records), {3}, _terminal_width()):  # the title is clipped
        typer.echo(for_terminal(line))
    if has_more:
        shown_to = offset + len(records)
        typer.echo(f"… {count() - shown_to} more (next page: --offset {shown_to})")


# ---- show -------------------------------------------------------------------------------


def _header(record: SessionRecord, cost_usd: float | None) -> list[str]:
    lines = [f"{record.id}  {record.title}" if record.title else record.id]
    details = [f"source {record.source}"]
    if record.model:
        details.append(f"model {record.model}")
    details.append(_plural(record.message_count, "message"))
    details.append(_plural(record.tool_call_count, "tool call"))
    details.append(f"tokens {record.input_tokens} in / {record.output_tokens} out")
    if cost_usd is not None and (record.input_tokens or record.output_tokens):
        details.append(f"cost {format_cost(cost_usd)}")
    lines.append(" · ".join(details))
    times = [f"started {local_time(record.started_at)}", f"updated {local_time(record.updated_at)}"]
    if record.end_reason:
        times.append(f"ended {local_time(record.ended_at)} ({record.end_reason})")
    lines.append(" · ".join(times))
    if record.parent_session_id and record.parent_call_id:
        lines.append(f"subagent of {record.parent_session_id} (task call {record.parent_call_id})")
    elif record.parent_session_id:
        lines.append(f"forked from {record.parent_session_id}")
    if record.cwd:
        lines.append(f"folder {record.cwd}")
    return lines


def _indented(text: str, prefix: str = "  ") -> list[str]:
    return [prefix + line if line else "" for line in text.splitlines()]


def _compaction_lines(marker: CompactionRecord) -> list[str]:
    """A compaction marker: one rule line, then the summary the model got instead."""
    head = (
        f"── context compacted {local_time(marker.created_at)}: {_plural(marker.summarized_messages, 'message')} "
        f"summarised (~{marker.before_tokens} → ~{marker.after_tokens} tokens); the model sees this summary "
        f"instead of the messages above ──"
    )
    return ["", head, *_indented(marker.summary.rstrip())]


def _transcript(
    messages: list[MessageRecord], markers: list[CompactionRecord] | None = None, end_reason: str | None = None
) -> list[str]:
    """Messages as readable blocks: "#ID role" then the indented text; tool calls one line
    each, tool results cut to TOOL_RESULT_LINES lines, a tool result that is not a success
    labelled with how it ended (failed, denied, blocked, interrupted). A compaction marker
    is shown before the first message it kept; a turn that failed or was interrupted gets a
    line after its last message (`end_reason`: the session's, its newest turn's end)."""
    from hermes.turn_outcomes import tool_outcome, turn_marks

    marks = turn_marks(messages, end_reason)
    lines: list[str] = []
    pending = sorted(markers or [], key=lambda m: (m.first_kept_message_id, m.id))
    for message in messages:
        while pending and pending[0].first_kept_message_id <= message.id:
            lines.extend(_compaction_lines(pending.pop(0)))
        label = f"#{message.id} {message.role}"
        if message.role == "tool" and message.tool_name:
            label += f" ({message.tool_name})"
        if message.role == "tool" and (outcome := tool_outcome(content_text(message.content))) != "done":
            label += f" [{outcome}]"
        lines.append("")
        lines.append(label)
        text = (summary_text if message.role == "user" else content_text)(message.content).rstrip()
        body = text.splitlines()
        if message.role == "tool" and len(body) > TOOL_RESULT_LINES:
            hidden = len(body) - TOOL_RESULT_LINES
            text = "\n".join(body[:TOOL_RESULT_LINES] + [f"… {_plural(hidden, 'more line')}"])
        lines.extend(_indented(text))
        for call in message.tool_calls or []:
            name, arguments = call_summary(call)
            lines.append(f"  → {name} {_clip(arguments, ARGUMENTS_CHARS)}".rstrip())
        mark = marks.get(message.id)
        if mark is not None:
            lines.extend(["", mark.text])
    for marker in pending:
        lines.extend(_compaction_lines(marker))
    return lines


@app.command("show")
def show(
    session_id: str = typer.Argument(..., metavar="ID", help="Session id (or a unique start of it)."),
    as_json: bool = typer.Option(False, "--json", help='Print the session object with "messages".'),
    server: str | None = SERVER_OPTION,
    key: str | None = KEY_OPTION,
    key_file: Path | None = KEY_FILE_OPTION,
) -> None:
    """Show a session and its transcript.

    A header (title, source, model, counts, times), then every message as "#ID role"
    with its text indented; tool calls are summarised on one line each and long tool
    results are cut. The message ids are the ones `fork --at` takes. Where the context was
    compacted, a "context compacted" line and the summary stand before the first message
    the model still saw in full.
    """
    settings = load_settings()
    with _opened(settings, server=server, key=key, key_file=key_file) as opened:
        sessions = opened.sessions
        session_id = opened.resolve(session_id)
        record = opened.run(sessions.get_session(session_id))
        messages = opened.run(sessions.get_messages(session_id))
        markers = opened.run(sessions.compactions(session_id))
        cost = session_costs(opened, settings.prices, [record.id])[record.id]
    if as_json:
        data = _session_json(record, cost, messages)
        if markers:
            data["compactions"] = [marker.to_json() for marker in markers]
        print_json(data)
        return
    for line in _header(record, cost) + _transcript(messages, markers, record.end_reason):
        typer.echo(for_terminal(line))


# ---- search -----------------------------------------------------------------------------


def _highlight(snippet: str, color: bool) -> str:
    snippet = for_terminal(one_line(snippet))
    if not color:
        return snippet
    return snippet.replace(">>>", "\x1b[1m").replace("<<<", "\x1b[0m")


@app.command("search")
def search(
    query: str = typer.Argument(..., help="Words to find (all of them; the last one as a prefix)."),
    limit: int = typer.Option(20, "--limit", "-n", min=0, help="How many hits to show."),
    source: str | None = typer.Option(None, "--source", help="Only sessions from this source."),
    as_json: bool = typer.Option(False, "--json", help='Print {"object": "list", "data": [hits], "has_more": bool}.'),
    server: str | None = SERVER_OPTION,
    key: str | None = KEY_OPTION,
    key_file: Path | None = KEY_FILE_OPTION,
) -> None:
    """Search message text, best match first."""
    settings = load_settings()
    with _opened(settings, server=server, key=key, key_file=key_file) as opened:
        hits = opened.run(opened.sessions.search(query, limit=limit + 1, source=source))
        has_more = len(hits) > limit
        hits = hits[:limit]
        costs = session_costs(opened, settings.prices, [hit.session.id for hit in hits]) if as_json else {}
    if as_json:
        items = [hit.to_json() for hit in hits]
        for item in items:
            item["session"]["cost_usd"] = costs[item["session"]["id"]]
        print_json(_list_json(items, has_more))
        return
    if not hits:
        typer.echo("No matches.")
        return
    color = sys.stdout.isatty()
    for hit in hits:
        title = hit.session.title or ""
        typer.echo(for_terminal(f"{hit.session.id}  #{hit.message_id} {hit.role}  {title}".rstrip()))
        typer.echo(f"  {_highlight(hit.snippet, color)}")
    if has_more:
        typer.echo(f"… more matches (raise --limit above {limit})")


# ---- rename / delete / fork -------------------------------------------------------------


@app.command("rename")
def rename(
    session_id: str = typer.Argument(..., metavar="ID", help="Session id (or a unique start of it)."),
    title: str = typer.Argument(..., help="The new title."),
    server: str | None = SERVER_OPTION,
    key: str | None = KEY_OPTION,
    key_file: Path | None = KEY_FILE_OPTION,
) -> None:
    """Set a session's title."""
    if not title.strip():
        raise UsageError("the title must not be empty")
    with _opened(server=server, key=key, key_file=key_file) as opened:
        record = opened.run(opened.sessions.rename_session(opened.resolve(session_id), title))
    typer.echo(for_terminal(f"Renamed {record.id}: {record.title}"))


@app.command("delete")
def delete(
    session_id: str = typer.Argument(..., metavar="ID", help="Session id (or a unique start of it)."),
    yes: bool = typer.Option(False, "--yes", "-y", help="Do not ask for confirmation."),
    server: str | None = SERVER_OPTION,
    key: str | None = KEY_OPTION,
    key_file: Path | None = KEY_FILE_OPTION,
) -> None:
    """Delete a session and its messages.

    Sessions forked from it are kept. Asks for confirmation on a terminal; when stdin
    is not a terminal, --yes is required.
    """
    settings = load_settings()
    with _opened(settings, server=server, key=key, key_file=key_file) as opened:
        sessions = opened.sessions
        record = opened.run(sessions.get_session(opened.resolve(session_id)))
        if not yes:
            if not sys.stdin.isatty():
                raise UsageError(
                    f"refusing to delete {record.id} without confirmation: stdin is not a terminal; pass --yes"
                )
            described = f'"{record.title}", ' if record.title else ""
            question = for_terminal(
                f"Delete session {record.id} ({described}{_plural(record.message_count, 'message')})?"
            )
            if not typer.confirm(question, default=False):
                typer.echo("Not deleted.", err=True)
                raise typer.Exit(1)
        if opened.storage is None:
            # The server prunes its own snapshots when it deletes the session.
            opened.run(sessions.delete_session(record.id))
        else:
            from hermes.checkpoints.undo import delete_session

            opened.run(delete_session(opened.storage.sessions, settings.home, record.id))
    typer.echo(for_terminal(f"Deleted {record.id}"))  # ids come from the server too


@app.command("fork")
def fork(
    session_id: str = typer.Argument(..., metavar="ID", help="Session to fork (its id, or a unique start of it)."),
    at: int | None = typer.Option(
        None, "--at", metavar="MESSAGE_ID", help="Copy messages up to and including this one (ids from `show`)."
    ),
    title: str | None = typer.Option(None, "--title", help='Title of the new session (default "<title> #2").'),
    as_json: bool = typer.Option(False, "--json", help="Print the new session object."),
    server: str | None = SERVER_OPTION,
    key: str | None = KEY_OPTION,
    key_file: Path | None = KEY_FILE_OPTION,
) -> None:
    """Copy a session into a new one.

    All messages, or with --at those up to and including MESSAGE_ID; prints the new
    session. The original is marked as branched.
    """
    if title is not None and not title.strip():
        raise UsageError("the title must not be empty")
    with _opened(server=server, key=key, key_file=key_file) as opened:
        session_id = opened.resolve(session_id)
        child = opened.run(opened.sessions.fork_session(session_id, at_message_id=at, title=title))
    if as_json:
        print_json(_session_json(child, 0.0))  # a fork starts with no usage
        return
    typer.echo(for_terminal(f"Forked {session_id} → {child.id}  {child.title or ''}".rstrip()))
    copied = _plural(child.message_count, "message")
    typer.echo(for_terminal(f"{copied} copied; continue it with: hermes chat --resume {child.id}"))


# ---- export -----------------------------------------------------------------------------


def _render_export(fmt: str, record: SessionRecord, cost: float | None, messages: list[MessageRecord]) -> str:
    if fmt == "json":
        return json_for_terminal(json.dumps(_session_json(record, cost, messages), ensure_ascii=False, indent=2)) + "\n"
    if fmt == "jsonl":
        rows = [_session_json(record, cost)] + [message.to_json() for message in messages]
        return "".join(json_line(row) for row in rows)
    return session_markdown(record, messages)


def _write_private(path: Path, text: str) -> None:
    """Write `text` to `path` atomically with mode 0600 (replacing an existing file)."""
    import tempfile

    folder = path.parent
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{path.name}.", suffix=".tmp")  # created 0600
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


@app.command("export")
def export(
    session_id: str = typer.Argument(..., metavar="ID", help="Session id (or a unique start of it)."),
    fmt: str = typer.Option("json", "--format", "-f", metavar="json|jsonl|markdown", help="Output format."),
    output: Path | None = typer.Option(
        None, "--output", "-o", metavar="FILE", help="Write to FILE (mode 0600) instead of stdout."
    ),
    server: str | None = SERVER_OPTION,
    key: str | None = KEY_OPTION,
    key_file: Path | None = KEY_FILE_OPTION,
) -> None:
    """Export a session as json, jsonl or markdown.

    json: the session object with "messages"; jsonl: the session on the first line, then
    one message per line; markdown: a readable transcript. -o writes FILE with mode 0600.
    """
    fmt = {"md": "markdown"}.get(fmt.lower(), fmt.lower())
    if fmt not in EXPORT_FORMATS:
        raise UsageError(f"unknown export format {fmt!r}: use json, jsonl or markdown")
    settings = load_settings()
    with _opened(settings, server=server, key=key, key_file=key_file) as opened:
        session_id = opened.resolve(session_id)
        record = opened.run(opened.sessions.get_session(session_id))
        messages = opened.run(opened.sessions.get_messages(session_id))
        cost = session_costs(opened, settings.prices, [record.id])[record.id]
    text = _render_export(fmt, record, cost, messages)
    if output is None or str(output) == "-":
        sys.stdout.write(for_terminal(text) if fmt == "markdown" and sys.stdout.isatty() else text)
        return
    try:
        _write_private(output, text)
    except OSError as exc:
        raise UsageError(f"cannot write {output}: {exc.strerror or exc}") from None
    typer.echo(for_terminal(f"Wrote {_plural(len(messages), 'message')} of {record.id} to {output}"), err=True)


# ---- stats ------------------------------------------------------------------------------


def _size(n: int) -> str:
    size = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if size < 1024 or unit == "GB":
            return f"{int(size)} {unit}" if unit == "B" else f"{size:.1f} {unit}"
        size /= 1024
    raise AssertionError("unreachable")


@app.command("stats")
def stats(
    as_json: bool = typer.Option(False, "--json", help='Print {"object": "stats", ...}.'),
) -> None:
    """Totals: sessions, messages, tokens, cost by model and by day, db size (of the local
    storage, also with server_url)."""
    settings = load_settings().replace(server_url=None)
    with _opened(settings) as opened:
        storage = opened.storage
        assert storage is not None  # no server: the local storage
        totals = opened.run(storage.sessions.stats())
        usage = usage_json(opened.run(storage.sessions.usage_totals()), settings.prices)
        local, location = storage.caps.local_files, storage.location
    path = str(settings.state_db_path) if local else location
    if as_json:
        print_json(
            {
                "object": "stats",
                "sessions": totals.sessions,
                "messages": totals.messages,
                "tool_calls": totals.tool_calls,
                "input_tokens": totals.input_tokens,
                "output_tokens": totals.output_tokens,
                "by_source": totals.by_source,
                "db_bytes": totals.db_bytes,
                "path": path,
                **usage,
            }
        )
        return
    rows: list[tuple[str, str]] = [("sessions", str(totals.sessions))]
    rows += [(f"  {source}", str(count)) for source, count in sorted(totals.by_source.items())]
    rows += [
        ("messages", str(totals.messages)),
        ("tool calls", str(totals.tool_calls)),
        ("tokens", f"{totals.input_tokens} in / {totals.output_tokens} out"),
        *usage_lines(usage),
        ("database", f"{_size(totals.db_bytes)} ({path})"),
    ]
    width = max(len(name) for name, _ in rows)
    for name, value in rows:
        typer.echo(f"{name.ljust(width)}  {value}")

"""`hermes sessions undo|redo|diff`: a session's file checkpoints (hermes/checkpoints).

    hermes sessions undo ID [--turns N] [--force]   files back to before the last N turns,
                                                     and those turns hidden (kept for redo)
    hermes sessions redo ID [--force]                the newest undo, undone
    hermes sessions diff ID [--turn N]               turn N's change (default: the last) as a
                                                     patch `git apply` accepts, on stdout; one
                                                     cut at `max_diff_bytes` (the server's, when
                                                     remote) ends with TRUNCATED_LINE

Exit codes: 0 done; 1 refused or failed, one line on stderr: a file changed outside
hermes since the checkpoint (named; nothing was changed; `--force` overwrites it), a path
outside the worktree, behind a symlinked folder or protected (named; nothing was changed;
`--force` does not override it), a turn running in the session, nothing to undo or redo,
an unknown session; 2 bad input.
`--json` prints `{"object": "undo"|"redo", "session_id", "turns": [ids], "files": [paths]}`.
The diff is written as it is to a pipe (for `git apply`); on a terminal, and in the
undo/redo reports, control characters of file names and contents are replaced by
visible stand-ins (`hermes.terminal_text`).
With `--server URL` (else `server_url`) the session, its checkpoints and its files are a
`hermes serve`'s: the server restores its own files (`POST /api/sessions/{id}/undo|redo`,
`GET /api/sessions/{id}/diff`) and refuses as it would locally.
The commands are registered on `hermes sessions` by hermes/cli/sessions.py.
"""

from __future__ import annotations

import sys
from pathlib import Path

import typer

from hermes.cli._common import load_settings, print_json
from hermes.cli._sessions_source import KEY_FILE_OPTION, KEY_OPTION, SERVER_OPTION, opened_sessions
from hermes.terminal_text import for_terminal

TRUNCATED_LINE = "# hermes: diff truncated at the size cap (max_diff_bytes); the patch above is incomplete"


def undo(
    session_id: str = typer.Argument(..., metavar="ID", help="Session id (or a unique start of it)."),
    turns: int = typer.Option(1, "--turns", "-n", min=1, help="How many of the last turns to undo."),
    force: bool = typer.Option(False, "--force", help="Overwrite files changed since the checkpoint."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    server: str | None = SERVER_OPTION,
    key: str | None = KEY_OPTION,
    key_file: Path | None = KEY_FILE_OPTION,
) -> None:
    """Restore files to before the last N turns and hide those turns (redo brings both back)."""
    with opened_sessions(load_settings(), server=server, key=key, key_file=key_file) as opened:
        record = opened.run(opened.sessions.get_session(opened.resolve(session_id)))
        outcome = opened.run(opened.files.undo(record.id, turns=turns, force=force))
    _report("undo", record.id, outcome.turns, outcome.files, json_out)


def redo(
    session_id: str = typer.Argument(..., metavar="ID", help="Session id (or a unique start of it)."),
    force: bool = typer.Option(False, "--force", help="Overwrite files changed since the undo."),
    json_out: bool = typer.Option(False, "--json", help="Print JSON."),
    server: str | None = SERVER_OPTION,
    key: str | None = KEY_OPTION,
    key_file: Path | None = KEY_FILE_OPTION,
) -> None:
    """Bring back the turns of the newest undo, and their files."""
    with opened_sessions(load_settings(), server=server, key=key, key_file=key_file) as opened:
        record = opened.run(opened.sessions.get_session(opened.resolve(session_id)))
        outcome = opened.run(opened.files.redo(record.id, force=force))
    _report("redo", record.id, outcome.turns, outcome.files, json_out)


def diff(
    session_id: str = typer.Argument(..., metavar="ID", help="Session id (or a unique start of it)."),
    turn: int | None = typer.Option(None, "--turn", "-t", min=1, help="Turn number (1 = first; default: the last)."),
    server: str | None = SERVER_OPTION,
    key: str | None = KEY_OPTION,
    key_file: Path | None = KEY_FILE_OPTION,
) -> None:
    """Print what a turn changed in the files, as a patch `git apply` accepts."""
    with opened_sessions(load_settings(), server=server, key=key, key_file=key_file) as opened:
        record = opened.run(opened.sessions.get_session(opened.resolve(session_id)))
        change = opened.run(opened.files.turn_changes(record.id, turn))
    if not change.patch and not change.files:
        # Said on stderr: stdout stays an (empty) patch that `git apply` accepts.
        typer.echo(f"hermes: turn {change.number} of {record.id} changed no files", err=True)
        return
    sys.stdout.write(for_terminal(change.patch) if sys.stdout.isatty() else change.patch)
    if change.truncated:  # the last line, so a reader of the patch sees it is incomplete
        sys.stdout.write(("" if change.patch.endswith("\n") or not change.patch else "\n") + TRUNCATED_LINE + "\n")


def _report(verb: str, session_id: str, turns: tuple[int, ...], files: tuple[str, ...], json_out: bool) -> None:
    if json_out:
        print_json({"object": verb, "session_id": session_id, "turns": list(turns), "files": list(files)})
        return
    done = "Undid" if verb == "undo" else "Redid"
    count = len(turns)
    typer.echo(for_terminal(f"{done} {count} turn{'s' if count != 1 else ''} of {session_id}"), err=False)
    for path in files:
        typer.echo(for_terminal(f"  restored {path}"))

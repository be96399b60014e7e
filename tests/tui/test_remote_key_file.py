"""The bearer key of `--server` kept off the command line: `--key-file PATH` and
HERMES_SERVER_KEY against a real `hermes serve` with a key, as real subprocesses.

Attacks: another local user reading the key from `ps` (the client's /proc/PID/cmdline),
a key file that is wrong, empty, missing or readable by others, and the key leaking into
any output. Precedence: --key > --key-file > HERMES_SERVER_KEY > server_key.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from hermes.testing.upstream import ScriptedUpstream, text_reply

from ._remote_serve import KEY, REPO, ServeProcess, serve_env


@pytest.fixture
async def serve(tmp_path: Path, upstream: ScriptedUpstream) -> AsyncIterator[ServeProcess]:
    work = tmp_path / "work"
    work.mkdir()
    process = ServeProcess(serve_env(tmp_path / "server-home", upstream), work)
    await process.start()
    yield process
    await process.kill()


def key_file(folder: Path, content: str, mode: int = 0o600, name: str = "server.key") -> Path:
    path = folder / name
    path.write_text(content)
    path.chmod(mode)
    return path


async def hermes(home: Path, *args: str, **env: str) -> tuple[int, str, str, bytes]:
    """Run the CLI (no terminal): exit code, stdout, stderr and the command line `ps` shows."""
    base = {k: v for k, v in os.environ.items() if not k.startswith(("API_SERVER_", "HERMES_", "OPENAI_"))}
    base.update(HERMES_HOME=str(home), PYTHONPATH=str(REPO), **env)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "hermes", *args,
        env=base, stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()  # what every local user sees in ps
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode is not None
    return proc.returncode, out.decode(), err.decode(), cmdline


def assert_key_kept(key: str, *texts: str | bytes) -> None:
    for text in texts:
        assert (key.encode() if isinstance(text, bytes) else key) not in text


async def test_key_file_and_environment_authenticate_and_never_show_the_key(
    serve: ServeProcess, upstream: ScriptedUpstream, tmp_path: Path
) -> None:
    home = tmp_path / "client-home"
    path = key_file(tmp_path, KEY + "\n")  # as `echo KEY > file` writes it
    upstream.enqueue(text_reply("Answered with a key file."))
    code, out, err, cmdline = await hermes(home, "chat", "-q", "hi", "--server", serve.url, "--key-file", str(path))
    assert code == 0, err
    assert out == "Answered with a key file.\n" and err == ""  # 0600: no warning
    assert str(path).encode() in cmdline
    assert_key_kept(KEY, out, err, cmdline)

    code, out, err, cmdline = await hermes(
        home, "sessions", "list", "--json", "--server", serve.url, "--key-file", str(path)
    )
    assert code == 0, err
    assert len(json.loads(out)["data"]) == 1
    assert_key_kept(KEY, err, cmdline)

    code, out, err, cmdline = await hermes(
        home, "sessions", "list", "--json", HERMES_SERVER_URL=serve.url, HERMES_SERVER_KEY=KEY
    )
    assert code == 0, err
    assert len(json.loads(out)["data"]) == 1
    assert_key_kept(KEY, err, cmdline)

    upstream.enqueue(text_reply("Answered with the environment."))
    code, out, err, cmdline = await hermes(home, "chat", "-q", "hi", "--server", serve.url, HERMES_SERVER_KEY=KEY)
    assert code == 0, err
    assert out == "Answered with the environment.\n"
    assert_key_kept(KEY, out, err, cmdline)


async def test_precedence_key_then_key_file_then_environment(serve: ServeProcess, tmp_path: Path) -> None:
    home = tmp_path / "client-home"
    good, bad = key_file(tmp_path, KEY, name="good.key"), key_file(tmp_path, "not-the-key\n", name="bad.key")
    remote = ("sessions", "list", "--server", serve.url)
    code, _, err, _ = await hermes(home, *remote, "--key", KEY, "--key-file", str(bad))
    assert code == 0, err  # --key first
    code, _, err, _ = await hermes(home, *remote, "--key", "wrong", "--key-file", str(good))
    assert code == 1 and "refused the key (401)" in err  # --key first, even when wrong
    code, _, err, _ = await hermes(home, *remote, "--key-file", str(good), HERMES_SERVER_KEY="wrong")
    assert code == 0, err  # the file before the environment
    code, _, err, _ = await hermes(home, *remote, "--key-file", str(bad), HERMES_SERVER_KEY=KEY)
    assert code == 1 and "refused the key (401)" in err
    code, _, err, _ = await hermes(home, *remote, HERMES_SERVER_KEY=KEY, API_SERVER_KEY="wrong")
    assert code == 0, err  # the environment before server_key


async def test_a_wrong_key_file_is_one_line_without_the_key(serve: ServeProcess, tmp_path: Path) -> None:
    home = tmp_path / "client-home"
    secret = "wrong-but-secret-key-1234"
    path = key_file(tmp_path, secret + "\n")
    for args in (("chat", "-q", "hi"), ("sessions", "list"), ("sessions", "show", "x")):
        code, out, err, cmdline = await hermes(home, *args, "--server", serve.url, "--key-file", str(path))
        assert code == 1, (args, err)
        assert out == "" and err.count("\n") == 1 and "refused the key (401)" in err, (args, err)
        assert "--key-file" in err  # says how to pass one
        assert_key_kept(secret, out, err, cmdline)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "is empty"),
        ("\n", "is empty"),
        ("   \n", "is empty"),
        ("first-line-secret\nsecond-line-secret\n", "one key on one line"),
    ],
)
async def test_an_empty_or_multi_line_key_file_is_refused(tmp_path: Path, content: str, message: str) -> None:
    path = key_file(tmp_path, content)
    # No server is reached: the file is refused before any connection (port 9: discard).
    for args in (("chat", "-q", "hi"), ("sessions", "list"), ("sessions", "diff", "x")):
        code, out, err, _ = await hermes(
            tmp_path / "home", *args, "--server", "http://127.0.0.1:9", "--key-file", str(path)
        )
        assert code == 2, (args, err)
        assert out == "" and err.count("\n") == 1 and message in err and str(path) in err, (args, err)
        assert_key_kept("secret", err)


async def test_a_missing_or_unreadable_key_file_is_one_line(tmp_path: Path) -> None:
    missing = tmp_path / "nope.key"
    code, out, err, _ = await hermes(
        tmp_path / "home", "sessions", "list", "--server", "http://127.0.0.1:9", "--key-file", str(missing)
    )
    assert code == 2 and out == ""
    assert err == f"hermes: cannot read the key file {missing}: No such file or directory\n"
    code, out, err, _ = await hermes(
        tmp_path / "home", "sessions", "list", "--server", "http://127.0.0.1:9", "--key-file", str(tmp_path)
    )
    assert code == 2 and err.count("\n") == 1 and "cannot read the key file" in err, err
    if os.geteuid() != 0:  # root reads a mode-000 file anyway
        locked = key_file(tmp_path, "locked-secret\n", mode=0o000, name="locked.key")
        code, out, err, _ = await hermes(
            tmp_path / "home", "sessions", "list", "--server", "http://127.0.0.1:9", "--key-file", str(locked)
        )
        assert code == 2 and err == f"hermes: cannot read the key file {locked}: Permission denied\n", err


async def test_a_key_file_others_can_read_works_with_a_warning(serve: ServeProcess, tmp_path: Path) -> None:
    path = key_file(tmp_path, KEY + "\n", mode=0o644)
    code, out, err, _ = await hermes(
        tmp_path / "home", "sessions", "list", "--server", serve.url, "--key-file", str(path)
    )
    assert code == 0, err
    assert err == (
        f"hermes: warning: the key file {path} can be read or written by other users (mode 0644); chmod 600 it\n"
    )
    assert_key_kept(KEY, out, err)

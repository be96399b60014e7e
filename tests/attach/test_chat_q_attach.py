"""`hermes chat -q` with `@` mentions and `-i` images, as a real subprocess against the scripted
upstream: what the model received, what the session stored, and every refusal."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes.attachment_blocks import split
from hermes.testing.state_db import open_sync_state
from hermes.testing.upstream import ScriptedUpstream, error_reply, text_reply

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + b"\x00" * 40
GIF = b"GIF89a" + b"\x01\x00" * 20


@pytest.fixture
def upstream():
    with ScriptedUpstream.in_thread() as server:
        yield server


@pytest.fixture
def work(tmp_path: Path) -> Path:
    folder = tmp_path / "work"
    folder.mkdir()
    (folder / "greet.py").write_text("".join(f"line {n}\n" for n in range(1, 11)))
    (folder / "src").mkdir()
    (folder / "src" / "a.py").write_text("a = 1\n")
    (folder / "src" / "b.py").write_text("b = 2\n")
    return folder


def hermes(args, *, home: Path, cwd: Path, upstream: ScriptedUpstream, fake_home: Path | None = None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_"))}
    env.update(HERMES_HOME=str(home), HERMES_STREAM_STALE_TIMEOUT="5", HERMES_BASE_URL=upstream.base_url)
    env.update(HERMES_MODEL="scripted-model", PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    if fake_home is not None:
        env["HOME"] = str(fake_home)
    return subprocess.run(
        [sys.executable, "-m", "hermes", *args],
        input="", capture_output=True, text=True, env=env, cwd=cwd, timeout=60,
    )  # fmt: skip


def user_content(upstream: ScriptedUpstream, index: int = -1):
    return [m for m in upstream.requests[index].messages if m["role"] == "user"]


def test_mentions_attach_file_lines_and_folder_once_and_are_stored(upstream, hermes_home, work):
    upstream.enqueue(text_reply("Seen."), text_reply("Again."))
    prompt = "look at @greet.py#L2-3, @src/ and @missing.py please"
    proc = hermes(["chat", "-q", prompt], home=hermes_home, cwd=work, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    (sent,) = user_content(upstream)
    typed, attachments = split(sent["content"])
    assert typed == prompt  # what was typed, unchanged (a missing path stays as typed)
    assert [(a.kind, a.label) for a in attachments] == [("file", "greet.py#L2-3"), ("folder", "src/")]
    assert attachments[0].body == "line 2\nline 3\n"
    assert attachments[1].body.splitlines() == ["a.py", "b.py"]
    assert "was not attached" not in proc.stderr

    # the next turn: the model sees the attachment again from the history, exactly once
    proc = hermes(["chat", "-q", "and now?", "-c"], home=hermes_home, cwd=work, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    history = json.dumps(upstream.requests[-1].messages)
    assert history.count("line 2\\nline 3") == 1
    store = open_sync_state(hermes_home / "state.db")
    (session,) = store.list_sessions()
    stored = [m for m in store.get_messages(session.id) if m.role == "user"]
    store.close()
    assert stored[0].content == sent["content"] and stored[1].content == "and now?"
    assert session.title == prompt[:59] + "…" or session.title == prompt  # the typed text, not the file

    proc = hermes(["sessions", "show", session.id], home=hermes_home, cwd=work, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    assert "📎 greet.py#L2-3" in proc.stdout and "📎 src/" in proc.stdout
    assert "<attachment" not in proc.stdout


def test_whole_file_mention(upstream, hermes_home, work):
    upstream.enqueue(text_reply("ok"))
    proc = hermes(["chat", "-q", "explain @greet.py."], home=hermes_home, cwd=work, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    (sent,) = user_content(upstream)
    _, (attachment,) = split(sent["content"])
    assert attachment.label == "greet.py" and attachment.body == (work / "greet.py").read_text()


def test_secret_symlinked_huge_and_binary_mentions_are_refused_with_a_note(upstream, hermes_home, work, tmp_path):
    fake_home = tmp_path / "home"
    (fake_home / ".ssh").mkdir(parents=True)
    (fake_home / ".ssh" / "id_rsa").write_text("-----BEGIN OPENSSH PRIVATE KEY-----\nZQX-SECRET\n")
    (work / ".env").write_text("API_KEY=ZQX-SECRET\n")
    (work / "key.pem").write_text("-----BEGIN RSA PRIVATE KEY-----\nZQX-SECRET\n")
    hermes_home.mkdir(parents=True, exist_ok=True)
    (hermes_home / "state-secret.db").write_text("ZQX-SECRET")
    (work / "db").symlink_to(hermes_home / "state-secret.db")
    outside = tmp_path / "outside.txt"
    outside.write_text("not in the folder")
    (work / "link.txt").symlink_to(outside)
    (work / "huge.txt").write_text("x" * (300 * 1024))
    (work / "blob.bin").write_bytes(b"\x00\x01\x02binary")
    upstream.enqueue(text_reply("ok"))
    prompt = "@~/.ssh/id_rsa @.env @key.pem @db @link.txt @huge.txt @blob.bin"
    proc = hermes(["chat", "-q", prompt], home=hermes_home, cwd=work, upstream=upstream, fake_home=fake_home)
    assert proc.returncode == 0, proc.stderr
    (sent,) = user_content(upstream)
    assert sent["content"] == prompt  # nothing attached
    notes = [line for line in proc.stderr.splitlines() if line.startswith("hermes: @")]
    assert len(notes) == 7, proc.stderr
    joined = "\n".join(notes)
    assert "@~/.ssh/id_rsa was not attached" in joined
    assert "@.env was not attached: .env is an environment file" in joined
    assert "@key.pem was not attached: it is a private key" in joined
    assert "@db was not attached" in joined and "hidden from tools" in joined
    assert "@link.txt was not attached: it leads out of the working folder" in joined
    assert "@huge.txt is 307,200 bytes" in joined and "#L1-200" in joined
    assert "@blob.bin is a binary file" in joined
    assert "ZQX-SECRET" not in json.dumps(upstream.requests[0].messages)


def test_a_line_range_of_a_huge_file_is_attached(upstream, hermes_home, work):
    (work / "huge.txt").write_text("".join(f"row {n}\n" for n in range(100_000)))
    upstream.enqueue(text_reply("ok"))
    proc = hermes(["chat", "-q", "@huge.txt#L5-6"], home=hermes_home, cwd=work, upstream=upstream)
    assert proc.returncode == 0, proc.stderr
    _, (attachment,) = split(user_content(upstream)[0]["content"])
    assert attachment.body == "row 4\nrow 5\n" and attachment.lines == (5, 6)


def test_images_go_to_the_model_as_data_urls_and_are_stored(upstream, hermes_home, work):
    (work / "shot.png").write_bytes(PNG)
    (work / "anim.gif").write_bytes(GIF)
    upstream.enqueue(text_reply("A picture."))
    proc = hermes(
        ["chat", "-q", "what is this?", "-i", "shot.png", "--image", "anim.gif"],
        home=hermes_home, cwd=work, upstream=upstream,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    (sent,) = user_content(upstream)
    assert sent["content"] == [
        {"type": "text", "text": "what is this?"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64," + base64.b64encode(PNG).decode()}},
        {"type": "image_url", "image_url": {"url": "data:image/gif;base64," + base64.b64encode(GIF).decode()}},
    ]
    store = open_sync_state(hermes_home / "state.db")
    (session,) = store.list_sessions()
    (stored,) = [m for m in store.get_messages(session.id) if m.role == "user"]
    store.close()
    assert stored.content == sent["content"]
    assert session.title == "what is this?"


def test_a_file_that_is_no_image_or_too_large_is_refused(upstream, hermes_home, work):
    (work / "fake.png").write_text("not an image at all")
    (work / "big.png").write_bytes(PNG + b"\x00" * (5 * 1024 * 1024))
    for name, expected in (("fake.png", "is not a PNG, JPEG, GIF or WebP image"), ("big.png", "the limit is")):
        proc = hermes(["chat", "-q", "look", "-i", name], home=hermes_home, cwd=work, upstream=upstream)
        assert proc.returncode == 2
        assert expected in proc.stderr and "Traceback" not in proc.stderr
    proc = hermes(["chat", "-q", "look", "-i", "nope.png"], home=hermes_home, cwd=work, upstream=upstream)
    assert proc.returncode == 2 and "nope.png: no such file" in proc.stderr
    assert upstream.requests == []


def test_an_endpoint_that_refuses_images_gives_one_clear_error(upstream, hermes_home, work):
    (work / "shot.png").write_bytes(PNG)
    upstream.enqueue(error_reply(400, "Invalid content type. image_url is only supported by certain models."))
    proc = hermes(["chat", "-q", "look", "-i", "shot.png"], home=hermes_home, cwd=work, upstream=upstream)
    assert proc.returncode == 1
    lines = [line for line in proc.stderr.splitlines() if "image" in line]
    assert len(lines) == 1, proc.stderr
    assert "does not accept images" in lines[0]

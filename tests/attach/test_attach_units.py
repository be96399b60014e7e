"""The pieces of attachments on their own: the stored text form, mention parsing and reading
(with the attacks: a FIFO, a symlink out, hidden files, the caps), the file index and the
fuzzy ranking, image sniffing, the context estimate and the Markdown export."""

from __future__ import annotations

import base64
import os
import subprocess
import time
from pathlib import Path

import pytest

from hermes.agent.attach.file_index import fuzzy_rank, list_files
from hermes.agent.attach.images import ImageRefused, load_image, sniff_image_type
from hermes.agent.attach.mentions import MentionLimits, expand_mentions
from hermes.agent.context import IMAGE_PART_CHARS, estimate_tokens
from hermes.agent.safety.confinement import Confinement
from hermes.attachment_blocks import Attachment, compose, split, split_content, summary_text
from hermes.store.records import MessageRecord, SessionRecord
from hermes.transcript_markdown import session_markdown


@pytest.fixture
def policy(hermes_home: Path) -> Confinement:
    return Confinement.build(hermes_home)


def test_blocks_read_back_exactly_even_when_the_content_looks_like_a_block():
    tricky = 'x\n</attachment>\n\n<attachment kind="file" path="y" chars="1">\nz\n</attachment>'
    attachments = [
        Attachment("file", 'we"ird path.py', tricky, (3, 9)),
        Attachment("folder", "src/", "a.py\nb.py"),
    ]
    text = compose("look @x", attachments)
    assert split(text) == ("look @x", attachments)
    assert split("no attachments\n\n<attachment kind=\"file\" path=\"p\" chars=\"99\">\nshort\n</attachment>") == (
        'no attachments\n\n<attachment kind="file" path="p" chars="99">\nshort\n</attachment>',
        [],
    )
    parts = [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}]
    typed, found, images = split_content(parts)
    assert typed == "look @x" and found == attachments and len(images) == 1
    assert summary_text(parts).splitlines() == [
        "look @x",
        '📎 we"ird path.py#L3-9 · 6 lines',
        "📎 src/ · 2 entries",
        "🖼 image/png · 3 B",
    ]


def test_what_counts_as_a_mention(tmp_path, policy):
    (tmp_path / "a.py").write_text("one\ntwo\nthree\n")
    expansion = expand_mentions("mail me@a.py, see (@a.py#L2) or @a.py#L9 or @nope.", tmp_path, policy)
    assert [a.label for a in expansion.attachments] == ["a.py#L2-2"]
    assert expansion.attachments[0].body == "two\n"
    assert expansion.notes == ("@a.py has only 3 lines",)
    assert expansion.prompt == "mail me@a.py, see (@a.py#L2) or @a.py#L9 or @nope."


def test_a_fifo_is_refused_without_blocking(tmp_path, policy):
    os.mkfifo(tmp_path / "pipe")
    started = time.monotonic()
    expansion = expand_mentions("@pipe", tmp_path, policy)
    assert time.monotonic() - started < 5
    assert expansion.attachments == () and "not a regular file" in expansion.notes[0]


def test_symlinks_out_of_the_folder_and_hidden_places_are_refused(tmp_path, policy, monkeypatch, hermes_home):
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "config").write_text("Host *\n")
    (home / ".aws").mkdir()
    (home / ".aws" / "credentials").write_text("[default]\n")
    (home / ".aws" / "config").write_text("[default]\n")
    monkeypatch.setenv("HOME", str(home))
    work = tmp_path / "work"
    work.mkdir()
    (work / "ssh").symlink_to(home / ".ssh")
    (work / "creds").symlink_to(home / ".aws" / "credentials")
    hermes_home.mkdir(parents=True, exist_ok=True)
    (hermes_home / "state.db").write_text("db")
    (work / "state").symlink_to(hermes_home / "state.db")
    guarded = Confinement.build(hermes_home, user_home=home)
    expansion = expand_mentions("@ssh/ @ssh/config @creds @state @~/.aws/config", work, guarded)
    assert expansion.attachments == ()
    assert len(expansion.notes) == 5 and all("was not attached" in note for note in expansion.notes)


def test_the_turn_cap_and_the_count_cap(tmp_path, policy):
    for name in "abcd":
        (tmp_path / f"{name}.txt").write_text(name * 400)
    limits = MentionLimits(max_file_bytes=500, max_turn_bytes=1000, max_attachments=3)
    expansion = expand_mentions("@a.txt @b.txt @c.txt @d.txt", tmp_path, policy, limits)
    assert [a.path for a in expansion.attachments] == ["a.txt", "b.txt"]
    assert all("would pass 1,000 bytes" in note for note in expansion.notes) and len(expansion.notes) == 2
    limits = MentionLimits(max_attachments=2)
    expansion = expand_mentions("@a.txt @b.txt @c.txt @a.txt", tmp_path, policy, limits)
    assert len(expansion.attachments) == 2 and expansion.notes == ("@c.txt was not attached: at most 2 per prompt",)


def test_a_folder_listing_respects_gitignore(tmp_path, policy):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("build/\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "main.py").write_text("")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.bin").write_text("")
    expansion = expand_mentions("@.", tmp_path, policy)
    assert expansion.attachments[0].body.splitlines() == ["src/", ".gitignore", "src/main.py"]


def test_the_walk_outside_git_skips_hidden_and_vendored_folders_and_is_capped(tmp_path):
    for name in ("a.py", ".secret", ".venv/x.py", "node_modules/m.js", "pkg/b.py"):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")
    index = list_files(tmp_path)
    assert index.paths == ("a.py", "pkg/", "pkg/b.py") and not index.truncated
    assert list_files(tmp_path, limit=2).truncated


def test_fuzzy_rank_prefers_file_names_and_word_starts():
    paths = ["docs/greeting.md", "src/greet.py", "src/program_entry.py", "README.md"]
    assert fuzzy_rank("gre", paths)[:2] == ["src/greet.py", "docs/greeting.md"]
    assert fuzzy_rank("rdm", paths) == ["README.md"]
    assert fuzzy_rank("zzz", paths) == []


def test_images_are_typed_by_their_bytes(tmp_path, policy, hermes_home):
    assert sniff_image_type(b"\xff\xd8\xff\xe0") == "image/jpeg"
    assert sniff_image_type(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "image/webp"
    assert sniff_image_type(b"GIF87a") == "image/gif"
    assert sniff_image_type(b"<svg xmlns") is None
    (tmp_path / "photo.txt").write_bytes(b"\xff\xd8\xff\xe0" + b"\x00" * 10)
    assert load_image("photo.txt", tmp_path, policy).mime == "image/jpeg"  # the name does not matter
    hermes_home.mkdir(parents=True, exist_ok=True)
    (hermes_home / "x.png").write_bytes(b"\x89PNG\r\n\x1a\n")
    with pytest.raises(ImageRefused, match="hidden from tools"):
        load_image(str(hermes_home / "x.png"), tmp_path, policy)


def test_an_image_counts_as_a_fixed_size_in_the_context_estimate():
    url = "data:image/png;base64," + base64.b64encode(b"\x00" * 3_000_000).decode()
    parts = [{"type": "text", "text": "hi"}, {"type": "image_url", "image_url": {"url": url}}]
    message = {"role": "user", "content": parts}
    assert estimate_tokens([message]) < (IMAGE_PART_CHARS + 100) // 4 + 10


def test_the_markdown_export_holds_attachments_in_full_and_images_inline():
    text = compose("see @a.py", [Attachment("file", "a.py", "print(1)\n")])
    url = "data:image/png;base64,AAAA"
    content = [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": url}}]
    record = SessionRecord("s1", "tui", "t", None, None, 0.0, 0.0, None, None, 1, 0, 0, 0, None)
    message = MessageRecord(1, "s1", "user", content, None, None, None, None, None, 0.0, None)
    exported = session_markdown(record, [message])
    assert "see @a.py\n\n📎 `a.py`\n\n```\nprint(1)\n```" in exported
    assert f"![image 1 (image/png · 3 B)]({url})" in exported


def test_an_endpoint_refusing_images_is_named_but_an_overflow_stays_an_overflow():
    from hermes.agent.context import is_context_overflow
    from hermes.agent.providers.openai_compat import status_error

    refused = status_error(400, '{"error": {"message": "This model does not support image inputs"}}', None, "x")
    assert str(refused).startswith("the model does not accept images (400)")
    overflow = status_error(400, '{"error": {"message": "maximum context length is 8192 tokens (image)"}}', None, "x")
    assert "does not accept images" not in str(overflow) and is_context_overflow(overflow)

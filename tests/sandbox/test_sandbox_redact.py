"""Credentials in URLs are masked before hermes prints them (hermes.redact)."""

from __future__ import annotations

import pytest

from hermes.redact import redact_text, redact_url


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://user:pass@host/v1", "https://user:****@host/v1"),
        ("https://sk-token@host:8443/v1", "https://****@host:8443/v1"),
        ("https://host/v1?api_key=abc&model=x", "https://host/v1?api_key=****&model=x"),
        ("https://host/v1?key=abc#frag", "https://host/v1?key=****#frag"),
        ("https://host/p?X-Amz-Signature=abc&access_token=t&page=2", "https://host/p?X-Amz-Signature=****&access_token=****&page=2"),
        ("https://host/v1?token=", "https://host/v1?token="),
        ("http://127.0.0.1:11434/v1", "http://127.0.0.1:11434/v1"),
        ("https://host/monkey/v1?keyboard=us", "https://host/monkey/v1?keyboard=us"),
    ],
)
def test_redact_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown


def test_redact_text_keeps_the_sentence_around_urls() -> None:
    text = "cannot reach the model endpoint https://bob:hunter2@llm.example/v1 (ConnectError: https://llm.example/x?api_key=k)."

    assert redact_text(text) == (
        "cannot reach the model endpoint https://bob:****@llm.example/v1 (ConnectError: https://llm.example/x?api_key=****)."
    )
    assert redact_text("no url: user:pass@host") == "no url: user:pass@host"


def test_serve_start_line_masks(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from hermes.cli.serve import _say

    _say("hermes serve: using https://u:secret@h/v1")

    assert capsys.readouterr().err == "hermes serve: using https://u:****@h/v1\n"


def test_chat_error_message_masks_the_endpoint_password(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import os
    import socket
    import subprocess
    import sys

    with socket.socket() as sock:  # a loopback port nothing listens on
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {
        **os.environ,
        "HERMES_BASE_URL": f"http://bob:hunter2@127.0.0.1:{port}/v1?api_key=sk-zz",
        "HERMES_MODEL": "m",
        "HERMES_STREAM_RETRIES": "0",
        "HERMES_SANDBOX": "off",
    }

    done = subprocess.run(
        [sys.executable, "-m", "hermes", "chat", "-q", "hi"],
        capture_output=True, text=True, check=False, timeout=60, env=env, stdin=subprocess.DEVNULL, cwd=tmp_path,
    )  # fmt: skip

    assert done.returncode == 1
    assert "hunter2" not in done.stdout + done.stderr and "sk-zz" not in done.stdout + done.stderr
    assert f"http://bob:****@127.0.0.1:{port}/v1?api_key=****" in done.stderr

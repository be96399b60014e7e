"""hermes.cli._server_key: which key a client command sends, and what a key file may hold."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.cli._server_key import ENV_VAR, MAX_KEY_FILE_BYTES, read_key_file, server_key
from hermes.errors import UsageError


def write(path: Path, content: bytes, mode: int = 0o600) -> Path:
    path.write_bytes(content)
    path.chmod(mode)
    return path


def test_precedence(tmp_path):
    path = write(tmp_path / "k", b"from-file\n")
    env = {ENV_VAR: "from-env"}
    assert server_key("from-settings", key="from-flag", key_file=path, env=env) == "from-flag"
    assert server_key("from-settings", key=None, key_file=path, env=env) == "from-file"
    assert server_key("from-settings", key=None, key_file=None, env=env) == "from-env"
    assert server_key("from-settings", key=None, key_file=None, env={ENV_VAR: ""}) == "from-settings"
    assert server_key(None, key=None, key_file=None, env={}) is None


def test_only_the_trailing_newline_is_stripped(tmp_path):
    assert read_key_file(write(tmp_path / "a", b"k e y\n")) == "k e y"
    assert read_key_file(write(tmp_path / "b", b"key\r\n")) == "key"
    assert read_key_file(write(tmp_path / "c", b"key")) == "key"


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "is empty"),
        (b"\n", "is empty"),
        (b"  \t \n", "is empty"),
        (b"one-secret\ntwo-secret\n", "one key on one line"),
        (b"esc\x1b-secret", "one key on one line"),
        (b"\xff\xfe-secret", "is not UTF-8 text"),
        (b"x" * (MAX_KEY_FILE_BYTES + 1), f"larger than {MAX_KEY_FILE_BYTES} bytes"),
    ],
)
def test_refused_contents_name_the_file_never_the_content(tmp_path, content, message):
    path = write(tmp_path / "server.key", content)
    with pytest.raises(UsageError) as refused:
        read_key_file(path)
    assert message in str(refused.value) and str(path) in str(refused.value)
    assert "secret" not in str(refused.value) and "xxxx" not in str(refused.value)
    assert refused.value.exit_code == 2


def test_a_key_file_others_may_read_is_used_with_a_warning(tmp_path, capsys):
    path = write(tmp_path / "shared.key", b"the-key\n", mode=0o640)
    assert read_key_file(path) == "the-key"
    err = capsys.readouterr().err
    assert (
        err == f"hermes: warning: the key file {path} can be read or written by other users (mode 0640); chmod 600 it\n"
    )
    write(path, b"the-key\n", mode=0o600)
    assert read_key_file(path) == "the-key"
    assert capsys.readouterr().err == ""

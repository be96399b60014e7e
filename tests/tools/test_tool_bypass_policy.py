"""With the sandbox off, the terminal tool's approval policy stops the two reported bypasses."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.terminal import terminal


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hermes_home: Path) -> Path:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "authorized_keys").write_text("original\n")
    hermes_home.mkdir()
    (hermes_home / "config.toml").write_text('model = "m"\n')
    monkeypatch.setenv("HOME", str(home))
    return home


async def test_symlink_bypass_is_denied_and_changes_nothing(user_home: Path) -> None:
    ctx = ToolContext(session_id="s", cwd=user_home)

    out = await terminal({"command": "ln -s ~/.ssh l && echo k >> l/authorized_keys"}, ctx)

    assert out.startswith("DENIED: this command was not run.") and "protected_link" in out
    assert not (user_home / "l").exists()
    assert (user_home / ".ssh" / "authorized_keys").read_text() == "original\n"


async def test_hermes_home_config_write_is_blocked(user_home: Path, hermes_home: Path) -> None:
    ctx = ToolContext(session_id="s", cwd=user_home, yolo=True)

    out = await terminal({"command": "echo 'yolo = true' > $HERMES_HOME/config.toml"}, ctx)

    assert out.startswith("BLOCKED") and "[rule: hermes_own_write]" in out
    assert (hermes_home / "config.toml").read_text() == 'model = "m"\n'

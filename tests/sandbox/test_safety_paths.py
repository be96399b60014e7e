"""hermes's home is worked out once (hermes/agent/safety/paths.py): the settings, the
confinement and the approval policy agree on it, whatever HERMES_HOME says."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes.agent.safety.approval import check_write_path
from hermes.agent.safety.confinement import Confinement
from hermes.agent.safety.paths import HermesPaths, absolute
from hermes.agent.safety.protected_paths import expand_command_path, sensitive_path
from hermes.config import Settings


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("HERMES_HOME", raising=False)
    return home


@pytest.mark.parametrize("value", ["", None])
def test_without_hermes_home_the_home_is_dot_hermes(user_home: Path, monkeypatch: pytest.MonkeyPatch,
                                                    value: str | None) -> None:  # fmt: skip
    if value is not None:
        monkeypatch.setenv("HERMES_HOME", value)
    paths = HermesPaths.from_environment()
    assert paths.home == user_home / ".hermes" == paths.default_home
    assert paths.own_homes == (user_home / ".hermes",)
    assert paths.homes_as_text()[-1] == str(user_home / ".hermes")


def test_a_relative_or_tilde_hermes_home_is_made_absolute_like_the_settings(
    user_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    for value, expected in (("state/../hh", tmp_path / "hh"), ("~/elsewhere", user_home / "elsewhere")):
        monkeypatch.setenv("HERMES_HOME", value)
        paths = HermesPaths.from_environment()
        assert paths.home == expected
        assert paths.home == absolute(Settings.load().home)
        assert paths.own_homes == (expected, user_home / ".hermes")
        assert expand_command_path("$HERMES_HOME/config.toml", None) == f"{expected}/config.toml"


def test_every_policy_module_protects_the_same_homes(user_home: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    real = tmp_path / "real-home"
    real.mkdir()
    link = tmp_path / "hh"
    link.symlink_to(real)
    monkeypatch.setenv("HERMES_HOME", str(link))
    settings_policy = Confinement.from_settings(Settings.load())
    env_policy = Confinement.default()
    assert settings_policy.hidden == env_policy.hidden
    assert settings_policy.protected == env_policy.protected
    for home in (link, real, user_home / ".hermes"):
        target = home / "state.db"
        assert env_policy.hidden_entry(target) in (link, real, user_home / ".hermes")
        assert env_policy.protected_entry(target) is not None
        assert sensitive_path(str(target)) == ("hermes_home_write", "hermes's own files in $HERMES_HOME")
        assert check_write_path(target).rule == "hermes_home_write"
    assert sensitive_path(str(real / "config.toml"))[0] == "hermes_config_write"  # type: ignore[index]
    assert HermesPaths.from_environment().homes_as_text() == [
        str(user_home / ".hermes"), str(real), str(link)
    ]  # fmt: skip
    outside = tmp_path / "not-hermes" / "state.db"
    assert env_policy.hidden_entry(outside) is None
    assert sensitive_path(str(outside)) is None


def test_the_paths_are_read_at_each_call(user_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "first"))
    assert HermesPaths.from_environment().home == tmp_path / "first"
    monkeypatch.setenv("HERMES_HOME", str(tmp_path / "second"))
    assert HermesPaths.from_environment().home == tmp_path / "second"
    assert sensitive_path(str(tmp_path / "second" / "x")) is not None
    assert sensitive_path(str(tmp_path / "first" / "x")) is None

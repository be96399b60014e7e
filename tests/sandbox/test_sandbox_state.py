"""Resolving `sandbox = auto|on|off` and building the bwrap command line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from sandbox_helpers import fake_bwrap

from hermes.agent.safety.confinement import hidden_paths
from hermes.agent.safety.sandbox import (
    SandboxConfig,
    bwrap_arguments,
    resolve_sandbox,
)
from hermes.config import Settings
from hermes.errors import ConfigError


def test_off_never_wraps() -> None:
    state = resolve_sandbox(SandboxConfig(mode="off", bwrap="/nonexistent/bwrap"))

    assert (state.active, state.notice, state.detail) == (False, None, "off (sandbox = off)")
    assert state.wrap(["bash", "-c", "true"], Path("/")) == ["bash", "-c", "true"]


def test_auto_without_bwrap_is_off_with_one_notice(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))

    state = resolve_sandbox(SandboxConfig(mode="auto"))

    assert not state.active
    assert state.notice == (
        "tool sandbox off: bubblewrap (bwrap) is not installed (set sandbox = off to silence this notice)"
    )


def test_auto_with_a_bwrap_that_cannot_create_namespaces_is_off(tmp_path: Path) -> None:
    bwrap = fake_bwrap(tmp_path / "bin", 'echo "bwrap: setting up uid map: Permission denied" >&2; exit 1')

    state = resolve_sandbox(SandboxConfig(mode="auto", bwrap=str(bwrap)))

    assert not state.active
    assert state.notice is not None and "Permission denied" in state.notice
    assert (
        state.detail == f"off ({bwrap} failed a test run: bwrap: setting up uid map: Permission denied; sandbox = auto)"
    )


def test_on_without_a_working_bwrap_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = fake_bwrap(tmp_path / "bin", "exit 1")
    with pytest.raises(ConfigError, match=r"sandbox = on, but .*failed a test run: exit code 1; install bubblewrap"):
        resolve_sandbox(SandboxConfig(mode="on", bwrap=str(broken)))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(ConfigError, match=r"^sandbox = on, but bubblewrap \(bwrap\) is not installed; "):
        resolve_sandbox(SandboxConfig(mode="on"))


def test_a_working_bwrap_is_used(tmp_path: Path) -> None:
    # A stand-in that runs the command after "--" proves the probe ran the real command line.
    bwrap = fake_bwrap(tmp_path / "bin", 'while [ "$1" != "--" ]; do shift; done; shift; exec "$@"')

    state = resolve_sandbox(SandboxConfig(mode="on", network=False, bwrap=str(bwrap)))

    assert state.active and state.notice is None
    assert state.detail == f"on (bubblewrap {bwrap}, sandbox = on, network off; working directory writable)"
    argv = state.wrap(["bash", "-c", "x"], tmp_path)
    assert argv[0] == str(bwrap) and argv[-4:] == ["--", "bash", "-c", "x"]
    assert "--unshare-net" in argv


def test_settings_choose_the_mode_and_hide_hermes_home(tmp_path: Path) -> None:
    settings = Settings.load(
        env={"HERMES_HOME": str(tmp_path / "hh"), "HERMES_SANDBOX": "On", "HERMES_SANDBOX_NETWORK": "0"}
    )

    config = SandboxConfig.from_settings(settings)

    assert (config.mode, config.network) == ("on", False)
    assert config.hidden[0] == tmp_path / "hh"
    assert Path.home() / ".ssh" in config.hidden and Path("/etc/shadow") in config.hidden
    with pytest.raises(ConfigError, match="invalid value for sandbox: 'sometimes'"):
        Settings.load(env={"HERMES_HOME": str(tmp_path), "HERMES_SANDBOX": "sometimes"})


def test_command_line_order(tmp_path: Path) -> None:
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".netrc").write_text("machine x password y\n")
    hidden = hidden_paths(tmp_path / "hh", user_home=home)

    args = bwrap_arguments("bwrap", home, hidden, network=True)

    text = " ".join(args)
    assert text.startswith("bwrap --ro-bind / / --dev /dev --proc /proc --tmpfs /tmp ")
    # The working directory is bound first, so the hidden stores under it are covered after it.
    assert args.index("--bind") < args.index(str(home / ".ssh"))
    assert f"--tmpfs {home / '.ssh'} --remount-ro {home / '.ssh'}" in text
    assert f"--ro-bind /dev/null {home / '.netrc'}" in text
    assert str(tmp_path / "hh") not in text  # a missing folder needs no cover
    assert text.endswith(f"--unshare-pid --die-with-parent --chdir {home}")
    assert "--unshare-net" not in args


def test_working_inside_a_hidden_folder_keeps_it_usable(tmp_path: Path) -> None:
    hermes_home = tmp_path / "hh"
    (hermes_home / "work").mkdir(parents=True)

    args = bwrap_arguments("bwrap", hermes_home / "work", (hermes_home,), network=False)

    work = str(hermes_home / "work")
    assert args[-8:] == ["--bind", work, work, "--unshare-pid", "--die-with-parent", "--chdir", work, "--unshare-net"]


def test_mounts_use_real_paths(tmp_path: Path) -> None:
    real = tmp_path / "real-home"
    real.mkdir()
    link = tmp_path / "link-home"
    link.symlink_to(real)

    args = bwrap_arguments("bwrap", tmp_path, (link,), network=True)

    assert f"--tmpfs {os.path.realpath(real)}" in " ".join(args)


def test_the_terminal_tool_describes_an_active_sandbox(tmp_path: Path) -> None:
    from hermes.agent.safety.launch import ToolLauncher
    from hermes.agent.tools.terminal import TERMINAL_TOOL, make_terminal_tool

    bwrap = fake_bwrap(tmp_path / "bin", 'while [ "$1" != "--" ]; do shift; done; shift; exec "$@"')
    state = resolve_sandbox(SandboxConfig(mode="on", network=False, bwrap=str(bwrap)))

    sandboxed = make_terminal_tool(ToolLauncher(sandbox=state)).description
    plain = make_terminal_tool(ToolLauncher()).description

    assert plain == TERMINAL_TOOL.description
    assert sandboxed.startswith(plain) and "only the working directory and $TMPDIR are writable" in sandboxed
    assert sandboxed.endswith("/tmp is private to each command, and the network is off.")
    assert "Background processes (`&`, nohup, setsid, daemons) are killed when the command ends." in plain

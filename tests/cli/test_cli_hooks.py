"""Hooks from config.toml and .claude/settings.json through the real command line:
`hermes hooks list`, bad tables refused with one line, and `hermes chat -q` with a hook
that blocks a command (checked on what the scripted upstream received next)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from hermes.config import Settings
from hermes.errors import ConfigError
from hermes.testing.upstream import ScriptedUpstream, call, text_reply, tool_reply

REPO = Path(__file__).resolve().parents[2]

CONFIG = """\
hooks_stop_limit = 1

[[hooks.PreToolUse]]
matcher = "terminal"
command = "python3 log_hook.py"
timeout = 5

[[hooks.UserPromptSubmit]]
hooks = [{ type = "command", command = "echo from-config" }]
"""

CLAUDE_SETTINGS = {
    "hooks": {
        "PreToolUse": [
            {
                "matcher": "Bash",
                "hooks": [{"type": "command", "command": '"$CLAUDE_PROJECT_DIR"/.claude/hooks/no_rm.sh'}],
            }
        ]
    }
}


NO_RM = """#!/bin/bash
command=$(python3 -c 'import json, sys; print(json.load(sys.stdin)["tool_input"]["command"])')
if [[ "$command" == rm* ]]; then
  echo "Use trash instead of rm: $command" >&2
  exit 2
fi
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / ".claude").mkdir(parents=True)
    (folder / ".claude" / "settings.json").write_text(json.dumps(CLAUDE_SETTINGS))
    (folder / "log_hook.py").write_text("import sys; open('hook.log', 'a').write(sys.stdin.read() + '\\n')\n")
    (folder / "victim.txt").write_text("keep\n")
    guard = folder / ".claude" / "hooks" / "no_rm.sh"  # as a Claude Code project keeps it
    guard.parent.mkdir()
    guard.write_text(NO_RM)
    guard.chmod(0o755)
    return folder


def hermes(args: list[str], *, home: Path, cwd: Path, upstream: ScriptedUpstream | None = None):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_", "API_SERVER_"))}
    env.update(HERMES_HOME=str(home), PYTHONPATH=str(REPO), HERMES_SANDBOX="off", HERMES_LSP="false")
    if upstream is not None:
        env.update(HERMES_BASE_URL=upstream.base_url, HERMES_MODEL="scripted-model", HERMES_STREAM_STALE_TIMEOUT="5")
    return subprocess.run(
        [sys.executable, "-m", "hermes", *args], input="", capture_output=True, text=True, env=env, cwd=cwd, timeout=60
    )


def test_config_toml_hooks_in_both_forms(hermes_home: Path) -> None:
    hermes_home.mkdir(parents=True)
    (hermes_home / "config.toml").write_text(CONFIG)
    settings = Settings.load()
    assert [(h.event, h.matcher, h.command, h.timeout) for h in settings.hooks] == [
        ("PreToolUse", "terminal", "python3 log_hook.py", 5.0),
        ("UserPromptSubmit", "", "echo from-config", 60.0),
    ]
    assert settings.hooks_stop_limit == 1 and settings.hooks_claude_compat is False


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ('[[hooks.PreToolUse]]\nmatcher = "(["\ncommand = "x"\n', "not a valid regular expression"),
        ('[[hooks.BeforeEverything]]\ncommand = "x"\n', "unknown event"),
        ('[[hooks.Stop]]\ncommand = ""\n', "command must be a non-empty string"),
        ('[[hooks.Stop]]\ncommand = "x"\ntimeout = -1\n', "timeout must be a positive number"),
        ('[[hooks.Stop]]\ncommand = "x"\nsecret = 1\n', "unknown key(s) secret"),
    ],
)
def test_bad_hook_tables_are_refused_with_one_line(hermes_home: Path, tmp_path: Path, table: str, message: str) -> None:
    hermes_home.mkdir(parents=True)
    (hermes_home / "config.toml").write_text(table)
    with pytest.raises(ConfigError, match=message.replace("(", r"\(").replace(")", r"\)")):
        Settings.load()
    proc = hermes(["hooks", "list"], home=hermes_home, cwd=tmp_path)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert message in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_hooks_list_shows_each_hook_and_where_it_comes_from(hermes_home: Path, project: Path) -> None:
    hermes_home.mkdir(parents=True)
    (hermes_home / "config.toml").write_text(CONFIG)
    proc = hermes(["hooks", "list"], home=hermes_home, cwd=project)
    assert proc.returncode == 0, proc.stderr
    assert "PreToolUse [terminal]  python3 log_hook.py  (timeout 5s;" in proc.stdout
    assert "not read (set hooks_claude_compat = true)" in proc.stdout
    assert "no_rm.sh" not in proc.stdout
    (hermes_home / "config.toml").write_text("hooks_claude_compat = true\n" + CONFIG)
    proc = hermes(["hooks", "list", "--json"], home=hermes_home, cwd=project)
    listed = json.loads(proc.stdout)
    assert listed["claude_compat"] is True and listed["problems"] == []
    sources = [(h["event"], h["matcher"], h["source"]) for h in listed["data"]]
    assert sources == [
        ("PreToolUse", "terminal", "config.toml"),
        ("UserPromptSubmit", "", "config.toml"),
        ("PreToolUse", "Bash", str(project / ".claude" / "settings.json")),
    ]


def test_chat_q_runs_config_and_claude_hooks(hermes_home: Path, project: Path) -> None:
    hermes_home.mkdir(parents=True)
    (hermes_home / "config.toml").write_text("hooks_claude_compat = true\n" + CONFIG)
    with ScriptedUpstream.in_thread() as upstream:
        upstream.enqueue(
            tool_reply([call("terminal", {"command": "rm victim.txt"}, id="t")]),
            text_reply("I could not delete it."),
        )
        proc = hermes(["chat", "-q", "delete victim.txt", "--yolo"], home=hermes_home, cwd=project, upstream=upstream)
        assert proc.returncode == 0, proc.stderr
        first, second = upstream.requests
    assert (project / "victim.txt").exists()
    assert first.messages[-1]["content"].endswith("from-config")  # UserPromptSubmit's context
    tool = [m for m in second.messages if m["role"] == "tool"][-1]
    assert tool["content"] == "Use trash instead of rm: rm victim.txt"
    logged = json.loads((project / "hook.log").read_text().splitlines()[0])
    assert logged["tool_name"] == "terminal" and logged["tool_input"] == {"command": "rm victim.txt"}

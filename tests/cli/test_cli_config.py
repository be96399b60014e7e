"""`hermes config show|get|set|unset|path` against a real HERMES_HOME."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from hermes.config import OPTIONS
from hermes.limits_config import ENV as LIMITS_ENV

SHOWN = [*OPTIONS, *(f"tool_limits.{key}" for key in LIMITS_ENV)]
"""What `config show` lists: the flat settings, then the keys of the [tool_limits] table."""


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_path(invoke, hermes_home):
    result = invoke("config", "path")

    assert (result.exit_code, result.stdout) == (0, f"{hermes_home / 'config.toml'}\n")
    assert not hermes_home.exists()  # printing the path creates nothing


def test_show_lists_every_setting_aligned_with_defaults(invoke, hermes_home):
    lines = invoke("config", "show").stdout.splitlines()

    width = max(len(name) for name in SHOWN)
    assert [line[:width].rstrip() for line in lines] == SHOWN
    assert f"{'home'.ljust(width)}  {hermes_home}" in lines
    assert f"{'stream_retries'.ljust(width)}  2" in lines
    assert f"{'server_port'.ljust(width)}  8642" in lines
    assert f"{'yolo'.ljust(width)}  false" in lines


def test_show_lists_the_configured_prices(invoke, hermes_home):
    hermes_home.mkdir(parents=True, exist_ok=True)
    (hermes_home / "config.toml").write_text(
        '[prices."my-model"]\ninput = 0.8\ncached_input = 0.2\noutput = 3.2\n[prices."gpt-4o"]\ninput = 2\noutput = 8\n'
    )
    mine, gpt = 'prices."my-model"', 'prices."gpt-4o"'
    lines = invoke("config", "show").stdout.splitlines()
    width = max(len(name) for name in [*SHOWN, mine])
    assert lines[-2:] == [
        f"{mine.ljust(width)}  input=0.8 cached_input=0.2 output=3.2",
        f"{gpt.ljust(width)}  input=2 output=8",
    ]
    shown = json.loads(invoke("config", "show", "--json").stdout)
    assert shown[gpt] == "input=2 output=8"
    assert [name for name in shown if name.startswith("prices.")] == [mine, gpt]  # not the built-in table


def test_show_masks_secrets(invoke, monkeypatch):
    monkeypatch.setenv("HERMES_API_KEY", "sk-very-secret-abcd1234")
    monkeypatch.setenv("API_SERVER_KEY", "short")

    text = invoke("config", "show").stdout
    data = json.loads(invoke("config", "show", "--json").stdout)

    assert "very-secret" not in text and "short" not in text
    assert (data["api_key"], data["server_key"]) == ("****1234", "****")
    assert list(data) == SHOWN
    assert invoke("config", "get", "api_key").stdout == "****1234\n"


def test_set_writes_a_private_config_file_in_a_private_home(invoke, hermes_home):
    result = invoke("config", "set", "model", "gpt-test")

    config = hermes_home / "config.toml"
    assert (result.exit_code, result.stdout) == (0, f"model = gpt-test  ({config})\n")
    assert config.read_text() == 'model = "gpt-test"\n'
    assert mode(config) == 0o600
    assert mode(hermes_home) == 0o700
    assert invoke("config", "get", "model").stdout == "gpt-test\n"


def test_set_coerces_and_validates_types(invoke, hermes_home):
    assert invoke("config", "set", "stream_retries", "5").exit_code == 0
    assert invoke("config", "set", "yolo", "yes").exit_code == 0
    assert invoke("config", "set", "stream_stale_timeout", "12.5").exit_code == 0

    bad = invoke("config", "set", "stream_retries", "abc")

    assert bad.exit_code == 2
    assert bad.stdout == ""
    assert bad.stderr == "hermes: invalid value for stream_retries: 'abc' (expected int)\n"
    assert (hermes_home / "config.toml").read_text() == "stream_retries = 5\nstream_stale_timeout = 12.5\nyolo = true\n"
    assert invoke("config", "get", "stream_retries").stdout == "5\n"


def test_set_a_secret_does_not_echo_it(invoke, hermes_home):
    result = invoke("config", "set", "api_key", "sk-secret-value-9999")

    assert result.stdout == f"api_key = ****  ({hermes_home / 'config.toml'})\n"
    assert invoke("config", "get", "api_key").stdout == "****9999\n"


@pytest.mark.parametrize(
    "command", [["set", "nope", "1"], ["get", "nope"], ["unset", "nope"], ["set", "home", "/tmp"]],
)
def test_unknown_setting_is_one_line_exit_2(invoke, command):
    result = invoke("config", *command)

    assert result.exit_code == 2
    assert result.stderr == f"hermes: unknown setting {command[1]!r}; see `hermes config show`\n"


def test_unset_restores_the_default(invoke, hermes_home):
    invoke("config", "set", "server_port", "9000")
    invoke("config", "set", "model", "m")
    assert invoke("config", "get", "server_port").stdout == "9000\n"

    result = invoke("config", "unset", "server_port")

    assert result.stdout == f"server_port removed from {hermes_home / 'config.toml'}\n"
    assert invoke("config", "get", "server_port").stdout == "8642\n"
    assert (hermes_home / "config.toml").read_text() == 'model = "m"\n'


def test_environment_beats_config_file(invoke, monkeypatch):
    invoke("config", "set", "model", "from-file")
    monkeypatch.setenv("HERMES_MODEL", "from-env")

    assert invoke("config", "get", "model").stdout == "from-env\n"


def test_broken_config_file_is_one_line_exit_2(invoke, run_hermes, hermes_home):
    hermes_home.mkdir(mode=0o700)
    (hermes_home / "config.toml").write_text("model = [unterminated\n")

    result = invoke("config", "show")
    proc = run_hermes("config", "show")

    assert result.exit_code == 2
    assert result.stderr.startswith(f"hermes: {hermes_home / 'config.toml'}: invalid TOML (")
    assert result.stderr.count("\n") == 1
    assert (proc.returncode, proc.stdout, proc.stderr) == (2, "", result.stderr)


def test_subprocess_set_bad_value_exit_2(run_hermes, hermes_home):
    proc = run_hermes("config", "set", "server_port", "eighty")

    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr == "hermes: invalid value for server_port: 'eighty' (expected int)\n"
    assert not (hermes_home / "config.toml").exists()


def test_credentials_in_urls_are_masked_everywhere(invoke, monkeypatch, hermes_home):
    url = "https://bob:hunter2@llm.example/v1?api_key=sk-abc&region=eu"
    masked = "https://bob:****@llm.example/v1?api_key=****&region=eu"

    set_result = invoke("config", "set", "base_url", url)
    show = invoke("config", "show").stdout
    shown_json = json.loads(invoke("config", "show", "--json").stdout)
    got = invoke("config", "get", "base_url").stdout

    assert "hunter2" not in set_result.stdout + show + got and "sk-abc" not in show
    assert set_result.stdout == f"base_url = {masked}  ({hermes_home / 'config.toml'})\n"
    assert shown_json["base_url"] == masked
    assert got == f"{masked}\n"
    assert f'base_url = "{url}"' in (hermes_home / "config.toml").read_text()  # stored as given


def test_sandbox_settings(invoke, monkeypatch, hermes_home):
    assert invoke("config", "get", "sandbox").stdout == "auto\n"
    assert invoke("config", "get", "sandbox_network").stdout == "true\n"
    assert invoke("config", "set", "sandbox", "OFF").exit_code == 0
    assert invoke("config", "get", "sandbox").stdout == "off\n"
    monkeypatch.setenv("HERMES_SANDBOX_NETWORK", "no")
    monkeypatch.setenv("HERMES_TOOL_ENV_PASSTHROUGH", "GITHUB_TOKEN, AWS_*")
    assert invoke("config", "get", "sandbox_network").stdout == "false\n"
    assert invoke("config", "get", "tool_env_passthrough").stdout == "GITHUB_TOKEN,AWS_*\n"

    bad = invoke("config", "set", "sandbox", "maybe")

    assert bad.exit_code == 2
    assert bad.stderr == "hermes: invalid value for sandbox: 'maybe' (use auto, on, off)\n"


def test_tool_limits_table_and_environment(invoke, monkeypatch, hermes_home):
    assert invoke("config", "get", "tool_limits.processes").stdout == "512\n"
    assert invoke("config", "get", "tool_limits.memory_mb").stdout == "0\n"
    hermes_home.mkdir(mode=0o700)
    (hermes_home / "config.toml").write_text('model = "m"\n\n[tool_limits]\nprocesses = 64\ncpu_seconds = 30\n')
    monkeypatch.setenv("HERMES_TOOL_CPU_SECONDS", "5")
    monkeypatch.setenv("HERMES_TOOL_MEMORY_MB", "")  # empty: not set

    shown = json.loads(invoke("config", "show", "--json").stdout)
    assert (shown["tool_limits.processes"], shown["tool_limits.memory_mb"], shown["tool_limits.cpu_seconds"]) == (
        "64",
        "0",
        "5",
    )
    # `config set` keeps the table as it is.
    assert invoke("config", "set", "model", "n").exit_code == 0
    assert "[tool_limits]\nprocesses = 64\n" in (hermes_home / "config.toml").read_text()
    assert invoke("config", "get", "tool_limits.processes").stdout == "64\n"

    refused = invoke("config", "set", "tool_limits.processes", "8")
    assert refused.exit_code == 2
    assert "[tool_limits] table of config.toml (processes = N), or with HERMES_TOOL_PROCESSES" in refused.stderr


@pytest.mark.parametrize(
    ("table", "env", "message"),
    [
        ("[tool_limits]\nprocesses = -1\n", {}, "[tool_limits] processes: -1 (a whole number, 0 for no limit)"),
        ("[tool_limits]\nprocesses = true\n", {}, "[tool_limits] processes: True"),
        ("[tool_limits]\nthreads = 4\n", {}, "[tool_limits]: unknown key(s) threads"),
        ("tool_limits = 4\n", {}, "tool_limits must be a table"),
        ("", {"HERMES_TOOL_PROCESSES": "many"}, "invalid value for HERMES_TOOL_PROCESSES: 'many'"),
    ],
)
def test_bad_tool_limits_are_one_line_exit_2(invoke, monkeypatch, hermes_home, table, env, message):
    hermes_home.mkdir(mode=0o700)
    (hermes_home / "config.toml").write_text(table)
    for name, value in env.items():
        monkeypatch.setenv(name, value)

    result = invoke("config", "show")

    assert result.exit_code == 2
    assert message in result.stderr and result.stderr.count("\n") == 1


def test_prices_are_set_and_removed_with_config_set(invoke, hermes_home):
    hermes_home.mkdir(parents=True, exist_ok=True)
    config = hermes_home / "config.toml"
    config.write_text(
        'model = "m"\n\n[mcp_servers.files]\ncommand = "srv"\n\n[prices."gpt-4.1"]\ninput = 1\noutput = 2\n'
    )
    # A model hermes knows no price for needs input and output in one command.
    lone = invoke("config", "set", "prices.my-model.input", "3.0")
    assert lone.exit_code == 2 and "give input and output together" in lone.stderr
    both = invoke("config", "set", "prices.my-model.input", "3.0", "prices.my-model.output", "15")
    assert both.exit_code == 0, both.stderr
    assert json.loads(invoke("config", "show", "--json").stdout)['prices."my-model"'] == "input=3 output=15"
    # A dotted model name: the field is after the last dot; its other fields are kept.
    assert invoke("config", "set", "prices.gpt-4.1.input", "2.5").exit_code == 0
    shown = json.loads(invoke("config", "show", "--json").stdout)
    assert shown['prices."gpt-4.1"'] == "input=2.5 output=2"
    text = config.read_text()
    assert 'model = "m"' in text and '[mcp_servers.files]\ncommand = "srv"' in text  # the rest kept
    assert text.count('[prices."gpt-4.1"]') == 1
    assert mode(config) == 0o600
    bad = invoke("config", "set", "prices.my-model.output", "-1")
    assert bad.exit_code == 2 and "0 or more" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    assert invoke("config", "set", "prices.my-model.bogus", "1").exit_code == 2
    assert invoke("config", "unset", "prices.my-model.cached_input").exit_code == 0
    assert json.loads(invoke("config", "show", "--json").stdout)['prices."my-model"'] == "input=3 output=15"


def test_a_negative_number_is_a_value_not_an_option(invoke, hermes_home):
    result = invoke("config", "set", "max_iterations", "-3")
    assert result.exit_code == 0, result.stderr  # read as the value (what it means is config's rules)
    assert "max_iterations = -3" in (hermes_home / "config.toml").read_text()
    refused = invoke("config", "set", "stream_retries", "-2.5")
    assert refused.exit_code == 2 and "No such option" not in refused.stderr and "stream_retries" in refused.stderr
    assert invoke("config", "set", "stream_retries", "3").exit_code == 0
    odd = invoke("config", "set", "stream_retries", "3", "model")
    assert odd.exit_code == 2 and "pairs" in odd.stderr

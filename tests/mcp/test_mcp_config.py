"""`[mcp_servers.NAME]` parsing, and `hermes mcp add/remove` editing config.toml."""

from __future__ import annotations

import stat
import tomllib
from pathlib import Path

import pytest
from mcp_harness import run_hermes

from hermes.config import Settings, write_config_value
from hermes.errors import ConfigError
from hermes.mcp_config import (
    McpServerConfig,
    add_server_text,
    parse_servers,
    remove_server_text,
)


def parse(text: str) -> tuple[McpServerConfig, ...]:
    return parse_servers(tomllib.loads(text)["mcp_servers"], "config.toml")


def test_entries_parse_into_typed_configs_with_defaults() -> None:
    stdio, http = parse(
        """
        [mcp_servers.files]
        command = "npx"
        args = ["-y", "server"]
        env = { TOKEN = "t" }
        cwd = "/srv"
        [mcp_servers.web]
        url = "https://example.test/mcp"
        headers = { Authorization = "Bearer k" }
        approval = "ask"
        tool_timeout = 5
        enabled = false
        """
    )
    assert stdio == McpServerConfig(name="files", command="npx", args=("-y", "server"), env={"TOKEN": "t"}, cwd=Path("/srv"))
    assert stdio.transport == "stdio" and stdio.startup_timeout == 10 and stdio.tool_timeout == 60
    assert stdio.approval == "auto" and stdio.enabled
    assert http.transport == "http" and http.headers == {"Authorization": "Bearer k"}
    assert http.approval == "ask" and http.tool_timeout == 5.0 and not http.enabled


@pytest.mark.parametrize(
    ("body", "fragment"),
    [
        ('command = "x"\nurl = "http://a"', "either command (stdio) or url"),
        ("enabled = true", "either command (stdio) or url"),
        ('command = "x"\nargs = "not a list"', "args must be a list of strings"),
        ('command = "x"\napproval = "never"', 'approval must be "auto" or "ask"'),
        ('command = "x"\ntool_timeout = 0', "tool_timeout must be a number of seconds above 0"),
        ('command = "x"\ncolour = "red"', "unknown key(s) colour"),
        ('url = "ftp://a"', "url must start with http:// or https://"),
        ('url = "http://a"\nenv = { A = "b" }', "env is for command servers"),
        ('command = "x"\nenv = { A = 1 }', "env must be a table of strings"),
    ],
)
def test_bad_entries_are_one_line_errors_naming_the_entry(body: str, fragment: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse(f"[mcp_servers.bad]\n{body}\n")
    message = str(caught.value)
    assert "[mcp_servers.bad]" in message and fragment in message and "\n" not in message


def test_bad_server_name_is_rejected() -> None:
    with pytest.raises(ConfigError, match="invalid MCP server name"):
        parse('[mcp_servers."a b"]\ncommand = "x"\n')
    with pytest.raises(ConfigError, match="invalid MCP server name"):
        parse('[mcp_servers.a__b]\ncommand = "x"\n')


def test_settings_load_reads_the_tables(hermes_home: Path) -> None:
    hermes_home.mkdir()
    (hermes_home / "config.toml").write_text('model = "m"\n\n[mcp_servers.x]\ncommand = "srv"\n')
    settings = Settings.load()
    assert settings.model == "m"
    assert [s.name for s in settings.mcp_servers] == ["x"]


def test_a_broken_entry_makes_commands_fail_with_one_line(hermes_home: Path) -> None:
    hermes_home.mkdir()
    (hermes_home / "config.toml").write_text('[mcp_servers.x]\nargs = ["a"]\n')
    proc = run_hermes("mcp", "list", home=hermes_home)
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "[mcp_servers.x]" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_add_and_remove_keep_other_content(hermes_home: Path) -> None:
    hermes_home.mkdir(mode=0o700)
    config = hermes_home / "config.toml"
    original = '# my settings\nmodel = "m"\n\n[mcp_servers.keep]  # the one I use\ncommand = "keep-me"\nenv = { A = "1" }\n'
    config.write_text(original)
    config.chmod(0o600)

    added = run_hermes("mcp", "add", "files", "--env", "ROOT=/srv", "--", "npx", "-y", "@x/server", "--flag", home=hermes_home)
    assert added.returncode == 0, added.stderr
    web = run_hermes("mcp", "add", "web", "--url", "http://127.0.0.1:9/mcp", "--header", "Authorization=Bearer k", "--approval", "ask", home=hermes_home)
    assert web.returncode == 0, web.stderr
    text = config.read_text()
    assert text.startswith(original)
    servers = {s.name: s for s in parse_servers(tomllib.loads(text)["mcp_servers"], "x")}
    assert servers["files"].command == "npx" and servers["files"].args == ("-y", "@x/server", "--flag")
    assert servers["files"].env == {"ROOT": "/srv"}
    assert servers["web"].url == "http://127.0.0.1:9/mcp" and servers["web"].headers == {"Authorization": "Bearer k"}
    assert servers["web"].approval == "ask"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600

    removed = run_hermes("mcp", "remove", "files", home=hermes_home)
    assert removed.returncode == 0, removed.stderr
    text = config.read_text()
    assert text.startswith(original) and "files" not in text and "[mcp_servers.web]" in text
    assert stat.S_IMODE(config.stat().st_mode) == 0o600

    again = run_hermes("mcp", "remove", "files", home=hermes_home)
    assert again.returncode == 2 and "no MCP server named 'files'" in again.stderr
    duplicate = run_hermes("mcp", "add", "keep", "--", "other", home=hermes_home)
    assert duplicate.returncode == 2 and "already exists" in duplicate.stderr
    assert config.read_text().count("[mcp_servers.keep]") == 1


def test_add_creates_config_with_mode_0600(hermes_home: Path) -> None:
    proc = run_hermes("mcp", "add", "x", "--", "srv", home=hermes_home)
    assert proc.returncode == 0, proc.stderr
    config = hermes_home / "config.toml"
    assert stat.S_IMODE(config.stat().st_mode) == 0o600
    assert tomllib.loads(config.read_text())["mcp_servers"]["x"] == {"command": "srv", "args": []}


@pytest.mark.parametrize(
    ("args", "fragment"),
    [
        (["x"], "give either a command"),
        (["x", "--url", "http://a/mcp", "--", "cmd"], "give either a command"),
        (["x", "--header", "A=b", "--", "cmd"], "--header is for --url servers"),
        (["x", "--url", "http://a/mcp", "--header", "novalue"], "--header takes KEY=VALUE"),
        (["bad name", "--", "cmd"], "invalid MCP server name"),
    ],
)
def test_add_refuses_bad_input_in_one_line(hermes_home: Path, args: list[str], fragment: str) -> None:
    proc = run_hermes("mcp", "add", *args, home=hermes_home)
    assert proc.returncode == 2
    assert fragment in proc.stderr and proc.stderr.count("\n") == 1
    assert not (hermes_home / "config.toml").exists()


def test_config_set_keeps_mcp_tables(hermes_home: Path) -> None:
    settings = Settings.load()
    settings.ensure_home()
    settings.config_path.write_text('model = "a"\n\n[mcp_servers.x]\ncommand = "srv"\nargs = ["-v"]\n')
    write_config_value(settings, "model", "b")
    data = tomllib.loads(settings.config_path.read_text())
    assert data["model"] == "b"
    assert data["mcp_servers"]["x"] == {"command": "srv", "args": ["-v"]}


def test_remove_takes_sub_tables_along() -> None:
    text = 'model = "m"\n[mcp_servers.x]\ncommand = "a"\n[mcp_servers.x.env]\nA = "1"\n[mcp_servers.y]\ncommand = "b"\n'
    left = remove_server_text(text, "x")
    assert tomllib.loads(left) == {"model": "m", "mcp_servers": {"y": {"command": "b"}}}


def test_added_text_round_trips_awkward_values() -> None:
    server = McpServerConfig(name="q", command='C:\\tools\\"srv".exe', args=("a b", "--x=\"1\""), env={"K-1": "v\nw"})
    text = add_server_text("", server)
    (parsed,) = parse_servers(tomllib.loads(text)["mcp_servers"], "x")
    assert parsed == server

"""`[mcp_servers.NAME]` tables of config.toml: typed entries, one-line errors, text edits.

    [mcp_servers.files]                 # stdio: hermes starts the command
    command = "npx"
    args = ["-y", "@modelcontextprotocol/server-filesystem", "."]
    env = { DEBUG = "1" }
    cwd = "~/src"

    [mcp_servers.search]                # streamable HTTP
    url = "http://127.0.0.1:8000/mcp"
    headers = { Authorization = "Bearer …" }
    approval = "ask"                    # ask before each call (default "auto": run)

Every entry also takes `enabled` (true), `startup_timeout` (10 s) and `tool_timeout` (60 s).

`hermes mcp add/remove` edit the file as text so comments and other settings stay as they
are: an entry is the block from its `[mcp_servers.NAME]` header (or a `[mcp_servers.NAME.…]`
sub-table) to the next table header. Every edit is parsed back before it is written.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from hermes.errors import ConfigError

TABLE = "mcp_servers"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,39}$")
"""Server names are bare TOML keys; "__" is reserved as the tool-name separator."""
DEFAULT_STARTUP_TIMEOUT = 10.0
DEFAULT_TOOL_TIMEOUT = 60.0

Approval = Literal["auto", "ask"]
_KEYS = frozenset(
    {"command", "args", "env", "cwd", "url", "headers", "enabled", "startup_timeout", "tool_timeout", "approval"}
)


@dataclass(frozen=True, slots=True)
class McpServerConfig:
    """One configured MCP server. Exactly one of `command` (stdio) and `url` (HTTP) is set."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    """Added to the small default environment the SDK passes to stdio servers."""
    cwd: Path | None = None
    url: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    enabled: bool = True
    startup_timeout: float = DEFAULT_STARTUP_TIMEOUT
    """Seconds to spawn or reach the server, initialise and list its tools."""
    tool_timeout: float = DEFAULT_TOOL_TIMEOUT
    """Seconds one tool call may take."""
    approval: Approval = "auto"
    """"ask" puts every call under the approval policy; "auto" runs calls without asking."""

    @property
    def transport(self) -> Literal["stdio", "http"]:
        return "stdio" if self.command is not None else "http"

    @property
    def target(self) -> str:
        """The command line or URL, for listings."""
        if self.command is not None:
            return " ".join([self.command, *self.args])
        return self.url or ""


def check_name(name: str) -> str:
    if not NAME_PATTERN.match(name) or "__" in name:
        raise ConfigError(
            f"invalid MCP server name {name!r}: use up to 40 letters, digits, '-' and '_' (no '__'), "
            "starting with a letter or digit"
        )
    return name


def parse_servers(raw: object, where: str) -> tuple[McpServerConfig, ...]:
    """The `mcp_servers` table of config.toml as typed entries; ConfigError names the bad entry."""
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: {TABLE} must be a table of [{TABLE}.NAME] entries")
    return tuple(parse_server(str(name), entry, where) for name, entry in raw.items())


def parse_server(name: str, entry: object, where: str) -> McpServerConfig:
    label = f"{where}: [{TABLE}.{name}]"
    try:
        check_name(name)
    except ConfigError as exc:
        raise ConfigError(f"{label}: {exc}") from None
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{label} must be a table")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise ConfigError(f"{label}: unknown key(s) {', '.join(unknown)}")
    command, url = entry.get("command"), entry.get("url")
    if (command is None) == (url is None):
        raise ConfigError(f"{label}: set either command (stdio) or url (streamable HTTP)")
    if command is not None:
        for key in ("url", "headers"):
            if key in entry:
                raise ConfigError(f"{label}: {key} is for url servers, not command ones")
    else:
        for key in ("args", "env", "cwd"):
            if key in entry:
                raise ConfigError(f"{label}: {key} is for command servers, not url ones")
    approval = entry.get("approval", "auto")
    if approval not in ("auto", "ask"):
        raise ConfigError(f"{label}: approval must be \"auto\" or \"ask\", not {approval!r}")
    cwd = entry.get("cwd")
    return McpServerConfig(
        name=name,
        command=_text(label, "command", command) if command is not None else None,
        args=tuple(_strings(label, "args", entry.get("args", []))),
        env=_table(label, "env", entry.get("env", {})),
        cwd=Path(_text(label, "cwd", cwd)).expanduser() if cwd is not None else None,
        url=_url(label, url) if url is not None else None,
        headers=_table(label, "headers", entry.get("headers", {})),
        enabled=_bool(label, "enabled", entry.get("enabled", True)),
        startup_timeout=_seconds(label, "startup_timeout", entry.get("startup_timeout", DEFAULT_STARTUP_TIMEOUT)),
        tool_timeout=_seconds(label, "tool_timeout", entry.get("tool_timeout", DEFAULT_TOOL_TIMEOUT)),
        approval=approval,
    )


def _text(label: str, key: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{label}: {key} must be a non-empty string")
    return value


def _url(label: str, value: object) -> str:
    url = _text(label, "url", value)
    if not url.startswith(("http://", "https://")):
        raise ConfigError(f"{label}: url must start with http:// or https://, not {url!r}")
    return url


def _strings(label: str, key: str, value: object) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{label}: {key} must be a list of strings")
    return list(value)


def _table(label: str, key: str, value: object) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(isinstance(v, str) for v in value.values()):
        raise ConfigError(f"{label}: {key} must be a table of strings, e.g. {key} = {{ NAME = \"value\" }}")
    return {str(k): v for k, v in value.items()}


def _bool(label: str, key: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{label}: {key} must be true or false")
    return value


def _seconds(label: str, key: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 86_400:
        raise ConfigError(f"{label}: {key} must be a number of seconds above 0")
    return float(value)


# ---- editing config.toml as text ------------------------------------------------------

_HEADER = re.compile(r"^\s*\[\[?\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")


def _header_key(line: str) -> str | None:
    match = _HEADER.match(line)
    return match.group(1).replace(" ", "") if match else None


def _toml_string(value: str) -> str:
    escaped = value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    return f'"{escaped}"'


def _inline_table(values: Mapping[str, str]) -> str:
    return "{ " + ", ".join(f"{_toml_string(k)} = {_toml_string(v)}" for k, v in values.items()) + " }"


def render_server(server: McpServerConfig) -> str:
    """The `[mcp_servers.NAME]` block for `server` (defaults left out)."""
    lines = [f"[{TABLE}.{server.name}]"]
    if server.command is not None:
        lines.append(f"command = {_toml_string(server.command)}")
        lines.append("args = [" + ", ".join(_toml_string(a) for a in server.args) + "]")
        if server.env:
            lines.append(f"env = {_inline_table(server.env)}")
        if server.cwd is not None:
            lines.append(f"cwd = {_toml_string(str(server.cwd))}")
    else:
        assert server.url is not None
        lines.append(f"url = {_toml_string(server.url)}")
        if server.headers:
            lines.append(f"headers = {_inline_table(server.headers)}")
    if not server.enabled:
        lines.append("enabled = false")
    if server.startup_timeout != DEFAULT_STARTUP_TIMEOUT:
        lines.append(f"startup_timeout = {server.startup_timeout:g}")
    if server.tool_timeout != DEFAULT_TOOL_TIMEOUT:
        lines.append(f"tool_timeout = {server.tool_timeout:g}")
    if server.approval != "auto":
        lines.append(f'approval = "{server.approval}"')
    return "\n".join(lines) + "\n"


def _servers_in(text: str) -> dict[str, Any]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config.toml is not valid TOML ({exc})") from None
    table = data.get(TABLE, {})
    return dict(table) if isinstance(table, Mapping) else {}


def add_server_text(text: str, server: McpServerConfig) -> str:
    """`text` with `server`'s block appended; ConfigError if the name is taken."""
    if server.name in _servers_in(text):
        raise ConfigError(
            f"an MCP server named {server.name!r} already exists (remove it first: hermes mcp remove {server.name})"
        )
    body = text if not text or text.endswith("\n") else text + "\n"
    new = body + ("\n" if body.strip() else "") + render_server(server)
    _servers_in(new)  # the result must still parse
    return new


def remove_server_text(text: str, name: str) -> str:
    """`text` without the block(s) of server `name`; ConfigError if there is none."""
    if name not in _servers_in(text):
        raise ConfigError(f"no MCP server named {name!r} in config.toml (see hermes mcp list)")
    own = {f"{TABLE}.{name}", f'{TABLE}."{name}"'}
    kept: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        key = _header_key(line)
        if key is not None:
            skipping = key in own or any(key.startswith(prefix + ".") for prefix in own)
        if not skipping:
            kept.append(line)
    new = re.sub(r"\n{3,}", "\n\n", "".join(kept))
    if name in _servers_in(new):
        raise ConfigError(
            f"cannot remove {name!r}: it is not written as a [{TABLE}.{name}] table (edit config.toml by hand)"
        )
    return new

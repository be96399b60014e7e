"""Settings, resolved once: command-line flag > environment > config.toml > default.

`Settings.load(overrides)` is called by the front end (the Typer callback, the app
factories in tests) and the resulting object is passed down; nothing reads the
environment at import time, and no module caches `HERMES_HOME`.

Keys in `$HERMES_HOME/config.toml` are the field names below (flat, e.g.
`model = "gpt-4o-mini"`, `server_port = 8642`), plus five tables: `[mcp_servers.NAME]`
(hermes/mcp_config.py), `[tool_limits]` (hermes/limits_config.py, whose keys the
environment overrides one by one), `[prices."MODEL"]` (hermes/pricing.py),
`[providers.NAME]` (hermes/providers_config.py) and `[web_search]` (hermes/web_search_config.py).
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from hermes.errors import ConfigError
from hermes.hooks_config import TABLE as HOOKS_TABLE
from hermes.hooks_config import HookConfig, parse_hooks
from hermes.limits_config import ENV as LIMITS_ENV
from hermes.limits_config import TABLE as LIMITS_TABLE
from hermes.limits_config import ToolLimits, parse_table, resolve_limits
from hermes.lsp_config import TABLE as LSP_KEY
from hermes.lsp_config import parse_lsp
from hermes.mcp_config import TABLE as MCP_TABLE
from hermes.mcp_config import McpServerConfig, parse_servers
from hermes.pricing import TABLE as PRICES_TABLE
from hermes.pricing import PriceTable, parse_prices
from hermes.providers_config import TABLE as PROVIDERS_TABLE
from hermes.providers_config import ProviderConfig, parse_providers
from hermes.redact import redact_text
from hermes.web_search_config import TABLE as WEB_SEARCH_TABLE
from hermes.web_search_config import WebSearchConfig, parse_web_search

CONFIG_FILE = "config.toml"


@dataclass(frozen=True)
class Option:
    """How one setting is found: its environment names (first wins) and help text."""

    env: tuple[str, ...]
    help: str
    secret: bool = False


# Field name -> where it comes from. Order is the order `hermes config show` prints.
OPTIONS: dict[str, Option] = {
    "home": Option(("HERMES_HOME",), "folder for config.toml, state.db and caches"),
    "provider": Option(("HERMES_PROVIDER",), "model provider: auto, openai or local"),
    "model": Option(("HERMES_MODEL",), "model name sent to the endpoint"),
    "base_url": Option(("HERMES_BASE_URL", "OPENAI_BASE_URL"), "OpenAI-compatible endpoint URL"),
    "api_key": Option(("HERMES_API_KEY", "OPENAI_API_KEY"), "key for the endpoint", secret=True),
    "stream_retries": Option(("HERMES_STREAM_RETRIES",), "retries of a failed stream before any output"),
    "stream_stale_timeout": Option(
        ("HERMES_STREAM_STALE_TIMEOUT",), "seconds without a chunk before a stream is abandoned"
    ),
    "request_timeout": Option(("HERMES_REQUEST_TIMEOUT",), "seconds to connect to the endpoint"),
    "max_iterations": Option(("HERMES_MAX_ITERATIONS",), "model calls per turn before a summary is forced"),
    "tool_output_limit": Option(("HERMES_TOOL_OUTPUT_LIMIT",), "characters of tool output the model sees"),
    "tool_stall_warning": Option(("HERMES_TOOL_STALL_WARNING",), "seconds before a running tool is reported as slow"),
    "notify": Option(("HERMES_NOTIFY",), "TUI signal when a long turn ends or an approval waits: bell, osc, off"),
    "notify_after": Option(("HERMES_NOTIFY_AFTER",), "TUI: seconds a turn must have run before it notifies"),
    "approval_timeout": Option(
        ("HERMES_APPROVAL_TIMEOUT",), "seconds an approval question waits before it is denied (TUI and chat -q)"
    ),
    "context_window": Option(
        ("HERMES_CONTEXT_WINDOW",), "tokens the model can read (default: known for the model, else 128000)"
    ),
    "compact_at": Option(("HERMES_COMPACT_AT",), "share of context_window at which older messages are summarised"),
    "system_prompt": Option(("HERMES_SYSTEM_PROMPT",), "replaces the built-in system prompt"),
    "instructions_max_bytes": Option(
        ("HERMES_INSTRUCTIONS_MAX_BYTES",), "cap on the AGENTS.md text added to the system prompt (0: none)"
    ),
    "tool_protocol": Option(("HERMES_TOOL_PROTOCOL",), "native tool calls, or json actions for small models"),
    "small_model_assist": Option(
        ("HERMES_SMALL_MODEL_ASSIST",), "with JSON actions: steps read from what a request means (checks, re-reads)"
    ),
    "yolo": Option(("HERMES_YOLO",), "approve every command that is not hard-blocked"),
    "local_model_path": Option(("HERMES_LOCAL_MODEL_PATH",), "GGUF file for the local provider"),
    "model_cache": Option(
        ("HERMES_MODEL_CACHE",), "per-user folder of the assembled bundled model (default ~/.cache/hermes/models)"
    ),
    "sandbox": Option(("HERMES_SANDBOX",), "run tools in bubblewrap: auto, on or off"),
    "sandbox_network": Option(("HERMES_SANDBOX_NETWORK",), "network inside the sandbox (false cuts it off)"),
    "writable_roots": Option(
        ("HERMES_WRITABLE_ROOTS",), "comma-separated folders tools may change besides the working directory"
    ),
    "tool_env_passthrough": Option(
        ("HERMES_TOOL_ENV_PASSTHROUGH",), "comma-separated variable names (globs) tools get besides PATH, HOME, LANG, …"
    ),
    "checkpoints": Option(("HERMES_CHECKPOINTS",), "snapshot files around turns that change them (undo, diff)"),
    "checkpoint_max_file_kb": Option(
        ("HERMES_CHECKPOINT_MAX_FILE_KB",), "files larger than this (KB) are left out of checkpoints (0: no cap)"
    ),
    "checkpoint_max_files": Option(
        ("HERMES_CHECKPOINT_MAX_FILES",), "a folder with more files than this gets no checkpoints (0: no cap)"
    ),
    "checkpoint_timeout": Option(
        ("HERMES_CHECKPOINT_TIMEOUT",), "seconds a checkpoint may take before it is left out (0: no cap)"
    ),
    "max_diff_bytes": Option(
        ("HERMES_MAX_DIFF_BYTES",), "bytes of a turn's diff shown (sessions diff, /diff, the API); the rest is cut"
    ),
    "database_url": Option(
        ("HERMES_DATABASE_URL",), "postgresql:// URL shared by every instance (empty: SQLite files in home)"
    ),
    "instance_lease_ttl": Option(
        ("HERMES_INSTANCE_LEASE_TTL",),
        "seconds an instance's lease lasts without a heartbeat (PostgreSQL; beats every ttl/3)",
    ),
    "server_url": Option(
        ("HERMES_SERVER_URL",), "a hermes serve URL that chat and sessions drive instead of this machine"
    ),
    "server_host": Option(("API_SERVER_HOST",), "address hermes serve binds"),
    "server_port": Option(("API_SERVER_PORT",), "port hermes serve binds"),
    "server_key": Option(("API_SERVER_KEY",), "bearer key clients of hermes serve must send", secret=True),
    "server_cors_origins": Option(("API_SERVER_CORS_ORIGINS",), "comma-separated browser origins allowed"),
    "server_model_name": Option(("API_SERVER_MODEL_NAME",), "model id hermes serve advertises"),
    "server_tool_progress_events": Option(("API_SERVER_TOOL_PROGRESS_EVENTS",), "auto, true or false"),
    "server_keepalive_seconds": Option(("API_SERVER_KEEPALIVE_SECONDS",), "seconds of SSE silence before a keepalive"),
    "server_max_concurrent_runs": Option(("API_SERVER_MAX_CONCURRENT_RUNS",), "turns the server runs at once"),
    "server_response_store_size": Option(("API_SERVER_RESPONSE_STORE_SIZE",), "stored responses kept (LRU)"),
    "server_header_timeout": Option(("API_SERVER_HEADER_TIMEOUT",), "seconds a client has to send a request's headers"),
    "server_body_timeout": Option(("API_SERVER_BODY_TIMEOUT",), "seconds a request body may stall between reads"),
    "server_max_connections": Option(("API_SERVER_MAX_CONNECTIONS",), "open client connections; more are refused"),
    "server_max_connections_per_client": Option(
        ("API_SERVER_MAX_CONNECTIONS_PER_CLIENT",),
        "open connections from one client address (IPv6: one /64); more are refused (0: no cap)",
    ),
    "server_first_byte_timeout": Option(
        ("API_SERVER_FIRST_BYTE_TIMEOUT",), "seconds a new connection may stay silent before it is closed"
    ),
    "fallback": Option(
        ("HERMES_FALLBACK",),
        "models (NAME/MODEL, comma-separated) a turn goes on with when its model fails with a server error",
    ),
    "lsp": Option(("HERMES_LSP",), "diagnostics from language servers after edits (true or false)"),
    "lsp_timeout": Option(("HERMES_LSP_TIMEOUT",), "seconds an edit waits at most for its diagnostics"),
    "hooks_claude_compat": Option(
        ("HERMES_HOOKS_CLAUDE_COMPAT",), "also run the hooks of the project's .claude/settings.json (true or false)"
    ),
    "hooks_stop_limit": Option(
        ("HERMES_HOOKS_STOP_LIMIT",), "times a Stop hook may make one turn go on (0: Stop hooks never continue it)"
    ),
    "memory": Option(("HERMES_MEMORY",), "memory across sessions: the memory tool and its prompt section"),
    "server_memory": Option(("HERMES_SERVER_MEMORY",), "hermes serve's sessions use memory too (when memory is on)"),
    "memory_max_chars": Option(("HERMES_MEMORY_MAX_CHARS",), "characters memories/MEMORY.md may hold"),
    "user_memory_max_chars": Option(("HERMES_USER_MEMORY_MAX_CHARS",), "characters memories/USER.md may hold"),
    "subagent_depth": Option(
        ("HERMES_SUBAGENT_DEPTH",), "how deep subagents may nest (0: no task tool; 1: a child has none)"
    ),
    "subagent_concurrency": Option(("HERMES_SUBAGENT_CONCURRENCY",), "task calls of one turn that run at once"),
    "web_allow": Option(
        ("HERMES_WEB_ALLOW",),
        "domains web_fetch reads without asking (comma-separated; example.com covers its subdomains; * any)",
    ),
    "web_allow_private": Option(
        ("HERMES_WEB_ALLOW_PRIVATE",), "let web_fetch reach private, loopback and link-local addresses"
    ),
    "web_fetch_max_kb": Option(("HERMES_WEB_FETCH_MAX_KB",), "KB of a page web_fetch reads at most"),
    "web_fetch_timeout": Option(("HERMES_WEB_FETCH_TIMEOUT",), "seconds a web_fetch or web_search may take"),
}


def default_home(user_home: Path | None = None) -> Path:
    """~/.hermes: hermes's home when HERMES_HOME is not set (of `user_home`, default the user's)."""
    return (user_home or Path.home()) / ".hermes"


def home_from_environment(env: Mapping[str, str]) -> Path:
    """$HERMES_HOME when set and not empty (`~` expanded), else ~/.hermes."""
    value = env.get("HERMES_HOME")
    return Path(value).expanduser() if value else default_home()


def default_model_cache(env: Mapping[str, str] | None = None) -> Path:
    """`HERMES_MODEL_CACHE`, else `$XDG_CACHE_HOME/hermes/models`, else `~/.cache/hermes/models`."""
    env = os.environ if env is None else env
    if env.get("HERMES_MODEL_CACHE"):
        return Path(env["HERMES_MODEL_CACHE"]).expanduser()
    xdg = env.get("XDG_CACHE_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".cache"  # XDG: a relative one is invalid
    return base / "hermes" / "models"


@dataclass(frozen=True)
class Settings:
    """Everything configurable, after precedence has been applied."""

    home: Path = field(default_factory=default_home)
    provider: str = "auto"
    model: str | None = None
    base_url: str | None = None
    api_key: str | None = None
    stream_retries: int = 2
    stream_stale_timeout: float = 180.0
    request_timeout: float = 30.0
    max_iterations: int = 90
    tool_output_limit: int = 50_000
    tool_stall_warning: float = 30.0
    notify: str = "bell"
    """The TUI's signal when a turn that ran `notify_after` seconds ends or waits for an
    approval: the terminal bell, an OSC 9 desktop notification, or nothing."""
    notify_after: float = 10.0
    approval_timeout: float = 120.0
    context_window: int | None = None
    """None: the local model's n_ctx, else the known window of the model, else 128k."""
    compact_at: float = 0.8
    system_prompt: str | None = None
    instructions_max_bytes: int = 32 * 1024
    tool_protocol: str = "native"
    small_model_assist: bool = True
    """With JSON actions (the local model, tool_protocol = json): the adapter's own steps
    (hermes/agent/providers/action_steering.py, own_steps.py); false leaves only the protocol."""
    yolo: bool = False
    local_model_path: Path | None = None
    model_cache: Path = field(default_factory=lambda: default_model_cache())
    """The bundled model, assembled once per user and shared by every home (see local_model)."""
    sandbox: str = "auto"
    sandbox_network: bool = True
    writable_roots: tuple[str, ...] = ()
    """Folders tools may change besides each turn's working directory (and the private tmp)."""
    tool_env_passthrough: tuple[str, ...] = ()
    checkpoints: bool = True
    """Snapshot the working tree around turns that change files (hermes/checkpoints)."""
    checkpoint_max_file_kb: int = 1024
    checkpoint_max_files: int = 20_000
    """A snapshot that lists more files is left out (the turn goes on, with a notice)."""
    checkpoint_timeout: float = 10.0
    """A snapshot that takes longer is stopped and left out (the turn goes on, with a notice)."""
    max_diff_bytes: int = 5 * 1024 * 1024
    """The most bytes of one turn's patch read from git and shown (the rest is cut, and said)."""
    database_url: str | None = None
    """PostgreSQL URL of the shared database; None keeps the SQLite files in `home`."""
    instance_lease_ttl: float = 30.0
    """On PostgreSQL: an instance whose lease is this many seconds old is gone (its turns
    and runs get repaired by another instance)."""
    server_url: str | None = None
    """`hermes chat` and `hermes sessions` drive this `hermes serve` (with `server_key` as
    the bearer key) instead of opening the local runtime; None: local."""
    server_host: str = "127.0.0.1"
    server_port: int = 8642
    server_key: str | None = None
    server_cors_origins: tuple[str, ...] = ()
    server_model_name: str = "hermes-agent"
    server_tool_progress_events: str = "auto"
    server_keepalive_seconds: float = 10.0
    server_max_concurrent_runs: int = 256
    """Turns one server process runs at once; one more is refused with 429 and Retry-After
    (sized so a burst of 100 streams on one process is served). 0: no cap."""
    server_response_store_size: int = 1000
    server_header_timeout: float = 30.0
    server_body_timeout: float = 30.0
    server_max_connections: int = 4096
    server_max_connections_per_client: int = 256
    """Open connections from one client address (an IPv6 client: its /64); 0: no cap."""
    server_first_byte_timeout: float = 10.0
    """Seconds a new connection may send nothing before it is closed (0: only header_timeout)."""
    mcp_servers: tuple[McpServerConfig, ...] = ()
    """The `[mcp_servers.NAME]` tables of config.toml (no environment form)."""
    tool_limits: ToolLimits = field(default_factory=ToolLimits)
    """The `[tool_limits]` table of config.toml, each key overridden by its environment variable."""
    prices: PriceTable = field(default_factory=PriceTable)
    """The built-in model prices overlaid with config.toml's `[prices."MODEL"]` tables."""
    providers: tuple[ProviderConfig, ...] = ()
    """The `[providers.NAME]` tables of config.toml (hermes/providers_config.py)."""
    fallback: tuple[str, ...] = ()
    """Models a turn goes on with, in order, when its model fails after its retries with a
    server error, a timeout or a refused connection."""
    lsp: bool = True
    """After write_file and patch, ask the file's language server what the edit broke (hermes/agent/lsp)."""
    lsp_servers: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """The `[lsp.LANGUAGE] command = [...]` tables: (language, command) pairs."""
    lsp_timeout: float = 5.0
    hooks: tuple[HookConfig, ...] = ()
    """The `[[hooks.EVENT]]` tables of config.toml (hermes/hooks_config.py)."""
    hooks_claude_compat: bool = False
    """Also run the hooks of the working folder's `.claude/settings.json` (and settings.local.json)."""
    hooks_stop_limit: int = 3
    memory: bool = True
    """The `memory` tool and the "# Memory" section of new sessions' prompts ($HERMES_HOME/memories/)."""
    server_memory: bool = True
    """With `memory`: `hermes serve`'s sessions use it too (false: the server neither reads nor writes it)."""
    memory_max_chars: int = 4000
    user_memory_max_chars: int = 2000
    subagent_depth: int = 1
    """How deep `task` calls nest (hermes/agent/subagents): 0 offers no `task` tool, 1 gives children none."""
    subagent_concurrency: int = 3
    """The `task` calls of one turn that run at once; more wait for a free slot."""
    web_allow: tuple[str, ...] = ()
    """Domains `web_fetch` reads without asking; any other domain asks (refused with nobody to ask)."""
    web_allow_private: bool = False
    web_fetch_max_kb: int = 200
    web_fetch_timeout: float = 30.0
    web_search: WebSearchConfig | None = None
    """The `[web_search]` table; None: no `web_search` tool."""

    # ---- resolution -------------------------------------------------------------

    @classmethod
    def load(
        cls,
        overrides: Mapping[str, Any] | None = None,
        env: Mapping[str, str] | None = None,
    ) -> Settings:
        """Resolve settings: overrides (flags) > env > config.toml > defaults.

        `None` values in `overrides` mean "flag not given".
        """
        env = os.environ if env is None else env
        flags = {k: v for k, v in (overrides or {}).items() if v is not None}
        unknown = set(flags) - set(OPTIONS)
        if unknown:
            raise ConfigError(f"unknown setting(s): {', '.join(sorted(unknown))}")

        if "home" in flags:
            home = Path(flags["home"]).expanduser()
        else:
            home = home_from_environment(env)

        values: dict[str, Any] = {"home": home}
        values.update(read_config_file(home / CONFIG_FILE))
        for name, option in OPTIONS.items():
            if name == "home":
                continue
            for env_name in option.env:
                raw = env.get(env_name)
                if raw not in (None, ""):
                    values[name] = raw
                    break
        values.update(flags)
        values["home"] = home
        values[LIMITS_TABLE] = resolve_limits(values.get(LIMITS_TABLE, {}), env)
        if not values.get("model_cache"):
            values["model_cache"] = default_model_cache(env)  # XDG_CACHE_HOME of this env, not os.environ
        return cls(**{name: coerce(name, value) for name, value in values.items()})

    # ---- paths (computed on call, created on demand) --------------------------------

    def ensure_home(self) -> Path:
        """Create `home` (mode 0700) if needed and return it."""
        self.home.mkdir(mode=0o700, parents=True, exist_ok=True)
        return self.home

    @property
    def config_path(self) -> Path:
        return self.home / CONFIG_FILE

    @property
    def state_db_path(self) -> Path:
        return self.home / "state.db"

    def public_items(self) -> list[tuple[str, str]]:
        """(name, printable value) pairs with secrets masked; for `config show`."""
        out = []
        for name, option in OPTIONS.items():
            value = getattr(self, name)
            shown = mask(value) if option.secret else redact_text(render(value))
            out.append((name, shown))
        out += [(f"{LIMITS_TABLE}.{key}", str(value)) for key, value in self.tool_limits.items()]
        out += [(f'{PRICES_TABLE}."{model}"', price.describe()) for model, price in self.prices.configured.items()]
        for provider in self.providers:
            where = provider.base_url or "(its own)"
            shown = f"kind={provider.kind} base_url={where} key from {provider.api_key_env or '-'}"
            out.append((f"{PROVIDERS_TABLE}.{provider.name}", shown))
        if self.web_search is not None:
            search = self.web_search
            out += [(f"{WEB_SEARCH_TABLE}.backend", search.backend), (f"{WEB_SEARCH_TABLE}.url", search.url or "")]
            out += [(f"{WEB_SEARCH_TABLE}.api_key_env", search.api_key_env or "")]
        return out

    def replace(self, **changes: Any) -> Settings:
        return dataclasses.replace(self, **{k: coerce(k, v) for k, v in changes.items()})


# ---- value handling -------------------------------------------------------------------

_CHOICES: dict[str, tuple[str, ...]] = {"sandbox": ("auto", "on", "off"), "notify": ("bell", "osc", "off")}
"""String settings that take one of a few words (compared lower-case)."""

_POSITIVE = frozenset(
    {"context_window", "max_diff_bytes", "web_fetch_max_kb", "memory_max_chars", "user_memory_max_chars",
     "subagent_concurrency"}
)  # fmt: skip
"""Integer settings that must be above zero."""
_FRACTIONS = frozenset({"compact_at"})
"""Float settings that are a share in (0, 1]."""
_POSITIVE_FLOATS = frozenset({"instance_lease_ttl", "web_fetch_timeout", "lsp_timeout", "approval_timeout"})
"""Float settings that must be above zero."""
_NON_NEGATIVE = frozenset(
    {"checkpoint_max_files", "checkpoint_timeout", "notify_after", "hooks_stop_limit", "subagent_depth"}
)
"""Number settings that must not be below zero (0: no cap)."""

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _field_types() -> dict[str, str]:
    return {f.name: str(f.type) for f in fields(Settings)}


def coerce(name: str, value: Any) -> Any:
    """Turn a raw value (string from env/flags, or TOML value) into the field's type."""
    kind = _field_types().get(name)
    if kind is None:
        raise ConfigError(f"unknown setting {name!r}")
    if name in ("mcp_servers", PROVIDERS_TABLE, "lsp_servers", HOOKS_TABLE):
        return tuple(value)  # parsed and checked by read_config_file
    if name == PRICES_TABLE:
        return value if isinstance(value, PriceTable) else PriceTable(value)  # checked by read_config_file
    if name == WEB_SEARCH_TABLE:
        if value is not None and not isinstance(value, WebSearchConfig):
            raise ConfigError(f"{name} takes a WebSearchConfig, not {value!r}")
        return value
    if name == LIMITS_TABLE:
        if not isinstance(value, ToolLimits):
            raise ConfigError(f"{name} takes a ToolLimits, not {value!r}")
        return value
    try:
        if kind == "bool":
            if isinstance(value, bool):
                return value
            text = str(value).strip().lower()
            if text in _TRUE:
                return True
            if text in _FALSE:
                return False
            raise ValueError(value)
        if kind in ("int", "int | None"):
            if value in (None, "") and kind == "int | None":
                return None
            if isinstance(value, bool):
                raise ValueError(value)
            number_int = int(value)
            if name in _POSITIVE and number_int <= 0:
                raise ConfigError(f"invalid value for {name}: {value!r} (must be a positive number)")
            if name in _NON_NEGATIVE and number_int < 0:
                raise ConfigError(f"invalid value for {name}: {value!r} (0 or more; 0: no cap)")
            return number_int
        if kind == "float":
            if isinstance(value, bool):
                raise ValueError(value)
            number = float(value)
            if not math.isfinite(number):
                raise ValueError(value)
            if name in _FRACTIONS and not 0.0 < number <= 1.0:
                raise ConfigError(f"invalid value for {name}: {value!r} (a share between 0 and 1, e.g. 0.8)")
            if name in _POSITIVE_FLOATS and number <= 0:
                raise ConfigError(f"invalid value for {name}: {value!r} (must be a positive number)")
            if name in _NON_NEGATIVE and number < 0:
                raise ConfigError(f"invalid value for {name}: {value!r} (0 or more; 0: no cap)")
            return number
        if kind == "Path":
            return Path(value).expanduser()
        if kind == "Path | None":
            return None if value in (None, "") else Path(value).expanduser()
        if kind == "tuple[str, ...]":
            if isinstance(value, str):
                return tuple(part.strip() for part in value.split(",") if part.strip())
            return tuple(str(v) for v in value)
        if kind in ("str", "str | None"):
            if value is None:
                return None
            if not isinstance(value, str):
                raise ValueError(value)
            if name in _CHOICES:
                word = value.strip().lower()
                if word not in _CHOICES[name]:
                    raise ConfigError(f"invalid value for {name}: {value!r} (use {', '.join(_CHOICES[name])})")
                return word
            return value
    except (TypeError, ValueError):
        raise ConfigError(f"invalid value for {name}: {value!r} (expected {kind})") from None
    raise ConfigError(f"setting {name} has an unsupported type {kind}")


def render(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, tuple):
        return ",".join(value)
    return str(value)


def mask(value: Any) -> str:
    if not value:
        return ""
    text = str(value)
    return "****" + text[-4:] if len(text) >= 12 else "****"


def read_config_file(path: Path) -> dict[str, Any]:
    """Read config.toml; a missing file is empty, a broken one is a ConfigError."""
    try:
        with path.open("rb") as fh:
            data = tomllib.load(fh)
    except FileNotFoundError:
        return {}
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: invalid TOML ({exc})") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror})") from None
    tables = {"home", MCP_TABLE, LIMITS_TABLE, PRICES_TABLE, PROVIDERS_TABLE, WEB_SEARCH_TABLE, HOOKS_TABLE}
    unknown = sorted(set(data) - set(OPTIONS) - tables)
    if unknown:
        raise ConfigError(f"{path}: unknown setting(s): {', '.join(unknown)}")
    data.pop("home", None)
    if MCP_TABLE in data:
        data[MCP_TABLE] = parse_servers(data[MCP_TABLE], str(path))
    if LIMITS_TABLE in data:
        data[LIMITS_TABLE] = parse_table(data[LIMITS_TABLE], str(path))
    if PRICES_TABLE in data:
        data[PRICES_TABLE] = PriceTable(parse_prices(data[PRICES_TABLE], str(path)))
    if LSP_KEY in data:
        data[LSP_KEY], servers = parse_lsp(data[LSP_KEY], str(path))
        if servers:
            data["lsp_servers"] = servers
    if PROVIDERS_TABLE in data:
        data[PROVIDERS_TABLE] = parse_providers(data[PROVIDERS_TABLE], str(path))
    if HOOKS_TABLE in data:
        data[HOOKS_TABLE] = parse_hooks(data[HOOKS_TABLE], str(path))
    if WEB_SEARCH_TABLE in data:
        data[WEB_SEARCH_TABLE] = parse_web_search(data[WEB_SEARCH_TABLE], str(path))
    return data


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, tuple):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    text = str(value)
    escaped = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{escaped}"'


def write_config_value(settings: Settings, name: str, raw: str | None) -> None:
    """Set (or with raw=None, remove) one key in config.toml, atomically, mode 0600."""
    if name.startswith(f"{LIMITS_TABLE}.") and name.split(".", 1)[1] in LIMITS_ENV:
        key = name.split(".", 1)[1]
        raise ConfigError(
            f"{name} is set in the [{LIMITS_TABLE}] table of config.toml ({key} = N), "
            f"or with {LIMITS_ENV[key]}; `hermes config set` edits top-level settings only"
        )
    if name not in OPTIONS or name == "home":
        raise ConfigError(f"unknown setting {name!r}; see `hermes config show`")
    data = read_config_file(settings.config_path)
    if data.pop("lsp_servers", None):  # the [lsp.LANGUAGE] tables are kept verbatim below
        if name == LSP_KEY:
            raise ConfigError("config.toml has [lsp.LANGUAGE] tables: remove them to set lsp (TOML allows one form)")
        data.pop(LSP_KEY, None)
    if raw is None:
        data.pop(name, None)
    else:
        data[name] = coerce(name, raw)
    lines = [f"{key} = {_toml_value(data[key])}" for key in OPTIONS if key in data]
    text = "\n".join(lines) + ("\n" if lines else "")
    tables = config_tables_text(settings.config_path)
    write_config_text(settings, text + ("\n" if text and tables else "") + tables)


def config_tables_text(path: Path) -> str:
    """config.toml from its first table header on (e.g. `[mcp_servers.…]`), verbatim."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""
    match = re.search(r"^[ \t]*\[\[?[ \t]*[A-Za-z0-9_\-.\"' ]+\]\]?[ \t]*(#.*)?$", text, re.MULTILINE)
    return text[match.start() :] if match else ""


def read_config_text(settings: Settings) -> str:
    """config.toml as text ("" when missing), after checking that it is valid."""
    read_config_file(settings.config_path)
    try:
        return settings.config_path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return ""


def write_config_text(settings: Settings, text: str) -> None:
    """Replace config.toml with `text`, atomically, mode 0600 (checked before writing)."""
    try:
        tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:  # a bug in the caller, never the user's file
        raise ConfigError(f"refusing to write invalid TOML to {settings.config_path} ({exc})") from None
    settings.ensure_home()
    tmp = settings.config_path.with_suffix(".toml.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as fh:
        fh.write(text)
    os.chmod(tmp, 0o600)
    os.replace(tmp, settings.config_path)

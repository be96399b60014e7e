"""`hermes doctor`: check the installation, one line per check.

    ✓ config: …      the check passed
    ! home: …        a warning (something to fix, but hermes works)
    ✗ provider: …    the check failed

Checks, in order: `config` (settings load; config.toml readable and valid), `provider`
(which provider `hermes chat` would use and why, or the exact ConfigError), `home`
(HERMES_HOME exists with mode 0700), then the storage backend that `database_url`
selects: on SQLite `state.db` (mode 0600) and `database` (the session store opens and
its integrity check passes); on PostgreSQL one `database` check (the server answers,
and the schema version: current, or migrations pending for `hermes db upgrade`, with
the URL's password masked); then `sandbox` (whether tool commands run in
bubblewrap, and why, and which PATH folders under /tmp it keeps visible: a warning when
`auto` fell back to off, where `hermes serve` refuses to start, a failure when `on` cannot
work), `tool env` (the names, never the values, of
the variables a tool process gets, the `tool_env_passthrough` globs, and the variables a
glob or the proxy rule would admit but a rule keeps out: hermes's own secrets, values
equal to a hermes key, proxies with credentials), `limits` (the `[tool_limits]` of each
tool call and how the process limit is enforced: a per-call pids cgroup, RLIMIT_NPROC, or
a warning that nothing here can), `endpoint` (the OpenAI-compatible endpoint answers GET
/models within ENDPOINT_TIMEOUT seconds, and lists the configured model), `tools` (one tiny chat request
with a trivial tool: does the model call tools natively, or write the call as JSON text so
that `tool_protocol = json` is needed), then one `mcp NAME` check per configured MCP
server (started and listed within its startup_timeout), then `commands` and `skills` (the
custom commands and skills found for this folder, each left out when there are none; a
file that was skipped, and why, is a warning).
A check that cannot run because an earlier one failed is left out. Credentials in URLs
are masked in every detail.

Exit 0 when nothing failed (warnings allowed), 1 when a check failed.
`--json` prints a list of {"name": str, "ok": bool, "status": "ok"|"warning"|"failed",
"detail": str}; `ok` is false only for failed checks.

Nothing is created: a missing HERMES_HOME or state.db is reported, never made, and a
PostgreSQL schema is only read (never migrated).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

import typer

from hermes.cli._common import print_json
from hermes.redact import redact_text

if TYPE_CHECKING:
    from hermes.agent.factory import ProviderChoice
    from hermes.agent.mcp import McpServerStatus
    from hermes.agent.providers.named import ModelListing
    from hermes.agent.providers.tool_probe import ToolProbe
    from hermes.config import Settings

ENDPOINT_TIMEOUT = 5.0
"""Seconds the endpoint has to answer GET /models."""
LOCAL_SPEED_TIMEOUT = 120.0
"""Seconds the local model has for its one measured request (a loaded 2-core CPU is slow)."""
TOOL_PROBE_TIMEOUT = 30.0
"""Seconds the model has to answer the tool probe (a small model on a CPU reads slowly)."""

Status = Literal["ok", "warning", "failed"]
_MARKS: dict[Status, str] = {"ok": "✓", "warning": "!", "failed": "✗"}


@dataclass(frozen=True, slots=True)
class Check:
    name: str
    status: Status
    detail: str

    @property
    def ok(self) -> bool:
        return self.status != "failed"

    def line(self) -> str:
        return f"{_MARKS[self.status]} {self.name}: {redact_text(self.detail)}"

    def to_json(self) -> dict[str, object]:
        return {"name": self.name, "ok": self.ok, "status": self.status, "detail": redact_text(self.detail)}


def register(app: typer.Typer) -> None:
    app.command("doctor")(doctor)


def doctor(
    as_json: bool = typer.Option(False, "--json", help='Print [{"name", "ok", "status", "detail"}, ...].'),
) -> None:
    """Check the setup: config, files, database, endpoint."""
    checks = run_checks()
    if as_json:
        print_json([check.to_json() for check in checks])
    else:
        for check in checks:
            typer.echo(check.line())
    if not all(check.ok for check in checks):
        raise typer.Exit(1)


def run_checks() -> list[Check]:
    """Every check that can run, in order."""
    from hermes.config import Settings
    from hermes.errors import ConfigError

    try:
        settings = Settings.load()
    except ConfigError as exc:
        return [Check("config", "failed", str(exc))]
    config_file = settings.config_path
    where = str(config_file) if config_file.exists() else f"defaults and environment ({config_file} not present)"
    checks = [Check("config", "ok", f"loaded from {where}")]

    provider_check, choice = _check_provider(settings)
    checks.append(provider_check)
    checks.append(_check_home(settings.home))
    checks.extend(_check_storage(settings))
    checks.append(_check_sandbox(settings))
    checks.append(_check_tool_env(settings))
    checks.append(_check_limits(settings))
    if choice is not None:
        endpoint = _check_endpoint(settings, choice)
        checks.append(endpoint)
        if choice.kind == "openai" and endpoint.ok:
            checks.append(_check_tools(settings, choice))
        if choice.kind == "local":
            checks.extend(_check_local_model(settings))
    checks.extend(_check_named_providers(settings))
    checks.extend(_check_language_servers(settings))
    checks.extend(_check_mcp(settings))
    checks.extend(_check_extensions(settings))
    return checks


def _check_extensions(settings: Settings) -> list[Check]:
    """`commands` and `skills`: found for this folder; a skipped file is a warning."""
    from hermes.cli._doctor_extensions import extension_checks

    return [Check(name, status, detail) for name, status, detail in extension_checks(settings.home, Path.cwd())]


def _check_language_servers(settings: Settings) -> list[Check]:
    """Which language server each language would get after an edit (found on the tool PATH);
    nothing when `lsp = false`."""
    from hermes.agent.lsp.languages import KNOWN_SERVERS
    from hermes.agent.lsp.languages import server_command as command_for
    from hermes.agent.safety.tool_env import ToolEnvPolicy

    if not settings.lsp:
        return []
    path = ToolEnvPolicy.from_settings(settings).environment(os.environ).get("PATH")
    configured = dict(settings.lsp_servers)
    found, missing = [], []
    for language, candidates in KNOWN_SERVERS.items():
        command = command_for(language, configured, path)
        if command is not None:
            found.append(f"{language}: {' '.join(command)}")
        else:
            missing.append(f"{language} ({' or '.join(c[0] for c in candidates)})")
    detail = "; ".join(found) if found else "no language server on PATH"
    if missing:
        detail += f"; none for {', '.join(missing)}"
    return [Check("lsp", "ok", detail)]


def _check_named_providers(settings: Settings) -> list[Check]:
    """One check per `[providers.NAME]` table: its key variable, and its model list."""
    import asyncio

    from hermes.agent.providers.named import ProviderRouter

    if not settings.providers:
        return []

    async def listings() -> list[ModelListing]:
        router = ProviderRouter(None, settings.providers, settings)
        try:
            return await router.listings()
        finally:
            await router.aclose()

    checks = []
    for config, listing in zip(settings.providers, asyncio.run(listings()), strict=True):
        name = f"provider {config.name}"
        where = config.base_url or "its public endpoint"
        if listing.error:
            checks.append(Check(name, "failed", f"{config.kind} at {where}: {listing.error}"))
            continue
        shown = ", ".join(listing.models[:4]) + (", …" if len(listing.models) > 4 else "")
        source = "its models list" if config.models else "listed by the endpoint"
        checks.append(Check(name, "ok", f"{config.kind} at {where}: {len(listing.models)} models ({source}): {shown}"))
    return checks


def _check_mcp(settings: Settings) -> list[Check]:
    """One check per configured MCP server: started, initialised and listed within its timeout."""
    import asyncio

    from hermes.agent.mcp import McpManager

    manager = McpManager.from_settings(settings, cwd=Path.cwd())
    if manager is None:
        return []

    async def statuses() -> list[McpServerStatus]:
        try:
            return await manager.start()
        finally:
            await manager.aclose()

    checks = []
    for status in asyncio.run(statuses()):
        name = f"mcp {status.name}"
        if status.status == "connected":
            count = len(status.tools)
            checks.append(Check(name, "ok", f"connected ({status.transport}), {count} tool{'s' if count != 1 else ''}"))
        elif status.status == "disabled":
            checks.append(Check(name, "ok", "disabled (enabled = false)"))
        else:
            checks.append(Check(name, "failed", f"{status.status}: {status.message}"))
    return checks


def _check_provider(settings: Settings) -> tuple[Check, ProviderChoice | None]:
    from hermes.agent.factory import choose_provider
    from hermes.errors import ConfigError

    try:
        choice = choose_provider(settings)
    except ConfigError as exc:
        return Check("provider", "failed", str(exc)), None
    return Check("provider", "ok", f"{choice.name}, model {choice.model} ({choice.reason})"), choice


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def _check_home(home: Path) -> Check:
    if not home.exists():
        return Check("home", "warning", f"{home} does not exist yet (created on first use)")
    if not home.is_dir():
        return Check("home", "failed", f"{home} is not a folder")
    mode = _mode(home)
    if mode != 0o700:
        return Check("home", "warning", f"{home} has mode {mode:04o}, expected 0700 (chmod 700 {home})")
    return Check("home", "ok", f"{home} (0700)")


def _check_storage(settings: Settings) -> list[Check]:
    """The backend `database_url` selects: the SQLite files, or the PostgreSQL database."""
    from hermes.errors import ConfigError
    from hermes.store.api import caps_of
    from hermes.store.configured import backend_for

    try:
        caps = caps_of(backend_for(settings.database_url))
    except ConfigError as exc:
        return [Check("database", "failed", str(exc))]
    if not caps.local_files:
        return [_check_postgres(settings)]
    return _check_database(settings.state_db_path)


def _check_postgres(settings: Settings) -> Check:
    """Connect, read the schema version (changes nothing)."""
    import asyncio

    from hermes.errors import HermesError
    from hermes.store.schema_admin import schema_status

    try:
        report = asyncio.run(schema_status(settings))
    except HermesError as exc:  # StoreError: unreachable, refused, not readable (URL masked)
        return Check("database", "failed", str(exc))
    where = f"PostgreSQL {report.location}"
    status = report.databases[0]
    if status.unknown:
        newer = ", ".join(status.unknown)
        return Check("database", "warning", f"{where}: schema written by a newer hermes ({newer}); upgrade hermes")
    if status.pending:
        count = len(status.pending)
        pending = f"{count} migration{'s' if count != 1 else ''} pending ({', '.join(status.pending)})"
        return Check(
            "database", "warning", f"{where}: {pending}; run `hermes db upgrade` (hermes serve applies them at start)"
        )
    newest = status.applied[-1] if status.applied else "-"
    return Check(
        "database", "ok", f"{where}: connected, schema up to date ({len(status.applied)} migrations, newest {newest})"
    )


def _check_database(path: Path) -> list[Check]:
    if not path.exists():
        return [Check("state.db", "warning", f"{path} does not exist yet (created on first use)")]
    mode = _mode(path)
    if mode != 0o600:
        checks = [Check("state.db", "warning", f"{path} has mode {mode:04o}, expected 0600 (chmod 600 {path})")]
    else:
        checks = [Check("state.db", "ok", f"{path} (0600)")]

    from hermes.errors import StoreError
    from hermes.store.sqlite.state_db import StateDb

    try:
        state = StateDb(path)
    except StoreError as exc:
        return [*checks, Check("database", "failed", str(exc))]
    try:
        result = state.integrity_check()
    except StoreError as exc:
        return [*checks, Check("database", "failed", str(exc))]
    finally:
        state.close()
    if result != "ok":
        return [*checks, Check("database", "failed", f"integrity check: {result}")]
    return [*checks, Check("database", "ok", "SQLite, integrity check ok")]


def _check_sandbox(settings: Settings) -> Check:
    from hermes.agent.safety.sandbox import SandboxConfig, resolve_sandbox
    from hermes.errors import ConfigError

    try:
        state = resolve_sandbox(SandboxConfig.from_settings(settings))
    except ConfigError as exc:
        return Check("sandbox", "failed", str(exc))
    if state.fallback is not None:
        return Check(
            "sandbox",
            "warning",
            f"{state.detail}: hermes chat runs tools unsandboxed, hermes serve refuses to start "
            '(sandbox = "off" opts out)',
        )
    if not state.active:
        return Check("sandbox", "ok", state.detail)
    return Check("sandbox", "ok", f"{state.detail}; {_exposed_tool_folders(settings)}")


def _exposed_tool_folders(settings: Settings) -> str:
    """Which of the tool environment's PATH folders (and venv) the sandbox's private /tmp would
    cover, and so binds read-only into it (hermes/agent/safety/launch.py)."""
    import os

    from hermes.agent.safety.launch import tool_folders
    from hermes.agent.safety.tool_env import ToolEnvPolicy

    env = ToolEnvPolicy.from_settings(settings).environment(os.environ)
    under_tmp = [str(p) for p in tool_folders(env) if Path(os.path.realpath(p)).is_relative_to("/tmp")]
    if not under_tmp:
        return "every PATH folder is visible as it is"
    return "PATH folders under /tmp kept visible (read-only): " + ", ".join(under_tmp)


def _check_tool_env(settings: Settings) -> Check:
    """The names (never the values) of the variables a tool process would get now."""
    import os

    from hermes.agent.safety.tool_env import ToolEnvPolicy

    report = ToolEnvPolicy.from_settings(settings).report(os.environ)
    # TMPDIR is always set: the confinement's private tmp (ToolLauncher.env).
    names = sorted({*report.names, "TMPDIR"})
    detail = (
        f"tools and stdio MCP servers get {', '.join(names)}; "
        f"tool_env_passthrough: {', '.join(report.passthrough) or 'none'}"
    )
    if report.withheld:
        detail += f"; withheld: {', '.join(report.withheld)}"
    return Check("tool env", "ok", detail)


def _check_limits(settings: Settings) -> Check:
    from hermes.agent.safety.limits import resolve_limits

    state = resolve_limits(settings.tool_limits)
    return Check("limits", "ok" if state.enforced else "warning", state.detail)


def _check_endpoint(settings: Settings, choice: ProviderChoice) -> Check:
    import asyncio

    if choice.kind != "openai":
        return Check("endpoint", "ok", f"{choice.name} provider (nothing to reach)")
    from hermes.agent.factory import build_provider
    from hermes.errors import HermesError

    async def models() -> list[str]:
        provider = build_provider(settings.replace(providers=()), choice)  # the default endpoint alone
        list_models = getattr(provider, "list_models")  # noqa: B009 - Provider protocol lacks list_models; keeps mypy happy
        try:
            return list(await asyncio.wait_for(list_models(), ENDPOINT_TIMEOUT))
        finally:
            await provider.aclose()

    url = settings.base_url
    try:
        available = asyncio.run(models())
    except TimeoutError:
        return Check("endpoint", "failed", f"{url} did not answer within {ENDPOINT_TIMEOUT:g} s")
    except HermesError as exc:
        return Check("endpoint", "failed", str(exc))
    if choice.model not in available:
        listed = ", ".join(available[:5]) + (", …" if len(available) > 5 else "") if available else "none"
        return Check(
            "endpoint", "warning", f"{url} answers but does not list model {choice.model!r} (listed: {listed})"
        )
    return Check("endpoint", "ok", f"{url} answers and lists model {choice.model!r}")


def _check_local_model(settings: Settings) -> list[Check]:
    """Where the local model is, and one short measured run: how fast it reads and writes here."""
    from hermes.agent.providers.local import local_status
    from hermes.agent.providers.local_speed import TYPICAL_ANSWER, TYPICAL_PROMPT, measure_speed
    from hermes.errors import HermesError

    status = local_status(settings)
    path = status.model_path
    if path is None or not path.is_file():
        return [Check("model", "ok", f"{status.reason}; speed is measured once it is assembled")]
    shared = "" if settings.local_model_path is not None else f" (per-user cache {settings.model_cache})"
    size = path.stat().st_size / 1e9
    checks = [Check("model", "ok", f"{path}, {size:.1f} GB{shared}")]
    try:
        speed = measure_speed(path, status.model_name, timeout=LOCAL_SPEED_TIMEOUT)
    except (HermesError, TimeoutError) as exc:
        return [*checks, Check("speed", "warning", f"not measured: {exc or 'no answer in time'}")]
    checks.append(
        Check(
            "speed",
            "ok",
            f"reads {speed.read_rate:.0f} prompt tokens/s, writes {speed.write_rate:.1f} tokens/s "
            f"(loaded in {speed.load_seconds:.0f} s); a {TYPICAL_PROMPT}-token prompt and a "
            f"{TYPICAL_ANSWER}-token answer: about {speed.typical_seconds():.0f} s per model call "
            "(a tool-using answer makes two or more)",
        )
    )
    return checks


def _check_tools(settings: Settings, choice: ProviderChoice) -> Check:
    """Probe native tool calls (one small request) and suggest tool_protocol = json if needed."""
    import asyncio

    from hermes.agent.factory import build_provider
    from hermes.agent.providers.json_actions import TOOL_PROTOCOLS
    from hermes.agent.providers.tool_probe import probe_tool_calls

    if settings.tool_protocol not in TOOL_PROTOCOLS:
        return Check("tools", "failed", f"unknown tool_protocol {settings.tool_protocol!r}: use native or json")

    async def probe() -> ToolProbe:
        provider = build_provider(settings.replace(providers=()), choice)
        try:
            return await probe_tool_calls(provider, choice.model, timeout=TOOL_PROBE_TIMEOUT)
        finally:
            await provider.aclose()

    result = asyncio.run(probe())
    json_set = settings.tool_protocol == "json"
    if result.kind == "native":
        if json_set:
            detail = f"the model {result.detail}; tool_protocol = json is set (native would work too)"
            return Check("tools", "ok", detail)
        return Check("tools", "ok", f"the model {result.detail}")
    if result.kind == "error":
        return Check("tools", "warning", f"tool probe failed: {result.detail}")
    if json_set:
        detail = "the model does not call tools natively; tool_protocol = json is set, so hermes uses JSON actions"
        return Check("tools", "ok", detail)
    if result.kind == "json_text":
        return Check(
            "tools",
            "warning",
            f"the model wrote its tool call as JSON text instead of a native tool call ({result.detail}): "
            "set tool_protocol = json (hermes config set tool_protocol json, or HERMES_TOOL_PROTOCOL=json)",
        )
    return Check(
        "tools",
        "warning",
        f"the model answered without calling the offered tool ({result.detail}); "
        "if hermes never runs tools with it, set tool_protocol = json",
    )

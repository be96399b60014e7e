"""Helpers for the MCP tests: config entries for the test servers, running `hermes`."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hermes.testing.upstream import ScriptedUpstream

SERVERS = Path(__file__).resolve().parent / "servers"
REPO = Path(__file__).resolve().parents[2]


def toml_str(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def stdio_entry(name: str, script: str, **extra: str) -> str:
    lines = [
        f"[mcp_servers.{name}]",
        f"command = {toml_str(sys.executable)}",
        f"args = [{toml_str(str(SERVERS / script))}]",
    ]
    lines += [f"{key} = {value}" for key, value in extra.items()]
    return "\n".join(lines) + "\n"


def http_entry(name: str, url: str, **extra: str) -> str:
    lines = [f"[mcp_servers.{name}]", f"url = {toml_str(url)}"]
    lines += [f"{key} = {value}" for key, value in extra.items()]
    return "\n".join(lines) + "\n"


def write_config(home: Path, *entries: str) -> Path:
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = home / "config.toml"
    path.write_text("\n".join(entries))
    return path


def hermes_env(home: Path, upstream: ScriptedUpstream | None = None, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_", "API_SERVER_"))}
    env["HERMES_HOME"] = str(home)
    env["PYTHONPATH"] = str(REPO) + os.pathsep + env.get("PYTHONPATH", "")
    env["HERMES_STREAM_STALE_TIMEOUT"] = "20"
    if upstream is not None:
        env.update(HERMES_PROVIDER="openai", HERMES_BASE_URL=upstream.base_url, HERMES_MODEL="scripted-model")
    env.update(extra)
    return env


def run_hermes(
    *args: str, home: Path, upstream: ScriptedUpstream | None = None, timeout: float = 90, **extra: str
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "hermes", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        env=hermes_env(home, upstream, **extra),
        timeout=timeout,
        check=False,
    )


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie still answers kill(0); it is gone for our purposes once it is not running.
    try:
        state = Path(f"/proc/{pid}/stat").read_text().split(")")[-1].split()[0]
    except OSError:
        return False
    return state != "Z"

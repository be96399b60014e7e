"""`hermes doctor` with no endpoint, a scripted one on loopback, and a closed port."""

from __future__ import annotations

import json
import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from hermes.agent.factory import NO_ENDPOINT
from hermes.testing.upstream import ScriptedUpstream, call, tool_reply

SANDBOX_OFF = "✓ sandbox: off (sandbox = off)"
TOOL_ENV = (
    "✓ tool env: tools and stdio MCP servers get GIT_PAGER, HOME, LANG, PAGER, PATH, TMPDIR; tool_env_passthrough: none"
)
LIMITS_OFF = "✓ limits: processes: no limit; memory: no limit; CPU: no limit"


@pytest.fixture(autouse=True)
def sandbox_off(monkeypatch) -> None:
    """The exact-output tests below run with the sandbox and the tool limits off; the sandbox
    and limits tests set their own."""
    monkeypatch.setenv("HERMES_SANDBOX", "off")
    monkeypatch.setenv("HERMES_TOOL_PROCESSES", "0")


@pytest.fixture(autouse=True)
def plain_tool_env(monkeypatch) -> None:
    """Of the variables tools may get, only PATH, HOME and LANG are set (TOOL_ENV names them)."""
    from hermes.agent.safety.tool_env import PROXY_NAMES, is_core_name

    for name in list(os.environ):
        if (is_core_name(name) or name in PROXY_NAMES) and name not in ("PATH", "HOME"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("LANG", "C.UTF-8")


@pytest.fixture
def upstream(monkeypatch) -> Iterator[ScriptedUpstream]:
    """A reachable OpenAI-compatible endpoint, configured through the environment."""
    with ScriptedUpstream.in_thread(model="scripted-model") as upstream:
        upstream.default = tool_reply([call("get_time", {"city": "Paris"})])  # the tool probe's answer
        monkeypatch.setenv("HERMES_BASE_URL", upstream.base_url)
        monkeypatch.setenv("HERMES_MODEL", "scripted-model")
        yield upstream


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def ok_files(home: Path) -> list[str]:
    return [
        f"✓ home: {home} (0700)",
        f"✓ state.db: {home / 'state.db'} (0600)",
        "✓ database: SQLite, integrity check ok",
    ]


def test_no_endpoint_fails_with_the_config_error(invoke, monkeypatch, hermes_home):
    monkeypatch.setenv("HERMES_PROVIDER", "openai")  # rule out the optional local model

    result = invoke("doctor")

    assert result.exit_code == 1
    assert result.stdout.splitlines() == [
        f"✓ config: loaded from defaults and environment ({hermes_home / 'config.toml'} not present)",
        f"✗ provider: {NO_ENDPOINT}",
        f"! home: {hermes_home} does not exist yet (created on first use)",
        f"! state.db: {hermes_home / 'state.db'} does not exist yet (created on first use)",
        SANDBOX_OFF,
        TOOL_ENV,
        LIMITS_OFF,
    ]
    assert not hermes_home.exists()  # the doctor creates nothing


def test_reachable_endpoint_all_ok(invoke, store, upstream, hermes_home):
    result = invoke("doctor")

    assert result.exit_code == 0, result.stdout
    assert result.stdout.splitlines() == [
        f"✓ config: loaded from defaults and environment ({hermes_home / 'config.toml'} not present)",
        f"✓ provider: openai, model scripted-model (base_url is set ({upstream.base_url}))",
        *ok_files(hermes_home),
        SANDBOX_OFF,
        TOOL_ENV,
        LIMITS_OFF,
        f"✓ endpoint: {upstream.base_url} answers and lists model 'scripted-model'",
        "✓ tools: the model called get_time natively",
    ]
    # Besides GET /models, one tiny tool probe: the only tokens the doctor spends.
    assert len(upstream.requests) == 1 and upstream.requests[0].body["max_tokens"] <= 128


def test_endpoint_that_does_not_list_the_model_is_a_warning(invoke, store, upstream, monkeypatch):
    monkeypatch.setenv("HERMES_MODEL", "other-model")

    result = invoke("doctor")

    assert result.exit_code == 0
    assert result.stdout.splitlines()[-2] == (
        f"! endpoint: {upstream.base_url} answers but does not list model 'other-model' (listed: scripted-model)"
    )


def test_unreachable_endpoint_fails(invoke, store, monkeypatch, closed_port, hermes_home):
    url = f"http://127.0.0.1:{closed_port}/v1"
    monkeypatch.setenv("HERMES_BASE_URL", url)
    monkeypatch.setenv("HERMES_MODEL", "m")

    result = invoke("doctor")

    lines = result.stdout.splitlines()
    assert result.exit_code == 1
    assert lines[1:8] == [
        f"✓ provider: openai, model m (base_url is set ({url}))",
        *ok_files(hermes_home),
        SANDBOX_OFF,
        TOOL_ENV,
        LIMITS_OFF,
    ]
    assert lines[8].startswith(f"✗ endpoint: cannot reach the model endpoint {url} (")
    assert len(lines) == 9


def test_loose_permissions_are_warnings(invoke, store, upstream, hermes_home):
    os.chmod(hermes_home, 0o755)
    os.chmod(hermes_home / "state.db", 0o644)

    result = invoke("doctor")

    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert lines[2] == f"! home: {hermes_home} has mode 0755, expected 0700 (chmod 700 {hermes_home})"
    db = hermes_home / "state.db"
    assert lines[3] == f"! state.db: {db} has mode 0644, expected 0600 (chmod 600 {db})"


def test_damaged_database_fails(invoke, upstream, hermes_home):
    hermes_home.mkdir(mode=0o700)
    db = hermes_home / "state.db"
    db.write_bytes(b"this is not a database" * 100)
    os.chmod(db, 0o600)

    result = invoke("doctor")

    assert result.exit_code == 1
    line = result.stdout.splitlines()[4]
    assert line.startswith(f"✗ database: cannot open session database {db}: ")


def test_broken_config_stops_at_the_first_check(invoke, hermes_home):
    hermes_home.mkdir(mode=0o700)
    (hermes_home / "config.toml").write_text("colour = 'blue'\n")

    result = invoke("doctor")

    assert result.exit_code == 1
    assert result.stdout == f"✗ config: {hermes_home / 'config.toml'}: unknown setting(s): colour\n"


def test_json_output(invoke, store, upstream, hermes_home):
    os.chmod(hermes_home, 0o750)

    result = invoke("doctor", "--json")

    checks = json.loads(result.stdout)
    assert result.exit_code == 0
    assert [(c["name"], c["ok"], c["status"]) for c in checks] == [
        ("config", True, "ok"),
        ("provider", True, "ok"),
        ("home", True, "warning"),
        ("state.db", True, "ok"),
        ("database", True, "ok"),
        ("sandbox", True, "ok"),
        ("tool env", True, "ok"),
        ("limits", True, "ok"),
        ("endpoint", True, "ok"),
        ("tools", True, "ok"),
    ]
    assert all(set(c) == {"name", "ok", "status", "detail"} for c in checks)
    assert checks[2]["detail"] == f"{hermes_home} has mode 0750, expected 0700 (chmod 700 {hermes_home})"


def test_json_output_when_failing(invoke, monkeypatch):
    monkeypatch.setenv("HERMES_PROVIDER", "openai")

    result = invoke("doctor", "--json")

    assert result.exit_code == 1
    provider = json.loads(result.stdout)[1]
    assert provider == {"name": "provider", "ok": False, "status": "failed", "detail": NO_ENDPOINT}


def test_subprocess_exit_codes(run_hermes, monkeypatch, closed_port, hermes_home):
    monkeypatch.setenv("HERMES_PROVIDER", "openai")
    no_endpoint = run_hermes("doctor")
    monkeypatch.setenv("HERMES_BASE_URL", f"http://127.0.0.1:{closed_port}/v1")
    monkeypatch.setenv("HERMES_MODEL", "m")
    unreachable = run_hermes("doctor")

    assert no_endpoint.returncode == 1
    assert f"✗ provider: {NO_ENDPOINT}\n" in no_endpoint.stdout
    assert unreachable.returncode == 1
    assert "✗ endpoint: cannot reach the model endpoint" in unreachable.stdout
    assert no_endpoint.stderr == unreachable.stderr == ""


def test_silent_endpoint_times_out(invoke, store, monkeypatch):
    monkeypatch.setattr("hermes.cli.doctor.ENDPOINT_TIMEOUT", 0.3)
    with socket.socket() as listener:  # accepts connections (backlog) but never answers
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/v1"
        monkeypatch.setenv("HERMES_BASE_URL", url)
        monkeypatch.setenv("HERMES_MODEL", "m")

        result = invoke("doctor")

    assert result.exit_code == 1
    assert result.stdout.splitlines()[-1] == f"✗ endpoint: {url} did not answer within 0.3 s"


# --- the tool environment -----------------------------------------------------------------

LEAKS = {
    "PGPASSWORD": "pg-password-9921",
    "DATABASE_URL": "postgresql://app:app-pass-1234@db/app",
    "GITHUB_PAT": "ghp-personal-token-5566",
    "AWS_SECRET_ACCESS_KEY": "aws-secret-7788",
    "FOO_BAR": "random-value-3344",
}


def test_the_tool_environment_is_listed_by_name_only(run_hermes, monkeypatch):
    monkeypatch.setenv("HERMES_PROVIDER", "openai")  # no endpoint: the provider check fails, the rest runs
    for name, value in LEAKS.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("MY_TOOL_SETTING", "passed-through-value")
    monkeypatch.setenv("HERMES_API_KEY", "sk-never-shown-1234")
    monkeypatch.setenv("HERMES_TOOL_ENV_PASSTHROUGH", "MY_TOOL_*,HERMES_API_KEY")

    result = run_hermes("doctor")

    line = next(line for line in result.stdout.splitlines() if line.startswith("✓ tool env: "))
    listed, rest = line.removeprefix("✓ tool env: tools and stdio MCP servers get ").split("; ", 1)
    names = set(listed.split(", "))
    assert {"PATH", "HOME", "LANG", "MY_TOOL_SETTING", "PAGER", "GIT_PAGER"} <= names
    assert not names & {*LEAKS, "HERMES_API_KEY", "HERMES_TOOL_ENV_PASSTHROUGH"}
    assert rest == "tool_env_passthrough: MY_TOOL_*, HERMES_API_KEY; withheld: HERMES_API_KEY"
    for value in [*LEAKS.values(), "passed-through-value", "sk-never-shown-1234", "C.UTF-8"]:
        assert value not in result.stdout + result.stderr, value


# --- sandbox and masking ------------------------------------------------------------------


def fake_bwrap(folder: Path, body: str) -> Path:
    """A `bwrap` program on a PATH of its own that runs `body` (a shell script)."""
    folder.mkdir(parents=True, exist_ok=True)
    program = folder / "bwrap"
    program.write_text(f"#!/bin/sh\n{body}\n")
    program.chmod(0o755)
    return program


def sandbox_line(result) -> str:
    return next(line for line in result.stdout.splitlines() if line[2:].startswith("sandbox:"))


def test_sandbox_auto_without_bwrap_is_a_warning(invoke, monkeypatch, tmp_path, store, upstream):
    monkeypatch.setenv("HERMES_SANDBOX", "auto")
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))

    result = invoke("doctor")

    assert result.exit_code == 0
    assert sandbox_line(result) == (
        "! sandbox: off (bubblewrap (bwrap) is not installed; sandbox = auto): hermes chat runs tools "
        'unsandboxed, hermes serve refuses to start (sandbox = "off" opts out)'
    )


def test_sandbox_on_with_a_broken_bwrap_fails(invoke, monkeypatch, tmp_path, store, upstream):
    bwrap = fake_bwrap(tmp_path / "bin", 'echo "bwrap: No permissions to creating new namespace" >&2; exit 1')
    monkeypatch.setenv("HERMES_SANDBOX", "on")
    monkeypatch.setenv("PATH", f"{bwrap.parent}:{os.environ['PATH']}")

    result = invoke("doctor")

    assert result.exit_code == 1
    assert sandbox_line(result) == (
        f"✗ sandbox: sandbox = on, but {bwrap} failed a test run: bwrap: No permissions to creating new "
        "namespace; install bubblewrap (bwrap) or set sandbox = off"
    )


def test_sandbox_on_reports_bubblewrap(invoke, monkeypatch, store, upstream):
    from hermes.agent.safety.sandbox import SandboxConfig, resolve_sandbox

    if resolve_sandbox(SandboxConfig(mode="auto")).active is False:
        pytest.skip("bubblewrap does not work on this machine")
    monkeypatch.setenv("HERMES_SANDBOX", "on")
    monkeypatch.setenv("HERMES_SANDBOX_NETWORK", "false")

    result = invoke("doctor")

    assert result.exit_code == 0
    assert sandbox_line(result).startswith("✓ sandbox: on (bubblewrap ")
    assert "sandbox = on, network off; working directory writable)" in sandbox_line(result)


def test_sandbox_names_the_path_folders_it_keeps_visible_under_tmp(invoke, monkeypatch, store, upstream, tmp_path):
    from hermes.agent.safety.sandbox import SandboxConfig, resolve_sandbox

    if resolve_sandbox(SandboxConfig(mode="auto")).active is False:
        pytest.skip("bubblewrap does not work on this machine")
    monkeypatch.setenv("HERMES_SANDBOX", "on")
    tools = tmp_path / "tools-bin"
    tools.mkdir()
    monkeypatch.setenv("PATH", f"{tools}{os.pathsep}/usr/bin{os.pathsep}/bin")

    line = sandbox_line(invoke("doctor"))

    assert line.endswith(f"PATH folders under /tmp kept visible (read-only): {tools}")
    monkeypatch.setenv("PATH", f"/usr/bin{os.pathsep}/bin")
    assert sandbox_line(invoke("doctor")).endswith("every PATH folder is visible as it is")


def test_credentials_in_base_url_are_masked(invoke, monkeypatch, closed_port):
    monkeypatch.setenv("HERMES_BASE_URL", f"http://bob:hunter2@127.0.0.1:{closed_port}/v1?api_key=sk-secret&x=1")
    monkeypatch.setenv("HERMES_MODEL", "m")

    text = invoke("doctor").stdout + invoke("doctor", "--json").stdout

    assert "hunter2" not in text and "sk-secret" not in text
    assert f"http://bob:****@127.0.0.1:{closed_port}/v1?api_key=****&x=1" in text


# ---- PostgreSQL (database_url) ------------------------------------------------------------------


def _database_lines(result) -> list[str]:
    return [line for line in result.stdout.splitlines() if line[2:].startswith(("database:", "state.db:"))]


def test_postgres_database_is_checked_with_the_password_masked(invoke, upstream, monkeypatch, pg_url):
    from hermes.store.postgres.schema import PG_MIGRATIONS

    url = pg_url.replace("postgres@", "postgres:pw-secret@")  # trust authentication ignores it
    monkeypatch.setenv("HERMES_DATABASE_URL", url)

    result = invoke("doctor")

    assert result.exit_code == 0, result.stdout
    masked = url.replace("pw-secret", "****")
    names = PG_MIGRATIONS.names
    assert _database_lines(result) == [
        f"✓ database: PostgreSQL {masked}: connected, schema up to date ({len(names)} migrations, newest {names[-1]})"
    ]
    assert "pw-secret" not in result.stdout


def test_postgres_schema_not_applied_is_a_warning(invoke, upstream, monkeypatch, empty_pg_url):
    monkeypatch.setenv("HERMES_DATABASE_URL", empty_pg_url)

    result = invoke("doctor", "--json")

    assert result.exit_code == 0
    database = [check for check in json.loads(result.stdout) if check["name"] == "database"]
    assert [(c["ok"], c["status"]) for c in database] == [(True, "warning")]
    assert "pending" in database[0]["detail"] and "hermes db upgrade" in database[0]["detail"]


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "postgresql://u:pw-secret@127.0.0.1:{port}/x",
            "✗ database: cannot connect to postgresql://u:****@127.0.0.1:{port}/x: ",
        ),
        ("mysql://u:pw-secret@127.0.0.1/x", "✗ database: invalid value for database_url: 'mysql://u:****@127.0.0.1/x'"),
    ],
)
@pytest.mark.usefixtures("pg_driver")  # the driver is what reports an unreachable server
def test_bad_database_url_fails_masked(invoke, upstream, monkeypatch, closed_port, url, expected):
    monkeypatch.setenv("HERMES_DATABASE_URL", url.format(port=closed_port))

    result = invoke("doctor")

    assert result.exit_code == 1
    lines = _database_lines(result)
    assert len(lines) == 1 and lines[0].startswith(expected.format(port=closed_port)), lines
    assert "pw-secret" not in result.stdout


# --- tool limits ----------------------------------------------------------------------------


def limits_line(result) -> str:
    return next(line for line in result.stdout.splitlines() if line[2:].startswith("limits:"))


@pytest.mark.skipif(os.geteuid() != 0, reason="the pids cgroup is used when hermes runs as root")
def test_limits_enforced_by_a_pids_cgroup(invoke, monkeypatch, store, upstream):
    from hermes.agent.safety.limits import probe_pids_cgroup

    parent = probe_pids_cgroup(Path("/proc/self/mountinfo"))
    if not isinstance(parent, Path):
        pytest.skip(f"no writable pids cgroup here: {parent}")
    monkeypatch.setenv("HERMES_TOOL_PROCESSES", "64")
    monkeypatch.setenv("HERMES_TOOL_MEMORY_MB", "256")
    monkeypatch.setenv("HERMES_TOOL_CPU_SECONDS", "30")

    assert limits_line(invoke("doctor")) == (
        f"✓ limits: processes ≤ 64 per call (pids cgroup under {parent}); "
        "memory ≤ 256 MiB address space per process; CPU ≤ 30 s per process"
    )


@pytest.mark.skipif(os.geteuid() != 0, reason="RLIMIT_NPROC enforces the limit when hermes is not root")
def test_limits_not_enforceable_as_root_without_a_pids_cgroup_is_a_warning(
    invoke, monkeypatch, store, upstream, tmp_path
):
    mounts = tmp_path / "mountinfo"
    mounts.write_text("39 31 0:36 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n")
    monkeypatch.setattr("hermes.agent.safety.limits.MOUNTINFO", mounts)
    monkeypatch.delenv("HERMES_TOOL_PROCESSES")

    result = invoke("doctor")

    assert result.exit_code == 0
    assert limits_line(result) == (
        "! limits: processes: 512 asked but NOT enforced (hermes runs as root and no pids cgroup "
        "controller is mounted); memory: no limit; CPU: no limit"
    )


def test_local_provider_says_where_the_model_goes_before_it_is_assembled(invoke, monkeypatch, tmp_path):
    # Nothing is loaded or measured while the per-user cache is empty (the doctor stays quick).
    from hermes.agent.providers.local import local_available

    if not local_available():
        pytest.skip("the hermes[local] extra is not installed")
    cache = tmp_path / "model-cache"
    monkeypatch.setenv("HERMES_PROVIDER", "local")
    monkeypatch.setenv("HERMES_MODEL_CACHE", str(cache))

    result = invoke("doctor")

    model = [line for line in result.stdout.splitlines() if line.startswith("✓ model: ")]
    assert model == [
        f"✓ model: bundled model qwen2.5-coder-1.5b-instruct-q4_k_m (installed; assembled into "
        f"{cache / 'qwen2.5-coder-1.5b-instruct-q4_k_m.gguf'} on first use); speed is measured once it is assembled"
    ]
    assert not cache.exists()  # the doctor assembles nothing


def test_the_speed_estimate_adds_reading_and_writing():
    from hermes.agent.providers.local_speed import Speed

    speed = Speed(prompt_tokens=200, prompt_seconds=2.0, generated_tokens=30, generate_seconds=3.0, load_seconds=5.0)
    assert (speed.read_rate, speed.write_rate) == (100.0, 10.0)
    assert speed.typical_seconds() == 400 / 100 + 150 / 10


def test_commands_and_skills_are_listed_and_a_bad_skill_is_a_warning(invoke, store, monkeypatch, tmp_path):
    monkeypatch.setenv("HERMES_PROVIDER", "openai")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / ".hermes/commands").mkdir(parents=True)
    (project / ".hermes/commands/review.md").write_text("Review $1\n")
    (project / ".hermes/commands/help.md").write_text("Mine\n")
    for name, text in {
        "good": "---\nname: good\ndescription: Works.\n---\nbody\n",
        "plain": "no front matter\n",
        "bad": "---\nname: ../../etc\ndescription: x\n---\n",
    }.items():
        (project / ".hermes/skills" / name).mkdir(parents=True)
        (project / ".hermes/skills" / name / "SKILL.md").write_text(text)
    monkeypatch.chdir(project)

    result = invoke("doctor", "--json")

    checks = {c["name"]: c for c in json.loads(result.stdout)}
    assert checks["commands"]["status"] == "warning"
    assert checks["commands"]["detail"].startswith("2 for this folder: /help, /review;")
    assert "/help" in checks["commands"]["detail"] and "is ignored: a built-in command has that name" in (
        checks["commands"]["detail"]
    )
    skills = checks["skills"]
    assert skills["status"] == "warning" and skills["ok"] is True
    assert skills["detail"].startswith("1 for this folder: good;")
    assert "plain/SKILL.md: no front matter" in skills["detail"]
    assert "bad name '../../etc'" in skills["detail"]


def test_agents_are_listed_and_an_unusable_one_is_a_warning(invoke, store, monkeypatch, tmp_path):
    monkeypatch.setenv("HERMES_PROVIDER", "openai")
    monkeypatch.setenv("HOME", str(tmp_path / "user"))
    project = tmp_path / "project"
    (project / ".git").mkdir(parents=True)
    (project / ".claude/agents").mkdir(parents=True)
    (project / ".claude/agents/reviewer.md").write_text("---\ndescription: Reviews\ntools: Read\n---\nReview.\n")
    (project / ".claude/agents/vague.md").write_text("---\nname: vague\n---\nNo description.\n")
    monkeypatch.chdir(project)

    checks = {c["name"]: c for c in json.loads(invoke("doctor", "--json").stdout)}
    agents = checks["agents"]
    assert agents["status"] == "warning" and agents["detail"].startswith("1 for this folder: reviewer;")
    assert "vague.md: no description" in agents["detail"]

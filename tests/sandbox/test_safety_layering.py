"""Layering: hermes/agent/safety, the tool policy, sits below the tools (checked statically).

The tools depend on the policy, never the reverse: hermes/agent/safety imports nothing else of
the engine (not the tools, their registry or their base, not the engine's turn), no front end
and no run service. The policy's modules live only there: none is left (or shimmed) among the
tools or at the top of hermes/agent.
"""

from __future__ import annotations

from pathlib import Path

from layering import PACKAGE, offending

SAFETY = PACKAGE / "agent" / "safety"
FRONT_ENDS = ("hermes.server", "hermes.tui", "hermes.cli", "hermes.acp", "hermes.remote", "hermes.backend",
              "hermes.runtime", "hermes.runs", "hermes.testing")  # fmt: skip
POLICY_MODULES = ("sandbox", "confinement", "verdict", "grants", "restore_guard", "runs_later", "approval",
                  "command_rules", "shell_syntax", "protected_paths", "secret_reads", "tool_env", "limits",
                  "launch", "_supervisor")  # fmt: skip


def safety_paths() -> list[Path]:
    paths = sorted(SAFETY.rglob("*.py"))
    assert paths
    return paths


def test_allowed_spares_only_the_package_itself() -> None:
    secret_reads = [SAFETY / "secret_reads.py"]
    hits = offending(secret_reads, ("hermes.agent",))["hermes.agent.safety.secret_reads"]
    assert "hermes.agent.safety.approval" in hits
    assert offending(secret_reads, ("hermes.agent",), allowed=("hermes.agent.safety",)) == {}
    assert offending(secret_reads, ("hermes.agent",), allowed=("hermes.agent.safety.approval",)) != {}


def test_the_policy_imports_nothing_of_the_engine_but_itself() -> None:
    assert offending(safety_paths(), ("hermes.agent",), allowed=("hermes.agent.safety",)) == {}


def test_the_policy_imports_no_tool_module() -> None:
    assert offending(safety_paths(), ("hermes.agent.tools",)) == {}


def test_the_policy_imports_no_front_end_or_run_service() -> None:
    assert offending(safety_paths(), FRONT_ENDS) == {}


def test_the_policy_lives_only_in_the_safety_folder() -> None:
    for name in POLICY_MODULES:
        assert (SAFETY / f"{name}.py").is_file(), name
        assert not (PACKAGE / "agent" / f"{name}.py").exists(), name
        assert not (PACKAGE / "agent" / "tools" / f"{name}.py").exists(), name


def test_the_tools_reach_the_policy_only_through_the_safety_folder() -> None:
    old = tuple(f"hermes.agent.{n}" for n in POLICY_MODULES) + tuple(f"hermes.agent.tools.{n}" for n in POLICY_MODULES)
    everywhere = sorted(p for p in PACKAGE.rglob("*.py") if "safety" not in p.parts)
    assert offending(everywhere, old) == {}

"""Agent definition files: front matter, tool lists in both YAML forms, Claude Code's tool
names, precedence, and files that cannot be used (a symlink out of the folder, no description)."""

from __future__ import annotations

from pathlib import Path

from hermes.agent.subagents.definitions import load_agents
from hermes.agent.subagents.task import task_description


def _write(folder: Path, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def test_front_matter_lists_and_claude_names(tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "home"
    _write(
        project / ".claude" / "agents",
        "reviewer.md",
        "---\nname: Reviewer\ndescription: Reviews code\ntools: Read, Grep, Glob, Bash\nmodel: inherit\n---\nReview.\n",
    )
    _write(
        project / ".hermes" / "agents",
        "writer.md",
        "---\ndescription: Writes\ntools:\n  - write_file\n  - patch\nmodel: gpt-x\n---\nWrite.\n",
    )
    _write(project / ".hermes" / "agents", "plain.md", "---\ndescription: Plain\n---\nJust read.\n")
    catalog = load_agents(home, project, user_home=home)
    assert [a.name for a in catalog.agents] == ["plain", "reviewer", "writer"]
    reviewer, writer, plain = catalog.get("reviewer"), catalog.get("WRITER"), catalog.get("plain")
    assert reviewer is not None and writer is not None and plain is not None
    assert reviewer.tools == ("read_file", "search_files", "list_files", "terminal") and reviewer.model is None
    assert writer.tools == ("write_file", "patch") and writer.model == "gpt-x" and writer.prompt == "Write."
    assert plain.tools is None
    assert "- reviewer: Reviews code" in task_description(catalog)


def test_project_agent_wins_over_the_users(tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "home"
    _write(project / ".hermes" / "agents", "a.md", "---\ndescription: project one\n---\nP.\n")
    _write(home / "agents", "a.md", "---\ndescription: user one\n---\nU.\n")
    _write(home / "agents", "b.md", "---\ndescription: user only\n---\nU.\n")
    catalog = load_agents(home, project, user_home=home)
    a, b = catalog.get("a"), catalog.get("b")
    assert a is not None and a.description == "project one" and a.place.scope == "project"
    assert b is not None and b.place.scope == "user"


def test_unusable_files_are_reported_not_loaded_attack(tmp_path: Path) -> None:
    project, home = tmp_path / "p", tmp_path / "home"
    secret = _write(tmp_path / "elsewhere", "secret.md", "---\ndescription: stolen\n---\nSECRET\n")
    folder = project / ".hermes" / "agents"
    folder.mkdir(parents=True)
    (folder / "link.md").symlink_to(secret)
    _write(folder, "nodesc.md", "---\nname: nodesc\n---\nBody.\n")
    _write(folder, "open.md", "---\ndescription: never closed\nBody.\n")
    _write(folder, "badtool.md", "---\ndescription: x\ntools: read_file, $(rm -rf)\n---\nBody.\n")
    (tmp_path / "linked").mkdir()
    _write(tmp_path / "linked", "x.md", "---\ndescription: via a linked folder\n---\nX.\n")
    (project / ".claude").mkdir()
    (project / ".claude" / "agents").symlink_to(tmp_path / "linked")
    catalog = load_agents(home, project, user_home=home)
    assert catalog.agents == ()
    reasons = {p.path.name: p.reason for p in catalog.problems}
    assert set(reasons) == {"link.md", "nodesc.md", "open.md", "badtool.md"}
    assert "symlink" in reasons["link.md"] and "description" in reasons["nodesc.md"]

"""Custom commands, skills and their front matter, read from real folders in tmp_path.

Every test gets its own HOME (for ~/.claude) and a project folder with a `.git`, so the
project chain stops there. The attacks: symlinks out of a folder, huge files, bad names,
a skill name that is a path.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hermes.extensions.commands import MAX_COMMAND_BYTES, CustomCommand, expand, load_commands
from hermes.extensions.files import Refused
from hermes.extensions.frontmatter import FrontMatterError, parse
from hermes.extensions.invoke import resolve
from hermes.extensions.places import Place
from hermes.extensions.skills import (
    MAX_SKILL_BYTES,
    load_skills,
    prompt_section,
    read_body,
    read_skill_file,
)


@pytest.fixture
def user_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "user"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.fixture
def project(tmp_path: Path) -> Path:
    folder = tmp_path / "project"
    (folder / ".git").mkdir(parents=True)
    return folder


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def skill_md(name: str, description: str, body: str = "Do the thing.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n{body}\n"


# ---- front matter -----------------------------------------------------------------------


def test_front_matter_plain_quoted_folded_and_block_values() -> None:
    text = (
        "---\n"
        "description: Review a file  # trailing comment\n"
        "argument-hint: '[file] [focus]'\n"
        'Title: "say \\"hi\\""\n'
        "long: first part\n"
        "  second part\n"
        "block: |\n"
        "  line one\n"
        "  line two\n"
        "allowed-tools:\n"
        "  - Bash(git:*)\n"
        "---\n"
        "Body $ARGUMENTS\n"
    )
    document = parse(text)
    assert document.has_front_matter
    assert document.fields == {
        "description": "Review a file",
        "argument-hint": "[file] [focus]",
        "title": 'say "hi"',
        "long": "first part second part",
        "block": "line one\nline two",
    }
    assert document.body == "Body $ARGUMENTS\n"


def test_no_front_matter_is_all_body_and_an_unclosed_one_is_an_error() -> None:
    assert parse("Just text\n---\n").fields == {}
    assert not parse("Just text").has_front_matter
    with pytest.raises(FrontMatterError):
        parse("---\ndescription: x\nno end\n")


# ---- commands ---------------------------------------------------------------------------


def command(body: str) -> CustomCommand:
    return CustomCommand("x", "", "", body, Path("x.md"), Place(Path("."), "project"))


def test_arguments_and_positionals_are_replaced_in_one_pass() -> None:
    expanded = expand(command("Fix $1 in $2 ($ARGUMENTS); $9 is empty."), "'issue 7' src/app.py $ARGUMENTS $1")
    assert expanded == "Fix issue 7 in src/app.py ('issue 7' src/app.py $ARGUMENTS $1);  is empty."
    # no placeholder: the arguments are appended; no arguments: the body alone
    assert expand(command("Review the diff."), "carefully") == "Review the diff.\n\nARGUMENTS: carefully"
    assert expand(command("Review the diff."), "") == "Review the diff."
    # unbalanced quotes fall back to white space
    assert expand(command("$1|$2"), "it's fine") == "it's|fine"


def test_commands_from_every_folder_project_first(project: Path, user_home: Path, hermes_home: Path) -> None:
    write(project / ".hermes/commands/review.md", "---\ndescription: Project review\n---\nProject: $ARGUMENTS\n")
    write(hermes_home / "commands/review.md", "---\ndescription: User review\n---\nUser: $ARGUMENTS\n")
    write(project / ".claude/commands/git/commit.md", "Commit with message $1\n")
    write(user_home / ".claude/commands/hello.md", "---\nargument-hint: [name]\n---\nSay hello to $1.\n")
    sub = project / "src"
    sub.mkdir()
    catalog = load_commands(hermes_home, sub)
    assert [c.name for c in catalog.commands] == ["git:commit", "hello", "review"]
    review = catalog.get("REVIEW")
    assert review is not None and review.description == "Project review" and review.place.scope == "project"
    assert [c.description for c in catalog.shadowed] == ["User review"]
    hello = catalog.get("hello")
    assert hello is not None and hello.argument_hint == "[name]" and hello.description == "Say hello to $1."
    commit = catalog.get("git:commit")
    assert commit is not None and expand(commit, '"fix: it"') == "Commit with message fix: it"


def test_a_changed_command_file_is_read_again(project: Path, user_home: Path, hermes_home: Path) -> None:
    path = write(project / ".hermes/commands/one.md", "First\n")
    assert load_commands(hermes_home, project).commands[0].body == "First\n"
    path.write_text("Second version\n")
    assert load_commands(hermes_home, project).commands[0].body == "Second version\n"


def test_command_attacks_are_skipped_and_reported(
    project: Path, user_home: Path, hermes_home: Path, tmp_path: Path
) -> None:
    secret = write(tmp_path / "secret.txt", "TOP SECRET\n")
    folder = project / ".hermes/commands"
    folder.mkdir(parents=True)
    os.symlink(secret, folder / "leak.md")
    write(tmp_path / "outside/cmds/inner.md", "inner\n")
    os.symlink(tmp_path / "outside/cmds", folder / "linked")  # a symlinked folder is not entered
    write(folder / "huge.md", "x" * (MAX_COMMAND_BYTES + 1))
    write(folder / "broken.md", "---\ndescription: never closed\n")
    write(folder / "-dash.md", "bad name\n")
    write(folder / "empty.md", "---\ndescription: nothing\n---\n\n")
    os.mkfifo(folder / "fifo.md")  # never opened for a blocking read
    write(folder / "inside.md", "fine\n")
    os.symlink(folder / "inside.md", folder / "alias.md")  # a symlink inside the folder is fine
    catalog = load_commands(hermes_home, project)
    assert [c.name for c in catalog.commands] == ["alias", "inside"]
    reasons = {problem.path.name: problem.reason for problem in catalog.problems}
    assert "outside" in reasons["leak.md"]
    assert "over the cap" in reasons["huge.md"]
    assert "never closed" in reasons["broken.md"]
    assert "name" in reasons["-dash.md"]
    assert "empty" in reasons["empty.md"]
    assert "not a regular file" in reasons["fifo.md"]
    assert all("TOP SECRET" not in c.body for c in catalog.commands)


# ---- skills -----------------------------------------------------------------------------


def test_skills_from_every_folder_sorted_project_first(project: Path, user_home: Path, hermes_home: Path) -> None:
    write(project / ".hermes/skills/zeta/SKILL.md", skill_md("zeta", "Last by name."))
    write(project / ".agents/skills/alpha/SKILL.md", skill_md("alpha", "Project alpha.", "PROJECT BODY"))
    write(project / ".claude/skills/mid/SKILL.md", skill_md("mid", "From Claude's folder."))
    write(hermes_home / "skills/alpha/SKILL.md", skill_md("alpha", "User alpha."))
    write(user_home / ".claude/skills/own/SKILL.md", skill_md("own", "A user's Claude skill."))
    catalog = load_skills(hermes_home, project)
    assert [(s.name, s.place.scope) for s in catalog.skills] == [
        ("alpha", "project"),
        ("mid", "project"),
        ("own", "user"),
        ("zeta", "project"),
    ]
    assert [s.description for s in catalog.shadowed] == ["User alpha."]
    section = prompt_section(catalog)
    assert "- alpha: Project alpha.\n- mid: From Claude's folder.\n- own: A user's Claude skill.\n- zeta:" in section
    assert "PROJECT BODY" not in section
    alpha = catalog.get("alpha")
    assert alpha is not None and read_body(alpha) == "PROJECT BODY"
    assert load_skills(hermes_home, project) == catalog  # the same listing again (the prompt stays the same)


def test_invalid_skills_are_skipped_with_a_reason(project: Path, user_home: Path, hermes_home: Path) -> None:
    skills = project / ".hermes/skills"
    write(skills / "plain/SKILL.md", "No front matter at all.\n")
    write(skills / "badname/SKILL.md", skill_md("Bad_Name", "x"))
    write(skills / "traversal/SKILL.md", skill_md("../../etc", "x"))
    write(skills / "nodesc/SKILL.md", "---\nname: nodesc\n---\nbody\n")
    write(skills / "open/SKILL.md", "---\nname: open\n")
    write(skills / "huge/SKILL.md", skill_md("huge", "x", "y" * MAX_SKILL_BYTES))
    write(skills / "good/SKILL.md", skill_md("good", "Works."))
    (skills / "no-skill-file").mkdir()
    catalog = load_skills(hermes_home, project)
    assert [s.name for s in catalog.skills] == ["good"]
    reasons = {problem.path.parent.name: problem.reason for problem in catalog.problems}
    assert set(reasons) == {"plain", "badname", "traversal", "nodesc", "open", "huge"}
    assert "no front matter" in reasons["plain"]
    assert "bad name" in reasons["badname"] and "bad name" in reasons["traversal"]
    assert "description" in reasons["nodesc"]
    assert "over the cap" in reasons["huge"]


def test_skill_symlinks_out_of_their_folder_are_refused(
    project: Path, user_home: Path, hermes_home: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "elsewhere"
    write(outside / "SKILL.md", skill_md("elsewhere", "Outside the project."))
    write(outside / "secret.txt", "TOP SECRET\n")
    skills = project / ".hermes/skills"
    skills.mkdir(parents=True)
    os.symlink(outside, skills / "elsewhere")  # a project's skill folder linking out: refused
    write(skills / "linked-file/notes.txt", "x")
    os.symlink(outside / "SKILL.md", skills / "linked-file/SKILL.md")  # SKILL.md linking out: refused
    write(skills / "fine/SKILL.md", skill_md("fine", "Stays inside."))
    write(skills / "fine/ref.md", "REFERENCE\n")
    os.symlink(outside / "secret.txt", skills / "fine/leak.txt")
    # a user's skill folder may be a symlink (a dotfiles checkout)
    (user_home / ".claude/skills").mkdir(parents=True)
    os.symlink(outside, user_home / ".claude/skills/elsewhere")
    catalog = load_skills(hermes_home, project)
    assert [(s.name, s.place.scope) for s in catalog.skills] == [("elsewhere", "user"), ("fine", "project")]
    refused = {problem.path.parent.name: problem.reason for problem in catalog.problems}
    assert "outside" in refused["elsewhere"] and "outside" in refused["linked-file"]
    fine = catalog.get("fine")
    assert fine is not None
    assert read_skill_file(fine, "ref.md") == "REFERENCE\n"
    for attack in ("leak.txt", "../../elsewhere/secret.txt", str(outside / "secret.txt"), "", "a/../../x"):
        with pytest.raises(Refused):
            read_skill_file(fine, attack)
    assert catalog.get("../fine") is None and catalog.get("../../etc/passwd") is None


def test_resolve_prefers_a_command_and_never_a_reserved_name(
    project: Path, user_home: Path, hermes_home: Path
) -> None:
    write(project / ".hermes/commands/help.md", "Custom help\n")
    write(project / ".hermes/commands/deploy.md", "Deploy $1\n")
    write(project / ".hermes/skills/deploy/SKILL.md", skill_md("deploy", "Skill deploy."))
    write(project / ".hermes/skills/notes/SKILL.md", skill_md("notes", "Keep notes."))
    commands, skills = load_commands(hermes_home, project), load_skills(hermes_home, project)
    assert resolve("/help me", commands, skills, {"help"}) is None
    deploy = resolve("/deploy prod", commands, skills, {"help"})
    assert deploy is not None and deploy.kind == "command" and deploy.prompt == "Deploy prod"
    notes = resolve("/notes on the API", commands, skills, {"help"})
    assert notes is not None and notes.kind == "skill"
    assert '"name": "notes"' in notes.prompt and notes.prompt.endswith("on the API")
    assert resolve("/etc/hosts", commands, skills) is None and resolve("/nothing", commands, skills) is None


def test_counts_are_capped(
    project: Path, user_home: Path, hermes_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import hermes.extensions.commands as commands_module
    import hermes.extensions.skills as skills_module

    monkeypatch.setattr(commands_module, "MAX_COMMANDS", 3)
    monkeypatch.setattr(skills_module, "MAX_SKILLS", 2)
    for index in range(5):
        write(project / f".hermes/commands/c{index}.md", f"command {index}\n")
        write(project / f".hermes/skills/s{index}/SKILL.md", skill_md(f"s{index}", f"Skill {index}."))
    write(hermes_home / "commands/late.md", "never read\n")
    commands = load_commands(hermes_home, project)
    assert [c.name for c in commands.commands] == ["c0", "c1", "c2"]
    assert any("over 3 command files" in p.reason for p in commands.problems)
    skills = load_skills(hermes_home, project)
    assert [s.name for s in skills.skills] == ["s0", "s1"]
    assert any("over 2 skills" in p.reason for p in skills.problems)

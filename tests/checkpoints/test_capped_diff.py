"""A turn's diff is read from git up to the cap and no further: git is stopped there, and
the reader never holds much more than the cap (a read-everything-then-slice would)."""

from __future__ import annotations

import asyncio
import tracemalloc
from pathlib import Path

from hermes.checkpoints.shadow import ShadowRepo, read_capped

LINES = 900_000  # `seq 1 900000`: about 6.2 MB, a diff of about 7 MB


async def _big_change(work: Path, home: Path) -> tuple[ShadowRepo, str, str]:
    repo = ShadowRepo.for_worktree(home, work, max_file_kb=0)
    before = await repo.snapshot()
    (work / "big.txt").write_text("".join(f"{n}\n" for n in range(1, LINES + 1)))
    after = await repo.snapshot()
    return repo, before.commit, after.commit


async def test_a_huge_diff_is_cut_without_being_read_whole(work: Path, home: Path) -> None:
    repo, before, after = await _big_change(work, home)
    limit = 1_000_000
    tracemalloc.start()
    try:
        capped = await repo.diff_capped(before, after, limit)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert capped.truncated is True
    assert len(capped.text.encode()) == limit
    assert peak < 3.5 * limit  # chunks, their join and the text: never the 7 MB git had to say
    whole = await repo.diff(before, after)
    assert len(whole) > 6 * limit
    assert whole.startswith(capped.text)

    files, cut = await repo.numstat_capped(before, after, limit)
    assert (cut, [(f.path, f.added) for f in files]) == (False, [("big.txt", LINES)])


async def test_the_cap_is_exact_at_the_edge(work: Path, home: Path) -> None:
    repo = ShadowRepo.for_worktree(home, work)
    before = (await repo.snapshot()).commit
    (work / "a.txt").write_text("changed\n")
    after = (await repo.snapshot()).commit
    whole = (await repo.diff(before, after)).encode()
    at = await repo.diff_capped(before, after, len(whole))
    assert (at.text.encode(), at.truncated) == (whole, False)
    under = await repo.diff_capped(before, after, len(whole) - 1)
    assert (under.text.encode(), under.truncated) == (whole[:-1], True)
    files, cut = await repo.numstat_capped(before, after, 5)  # a record cut midway is dropped whole
    assert (files, cut) == ([], True)


async def test_read_capped_stops_reading_at_the_cap() -> None:
    stream = asyncio.StreamReader()
    stream.feed_data(b"x" * 100)
    stream.feed_data(b"y" * 100)  # never fed EOF: a reader that waited for it would hang
    data, cut = await asyncio.wait_for(read_capped(stream, 150), 5)
    assert (len(data), cut) == (150, True)

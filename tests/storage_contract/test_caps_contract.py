"""Capabilities: what a storage can do is asked through `Storage.caps`, never its name."""

from __future__ import annotations

from pathlib import Path

from hermes.store.api import Storage, caps_of
from hermes.store.event_stream import MemoryRunEventStore


async def test_caps_are_known_before_opening(storage: Storage) -> None:
    assert storage.caps == caps_of(storage.backend)


async def test_caps_answer_what_the_storage_does(storage: Storage) -> None:
    caps = storage.caps
    assert caps.local_files == Path(storage.location).is_dir()
    # Events that do not survive their process live in it.
    assert caps.run_events_survive_process != isinstance(storage.run_events, MemoryRunEventStore)
    # Only storage shared by several processes holds the runs of others.
    assert caps.shared_runs <= caps.multi_instance


"""Held-out tasks for `bench/bench_local.py --suite --set unseen` (see bench/local_suite.py)."""

from __future__ import annotations

from local_suite import SuiteTask

UNSEEN: tuple[SuiteTask, ...] = ()

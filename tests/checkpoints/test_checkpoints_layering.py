"""Layering: hermes/checkpoints sits between the store and the engine (checked statically).

It may import the store, errors and config; never the engine or anything above it. The
store, in turn, never imports hermes/checkpoints.
"""

from __future__ import annotations

from layering import PACKAGE, offending

ABOVE_THE_CHECKPOINTS = ("hermes.agent", "hermes.runs", "hermes.runtime", "hermes.server", "hermes.cli", "hermes.tui",
                         "hermes.testing")  # fmt: skip


def test_checkpoints_import_nothing_above_them() -> None:
    paths = sorted((PACKAGE / "checkpoints").rglob("*.py"))
    assert paths
    assert offending(paths, ABOVE_THE_CHECKPOINTS) == {}


def test_the_store_does_not_import_the_checkpoints() -> None:
    assert offending(sorted((PACKAGE / "store").rglob("*.py")), ("hermes.checkpoints",)) == {}

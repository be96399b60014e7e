"""The run service: admitted turns, their registry, journal, driver and sweeper.

Invariant: nothing in `hermes.runs` imports aiohttp or any front end (`hermes.server`,
`hermes.tui`, `hermes.cli`); the HTTP layer adapts it, never the other way round
(`tests/runs/test_runs_layering.py` checks every import statically).
"""

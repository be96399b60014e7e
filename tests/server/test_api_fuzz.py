"""Schema-based fuzzing of a real `hermes serve` process from its own /openapi.json.

Every documented operation is driven by schemathesis (valid and invalid bodies,
headers, path parameters); no request may produce a 5xx. The model is a scripted
upstream that always answers, so valid requests run real turns end to end.

`test_schemathesis_run_checks_all` is `schemathesis run --checks all` in both modes
(positive and negative cases, every phase): the document and the validation agree —
schema-valid requests are accepted, schema-violating ones rejected, responses (SSE
included) match their documented schemas. The example count is bounded (seeded, so a
failure reproduces) to keep it near a minute.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from hypothesis import HealthCheck, settings
from schemathesis.checks import not_a_server_error

from hermes.testing.upstream import ScriptedUpstream, text_reply

KEY = "sk-fuzz-key"
AUTH = {"Authorization": f"Bearer {KEY}"}


@pytest.fixture(scope="module")
def hermes_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    home = tmp_path_factory.mktemp("fuzz-home")
    with ScriptedUpstream.in_thread() as upstream:
        upstream.default = text_reply("fuzzed ok")
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "API_SERVER_", "OPENAI_"))},
            "HERMES_HOME": str(home),
            "HERMES_BASE_URL": upstream.base_url,
            "HERMES_MODEL": upstream.model,
            "HERMES_API_KEY": "sk-upstream",
            "HERMES_STREAM_RETRIES": "0",
            "API_SERVER_KEY": KEY,
            "HERMES_SANDBOX": "off",
        }
        proc = subprocess.Popen(
            [sys.executable, "-m", "hermes", "serve", "--port", "0"],
            env=env,
            cwd=str(home),
            stderr=subprocess.PIPE,
            text=True,
        )
        drain: threading.Thread | None = None
        try:
            assert proc.stderr is not None
            url = None
            for line in proc.stderr:
                match = re.search(r"listening on (http://\S+)", line)
                if match:
                    url = match.group(1)
                    break
            assert url, "hermes serve did not start"
            # Keep reading stderr so a chatty server never blocks on a full pipe.
            drain = threading.Thread(target=proc.stderr.read, daemon=True)
            drain.start()
            yield url
        finally:
            proc.terminate()
            proc.wait(10)
            if drain is not None:
                drain.join(10)  # the server has exited: its stderr is at end of file
            if proc.stderr is not None:
                proc.stderr.close()


RUN_EXAMPLES = os.environ.get("HERMES_FUZZ_RUN_EXAMPLES", "15")
RUN_SEED = os.environ.get("HERMES_FUZZ_SEED", "20261126")
SCHEMATHESIS_RUN_TIMEOUT = 420
"""Seconds for one schemathesis run over every operation (a loaded 2-core machine needs minutes)."""


TURN_OPERATIONS = ("createChatCompletion", "createResponse", "createRun")
"""The turn of these is the *last* input item, and it must show something. JSON Schema cannot say
"the last item" (only "some item": `contains`, which the document states), so schema-valid bodies
whose last item is blank are rejected by design: these skip the positive-acceptance check only."""

LITERAL_OPERATIONS = ("undoSessionTurns",)
"""`turns` takes an integer literal only (`1`, never `1.0` or `1e3`), but JSON Schema counts
`355.0` as an integer: schema-valid bodies written with a float are rejected by design, so
these skip the positive-acceptance check only, like TURN_OPERATIONS."""


def schemathesis_run(url: str, cwd: Path, *selection: str) -> None:
    command = [
        sys.executable, "-m", "schemathesis.cli", "run", f"{url}/openapi.json",
        "--header", f"Authorization: Bearer {KEY}",
        "--checks", "all",
        "--mode", "all",
        "--max-examples", RUN_EXAMPLES,
        "--seed", RUN_SEED,
        "--request-timeout", "30",
        "--suppress-health-check", "all",
        "--no-color",
        *selection,
    ]
    done = subprocess.run(command, cwd=str(cwd), capture_output=True, text=True, timeout=600)
    report = done.stdout[-20000:] + done.stderr[-5000:]
    assert done.returncode == 0, report


@pytest.mark.timeout(SCHEMATHESIS_RUN_TIMEOUT)
def test_schemathesis_run_checks_all(hermes_url: str, tmp_path: Path) -> None:
    excluded = [arg for op in TURN_OPERATIONS + LITERAL_OPERATIONS for arg in ("--exclude-operation-id", op)]
    schemathesis_run(hermes_url, tmp_path, *excluded)


@pytest.mark.timeout(SCHEMATHESIS_RUN_TIMEOUT)
def test_schemathesis_run_checks_all_turn_operations(hermes_url: str, tmp_path: Path) -> None:
    included = [arg for op in TURN_OPERATIONS + LITERAL_OPERATIONS for arg in ("--include-operation-id", op)]
    schemathesis_run(hermes_url, tmp_path, *included, "--exclude-checks", "positive_data_acceptance")


@pytest.fixture(scope="module")
def api_schema(hermes_url: str):
    return schemathesis.openapi.from_url(f"{hermes_url}/openapi.json", headers=AUTH)


schema = schemathesis.pytest.from_fixture("api_schema")


@pytest.mark.timeout(SCHEMATHESIS_RUN_TIMEOUT)
@schema.parametrize()
@settings(
    max_examples=int(os.environ.get("HERMES_FUZZ_EXAMPLES", "20")),
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
)
def test_no_server_errors(case, hermes_url: str) -> None:
    response = case.call(base_url=hermes_url, headers=AUTH, timeout=60)
    case.validate_response(response, checks=[not_a_server_error])

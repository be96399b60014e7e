"""Tasks of `bench/local_suite.py` through `hermes chat -q --yolo --json` with the bundled model.

Marked local_llm: the real model, in a real subprocess, in a folder holding the task's files.
What is asserted holds for any run of the model: the turn ends cleanly, its answer is never
the request handed back or hermes' steering notes (an answer hermes wrote says so), and the
questions this model answers on every machine we measured are answered right.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from hermes.agent.turn_facts import HERMES_MARK

pytestmark = [pytest.mark.local_llm, pytest.mark.timeout(900)]

STEERING_WORDS = (
    "Do not just undo your edit",
    "The current content of",
    "already passed after your last change",
    "Your edit is kept",
    "with reply if this result is enough",
    "Answer every message with exactly one JSON object",
    "so hermes undid it",
    "That patch changes nothing",
    "every use is changed",
    "pytest found no tests. It runs functions",
)


def suite_module() -> ModuleType:
    path = Path(__file__).resolve().parents[2] / "bench" / "local_suite.py"
    spec = importlib.util.spec_from_file_location("local_suite", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("local_suite", module)
    spec.loader.exec_module(module)
    return module


def task(name: str) -> Any:
    suite = suite_module()
    return next(t for t in (*suite.OWN, *suite.REWORDED, *suite.OTHER_KINDS) if t.name == name)


def run_task(name: str, folder: Path, home: Path) -> tuple[Any, subprocess.CompletedProcess[str], dict[str, Any]]:
    if importlib.util.find_spec("xllamacpp") is None:
        pytest.fail("the local_llm tests need the hermes[local] extra: pip install -e '.[local]'")
    chosen = task(name)
    for relative, text in chosen.files.items():
        (folder / relative).parent.mkdir(parents=True, exist_ok=True)
        (folder / relative).write_text(text, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "OPENAI_"))}
    env.update(HERMES_HOME=str(home), HERMES_PROVIDER="local", HERMES_MODEL_CACHE=os.environ["HERMES_MODEL_CACHE"])
    prompt = chosen.prompt
    proc = subprocess.run(
        [sys.executable, "-m", "hermes", "chat", "-q", prompt, "--yolo", "--json"],
        capture_output=True, text=True, env=env, cwd=folder, timeout=600, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    result = next((line for line in lines if line.get("type") == "result"), {})
    return chosen, proc, result


def assert_an_answer_of_its_own(prompt: str, result: dict[str, Any]) -> str:
    answer = str(result.get("final_text") or "")
    assert answer.strip(), result
    assert " ".join(answer.split()).lower() != " ".join(prompt.split()).lower()
    if result.get("answer_by") == "hermes":
        assert answer.startswith(HERMES_MARK)
    else:
        assert result.get("answer_by") == "model"
        assert not any(words in answer for words in STEERING_WORDS), answer
    return answer


@pytest.mark.parametrize("name", ["rw-read-config", "rw-find-definition"])
def test_questions_in_other_words_are_answered(name: str, tmp_path: Path, hermes_home: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    chosen, proc, result = run_task(name, folder, hermes_home)
    assert proc.returncode == 0, proc.stderr[-2000:]
    answer = assert_an_answer_of_its_own(chosen.prompt, result)
    for wanted in chosen.answer_has:
        assert wanted.lower() in answer.lower(), answer
    for relative, text in chosen.files.items():
        assert (folder / relative).read_text(encoding="utf-8") == text  # a question changes nothing


@pytest.mark.parametrize("name", ["rw-fix-import", "ok-crash-second-module"])
def test_a_fix_ends_cleanly_with_a_true_answer(name: str, tmp_path: Path, hermes_home: Path) -> None:
    folder = tmp_path / "project"
    folder.mkdir()
    chosen, proc, result = run_task(name, folder, hermes_home)
    assert proc.returncode in (0, 1), proc.stderr[-2000:]  # 1: a partial turn (it ran out of steps)
    assert result.get("status") in ("completed", "partial"), result
    assert_an_answer_of_its_own(chosen.prompt, result)

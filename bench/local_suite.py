"""The task sets of `bench/bench_local.py --suite`: small coding tasks for the bundled model.

Each task is a folder of files, a request, and how to judge what the turn left behind:
`check` (Python run in the folder; exit 0 means done), `answer_has` (strings the final
answer must contain), `unchanged` (a question: every file must be left as it was).

    OWN          the first eight, written with the JSON-action adapter (read a config
                 value, fix a failing test, add a function, rename across two files,
                 create a file, find a definition, fix an import, summarise a file)
    REWORDED     the same kinds in other words and other files (no backticks, no
                 "so that X passes" phrasing)
    OTHER_KINDS  tasks of kinds the adapter was not written for (a change deep in a long
                 module, a crash caused in a second module, a new unit test, a CLI flag,
                 a config value moved out of code, a question over several files, a
                 signature change with its callers, a fix noted in a changelog)
    UNSEEN       `bench/local_suite_unseen.py`: written by someone who did not read the
                 adapter's code, and not used while tuning it
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class SuiteTask:
    """One task of the suite: the files to start from, the request, and how to judge it."""

    name: str
    prompt: str
    files: dict[str, str]
    check: str | None = None
    """Python run in the task folder after the turn; exit status 0 means done."""
    answer_has: tuple[str, ...] = ()
    """Strings the final answer must contain (any case)."""
    unchanged: bool = False
    """The task is a question: every file must be left as it was."""
    solution: dict[str, str] | None = None
    """Files that, written over `files`, do the task (`--verify-tasks` checks that the check
    fails on `files` and passes on this); None for questions."""


OWN: tuple[SuiteTask, ...] = (
    SuiteTask(
        "read-config",
        "What port does server.ini configure for http? Answer with the number only.",
        {"server.ini": "[http]\nhost = 0.0.0.0\nport = 8317\n\n[admin]\nport = 9090\n"},
        answer_has=("8317",),
        unchanged=True,
    ),
    SuiteTask(
        "fix-failing-test",
        "The tests fail. Fix the bug in stats.py so that `python -m pytest -q` passes.",
        {
            "stats.py": "def mean(values):\n    return sum(values) / (len(values) - 1)\n",
            "test_stats.py": "from stats import mean\n\n\ndef test_mean():\n    assert mean([2, 4, 6]) == 4\n",
        },
        check="import subprocess, sys; sys.exit(subprocess.run([sys.executable, '-m', 'pytest', '-q']).returncode)",
    ),
    SuiteTask(
        "add-function",
        "Add a function `is_even(n: int) -> bool` to mathx.py that returns True when n is even.",
        {"mathx.py": "def square(n: int) -> int:\n    return n * n\n"},
        check="import mathx; assert mathx.is_even(4) and not mathx.is_even(7) and mathx.square(3) == 9",
    ),
    SuiteTask(
        "rename-two-files",
        "Rename the function fetch_rows to load_rows in db.py and in report.py, which calls it.",
        {
            "db.py": "def fetch_rows():\n    return [1, 2, 3]\n",
            "report.py": "from db import fetch_rows\n\n\ndef total():\n    return sum(fetch_rows())\n",
        },
        check="import db, report; assert report.total() == 6 and db.load_rows() and not hasattr(db, 'fetch_rows')",
    ),
    SuiteTask(
        "create-file",
        "Create a file named VERSION that contains exactly 2.4.1 followed by a newline.",
        {"README.md": "# tool\n"},
        check="import pathlib; assert pathlib.Path('VERSION').read_text() == '2.4.1\\n'",
    ),
    SuiteTask(
        "find-definition",
        "Which file defines the class InvoiceBuilder? Answer with its path.",
        {
            "app.py": "from billing.builder import InvoiceBuilder\n\nprint(InvoiceBuilder().build())\n",
            "billing/__init__.py": "",
            "billing/builder.py": "class InvoiceBuilder:\n    def build(self):\n        return 'invoice'\n",
            "billing/tax.py": "RATE = 0.2\n",
        },
        answer_has=("builder.py",),
        unchanged=True,
    ),
    SuiteTask(
        "fix-import",
        "main.py fails with an ImportError. Fix the import so that `python main.py` prints 42.",
        {
            "helpers.py": "def answer():\n    return 42\n",
            "main.py": "from helper import answer\n\nprint(answer())\n",
        },
        check=(
            "import subprocess, sys; out = subprocess.run([sys.executable, 'main.py'], capture_output=True, text=True)"
            "; assert out.stdout.strip() == '42', out"
        ),
    ),
    SuiteTask(
        "summarise-file",
        "Summarise in one line what jobs.py does.",
        {
            "jobs.py": (
                '"""A tiny in-memory job queue."""\n\nimport collections\n\n\nclass JobQueue:\n'
                "    def __init__(self):\n        self._jobs = collections.deque()\n\n"
                "    def push(self, job):\n        self._jobs.append(job)\n\n"
                "    def pop(self):\n        return self._jobs.popleft() if self._jobs else None\n"
            )
        },
        answer_has=("queue",),
        unchanged=True,
    ),
)



REWORDED: tuple[SuiteTask, ...] = ()

OTHER_KINDS: tuple[SuiteTask, ...] = ()


def task_sets() -> dict[str, tuple[SuiteTask, ...]]:
    """Every set by name (`--set own,reworded,other,unseen`)."""
    from local_suite_unseen import UNSEEN

    return {"own": OWN, "reworded": REWORDED, "other": OTHER_KINDS, "unseen": UNSEEN}

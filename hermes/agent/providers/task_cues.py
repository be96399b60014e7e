"""What a user's request means, for steering a small model (the JSON-action adapter).

    named_check(request, cwd)     -> the command that checks the work (`python -m pytest -q`,
                                     `python main.py`), or None
    wants_change(request)         -> False only for a request that asks to read, find or explain
    existing_files(request, cwd)  -> the file names it mentions that exist in `cwd`, in order

Read from what a request says, not how it is typed: a command counts in backticks or in
plain words ("so python main.py prints 42", "pytest is failing", "the tests fail" in a
folder with tests), and a request is a change unless it plainly asks only to read
("what…", "which…", "summarise…", "explain…") without naming a problem to fix. They only
decide what the adapter offers or does first, never what a tool may do.
"""

from __future__ import annotations

import re
from pathlib import Path

WRITE_TOOLS = frozenset({"write_file", "patch"})
"""Tools that change files: offered unless the request only asks to read (`wants_change`)."""
_PROBLEM_WORDS = re.compile(
    r"\b(fail(?:s|ing|ed|ure)?|broken|breaks?|bug(?:gy|s)?|crash(?:es|ing)?|error|exception|traceback|"
    r"blows? up|wrong|does(?:n't| not) work|not working|raises?)\b|\w+Error\b",
    re.IGNORECASE,
)
_CHANGE_VERBS = re.compile(
    r"\b(fix|change|edit|modify|update|add|append|insert|create|write|rename|replace|remove|delete|refactor|"
    r"implement|rewrite|move|convert|bump|correct|patch|wire|repair|rework|extend|split|merge)\b"
    r"|\bset \S+(?: \S+)? to\b|\bturn (?:on|off)\b",
    re.IGNORECASE,
)
"""Verbs that ask for a change wherever they stand ("set" only as "set X to Y": "the port set in
app.ini" is a question)."""
_READ_ONLY = re.compile(
    r"^\s*(what|which|where|who|whom|whose|why|how|is|are|does|did|can you (?:tell|explain|show|find)|"
    r"could you (?:tell|explain|show|find)|tell me|show me|explain|describe|summari[sz]e|list|find|count|"
    r"give me (?:a|an|the) (?:one-line |short |brief )?(?:summary|overview|list|explanation))\b",
    re.IGNORECASE,
)
_CHECK_IN_TICKS = re.compile(r"`([^`\n]{2,120})`")
_CHECK_START = re.compile(
    r"^(\./|python3?\b|py\.?test\b|pytest\b|npm\b|npx\b|yarn\b|pnpm\b|make\b|cargo\b|go\b|node\b|"
    r"bash\b|sh\b|tox\b|nox\b|uv\b|ruff\b|mypy\b|deno\b|bun\b|mvn\b|gradle\b|dotnet\b|ctest\b)"
)
_CHECK_PLAIN = re.compile(
    r"\b(python3? -m pytest(?: -q)?(?: [\w./-]+\.py)?|pytest(?: -q)?(?: [\w./-]+\.py)?|npm test|make test|"
    r"cargo test|go test \./\.\.\.)"
)
_SCRIPT_PLAIN = re.compile(
    # A flag takes a value after "=", or a number or a path after a space; other words are English.
    r"(?<![\w`])(python3? [\w./-]+\.py"
    r"(?: (?:--?[\w-]+(?:=[\w./-]+| \d+(?:\.\d+)?(?![\w.])| [\w-]*[./][\w./-]+)?|(?:[\w-]+/)*[\w-]+\.\w+))*)"
    r"(?![\w/-])"
)
_TESTS_MENTIONED = re.compile(r"\b(tests?|test suite|unit tests?|pytest)\b", re.IGNORECASE)


def named_check(request: str, cwd: Path | None = None) -> str | None:
    """The command that checks the request's work: one it names (in backticks or plain
    words: `python -m pytest -q`, "python main.py", "pytest"), else `python -m pytest -q`
    when it speaks of failing tests and `cwd` holds Python tests; None when there is none."""
    for match in _CHECK_IN_TICKS.finditer(request):
        quoted = match.group(1).strip()
        if _CHECK_START.match(quoted):
            return str(quoted)
    plain = _CHECK_PLAIN.search(request)
    if plain:
        return str(plain.group(1))
    script = _SCRIPT_PLAIN.search(request)
    if script:
        return str(script.group(1))
    if cwd is not None and _TESTS_MENTIONED.search(request) and _PROBLEM_WORDS.search(request) and _has_tests(cwd):
        return "python -m pytest -q"
    return None


def looks_like_check(command: str) -> bool:
    """A command that runs the project's code or tests (`python main.py`, `pytest -q`, `npm test`)."""
    words = command.strip().split(maxsplit=1)
    if not words:
        return False
    program = words[0].rsplit("/", 1)[-1] if words[0].startswith(("/", "~")) else words[0]  # /usr/bin/python3
    program = re.sub(r"^(python3?)\.\d+$", r"\1", program)
    shown = " ".join([program, *words[1:]])
    return _CHECK_START.match(shown) is not None and program not in ("bash", "sh")


def _has_tests(cwd: Path) -> bool:
    try:
        return any(cwd.glob("test_*.py")) or any(cwd.glob("tests/test_*.py")) or any(cwd.glob("*_test.py"))
    except OSError:
        return False


def wants_change(request: str) -> bool:
    """False only when the request reads as a question or a request to read, find or explain
    ("Which file defines X?", "Summarise jobs.py", "what's the port set in app.ini?") and
    names no problem to fix and no change outside its opening question ("…, add a
    try/except"; "which functions write to the log?" asks nothing to be written); True otherwise,
    when unsure too (withholding the write tools from a change request costs the task,
    offering them to a question costs nothing)."""
    if _PROBLEM_WORDS.search(request) or _CHANGE_VERBS.search(_after_opening_question(request)):
        return True
    if _READ_ONLY.search(request):
        return False
    return True


def _after_opening_question(request: str) -> str:
    """The request past its opening question, when it opens with one ("which functions write
    to the audit trail? I need their names": a verb inside the question asks nothing of us);
    else all of it ("Where parse_config opens the file, add a try/except")."""
    if _READ_ONLY.search(request) is None:
        return request
    question, mark, rest = request.partition("?")
    return rest if mark and "\n" not in question.strip() else request


def names_a_problem(request: str) -> bool:
    """The request reports something failing (a failing test, a crash, an error)."""
    return _PROBLEM_WORDS.search(request) is not None


_IDENTIFIER = re.compile(
    r"(?<![\w./-])("
    r"[A-Za-z_][A-Za-z0-9]*_[A-Za-z0-9_]+"  # snake_case: fetch_rows, send_alert
    r"|[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]+)+"  # CamelCase: InvoiceBuilder (not OpenAI, PostgreSQL)
    r"|[a-z][a-zA-Z0-9]*(?=\()"  # called: mean(
    r")(?![\w/-]|\.[A-Za-z])"
)
_NOT_IDENTIFIERS = re.compile(r"(Error|Exception|Warning)$|^(JavaScript|TypeScript|GitHub|PyPI|README)$")


_TICKED_NAME = re.compile(r"`([A-Za-z_]\w*)(?:\([^`]*\))?`")
_KIND_NAME = re.compile(
    r"\b(?:class|function|method|def|constant|variable)\s+(?:named\s+|called\s+)?`?([A-Za-z_]\w*)"
    r"|\b([A-Z]\w*|[a-z]\w*_\w*)\s+(?:class|function|method)\b"
)
"""A name said to be code ("the class Scheduler", "the Scheduler class")."""
_NOT_NAMES = frozenset(
    "the a an this that these those which what is are was be do does did it its here there of to in on at for "
    "with and or from by as defined definition file files name named called names calls call signature "
    "signatures body bodies arguments parameters returns return code tests test that".split()
)
_RENAMES = re.compile(
    r"\b(rename|renames|renaming|replace|remove|delete|drop|move|signature|parameters?|arguments?|callers?)\b",
    re.IGNORECASE,
)
_EVERYWHERE = re.compile(
    r"\b(every|all) (callers?|call sites?|uses?|usages?|places?|references?)\b|\beverywhere\b|\bcallers\b",
    re.IGNORECASE,
)


def named_identifiers(request: str) -> list[str]:
    """Code names the request mentions (`fetch_rows`, `InvoiceBuilder`, `mean(`, a name in
    backticks), in order of appearance, once each; file names, flags and exception names are
    not among them."""
    found: list[tuple[int, str]] = [(m.start(), m.group(1)) for m in _IDENTIFIER.finditer(request)]
    found += [(m.start(), m.group(1)) for m in _TICKED_NAME.finditer(request)]
    found += [(m.start(), m.group(1) or m.group(2)) for m in _KIND_NAME.finditer(request)]
    names: list[str] = []
    for _, name in sorted(found):
        if not _NOT_IDENTIFIERS.search(name) and name.lower() not in _NOT_NAMES and name not in names:
            names.append(name)
    return names


_ABOUT_FILES = re.compile(
    r"\b(settings|config(?:uration)?|files?|folders?|director(?:y|ies)|project|code ?base|code|modules?|scripts?|"
    r"repo(?:sitory)?|package)\b",
    re.IGNORECASE,
)


def about_the_files(request: str) -> bool:
    """The request is about what is in this folder (its settings, files, code), not a chat."""
    return _ABOUT_FILES.search(request) is not None


def asks_to_rename(request: str) -> bool:
    """The request changes how a name is defined or used (rename, replace, remove, a
    signature, its callers): taking that name out of a file is then meant."""
    return _RENAMES.search(request) is not None


_DEFINITION_ASKED = re.compile(
    r"\b(defin(?:e|es|ed|ing|ition)|declar(?:e|es|ed|ation)|implement(?:s|ed)?)\b", re.IGNORECASE
)


def asks_for_definition(request: str) -> bool:
    """The request is about where a name is defined ("where is X defined", "which file defines X")."""
    return _DEFINITION_ASKED.search(request) is not None


def definition_pattern(name: str) -> str:
    """A search pattern for where `name` is defined: a def, class, function, type or assignment."""
    return rf"\b(?:class|def|function|func|fn|type|interface|struct|enum|trait)\s+{name}\b|^\s*{name}\s*="


def asks_for_every_use(request: str) -> bool:
    """The request is about every place a name is used ("update every caller", "everywhere")."""
    return _EVERYWHERE.search(request) is not None


_FILE_NAME = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w-]+\.[A-Za-z0-9]{1,8})(?![\w/-])")


def existing_files(request: str, cwd: Path) -> list[str]:
    """The file names (`stats.py`, `src/app.js`) the request mentions that exist in `cwd`."""
    return [name for name in _FILE_NAME.findall(request) if (cwd / name).is_file()]

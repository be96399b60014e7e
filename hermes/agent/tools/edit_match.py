"""Fitting a model's edit to the file it edits: one home for the patch tool and the JSON adapter.

    fit = fit_edit(lines, old, new)       # None: no unique place in `lines` for `old`
    fit.old, fit.new                      # the file's own text, and new text indented like the file
    nearest_run(lines, old)               # (start, end) of the lines most like `old`, for a failure hint
    as_addition(lines, old, new)          # new code to add when `old` only names it (no fit)

Matching, in order (the first that finds exactly one place wins):
1. `old` as written;
2. `old` without read_file's "N|" line prefixes (small models copy them);
3. line by line with leading and trailing white space ignored;
4. only when asked (`similar`): line by line nearly the same (difflib ratio ≥
   FIT_SIMILARITY: a stray `;`), when exactly one run of the file reaches it.
For 3 and 4 the indentation the model used is mapped onto the file's in `new` too; when
that mapping is not consistent (one model indent standing for two file indents), no fit.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

FIT_SIMILARITY = 0.9
"""How alike (difflib ratio) a run of file lines must be to the model's old text to stand in for it."""
MAX_FUZZY_LINES = 5000
"""Files longer than this are matched exactly or loosely, never by similarity (cost)."""
_LINE_PREFIX = re.compile(r"^\s*\d+\|")


@dataclass(frozen=True, slots=True)
class Fit:
    old: str
    """Text that occurs in the file and stands for the model's old text."""
    new: str
    """The replacement, indented like the file where the model's indentation was off."""
    how: str
    """"exact", "prefixes" (read_file's N| dropped), "loose" (white space) or "similar"."""


def indent_of(line: str) -> str:
    return line[: len(line) - len(line.lstrip())]


def strip_line_prefixes(text: str) -> str | None:
    """`text` without "N|" prefixes when every non-blank line has one, else None."""
    lines = text.splitlines()
    if not lines or not all(_LINE_PREFIX.match(line) for line in lines if line.strip()):
        return None
    return "\n".join(_LINE_PREFIX.sub("", line, count=1) for line in lines)


def _runs(lines: list[str], size: int) -> list[list[str]]:
    return [[line.strip() for line in lines[i : i + size]] for i in range(len(lines) - size + 1)]


def unique_run(lines: list[str], wanted: list[str], *, similar: bool = True) -> tuple[int, str] | None:
    """(start, how) of the one run of `lines` matching `wanted` (stripped): "loose", else (with
    `similar`) "similar"."""
    size = len(wanted)
    if not size:
        return None
    runs = _runs(lines, size)
    exact = [i for i, run in enumerate(runs) if run == wanted]
    if exact:
        return (exact[0], "loose") if len(exact) == 1 else None
    if not similar or len(lines) > MAX_FUZZY_LINES:
        return None
    target = "\n".join(wanted)
    scores = sorted(
        ((difflib.SequenceMatcher(None, "\n".join(run), target).ratio(), i) for i, run in enumerate(runs)), reverse=True
    )
    if not scores or scores[0][0] < FIT_SIMILARITY or (len(scores) > 1 and scores[1][0] >= FIT_SIMILARITY):
        return None
    return scores[0][1], "similar"


def fit_edit(lines: list[str], old: str, new: str, *, similar: bool = False) -> Fit | None:
    """Where the model's `old` stands in the file (`lines`, without line ends), and `new` to match.

    `similar` allows step 4 (a near match): only where the model was shown the file in this
    conversation and its old text differs from it by a copying slip; a near match can
    otherwise stand for a different line (`return 42` for `return 2`).
    """
    text = "\n".join(lines)
    if old and text.count(old) == 1:
        return Fit(old, new, "exact")
    unprefixed = strip_line_prefixes(old)
    if unprefixed is not None:
        old = unprefixed
        new = "\n".join(_LINE_PREFIX.sub("", line, count=1) for line in new.splitlines())
        if text.count(old) == 1:
            return Fit(old, new, "prefixes")
    mine = old.strip("\n").splitlines()
    found = unique_run(lines, [line.strip() for line in mine], similar=similar)
    if found is None:
        return None
    start, how = found
    theirs = lines[start : start + len(mine)]
    shift: dict[str, str] = {}
    for line, file_line in zip(mine, theirs, strict=True):
        if line.strip() and shift.setdefault(indent_of(line), indent_of(file_line)) != indent_of(file_line):
            return None  # no consistent indentation to carry over to new
    fitted_old = "\n".join(theirs)
    if text.count(fitted_old) != 1:
        return None
    fitted_new = "\n".join(
        shift.get(indent_of(line), indent_of(line)) + line.lstrip() if line.strip() else line
        for line in new.splitlines()
    )
    if new.endswith("\n") and not fitted_new.endswith("\n"):
        fitted_new += "\n"
    return Fit(fitted_old, fitted_new, how)


def nearest_run(lines: list[str], old: str) -> tuple[int, int] | None:
    """0-based (start, end) of the run of `lines` most like `old`, for showing what is there."""
    wanted = [line.strip() for line in old.strip("\n").splitlines()]
    if not wanted or not lines or len(lines) > MAX_FUZZY_LINES:
        return None
    size = min(len(wanted), len(lines))
    target = "\n".join(wanted)
    best = max(
        range(len(lines) - size + 1),
        key=lambda i: difflib.SequenceMatcher(None, "\n".join(s.strip() for s in lines[i : i + size]), target).ratio(),
    )
    return best, best + size


def as_addition(lines: list[str], old: str, new: str) -> str | None:
    """`new` when the edit adds code rather than changing it, else None.

    Small models "patch in" a new function with old_string set to its signature: old is
    nowhere in the file (not even loosely), and new starts with old and goes on. Then
    new is the code to add. A first line of old that the file has (loosely) means the
    model meant to change that place and just misquoted it: no addition.
    """
    head, body = old.strip(), new.strip("\n")
    if not head or not body.lstrip().startswith(head) or len(body.strip()) <= len(head):
        return None
    first = head.splitlines()[0].strip()
    if any(line.strip() == first for line in lines):
        return None
    return body

"""A small, forgiving reader of POSIX shell command lines, for the approval policy.

`parse(source)` splits a command line into pipelines of simple commands, removes
quotes and backslash escapes from words, and keeps the source text of code the shell
would run while expanding a word (`$(…)`, backticks, `<(…)`, `>(…)`) and of
here-documents, so the policy can look inside them.

It is deliberately not a shell. Known limits:

- nothing is expanded: variables, globs, aliases, functions and `cd` are not evaluated,
  so `$HOME` stays the text "$HOME" and `x=/; rm -rf $x` is not resolved;
- control structures are flattened: `if`, `then`, `do`, `{`, … stay the first word of
  a command (the policy peels them), and `(`/`)` act as separators;
- an unterminated quote or substitution runs to the end of the input instead of
  failing, so a malformed line is still inspected rather than waved through.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

# Longest operators first, so that "&&" wins over "&" and "<<-" over "<<".
_OPERATORS = (
    ";;&", "&>>", "<<-", "<<<",
    "&&", "||", ";;", ";&", "|&", "&>", ">>", ">|", ">&", "<<", "<>", "<&",
    ";", "&", "|", "(", ")", "<", ">",
)  # fmt: skip
REDIRECT_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<", "<<", "<<-", "<<<", "<>", ">&", "<&"})
"""Operators followed by a target word (a file, a descriptor or a here-doc delimiter)."""
WRITE_REDIRECT_OPS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
_PIPE_OPS = frozenset({"|", "|&"})
_OP_CHARS = frozenset(";&|()<>")


@dataclass(slots=True)
class Word:
    """One shell word after quote removal. `nested` holds code run while expanding it."""

    text: str
    quoted: bool = False
    nested: list[str] = field(default_factory=list)


@dataclass(slots=True)
class Redirect:
    op: str
    target: Word


@dataclass(slots=True)
class Command:
    """A simple command: its words, its redirections and the text fed to its stdin."""

    words: list[Word] = field(default_factory=list)
    redirects: list[Redirect] = field(default_factory=list)
    stdin_texts: list[str] = field(default_factory=list)
    """Bodies of here-documents (`<<EOF`) and here-strings (`<<<`)."""

    def is_empty(self) -> bool:
        return not self.words and not self.redirects


Pipeline = list[Command]


def parse(source: str) -> list[Pipeline]:
    """Pipelines of `source` in order; empty commands are dropped."""
    return _Parser(_Lexer(source).tokens()).pipelines()


# --- lexer -----------------------------------------------------------------------------

_Token = tuple[str, "Word | str"]  # ("word", Word) | ("op", str) | ("heredoc", str)


class _Lexer:
    def __init__(self, source: str) -> None:
        self.s = source
        self.n = len(source)
        self.out: list[_Token] = []
        self.buf: list[str] | None = None  # None: between words
        self.quoted = False
        self.nested: list[str] = []
        self.heredoc_next: bool | None = None  # set after "<<"/"<<-": strip-tabs flag
        self.pending_heredocs: list[tuple[str, bool]] = []

    def tokens(self) -> list[_Token]:
        s, i = self.s, 0
        while i < self.n:
            c = s[i]
            nxt = s[i + 1] if i + 1 < self.n else ""
            if c in " \t\r":
                self._flush()
                i += 1
            elif c == "\n":
                self._flush()
                i = self._read_heredocs(i + 1)
                self.out.append(("op", "\n"))
            elif c == "#" and self.buf is None:
                end = s.find("\n", i)
                i = self.n if end < 0 else end
            elif c == "\\":
                if nxt == "\n":
                    i += 2  # line continuation
                else:
                    self._add(nxt, quoted=True)
                    i += 2
            elif c == "'":
                end = s.find("'", i + 1)
                end = self.n if end < 0 else end
                self._add(s[i + 1 : end], quoted=True)
                i = end + 1
            elif c == '"':
                i = self._double_quoted(i)
            elif c == "`":
                inner, end = _backtick(s, i)
                self.nested.append(inner)
                self._add(s[i:end])
                i = end
            elif c == "$" and nxt == "(":
                inner, end = _paren_group(s, i + 1)
                if not inner.startswith("("):  # "$((…))" is arithmetic, not a command
                    self.nested.append(inner)
                self._add(s[i:end])
                i = end
            elif c == "$" and nxt == "{":
                end = _brace_group_end(s, i + 1)
                self._add(s[i:end])
                i = end
            elif c in "<>" and nxt == "(" and self.buf is None:
                inner, end = _paren_group(s, i + 1)  # process substitution
                self.nested.append(inner)
                self._add(s[i:end])
                self._flush()
                i = end
            elif c in _OP_CHARS:
                i = self._operator(i)
            else:
                self._add(c)
                i += 1
        self._flush()
        return self.out

    def _add(self, text: str, quoted: bool = False) -> None:
        if self.buf is None:
            self.buf = []
        self.buf.append(text)
        self.quoted = self.quoted or quoted

    def _flush(self) -> None:
        if self.buf is None:
            return
        word = Word("".join(self.buf), self.quoted, self.nested)
        self.buf, self.quoted, self.nested = None, False, []
        if self.heredoc_next is not None:
            self.pending_heredocs.append((word.text, self.heredoc_next))
            self.heredoc_next = None
        self.out.append(("word", word))

    def _operator(self, i: int) -> int:
        op = next(o for o in _OPERATORS if self.s.startswith(o, i))
        # "2>file", "1>>log": a bare number right before a redirection names a descriptor.
        if op in REDIRECT_OPS and self.buf is not None and not self.quoted and "".join(self.buf).isdigit():
            self.buf, self.nested = None, []
        self._flush()
        self.out.append(("op", op))
        if op in ("<<", "<<-"):
            self.heredoc_next = op == "<<-"
        return i + len(op)

    def _double_quoted(self, i: int) -> int:
        s, j = self.s, i + 1
        parts: list[str] = []
        while j < self.n and s[j] != '"':
            c = s[j]
            nxt = s[j + 1] if j + 1 < self.n else ""
            if c == "\\" and nxt:
                if nxt in '$`"\\':
                    parts.append(nxt)
                elif nxt != "\n":
                    parts.append(c + nxt)
                j += 2
            elif c == "$" and nxt == "(":
                inner, end = _paren_group(s, j + 1)
                if not inner.startswith("("):
                    self.nested.append(inner)
                parts.append(s[j:end])
                j = end
            elif c == "`":
                inner, end = _backtick(s, j)
                self.nested.append(inner)
                parts.append(s[j:end])
                j = end
            else:
                parts.append(c)
                j += 1
        self._add("".join(parts), quoted=True)
        return j + 1

    def _read_heredocs(self, i: int) -> int:
        """Consume the bodies of here-documents opened on the line that just ended."""
        for delimiter, strip_tabs in self.pending_heredocs:
            lines: list[str] = []
            while i < self.n:
                end = self.s.find("\n", i)
                end = self.n if end < 0 else end
                line = self.s[i:end]
                i = end + 1
                if (line.lstrip("\t") if strip_tabs else line) == delimiter:
                    break
                lines.append(line)
            self.out.append(("heredoc", "\n".join(lines)))
        self.pending_heredocs = []
        return min(i, self.n)


def _paren_group(s: str, start: int) -> tuple[str, int]:
    """`s[start]` is "(": return the text inside the matching ")" and the index after it."""
    depth, j, n = 0, start, len(s)
    while j < n:
        c = s[j]
        if c == "\\":
            j += 2
            continue
        if c == "'":
            end = s.find("'", j + 1)
            j = n if end < 0 else end + 1
            continue
        if c == '"':
            j += 1
            while j < n and s[j] != '"':
                j += 2 if s[j] == "\\" else 1
            j += 1
            continue
        if c == "(":
            depth += 1
        elif c == ")":
            depth -= 1
            if depth == 0:
                return s[start + 1 : j], j + 1
        j += 1
    return s[start + 1 :], n


def _backtick(s: str, start: int) -> tuple[str, int]:
    """`s[start]` is a backtick: return the unescaped inner code and the index after the closing one."""
    j, n, parts = start + 1, len(s), []
    while j < n and s[j] != "`":
        if s[j] == "\\" and j + 1 < n:
            parts.append(s[j + 1])
            j += 2
        else:
            parts.append(s[j])
            j += 1
    return "".join(parts), min(j + 1, n)


def _brace_group_end(s: str, start: int) -> int:
    """`s[start]` is "{" of "${…}": index after the matching "}"."""
    depth, j = 0, start
    while j < len(s):
        if s[j] == "{":
            depth += 1
        elif s[j] == "}":
            depth -= 1
            if depth == 0:
                return j + 1
        j += 1
    return len(s)


# --- parser ----------------------------------------------------------------------------


class _Parser:
    def __init__(self, tokens: list[_Token]) -> None:
        self.tokens = tokens

    def pipelines(self) -> list[Pipeline]:
        result: list[Pipeline] = []
        stages: Pipeline = []
        current = Command()
        awaiting_heredoc: deque[Command] = deque()  # commands whose "<<" body comes later

        def end_stage() -> None:
            nonlocal current
            if not current.is_empty():
                stages.append(current)
            current = Command()

        def end_pipeline() -> None:
            nonlocal stages
            end_stage()
            if stages:
                result.append(stages)
            stages = []

        i = 0
        while i < len(self.tokens):
            kind, value = self.tokens[i]
            i += 1
            if kind == "word":
                assert isinstance(value, Word)
                current.words.append(value)
            elif kind == "heredoc":
                assert isinstance(value, str)
                if awaiting_heredoc:
                    awaiting_heredoc.popleft().stdin_texts.append(value)
            elif value in REDIRECT_OPS:
                target = Word("")
                if i < len(self.tokens) and self.tokens[i][0] == "word":
                    target = self.tokens[i][1]  # type: ignore[assignment]
                    i += 1
                assert isinstance(value, str) and isinstance(target, Word)
                current.redirects.append(Redirect(value, target))
                if value in ("<<", "<<-"):
                    awaiting_heredoc.append(current)
                elif value == "<<<":
                    current.stdin_texts.append(target.text)
            elif value in _PIPE_OPS:
                end_stage()
            else:  # ; & && || ;; ( ) newline: a new pipeline starts
                end_pipeline()
        end_pipeline()
        return result

"""Which shell command lines only read: the terminal's test in plan mode.

    not_read_only(command) -> str | None     None: every part of the line only reads;
                                             else why it may change something

The line is read with shell_syntax.parse (pipelines, quotes, `$(…)`, `<(…)`, here-docs).
Every simple command in it, and in the code of its substitutions, must be a program on
READ_ONLY_PROGRAMS (by its plain name: no path, no variable, no assignment before it)
whose arguments are not among the few that make it write or run other programs
(`find -delete`, `sort -o`, `sed -i`, `git diff --output`, …); output may be redirected
only to /dev/null or another descriptor. Anything else — an unknown program, an
interpreter, a shell, a function definition, a write redirect — is "may change
something". This is an allowlist: what it does not know is refused.
"""

from __future__ import annotations

import re
from collections.abc import Callable

from hermes.agent.safety.command_rules import positionals
from hermes.agent.safety.shell_syntax import WRITE_REDIRECT_OPS, Command, parse

ArgCheck = Callable[[list[str]], str | None]
"""(arguments after the program name) -> None when they only read, else why not."""

_MAX_DEPTH = 6
"""Substitutions nested deeper than this are not inspected: the line is refused."""
_NULL_TARGETS = frozenset({"/dev/null", "/dev/stdout", "/dev/stderr"})
_FD = re.compile(r"^\d+-?$|^-$")


def _never(*options: str, prefixes: tuple[str, ...] = ()) -> ArgCheck:
    """Arguments are read-only unless one is in `options` (or starts with a prefix); a short
    option (`-x`) is found in a cluster too (`-Hx`)."""
    refused = frozenset(options)
    letters = frozenset(option[1] for option in options if len(option) == 2 and option[0] == "-" != option[1])

    def check(args: list[str]) -> str | None:
        for arg in args:
            if arg == "--":
                return None
            name = arg.split("=", 1)[0]
            clustered = arg.startswith("-") and not arg.startswith("--") and bool(letters & set(arg[1:]))
            if name in refused or clustered or any(arg.startswith(prefix) for prefix in prefixes):
                return f"option {arg} writes files or runs programs"
        return None

    return check


def _short_flag(args: list[str], letter: str) -> bool:
    for arg in args:
        if arg == "--":
            return False
        if arg.startswith("-") and not arg.startswith("--") and letter in arg[1:]:
            return True
    return False


def _anything(args: list[str]) -> str | None:
    return None


def _find(args: list[str]) -> str | None:
    acting = {"-delete", "-exec", "-execdir", "-ok", "-okdir", "-fprint", "-fprint0", "-fprintf", "-fls"}
    for arg in args:
        if arg in acting:
            return f"find {arg} changes files or runs programs"
    return None


def _sort(args: list[str]) -> str | None:
    if _short_flag(args, "o") or any(a == "--output" or a.startswith("--output=") for a in args):
        return "sort -o writes a file"
    if any(a.startswith("--compress-program") for a in args):
        return "sort --compress-program runs a program"
    return None


def _uniq(args: list[str]) -> str | None:
    return "uniq INPUT OUTPUT writes a file" if len(positionals(args)) > 1 else None


def _tree(args: list[str]) -> str | None:
    return "tree -o writes a file" if _short_flag(args, "o") else None


def _date(args: list[str]) -> str | None:
    if _short_flag(args, "s") or any(a == "--set" or a.startswith("--set=") for a in args):
        return "date -s sets the clock"
    return None


_SED_SCRIPT = re.compile(
    r"^\s*(?:(?:\d+|\$|/[^/]*/)(?:\s*,\s*(?:\d+|\$|/[^/]*/))?\s*!?\s*)?"
    r"(?:[pdqQ=nN]|s(.)(?:(?!\1).)*\1(?:(?!\1).)*\1[gpiIm0-9]*)\s*$"
)
"""One sed command that only prints or edits the stream: addresses, then p d q = n or an
s/// with print-only flags (never w, e, r, W, R or the `e`/`w` flags of s)."""


def _sed(args: list[str]) -> str | None:
    scripts: list[str] = []
    expect_script = False
    for arg in args:
        if expect_script:
            scripts.append(arg)
            expect_script = False
        elif (
            arg in ("-i", "--in-place")
            or arg.startswith(("--in-place=", "-i"))
            or (arg.startswith("-") and not arg.startswith("--") and "i" in arg[1:])
        ):
            return "sed -i edits files in place"
        elif arg in ("-f", "--file") or arg.startswith("--file="):
            return "sed -f runs a script file that was not inspected"
        elif arg in ("-e", "--expression"):
            expect_script = True
        elif arg.startswith("--expression="):
            scripts.append(arg.split("=", 1)[1])
    if not scripts:
        found = positionals(args)
        scripts = found[:1]
    for script in scripts:
        for part in re.split(r"[;\n]", script):
            if part.strip() and not _SED_SCRIPT.match(part):
                return f"sed script {part.strip()!r} is not known to only print"
    return None


_AWK_ACTING = re.compile(r">|\||\bsystem\b|\bgetline\b|\bclose\b|\bfflush\b")


def _awk(args: list[str]) -> str | None:
    if any(a in ("-f", "--file") or a.startswith("--file=") for a in args):
        return "awk -f runs a program file that was not inspected"
    program = positionals(args)[:1]
    if program and _AWK_ACTING.search(program[0]):
        return "the awk program may write files or run commands"
    return None


_GIT_READS = frozenset(
    {
        "status", "diff", "log", "show", "blame", "annotate", "grep", "ls-files", "ls-tree", "rev-parse",
        "describe", "shortlog", "cat-file", "rev-list", "whatchanged", "merge-base", "show-ref", "name-rev",
        "for-each-ref", "count-objects", "cherry", "range-diff", "var", "help", "version",
    }
)  # fmt: skip
_GIT_LISTS = {
    "branch": frozenset({"-a", "-r", "-v", "-vv", "--all", "--remotes", "--list", "-l", "--show-current",
                         "--contains", "--merged", "--no-merged", "--verbose", "--no-color", "--color"}),
    "tag": frozenset({"-l", "--list", "-n", "--contains", "--points-at", "--merged", "--no-merged", "--sort"}),
    "remote": frozenset({"-v", "--verbose", "show", "get-url"}),
    "stash": frozenset({"list", "show"}),
    "worktree": frozenset({"list"}),
    "reflog": frozenset({"show"}),
    "config": frozenset({"--get", "--get-all", "--get-regexp", "--list", "-l", "get", "list"}),
}  # fmt: skip
"""Subcommands that read only in a listing form: with no argument, or with one of these first."""
_GIT_NEEDS_LISTING = frozenset({"stash", "config"})
"""Without an argument these change something (`git stash` stashes) or fail: a listing form is needed."""
_GIT_GLOBAL_SAFE = frozenset({"--no-pager", "-P", "--no-optional-locks", "--bare"})
_GIT_WRITING_OPTIONS = _never("--output", "--ext-diff", "--exec", "--upload-pack", "--open-files-in-pager", "-O")


def _git(args: list[str]) -> str | None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        if args[i] == "-C" and i + 1 < len(args):
            i += 2
            continue
        if args[i] not in _GIT_GLOBAL_SAFE:
            return f"git option {args[i]} is not known to be read-only"
        i += 1
    if i >= len(args):
        return None
    sub, rest = args[i], args[i + 1 :]
    if sub in _GIT_READS:
        return _GIT_WRITING_OPTIONS(rest)
    listing = _GIT_LISTS.get(sub)
    if listing is not None:
        if (not rest and sub not in _GIT_NEEDS_LISTING) or (rest and rest[0] in listing):
            return _GIT_WRITING_OPTIONS(rest)
        return f"git {' '.join([sub, *rest[:1]])} may change the repository"
    return f"git {sub} may change the repository"


READ_ONLY_PROGRAMS: dict[str, ArgCheck] = {
    **{
        name: _anything
        for name in (
            "ls", "cat", "head", "tail", "wc", "grep", "egrep", "fgrep", "pwd", "echo", "printf",
            "stat", "du", "df", "which", "whoami", "id", "uname", "printenv", "basename", "dirname",
            "realpath", "readlink", "cut", "tr", "nl", "tac", "rev", "strings", "od", "hexdump", "md5sum",
            "sha1sum", "sha256sum", "sha512sum", "cksum", "b2sum", "column", "comm", "join", "paste", "fold",
            "fmt", "expand", "unexpand", "seq", "true", "false", "test", "[", "cd", "diff", "cmp", "jq",
            "type", "ps", "nproc", "free", "uptime", "locale", "sleep", "look",
        )
    },
    "file": _never("-C", "--compile"),
    "find": _find,
    "sort": _sort,
    "uniq": _uniq,
    "tree": _tree,
    "date": _date,
    "sed": _sed,
    "awk": _awk,
    "gawk": _awk,
    "mawk": _awk,
    "git": _git,
    "rg": _never("--pre", "--pre-glob", "--search-zip", "-z"),
    "ag": _anything,
    "fd": _never("--exec", "--exec-batch", "-x", "-X"),
    "less": _never("-o", "--log-file", "-O", "--LOG-FILE"),
}  # fmt: skip
"""Programs that only read, each with the check of its arguments."""


def not_read_only(command: str) -> str | None:
    """None when every command of the line only reads; else the first reason it may not."""
    return _line(command, 0)


def _line(source: str, depth: int) -> str | None:
    if depth > _MAX_DEPTH:
        return "command substitutions nest too deep to inspect"
    for pipeline in parse(source):
        for command in pipeline:
            reason = _command(command, depth)
            if reason is not None:
                return reason
    return None


def _command(command: Command, depth: int) -> str | None:
    for redirect in command.redirects:
        if redirect.op in WRITE_REDIRECT_OPS:
            target = redirect.target.text
            if redirect.target.nested or not (target in _NULL_TARGETS or (redirect.op == ">&" and _FD.match(target))):
                return f"the output redirect {redirect.op} {target} writes a file"
        for code in redirect.target.nested:
            reason = _line(code, depth + 1)
            if reason is not None:
                return reason
    for word in command.words:
        for code in word.nested:  # $(…), `…`, <(…), >(…): code the shell runs too
            reason = _line(code, depth + 1)
            if reason is not None:
                return reason
    if not command.words:
        return None
    first = command.words[0]
    name = first.text
    if first.nested or "=" in name:
        return f"{name!r} is not a plain program name"
    check = READ_ONLY_PROGRAMS.get(name)
    if check is None:
        return f"{name!r} is not a command known to only read"
    return check([word.text for word in command.words[1:]])

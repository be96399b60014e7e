"""The dangerous-command policy: which commands and file writes run, need approval, or never run.

    classify_command(command, cwd=None) -> Verdict   for the terminal tool
    check_write_path(path) -> Verdict                for write_file and patch

Levels:
    block    never runs, not even with --yolo or a SESSION approval (hard floor);
    approve  runs only if ToolContext.request_approval says yes;
    allow    runs.

How commands are read: shell_syntax.parse splits the line into pipelines of simple
commands (after ; && || | & newlines, inside ( ) and { }), removes quotes, and keeps
the code of $(…), `…`, <(…) and here-documents, which is classified too. A plain
`cd DIR` is followed, so relative targets after it (`cd / && rm -rf *`) resolve there.
Wrappers (sudo, env, nohup, time, command, exec, nice, timeout, xargs, …) and shell
keywords are peeled off to find the program that really runs; `bash -c '…'`/`sh -c`/`eval` payloads
and text echoed or here-doc'ed into a shell are classified recursively. Words that are
mere arguments (`echo "rm -rf /"`) are data and never match.

Known limits (this is a guard rail, not a sandbox): variables are not expanded
(`d=/; rm -rf $d` is only "approve"), scripts run from files and code handed to
non-shell interpreters (`python -c "os.system(…)"`) are not inspected, obfuscation
(`base64 -d | sh`) is not decoded, and `ssh host '…'` payloads are not classified.

Combined findings: the first block wins; otherwise all approval findings are merged
into one Verdict whose rule is the sorted "+"-join of their rule keys, so a SESSION
approval of "sudo" never silently covers "git_reset_hard+sudo".
"""

from __future__ import annotations

import os
import posixpath
import re
import stat
from dataclasses import dataclass
from pathlib import Path

from hermes.agent.safety.command_rules import (
    DECODERS,
    DOWNLOADERS,
    INTERPRETERS,
    SHELLS,
    canonical_name,
    interpreter_mode,
    rule_for,
)
from hermes.agent.safety.confinement import Confinement, is_process_secret, private_tmp
from hermes.agent.safety.protected_paths import (
    expand_command_path,
    is_critical_target,
    is_disk_device,
    sensitive_path,
)
from hermes.agent.safety.shell_syntax import WRITE_REDIRECT_OPS, Command, Pipeline, Word, parse
from hermes.agent.safety.verdict import ALLOW, Verdict

_MAX_DEPTH = 8
"""Nesting of bash -c / $(…) / eval deeper than this is not inspected and needs approval."""

_ASSIGNMENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\+?=")
_VARIABLE = re.compile(r"\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})")
_KEYWORDS = frozenset({"!", "{", "}", "then", "do", "else", "elif", "if", "while", "until"})
_FUNC_DEF = re.compile(
    r"(?:^|[\s;&|()])(?:function\s+)?(?P<name>[^\s;&|(){}<>]+)\s*\(\s*\)\s*\{(?P<body>[^{}]*)\}"
    r"|(?:^|[\s;&|()])function\s+(?P<name2>[^\s;&|(){}<>]+)\s*\{(?P<body2>[^{}]*)\}"
)
_PERL_FORK_BOMB = re.compile(r"\bfork\s*(?:\(\s*\))?\s*while\s*(?:\(\s*)?fork\b")
_SQL_DROP = re.compile(r"\b(DROP\s+(TABLE|DATABASE|SCHEMA)|TRUNCATE\s+(TABLE\s+)?[A-Za-z_\"`])", re.I)
_SQL_DELETE = re.compile(r"\bDELETE\s+FROM\s+[\w\"`.\[\]]+", re.I)
_SQL_WHERE = re.compile(r"\bWHERE\b", re.I)


@dataclass(frozen=True, slots=True)
class _Wrapper:
    """A program that runs another one: how to skip its own options to find the command."""

    short_values: str = ""
    """Short options that take a value ("-u root" / "-uroot")."""
    long_values: frozenset[str] = frozenset()
    skip_positionals: int = 0
    """Leading operands of the wrapper itself (timeout's DURATION)."""
    lookup_flags: str = ""
    """Flags that make it look the command up instead of running it (command -v)."""

    def command_words(self, args: list[Word]) -> list[Word]:
        i = 0
        while i < len(args):
            a = args[i].text
            if a == "--":
                i += 1
                break
            if a.startswith("--") and len(a) > 2:
                i += 2 if a in self.long_values else 1
                continue
            if a.startswith("-") and len(a) > 1:
                letters = a[1:]
                if any(ch in self.lookup_flags for ch in letters):
                    return []
                takes = next((k for k, ch in enumerate(letters) if ch in self.short_values), None)
                i += 2 if takes == len(letters) - 1 else 1
                continue
            break
        return args[i + self.skip_positionals :]


_WRAPPERS: dict[str, _Wrapper] = {
    "sudo": _Wrapper(
        "ugpCDhrtUTR",
        frozenset(
            {"--user", "--group", "--prompt", "--close-from", "--chdir", "--host", "--role", "--type", "--other-user"}
        ),
    ),
    "doas": _Wrapper("uC"),
    "env": _Wrapper("uCS", frozenset({"--unset", "--chdir", "--split-string"})),
    "nohup": _Wrapper(),
    "time": _Wrapper("fo", frozenset({"--format", "--output"})),
    "exec": _Wrapper("a"),
    "nice": _Wrapper("n", frozenset({"--adjustment"})),
    "ionice": _Wrapper("cnp", frozenset({"--class", "--classdata", "--pid"})),
    "timeout": _Wrapper("sk", frozenset({"--signal", "--kill-after"}), skip_positionals=1),
    "stdbuf": _Wrapper("ioe", frozenset({"--input", "--output", "--error"})),
    "xargs": _Wrapper(
        "IanPLsdE",
        frozenset({"--arg-file", "--delimiter", "--max-args", "--max-procs", "--max-lines", "--max-chars"}),
    ),
    "command": _Wrapper(lookup_flags="vV"),
    "builtin": _Wrapper(),
    "busybox": _Wrapper(),
    "setsid": _Wrapper(),
}


@dataclass(frozen=True, slots=True)
class _View:
    """A simple command after peeling: the program that runs and its arguments."""

    name: str
    args: list[Word]
    command: Command


def classify_command(
    command: str,
    cwd: str | os.PathLike[str] | None = None,
    *,
    sandboxed: bool = False,
    policy: Confinement | None = None,
) -> Verdict:
    """Classify a shell command line. `cwd` resolves relative targets (`rm -rf .`).

    With `sandboxed` false (no bubblewrap around the command), what the scan cannot
    resolve is "approve", not "allow": a write target or program name built from a
    variable or command output, `eval`, code handed to an interpreter on its command line
    (`python -c`), and decoded text piped into an interpreter (`base64 -d | sh`). Writes
    to hermes's own files (`policy`, default `Confinement.default()`), to
    /proc/sysrq-trigger, kernel memory or a block device are blocked either way.
    """
    scanner = _Scanner(os.fspath(cwd) if cwd is not None else None, strict=not sandboxed, policy=policy)
    scanner.scan_source(command)
    return scanner.verdict()


def check_write_path(path: str | os.PathLike[str]) -> Verdict:
    """Writes to ~/.ssh, shell startup files, /etc and hermes's config need approval; none are blocked."""
    absolute = os.path.abspath(os.path.expanduser(os.fspath(path)))
    for candidate in dict.fromkeys((absolute, os.path.realpath(absolute))):
        found = sensitive_path(candidate)
        if found:
            return Verdict("approve", f"write to {found[1]}", found[0])
    return ALLOW


REFUSAL_PREFIXES = ("BLOCKED by the safety policy:", "DENIED:")
"""Every refusal result starts with one of these; the engine reports such results as errors."""


def blocked_message(subject: str, verdict: Verdict, *, outcome: str = "was not run") -> str:
    """Tool result for a hard-blocked action. `subject` e.g. "this command"."""
    return (
        f"BLOCKED by the safety policy: {subject} {outcome} and never will be, not even with "
        f"approval or --yolo. Reason: {verdict.reason} [rule: {verdict.rule}]. Do not retry it, "
        "rephrase it, or try to reach the same effect another way. If it is really needed, "
        "explain why to the user and let them run it themselves."
    )


def denied_message(subject: str, verdict: Verdict, *, approver_available: bool, outcome: str = "was not run") -> str:
    """Tool result for an action that needed approval and did not get it."""
    why = (
        "the user denied it"
        if approver_available
        else "no one can approve it in this session (non-interactive; the user may rerun with --yolo)"
    )
    return (
        f"DENIED: {subject} {outcome}. It needs approval ({verdict.reason}) [rule: {verdict.rule}] "
        f"and {why}. Do not retry it, rephrase it, or try to achieve the same effect another way; "
        "ask the user how to proceed."
    )


# --- scanning --------------------------------------------------------------------------


class _Scanner:
    """Walks one command line and collects findings. Implements command_rules.Scan."""

    def __init__(self, cwd: str | None, *, strict: bool = False, policy: Confinement | None = None) -> None:
        self.cwd = cwd
        self.strict = strict
        """No sandbox around the command: what cannot be resolved needs approval."""
        self.policy = policy
        self.blocks: list[Verdict] = []
        self.approvals: list[Verdict] = []
        self.depth = 0
        self.db_client = False
        self.assigned: dict[str, str] = {"TMPDIR": str(private_tmp())}
        """Variables with a known literal value: TMPDIR (every tool command's), and those
        assigned earlier in the line (`v=/dev/vda; dd of=$v`)."""
        if cwd is not None:
            self.assigned["PWD"] = cwd

    def verdict(self) -> Verdict:
        if self.blocks:
            return self.blocks[0]
        if not self.approvals:
            return ALLOW
        rules = sorted({v.rule for v in self.approvals})
        reasons = list(dict.fromkeys(v.reason for v in self.approvals))
        return Verdict("approve", "; ".join(reasons), "+".join(rules))

    # Scan protocol ---------------------------------------------------------------------

    def block(self, rule: str, reason: str) -> None:
        self.blocks.append(Verdict("block", reason, rule))

    def approve(self, rule: str, reason: str) -> None:
        self.approvals.append(Verdict("approve", reason, rule))

    def saw_db_client(self) -> None:
        self.db_client = True

    def scan_source(self, source: str) -> None:
        if self.depth >= _MAX_DEPTH:
            self.approve("too_complex", "shell code nested too deeply to inspect")
            return
        self.depth += 1
        saved_cwd = self.cwd  # a `cd` inside nested code does not move the outer command
        try:
            self._fork_bomb(source)
            for pipeline in parse(source):
                self._pipeline(pipeline)
            if self.db_client:
                self._sql(source)
        finally:
            self.depth -= 1
            self.cwd = saved_cwd

    def scan_words(self, words: list[Word]) -> None:
        self._command(Command(words=list(words)))

    def write_target(self, path: str) -> None:
        path = self._substitute(path)
        if is_disk_device(path):
            self.block("disk_device_write", f"direct write to the disk device {path}")
            return
        expanded = expand_command_path(path, self.cwd)
        if expanded is None:
            if self.strict and ("$" in path or "`" in path):
                self.approve("unresolved_path", f"a write to a path built at run time ({path})")
            return
        kernel = _kernel_target(expanded)
        if kernel is not None:
            self.block(kernel[0], kernel[1])
            return
        owner = self.confinement().protected_entry(expanded)
        if owner is not None:
            self.block("hermes_own_write", f"a write to hermes's own files ({owner})")
            return
        found = _sensitive(expanded)
        if found:
            self.approve(found[0], f"write to {found[1]}")

    def confinement(self) -> Confinement:
        """The policy whose hidden and protected paths the scan checks (the default one made once)."""
        if self.policy is None:
            self.policy = Confinement.default()
        return self.policy

    def eval_code(self, source: str) -> None:
        if self.strict:
            self.approve("eval", "eval of code assembled at run time")
        self.scan_source(source)

    def inline_code(self, program: str) -> None:
        if self.strict:
            self.approve("inline_code", f"{program} code given on the command line (not inspected)")

    def _substitute(self, text: str) -> str:
        """`text` with `$NAME` / `${NAME}` of literal assignments earlier in the line filled in."""
        if "$" not in text or not self.assigned:
            return text
        return _VARIABLE.sub(lambda m: self.assigned.get(m.group(1) or m.group(2), m.group(0)), text)

    def link_source(self, path: str) -> None:
        expanded = expand_command_path(path, self.cwd)
        found = _sensitive(expanded) if expanded else None
        if found:
            self.approve("protected_link", f"a link to {found[1]} (writes through it would change it)")
        elif self.is_critical(path):
            self.approve("protected_link", f"a link to the folder {path} (writes through it would reach it)")

    def is_critical(self, path: str) -> bool:
        return is_critical_target(path, self.cwd)

    # internals -------------------------------------------------------------------------

    def _pipeline(self, stages: Pipeline) -> None:
        views = [self._command(stage) for stage in stages]
        if len(views) == 1 and views[0] is not None and views[0].name == "cd":
            # `cd / && rm -rf *`: later commands resolve relative targets from the new folder.
            args = [w.text for w in views[0].args if w.text != "--"]
            self.cwd = expand_command_path(args[0] if args else "~", self.cwd) if args[:1] != ["-"] else None
        for j, view in enumerate(views):
            if view is None or view.name not in INTERPRETERS:
                continue
            if interpreter_mode(view.name, [w.text for w in view.args])[0] != "stdin":
                continue
            feeders = [v for v in views[:j] if v is not None]
            if any(v.name in DOWNLOADERS for v in feeders):
                self.approve("remote_script", "downloaded script piped into an interpreter (curl | sh)")
            if self.strict and any(v.name in DECODERS for v in feeders):
                self.approve("decoded_script", "decoded or unpacked text piped into an interpreter (base64 -d | sh)")
            if view.name in SHELLS:
                for feeder in feeders:  # `echo "rm -rf /" | sh` runs the echoed text
                    if feeder.name in ("echo", "printf"):
                        texts = [w.text for w in feeder.args]
                        while texts and re.fullmatch(r"-[neE]+", texts[0]):
                            texts.pop(0)
                        self.scan_source(" ".join(texts))
                    for text in feeder.command.stdin_texts:
                        self.scan_source(text)

    def _command(self, command: Command) -> _View | None:
        for word in [*command.words, *(r.target for r in command.redirects)]:
            for inner in word.nested:
                self.scan_source(inner)
        for redirect in command.redirects:
            target = redirect.target.text
            if redirect.op in WRITE_REDIRECT_OPS and target and target != "-" and not target.isdigit():
                self.write_target(target)
        peeled = self._peel(command.words)
        if peeled is None:
            return None
        name, args = peeled
        if self.strict:
            if "$" in name or "`" in name:
                self.approve("unresolved_command", f"a program name built at run time ({name})")
            self._hidden_words([*command.words, *(r.target for r in command.redirects)])
        texts = [w.text for w in args]
        rule = rule_for(name)
        if rule is not None:
            rule(texts, args, self)
        name = canonical_name(name)
        if name in SHELLS and interpreter_mode(name, texts)[0] == "stdin":
            for text in command.stdin_texts:  # bash <<EOF … EOF, bash <<< "…"
                self.scan_source(text)
        return _View(name, args, command)

    def _peel(self, words: list[Word]) -> tuple[str, list[Word]] | None:
        while words:
            text = words[0].text
            if _ASSIGNMENT.match(text):
                name, _, value = text.partition("=")
                value = self._substitute(value)
                if name.endswith("+") or "`" in value or "$(" in value:
                    self.assigned.pop(name.rstrip("+"), None)
                else:
                    self.assigned[name] = value
                words = words[1:]
                continue
            name = posixpath.basename(text.rstrip("/")) if "/" in text.rstrip("/") else text
            if name in _KEYWORDS:
                words = words[1:]
                continue
            wrapper = _WRAPPERS.get(name)
            if wrapper is None:
                return name, words[1:]
            if name in ("sudo", "doas"):
                self.approve("sudo", "superuser command (sudo)")
            words = wrapper.command_words(words[1:])
        return None

    def _hidden_words(self, words: list[Word]) -> None:
        """Without the sandbox nothing hides the policy's hidden paths from a command: naming
        one (`cat ~/.netrc`, `cat /proc/1/environ`) needs approval."""
        policy = self.confinement()
        for word in words:
            text = self._substitute(word.text)
            if is_process_secret(text):
                self.approve("process_secrets", f"reading a process's environment or memory ({text})")
                continue
            if "/" not in text and not text.startswith("~"):
                continue
            path = expand_command_path(text.split("=", 1)[-1] if text.startswith("-") else text, self.cwd)
            if path is not None and policy.hidden_entry(path, Path(self.cwd) if self.cwd else None) is not None:
                self.approve("hidden_path_read", f"a hidden path (credentials or hermes's own files): {text}")

    def _fork_bomb(self, source: str) -> None:
        masked = _mask_quoted(source)
        for match in _FUNC_DEF.finditer(masked):
            name = match.group("name") or match.group("name2")
            body = match.group("body") if match.group("name") else match.group("body2")
            calls = [t for t in re.split(r"[\s;&|]+", body) if t]
            if calls.count(name) >= 2 and re.search(r"[|&]", body):
                self.block("fork_bomb", "fork bomb")
                return
        if _PERL_FORK_BOMB.search(source):
            self.block("fork_bomb", "fork bomb")

    def _sql(self, source: str) -> None:
        if _SQL_DROP.search(source):
            self.approve("sql_destructive", "SQL that drops or truncates tables or databases")
        for match in _SQL_DELETE.finditer(source):
            statement = source[match.end() :].split(";", 1)[0]
            if not _SQL_WHERE.search(statement):
                self.approve("sql_destructive", "SQL DELETE without WHERE (empties a table)")


_KERNEL_FILES = {
    "/proc/sysrq-trigger": ("sysrq_write", "a write to /proc/sysrq-trigger (crashes or reboots the machine)"),
    "/dev/mem": ("kernel_memory_write", "a write to physical memory (/dev/mem)"),
    "/dev/kmem": ("kernel_memory_write", "a write to kernel memory (/dev/kmem)"),
    "/dev/port": ("kernel_memory_write", "a write to I/O ports (/dev/port)"),
}


def _kernel_target(path: str) -> tuple[str, str] | None:
    """(rule, reason) when writing the absolute `path` hits the kernel or a disk, however spelled
    (`/dev/../dev/vda`, a /dev/disk/by-id link, a device node made elsewhere)."""
    for candidate in dict.fromkeys((path, os.path.realpath(path))):
        if candidate in _KERNEL_FILES:
            return _KERNEL_FILES[candidate]
        if is_disk_device(candidate):
            return "disk_device_write", f"direct write to the disk device {candidate}"
        try:
            if stat.S_ISBLK(os.stat(candidate).st_mode):
                return "disk_device_write", f"direct write to the block device {candidate}"
        except (OSError, ValueError):
            pass
    return None


def _sensitive(path: str) -> tuple[str, str] | None:
    """sensitive_path of `path` or, when symlinks lead elsewhere (`l -> ~/.ssh`), of its real path."""
    for candidate in dict.fromkeys((path, os.path.realpath(path))):
        found = sensitive_path(candidate)
        if found:
            return found
    return None


def _mask_quoted(source: str) -> str:
    """`source` with the contents of quotes blanked, so quoted prose cannot match a pattern."""
    out: list[str] = []
    quote: str | None = None
    i = 0
    while i < len(source):
        c = source[i]
        if quote is None:
            if c == "\\":
                out.append(source[i : i + 2])
                i += 2
                continue
            if c in "'\"":
                quote = c
            out.append(c)
        elif c == "\\" and quote == '"':
            out.append("  ")
            i += 2
            continue
        elif c == quote:
            quote = None
            out.append(c)
        else:
            out.append("\n" if c == "\n" else " ")
        i += 1
    return "".join(out)

"""Per-program rules of the approval policy: what makes one simple command dangerous.

Each rule receives the arguments of a command whose wrappers (sudo, env, nohup, …)
were already peeled, and reports findings to a `Scan`. Rules never run anything and
never raise; an argument they do not understand is treated as harmless data.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol

from hermes.agent.safety.shell_syntax import Word


class Scan(Protocol):
    """What a rule may report to, implemented by the policy in approval.py."""

    def block(self, rule: str, reason: str) -> None: ...
    def approve(self, rule: str, reason: str) -> None: ...
    def scan_source(self, source: str) -> None: ...
    def scan_words(self, words: list[Word]) -> None: ...
    def write_target(self, path: str) -> None: ...
    def link_source(self, path: str) -> None: ...
    def is_critical(self, path: str) -> bool: ...
    def saw_db_client(self) -> None: ...
    def eval_code(self, source: str) -> None: ...
    def inline_code(self, program: str) -> None: ...


Rule = Callable[[list[str], list[Word], Scan], None]
"""(argument texts, argument words, scan) -> None."""

SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish"})
INTERPRETERS = SHELLS | frozenset({"python", "python2", "python3", "perl", "ruby", "node", "php", "deno", "bun"})
DOWNLOADERS = frozenset({"curl", "wget", "fetch"})
DECODERS = frozenset({"base64", "base32", "basenc", "xxd", "openssl", "gunzip", "zcat", "gzip", "uudecode", "rev"})
"""Programs whose output is text the scan never saw (`echo … | base64 -d | sh`)."""
DB_CLIENTS = frozenset(
    {"psql", "mysql", "mariadb", "sqlite3", "sqlite", "sqlcmd", "duckdb", "clickhouse-client", "cockroach", "mongosh"}
)
_PSEUDO_DEVICES = frozenset(
    {"/dev/null", "/dev/zero", "/dev/random", "/dev/urandom", "/dev/stdout", "/dev/stderr", "/dev/tty"}
)
_CODE_FLAGS = {"python": "cm", "perl": "eE", "ruby": "e", "node": "ep", "php": "rf", "deno": "", "bun": "e"}
_WORLD_WRITABLE = re.compile(r"0?0?777|(a|ugo|o)[+=]rwx")
_DOWNLOAD_WORD = re.compile(r"\b(curl|wget|fetch)\b")


def positionals(args: list[str]) -> list[str]:
    """Arguments that are not options ("--" ends options; GNU tools allow options anywhere)."""
    result, options_done = [], False
    for a in args:
        if not options_done and a == "--":
            options_done = True
        elif options_done or not (a.startswith("-") and len(a) > 1):
            result.append(a)
    return result


def _has_short_flag(args: list[str], letter: str) -> bool:
    """True if a short option cluster ("-rf", "-Rv") contains `letter`, before any "--"."""
    for a in args:
        if a == "--":
            return False
        if a.startswith("-") and not a.startswith("--") and letter in a[1:]:
            return True
    return False


def _rm(args: list[str], words: list[Word], scan: Scan) -> None:
    recursive = "--recursive" in args or _has_short_flag(args, "r") or _has_short_flag(args, "R")
    if not recursive:
        return
    critical = [t for t in positionals(args) if scan.is_critical(t)]
    if critical:
        scan.block("rm_critical", f"recursive delete of {critical[0]!r}, a root, system or home folder")
    else:
        scan.approve("recursive_delete", "recursive delete (rm -r)")


def _find(args: list[str], words: list[Word], scan: Scan) -> None:
    if "-delete" in args:
        scan.approve("find_delete", "find … -delete (removes every match)")
    i = 0
    while i < len(args):
        if args[i] in ("-exec", "-execdir", "-ok", "-okdir"):
            end = i + 1
            while end < len(args) and args[end] not in (";", "+"):
                end += 1
            scan.scan_words(words[i + 1 : end])  # the command find runs per match
            i = end
        i += 1


def _chmod(args: list[str], words: list[Word], scan: Scan) -> None:
    if not ("--recursive" in args or _has_short_flag(args, "R")):
        return
    rest = positionals(args)
    if rest and _WORLD_WRITABLE.fullmatch(rest[0]):
        scan.approve("chmod_recursive_777", "recursive chmod 777 (makes files world-writable)")
    elif any(scan.is_critical(t) for t in rest[1:]):
        scan.approve("recursive_permission_change", "recursive permission change of a system or home folder")


def _chown(args: list[str], words: list[Word], scan: Scan) -> None:
    if "--recursive" in args or _has_short_flag(args, "R"):
        scan.approve("chown_recursive", "recursive ownership change (chown/chgrp -R)")


_GIT_OPTIONS_WITH_VALUE = frozenset({"-C", "-c", "--git-dir", "--work-tree", "--namespace", "--exec-path"})


def _git(args: list[str], words: list[Word], scan: Scan) -> None:
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in _GIT_OPTIONS_WITH_VALUE else 1
    if i >= len(args):
        return
    sub, rest = args[i], args[i + 1 :]
    if sub == "reset" and "--hard" in rest:
        scan.approve("git_reset_hard", "git reset --hard (discards uncommitted changes)")
    elif sub == "clean" and ("--force" in rest or _has_short_flag(rest, "f")):
        scan.approve("git_clean", "git clean -f (deletes untracked files)")
    elif sub == "config" and _git_config_writes(rest):
        scan.approve("git_config_write", "git config that changes a configuration (it can name commands git runs)")
    elif sub == "push" and (
        any(a.startswith("--force") or a == "--mirror" for a in rest)
        or _has_short_flag(rest, "f")
        or any(a.startswith("+") for a in positionals(rest))
    ):
        scan.approve("git_force_push", "git force push (rewrites the remote branch's history)")


_GIT_CONFIG_READS = frozenset(
    {"--get", "--get-all", "--get-regexp", "--get-urlmatch", "--list", "-l", "--get-color", "--get-colorbool"}
)
_GIT_CONFIG_WRITES = frozenset(
    {"--add", "--unset", "--unset-all", "--replace-all", "--rename-section", "--remove-section", "--edit", "-e"}
)
_GIT_CONFIG_VALUES = frozenset({"-f", "--file", "--blob", "--type", "--default", "--comment", "--value"})


def _git_config_writes(rest: list[str]) -> bool:
    """True unless `git config …` only reads (`--get`, `--list`, `get`, one name)."""
    if any(a in _GIT_CONFIG_WRITES for a in rest):
        return True
    if any(a in _GIT_CONFIG_READS for a in rest):
        return False
    operands: list[str] = []
    skip = False
    for a in rest:
        if skip:
            skip = False
        elif a in _GIT_CONFIG_VALUES:
            skip = True
        elif not a.startswith("-"):
            operands.append(a)
    if operands[:1] in (["get"], ["list"]):
        return False
    setting = ("set", "unset", "rename-section", "remove-section", "edit")
    return bool(operands) and (operands[0] in setting or len(operands) >= 2)


def _dd(args: list[str], words: list[Word], scan: Scan) -> None:
    for a in args:
        if a.startswith("of="):
            scan.write_target(a[3:])


def _mkfs(args: list[str], words: list[Word], scan: Scan) -> None:
    scan.block("format_filesystem", "file system creation (mkfs erases the target)")


def _wipe(args: list[str], words: list[Word], scan: Scan) -> None:
    if any(a.startswith("/dev/") and a not in _PSEUDO_DEVICES for a in positionals(args)):
        scan.block("wipe_device", "wipe of a disk device")


def _kill(args: list[str], words: list[Word], scan: Scan) -> None:
    if args == ["-1"]:
        scan.block("kill_all", "kill -1 (signals every process you own)")
        return
    i = 0
    if args and args[0] in ("-s", "-n"):
        i = 2
    elif args and args[0].startswith("-") and args[0] != "--":
        i = 1  # the signal, e.g. -9, -KILL; a "-1" here is SIGHUP, not a pid
    pids = args[i + 1 :] if args[i : i + 1] == ["--"] else args[i:]
    if "-1" in pids:
        scan.block("kill_all", "kill -1 (signals every process you own)")


def _shutdown(args: list[str], words: list[Word], scan: Scan) -> None:
    scan.block("shutdown", "shutdown or reboot of the machine")


def _init(args: list[str], words: list[Word], scan: Scan) -> None:
    if any(a in ("0", "6") for a in positionals(args)):
        scan.block("shutdown", "shutdown or reboot of the machine (init 0/6)")


def _systemctl(args: list[str], words: list[Word], scan: Scan) -> None:
    verbs = positionals(args)
    verb = verbs[0] if verbs else ""
    if verb in ("poweroff", "reboot", "halt", "kexec"):
        scan.block("shutdown", f"shutdown or reboot of the machine (systemctl {verb})")
    elif verb in ("stop", "disable", "mask", "kill"):
        scan.approve("systemctl_stop", f"stopping or disabling a system service (systemctl {verb})")


def _service(args: list[str], words: list[Word], scan: Scan) -> None:
    if len(args) >= 2 and args[1] == "stop":
        scan.approve("systemctl_stop", "stopping a system service (service … stop)")


def _tee(args: list[str], words: list[Word], scan: Scan) -> None:
    for target in positionals(args):
        scan.write_target(target)


def _copy(args: list[str], words: list[Word], scan: Scan) -> None:
    rest = positionals(args)
    if len(rest) >= 2:
        scan.write_target(rest[-1])


def _link(args: list[str], words: list[Word], scan: Scan) -> None:
    """`ln [-s] SOURCE… [LINK]`: a link to a protected place makes later writes through it reach there."""
    rest = positionals(args)
    for operand in rest:  # sources, and the link name or -t folder (a protected name is one anyway)
        scan.link_source(operand)
    if len(rest) >= 2:
        scan.write_target(rest[-1])


def _in_place(args: list[str], words: list[Word], scan: Scan) -> None:
    if any(a.startswith("-i") or a.startswith("--in-place") for a in args):
        for target in positionals(args):
            scan.write_target(target)


def _truncate(args: list[str], words: list[Word], scan: Scan) -> None:
    for target in positionals(args):
        scan.write_target(target)


def _download(args: list[str], words: list[Word], scan: Scan) -> None:
    for i, a in enumerate(args[:-1]):
        if a in ("-o", "--output", "-O", "--output-document"):
            scan.write_target(args[i + 1])


def _eval(args: list[str], words: list[Word], scan: Scan) -> None:
    _remote_code_in_words(words, scan)
    scan.eval_code(" ".join(args))


def _source(args: list[str], words: list[Word], scan: Scan) -> None:
    _remote_code_in_words(words, scan)


def _remote_code_in_words(words: list[Word], scan: Scan) -> None:
    """`bash <(curl …)`, `eval "$(wget -O- …)"`: downloaded code run directly."""
    if any(_DOWNLOAD_WORD.search(inner) for w in words for inner in w.nested):
        scan.approve("remote_script", "code downloaded from the network run directly")


def interpreter_mode(name: str, args: list[str]) -> tuple[str, int]:
    """How an interpreter gets its code: ("inline", index of the code) | ("stdin", -1) | ("file", -1).

    Shells take `-c CODE` (also in clusters like `-lc`), `-s`/`-` or nothing for stdin.
    Other interpreters: a code flag (python -c/-m, perl -e, node -e, …) means inline or
    module code, never stdin.
    """
    is_shell = name in SHELLS
    code_flags = "c" if is_shell else _CODE_FLAGS.get(name, "")
    inline, from_stdin, i = False, False, 0
    while i < len(args):
        a = args[i]
        if a == "-":
            return "stdin", -1
        if a == "--":
            i += 1
            break
        if a.startswith("--"):
            if a in ("--eval", "--print"):
                inline = True
            i += 2 if a in ("--rcfile", "--init-file") else 1
            continue
        if a[:1] in "-+" and len(a) > 1:
            letters = a[1:]
            if a[0] == "-" and any(f in letters for f in code_flags):
                inline = True
            if a[0] == "-" and is_shell and "s" in letters:
                from_stdin = True
            i += 2 if is_shell and letters == "o" else 1
            continue
        break
    if inline:
        return "inline", i
    if from_stdin or i >= len(args):
        return "stdin", -1
    return "file", -1


def _takes_code(name: str, options: list[str]) -> bool:
    """True when `options` hand the interpreter code as text (python -c, perl -e, node -e…),
    not a module to run (python -m)."""
    letters = _CODE_FLAGS.get(name, "").replace("m", "")

    def hands_code(option: str) -> bool:
        if option in ("--eval", "--print"):
            return True
        return option.startswith("-") and not option.startswith("--") and any(f in option[1:] for f in letters)

    return any(hands_code(option) for option in options)


def _interpreter(name: str) -> Rule:
    def rule(args: list[str], words: list[Word], scan: Scan) -> None:
        _remote_code_in_words(words, scan)
        mode, index = interpreter_mode(name, args)
        if name in SHELLS and mode == "inline" and index < len(words):
            scan.scan_source(words[index].text)
        elif mode == "inline" and _takes_code(name, args[:index]):
            scan.inline_code(name)

    return rule


def _perl(args: list[str], words: list[Word], scan: Scan) -> None:
    _interpreter("perl")(args, words, scan)
    _in_place(args, words, scan)  # perl -i edits files in place


def _db_client(args: list[str], words: list[Word], scan: Scan) -> None:
    scan.saw_db_client()


RULES: dict[str, Rule] = {
    "rm": _rm,
    "find": _find,
    "chmod": _chmod,
    "chown": _chown,
    "chgrp": _chown,
    "git": _git,
    "dd": _dd,
    "mke2fs": _mkfs,
    "newfs": _mkfs,
    "wipefs": _wipe,
    "blkdiscard": _wipe,
    "shred": _wipe,
    "kill": _kill,
    "shutdown": _shutdown,
    "reboot": _shutdown,
    "halt": _shutdown,
    "poweroff": _shutdown,
    "init": _init,
    "telinit": _init,
    "systemctl": _systemctl,
    "service": _service,
    "tee": _tee,
    "cp": _copy,
    "mv": _copy,
    "install": _copy,
    "ln": _link,
    "rsync": _copy,
    "sed": _in_place,
    "perl": _perl,
    "truncate": _truncate,
    "curl": _download,
    "wget": _download,
    "eval": _eval,
    "source": _source,
    ".": _source,
    **{name: _db_client for name in DB_CLIENTS},
}


def canonical_name(name: str) -> str:
    """Family name used by the rules: "python3.11" and "pypy3" become "python"."""
    match = re.fullmatch(r"(python|pypy)[\d.]*", name)
    return "python" if match else name


def rule_for(name: str) -> Rule | None:
    """The rule for a program's base name, or None when the program is not inspected."""
    name = canonical_name(name)
    if name.startswith("mkfs"):
        return _mkfs
    rule = RULES.get(name)
    if rule is None and name in INTERPRETERS:
        rule = _interpreter(name)
    return rule

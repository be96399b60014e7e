"""The environment every tool process starts with: an allowlist, never a scrub.

    policy = ToolEnvPolicy.from_settings(settings)
    env = policy.environment(os.environ)   # what a `terminal` command or stdio MCP server gets
    report = policy.report(os.environ)     # names only, for `hermes doctor`

Invariants:
- a variable of hermes's environment reaches a tool only when its name is in the core set
  (CORE_NAMES, CORE_GLOBS, PROXY_NAMES) or matches a glob of `passthrough`; nothing else
  passes, whatever its name or value (no pattern of "secret-looking" names to outguess);
- NEVER_PASS (hermes's own keys and database URL) never reaches a tool, even when a
  passthrough glob names it ("*" included);
- a passthrough-named variable whose value is one of `secret_values` (the configured
  provider key, server key, database URL or that URL's password) is dropped under any name;
- a proxy variable passes on its own only when its value holds no credentials (no "@", as
  in http://user:pass@proxy:3128); one with credentials passes only when passthrough names it;
- TOOL_ENV_EXTRA (PAGER=cat, GIT_PAGER=cat) is set last, over anything inherited.

A stdio MCP server's own `env` table is added on top by its spawner (mcp/spawn.py): it is
what the user wrote for that server, not something inherited.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlsplit

if TYPE_CHECKING:
    from hermes.config import Settings

CORE_NAMES: tuple[str, ...] = (
    # Who and where: every shell, git (author defaults), ssh-less tools and the MCP SDK's own
    # default set (HOME, LOGNAME, PATH, SHELL, TERM, USER) need these.
    "PATH", "HOME", "USER", "LOGNAME", "SHELL",
    # Language and time: without them tools fall back to ASCII and UTC.
    "LANG", "LANGUAGE", "TZ",
    # Terminal capabilities, read by tools that colour or size their output.
    "TERM", "COLORTERM",
    # Where temporary files go (the sandbox gives a private /tmp whatever this says).
    "TMPDIR",
    # Where tools keep their configuration and caches (paths, not contents: git reads
    # $XDG_CONFIG_HOME/git/config, pip and uv their caches).
    "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_CONFIG_DIRS", "XDG_DATA_DIRS",
    # The activated virtual environment: PATH already points into it, and uv, poetry and pip
    # read this to agree with PATH.
    "VIRTUAL_ENV",
    # Extra CA certificates (OpenSSL's, then Python requests', curl's and Node's own): behind a
    # TLS-inspecting proxy no HTTPS works without them. Paths of public certificates, not keys.
    "SSL_CERT_FILE", "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "NODE_EXTRA_CA_CERTS",
)  # fmt: skip
"""Variables every tool gets as hermes has them. Left out on purpose:
- credentials and handles to them: SSH_AUTH_SOCK (the ssh agent), GPG_AGENT_INFO,
  XDG_RUNTIME_DIR (its sockets reach the ssh, gpg and keyring agents),
  DBUS_SESSION_BUS_ADDRESS (the secret service), XAUTHORITY and DISPLAY/WAYLAND_DISPLAY
  (the user's screen and keyboard);
- PWD, OLDPWD, SHLVL: the shell sets its own, and hermes's would name the wrong folder;
- language search paths (PYTHONPATH, NODE_PATH, GOPATH, CARGO_HOME, LD_LIBRARY_PATH, …):
  they change which code a tool runs; name them in `tool_env_passthrough` when needed."""

CORE_GLOBS: tuple[str, ...] = ("LC_*",)
"""Locale categories (LC_ALL, LC_CTYPE, …)."""

PROXY_NAMES: tuple[str, ...] = (
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "all_proxy", "no_proxy",
)  # fmt: skip
"""Network tools (pip, curl, git, npm) reach nothing behind a mandatory proxy without these.
A proxy URL is an address unless it carries user:password, so only credential-free values
pass on their own."""

NEVER_PASS = frozenset(
    {"API_SERVER_KEY", "HERMES_SERVER_KEY", "HERMES_API_KEY", "OPENAI_API_KEY", "HERMES_DATABASE_URL"}
)
"""hermes's own secrets: the endpoint key, the server key (HERMES_SERVER_KEY: the key a
client sends to a server, hermes/cli/_server_key.py), the database URL (a password for the
whole store). No passthrough glob lets these through."""

TOOL_ENV_EXTRA: dict[str, str] = {"PAGER": "cat", "GIT_PAGER": "cat"}
"""Set for every tool command: nothing may wait for a pager."""


def is_core_name(name: str) -> bool:
    return name in CORE_NAMES or any(fnmatch.fnmatchcase(name, glob) for glob in CORE_GLOBS)


def _holds_credentials(value: str) -> bool:
    """Whether a proxy value carries user:password (anything before an "@")."""
    return "@" in value


@dataclass(frozen=True, slots=True)
class ToolEnvReport:
    """What a tool would get, by name only (never a value)."""

    names: tuple[str, ...]
    """Every variable a tool gets, sorted (PAGER and GIT_PAGER included)."""
    passthrough: tuple[str, ...]
    """The `tool_env_passthrough` globs as configured."""
    withheld: tuple[str, ...]
    """Variables a passthrough glob or the proxy rule would admit that a rule keeps out:
    hermes's own secrets, values equal to a hermes secret, proxies with credentials."""


@dataclass(frozen=True, slots=True)
class ToolEnvPolicy:
    """Which of hermes's variables tools get; one per tool set."""

    passthrough: tuple[str, ...] = ()
    """Names or globs (case-sensitive) the user lets through besides the core set."""
    secret_values: frozenset[str] = field(default=frozenset(), repr=False)
    """The configured keys and database URL (and its password); a passthrough-named variable
    holding one is dropped."""

    @classmethod
    def from_settings(cls, settings: Settings) -> ToolEnvPolicy:
        secrets = {settings.api_key, settings.server_key, settings.database_url, *_passwords(settings.database_url)}
        return cls(passthrough=settings.tool_env_passthrough, secret_values=frozenset(s for s in secrets if s))

    def admits(self, name: str, value: str) -> bool:
        """Whether variable `name` with `value` reaches a tool."""
        if name in NEVER_PASS:
            return False
        if self._named(name):
            return value not in self.secret_values
        if name in PROXY_NAMES:
            return not _holds_credentials(value)
        return is_core_name(name)

    def environment(self, environ: Mapping[str, str]) -> dict[str, str]:
        """The whole environment of a tool process started from `environ`."""
        kept = {name: value for name, value in environ.items() if self.admits(name, value)}
        return {**kept, **TOOL_ENV_EXTRA}

    def report(self, environ: Mapping[str, str]) -> ToolEnvReport:
        env = self.environment(environ)
        withheld = (name for name in environ if name not in env and (self._named(name) or name in PROXY_NAMES))
        return ToolEnvReport(names=tuple(sorted(env)), passthrough=self.passthrough, withheld=tuple(sorted(withheld)))

    def _named(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, glob) for glob in self.passthrough)


def _passwords(url: str | None) -> tuple[str, ...]:
    """The password in a database URL, as written and percent-decoded (as PGPASSWORD holds it)."""
    if not url:
        return ()
    try:
        password = urlsplit(url).password
    except ValueError:
        return ()
    return (password, unquote(password)) if password else ()

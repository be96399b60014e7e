"""Where hermes's own files are, as the tool policy sees them: worked out once, here.

    paths = HermesPaths.of(settings.home)          # the home of the settings
    paths = HermesPaths.from_environment()         # $HERMES_HOME as the environment says now
    paths.own_homes        -> (the home in use, ~/.hermes): hidden from tools, never written
    paths.homes_as_text()  -> the same, as written and resolved, for paths read in commands
    installation_paths()   -> hermes's package and the Python environment it runs from

Every module of the policy asks here (the confinement's hidden and protected lists, the
approval policy's sensitive files and `$HERMES_HOME` in commands), so none works hermes's
home out on its own. The rule for "which home" is the settings' (hermes/config.py:
`home_from_environment`, `default_home`).

Invariants:
- `home` is absolute and normalised, `~` expanded, symlinks not resolved (callers add the
  resolved forms they need); `default_home` is ~/.hermes of `user_home`;
- ~/.hermes counts as hermes's own even when another home is in use (an older or other
  hermes may keep its keys there);
- nothing is cached: `from_environment` reads HERMES_HOME and HOME at each call.
"""

from __future__ import annotations

import os
import site
import sysconfig
from dataclasses import dataclass
from pathlib import Path

from hermes.config import default_home, home_from_environment


def absolute(path: str | os.PathLike[str], cwd: Path | None = None) -> Path:
    """`path` with `~` expanded, made absolute against `cwd` (default: the current folder), normalised."""
    expanded = Path(os.path.expanduser(os.fspath(path)))
    if not expanded.is_absolute():
        expanded = (cwd or Path.cwd()) / expanded
    return Path(os.path.normpath(expanded))


@dataclass(frozen=True, slots=True)
class HermesPaths:
    """hermes's home in use and the user's; see the module docstring."""

    home: Path
    """The home in use ($HERMES_HOME, settings.home): config.toml, state.db, caches."""
    user_home: Path

    @classmethod
    def of(cls, home: str | os.PathLike[str], user_home: Path | None = None) -> HermesPaths:
        return cls(home=absolute(home), user_home=user_home or Path.home())

    @classmethod
    def from_environment(cls) -> HermesPaths:
        return cls.of(home_from_environment(os.environ))

    @property
    def default_home(self) -> Path:
        return default_home(self.user_home)

    @property
    def own_homes(self) -> tuple[Path, ...]:
        """The home in use, then ~/.hermes (once when they are the same)."""
        return tuple(dict.fromkeys((self.home, self.default_home)))

    def homes_as_text(self) -> list[str]:
        """~/.hermes and the home in use, each resolved and as written; the home in use as
        written is always last (what `$HERMES_HOME` in a command stands for)."""
        out: list[str] = []
        for home in map(str, (self.default_home, self.home)):
            for candidate in (os.path.realpath(home), home):
                if candidate in out:
                    out.remove(candidate)
                out.append(candidate)
        return out


def installation_paths() -> tuple[Path, ...]:
    """hermes's package and the Python environment it runs from (code run at every start)."""
    import hermes

    paths = [Path(hermes.__file__).parent]
    scheme = sysconfig.get_paths()
    paths += [Path(scheme[key]) for key in ("purelib", "platlib", "scripts") if key in scheme]
    user_site = site.getusersitepackages() if site.ENABLE_USER_SITE is not False else None
    if isinstance(user_site, str):
        paths.append(Path(user_site))
    return tuple(dict.fromkeys(absolute(p) for p in paths))

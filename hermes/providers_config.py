"""The `[providers.NAME]` tables of config.toml: named model endpoints.

    [providers.claude]
    kind = "anthropic"                      # Anthropic's Messages API, native
    api_key_env = "ANTHROPIC_API_KEY"       # the variable holding the key (never the key itself)
    default_model = "claude-sonnet-4-5"
    models = ["claude-sonnet-4-5", "claude-haiku-4-5"]   # optional: else the endpoint's model list

    [providers.ollama]
    kind = "openai"                         # any OpenAI-compatible endpoint
    base_url = "http://127.0.0.1:11434/v1"

A model is picked as `NAME/MODEL` (`-m claude/claude-haiku-4-5`, `model = "ollama/qwen3"`,
`/model` in the TUI). Today's `base_url` / `model` / `api_key` settings stay the provider
named `default`, and the bundled model is `local`; those two names cannot be tables.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from hermes.errors import ConfigError

TABLE = "providers"
KINDS = ("openai", "anthropic")
RESERVED = ("default", "local")
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_\-]{0,39}$")
_KEYS = frozenset({"kind", "base_url", "api_key_env", "models", "default_model", "max_tokens", "thinking_budget"})


@dataclass(frozen=True, slots=True)
class ProviderConfig:
    name: str
    kind: str
    base_url: str | None = None
    """None: the kind's public endpoint (Anthropic's); required for kind = "openai"."""
    api_key_env: str | None = None
    models: tuple[str, ...] = ()
    default_model: str | None = None
    max_tokens: int | None = None
    """Anthropic: the most tokens one answer may have (None: 8192)."""
    thinking_budget: int = 0
    """Anthropic: tokens of extended thinking per call (0: off)."""

    @property
    def first_model(self) -> str | None:
        return self.default_model or (self.models[0] if self.models else None)


def split_model(model: str, names: frozenset[str] | set[str]) -> tuple[str | None, str]:
    """("NAME", "MODEL") when `model` is NAME/MODEL for one of `names`, else (None, model).

    Only a known provider name splits, so a model id with a slash of its own
    (`Qwen/Qwen2.5-7B`, OpenRouter's `openai/gpt-4o`) stays whole.
    """
    head, slash, rest = model.partition("/")
    if slash and rest and head in names:
        return head, rest
    return None, model


def parse_providers(raw: object, where: str) -> tuple[ProviderConfig, ...]:
    if not isinstance(raw, Mapping):
        raise ConfigError(f"{where}: {TABLE} must be a table of [{TABLE}.NAME] entries")
    return tuple(parse_provider(str(name), entry, where) for name, entry in raw.items())


def parse_provider(name: str, entry: object, where: str) -> ProviderConfig:
    label = f"{where}: [{TABLE}.{name}]"
    if not NAME_PATTERN.match(name):
        raise ConfigError(f"{label}: a provider name is up to 40 letters, digits, '-' and '_'")
    if name in RESERVED:
        raise ConfigError(
            f"{label}: {name!r} is taken ({'base_url and model' if name == 'default' else 'the bundled model'}); "
            "choose another name"
        )
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{label} must be a table")
    unknown = sorted(set(entry) - _KEYS)
    if unknown:
        raise ConfigError(f"{label}: unknown key(s) {', '.join(unknown)}")
    kind = entry.get("kind")
    if kind not in KINDS:
        raise ConfigError(f"{label}: kind must be one of {', '.join(KINDS)}, not {kind!r}")
    base_url = _optional_text(label, "base_url", entry.get("base_url"))
    if base_url is not None and not base_url.startswith(("http://", "https://")):
        raise ConfigError(f"{label}: base_url must start with http:// or https://")
    if kind == "openai" and base_url is None:
        raise ConfigError(f'{label}: kind = "openai" needs base_url (e.g. "http://127.0.0.1:11434/v1")')
    models = entry.get("models", [])
    if not isinstance(models, list) or not all(isinstance(m, str) and m.strip() for m in models):
        raise ConfigError(f"{label}: models must be a list of model names")
    return ProviderConfig(
        name=name,
        kind=kind,
        base_url=base_url,
        api_key_env=_optional_text(label, "api_key_env", entry.get("api_key_env")),
        models=tuple(models),
        default_model=_optional_text(label, "default_model", entry.get("default_model")),
        max_tokens=_optional_count(label, "max_tokens", entry.get("max_tokens"), minimum=1),
        thinking_budget=_optional_count(label, "thinking_budget", entry.get("thinking_budget"), minimum=0) or 0,
    )


def _optional_text(label: str, key: str, value: object) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{label}: {key} must be a non-empty string")
    return value.strip()


def _optional_count(label: str, key: str, value: object, *, minimum: int) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ConfigError(f"{label}: {key} must be a whole number of at least {minimum}")
    return value

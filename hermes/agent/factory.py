"""Building an Agent from Settings: which provider, which tools, which options.

Provider choice (`settings.provider`):
    openai  the OpenAI-compatible endpoint at `base_url` (model required)
    local   the bundled llama.cpp model (the `hermes[local]` extra)
    auto    openai when `base_url` is set, else local when the extra is installed,
            else a ConfigError that says exactly what to set
Other names are looked up in the provider registry (tests register scripted ones).
"""

from __future__ import annotations

from dataclasses import dataclass

from hermes.agent.engine import Agent, EngineOptions
from hermes.agent.provider import Provider, provider_factory
from hermes.agent.tools.base import ToolRegistry
from hermes.config import Settings
from hermes.errors import ConfigError
from hermes.store.base import SessionStore

NO_ENDPOINT = (
    "no model endpoint configured: set HERMES_BASE_URL and HERMES_MODEL "
    "(and HERMES_API_KEY if the endpoint needs one), e.g. `hermes config set base_url http://127.0.0.1:11434/v1`, "
    "or install hermes[local] for an offline model"
)


@dataclass(frozen=True, slots=True)
class ProviderChoice:
    name: str
    """openai, local, or a registered name."""
    model: str
    reason: str
    """Why this provider was chosen, in one line (for `hermes doctor` and start-up notes)."""


def choose_provider(settings: Settings) -> ProviderChoice:
    """Decide which provider the settings select, without starting anything."""
    wanted = settings.provider
    if wanted == "auto":
        if settings.base_url:
            wanted = "openai"
        elif _local_installed():
            return ProviderChoice("local", settings.model or "local", "no endpoint configured and hermes[local] is installed")
        else:
            raise ConfigError(NO_ENDPOINT)
    if wanted == "openai":
        if not settings.base_url:
            raise ConfigError(NO_ENDPOINT)
        if not settings.model:
            raise ConfigError("no model configured: set HERMES_MODEL (or `hermes config set model NAME`)")
        return ProviderChoice("openai", settings.model, f"base_url is set ({settings.base_url})")
    if wanted == "local":
        if not _local_installed():
            raise ConfigError("provider is 'local' but hermes[local] is not installed: pip install 'hermes-agent-cli[local]'")
        return ProviderChoice("local", settings.model or "local", "provider = local")
    if provider_factory(wanted) is None:
        raise ConfigError(f"unknown provider {wanted!r}: use auto, openai or local")
    return ProviderChoice(wanted, settings.model or wanted, f"provider = {wanted}")


def build_provider(settings: Settings, choice: ProviderChoice | None = None) -> Provider:
    choice = choice or choose_provider(settings)
    if choice.name == "openai":
        from hermes.agent.providers.openai_compat import OpenAICompatProvider

        assert settings.base_url is not None
        return OpenAICompatProvider(
            base_url=settings.base_url,
            api_key=settings.api_key,
            connect_timeout=settings.request_timeout,
            read_timeout=max(settings.stream_stale_timeout + 30.0, 60.0),
        )
    if choice.name == "local":
        from hermes.agent.providers.local import create_local_provider  # type: ignore[attr-defined]

        return create_local_provider(settings)  # type: ignore[no-any-return]
    factory = provider_factory(choice.name)
    assert factory is not None
    return factory(settings)


def build_agent(
    settings: Settings,
    store: SessionStore | None,
    *,
    provider: Provider | None = None,
    tools: ToolRegistry | None = None,
    model: str | None = None,
) -> Agent:
    """The Agent every front end uses: provider from settings unless given, core tools."""
    if provider is None:
        choice = choose_provider(settings)
        provider = build_provider(settings, choice)
        resolved_model = model or choice.model
    else:
        resolved_model = model or settings.model or provider.name
    if tools is None:
        from hermes.agent.tools import default_registry

        tools = default_registry()
    return Agent(
        provider,
        store=store,
        model=resolved_model,
        tools=tools,
        options=EngineOptions.from_settings(settings),
        system_prompt=settings.system_prompt,
    )


def _local_installed() -> bool:
    try:
        from hermes.agent.providers.local import local_available  # type: ignore[attr-defined]
    except ImportError:
        return False
    return bool(local_available())

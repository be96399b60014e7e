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
from hermes.agent.instructions import ProjectInstructions, load_project_instructions
from hermes.agent.provider import Provider, provider_factory
from hermes.agent.providers.json_actions import with_tool_protocol
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

    @property
    def notice(self) -> str | None:
        """The one line a front end shows at start-up when the choice was not explicit."""
        if self.name == "local" and self.reason.startswith("no endpoint"):
            return (
                "no model endpoint configured: using the bundled local model "
                "(set HERMES_BASE_URL and HERMES_MODEL to use a hosted one)"
            )
        return None


def choose_provider(settings: Settings) -> ProviderChoice:
    """Decide which provider the settings select, without starting anything."""
    wanted = settings.provider
    if wanted == "auto":
        if settings.base_url:
            wanted = "openai"
        elif _local_installed(settings):
            return _local_choice(settings, "no endpoint configured and hermes[local] is installed")
        else:
            raise ConfigError(NO_ENDPOINT)
    if wanted == "openai":
        if not settings.base_url:
            raise ConfigError(NO_ENDPOINT)
        if not settings.model:
            raise ConfigError("no model configured: set HERMES_MODEL (or `hermes config set model NAME`)")
        return ProviderChoice("openai", settings.model, f"base_url is set ({settings.base_url})")
    if wanted == "local":
        if not _local_installed(settings):
            raise ConfigError("provider is 'local' but hermes[local] is not installed: pip install 'hermes-agent-cli[local]'")
        return _local_choice(settings, "provider = local")
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
        from hermes.agent.providers.local import create_local_provider
        from hermes.agent.providers.local_model import rich_progress

        # The bar is drawn only during the one-time model assembly.
        with rich_progress() as progress:
            return create_local_provider(settings, progress=progress)
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
    choice: ProviderChoice | None = None,
    instructions: ProjectInstructions | None = None,
) -> Agent:
    """The Agent every front end uses: provider from settings unless given, core tools.

    `instructions` default to the AGENTS.md files for the process's working directory.
    """
    options = EngineOptions.from_settings(settings)
    if provider is None:
        choice = choice or choose_provider(settings)
        provider = with_tool_protocol(build_provider(settings, choice), settings.tool_protocol)
        resolved_model = model or choice.model
    else:
        resolved_model = model or settings.model or provider.name
    local_model = getattr(provider, "model_name", None)
    if provider.name == "local" and local_model:
        # The bundled server serves one model; a slow CPU may read a long prompt for minutes.
        resolved_model = model or local_model
        options.stale_timeout = max(options.stale_timeout, getattr(provider, "recommended_stale_timeout", 0.0))
    if tools is None:
        from hermes.agent.tools import default_registry

        tools = default_registry()
    return Agent(
        provider,
        store=store,
        model=resolved_model,
        tools=tools,
        options=options,
        system_prompt=settings.system_prompt,
        instructions=load_project_instructions(settings) if instructions is None else instructions,
    )


def _local_choice(settings: Settings, why: str) -> ProviderChoice:
    from hermes.agent.providers.local import local_status

    status = local_status(settings)
    return ProviderChoice("local", status.model_name or "local", f"{why}; {status.reason}")


def _local_installed(settings: Settings | None = None) -> bool:
    try:
        from hermes.agent.providers.local import local_available
    except ImportError:
        return False
    return bool(local_available(settings))

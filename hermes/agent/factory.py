"""Building an Agent from Settings: which provider, which tools, which options.

`choose_provider(settings)` is the one place that decides the provider; `build_agent`,
`hermes doctor` and the start-up notices of chat, the TUI and serve all use its
`ProviderChoice`. Choice (`settings.provider`):
    openai  the OpenAI-compatible endpoint at `base_url` (model required)
    local   the bundled llama.cpp model (the `hermes[local]` extra)
    auto    openai when `base_url` is set, else local when the extra is installed,
            else a ConfigError that says exactly what to set
Other names are looked up in the provider registry (tests register scripted ones).
A model written `NAME/MODEL` for a `[providers.NAME]` table (hermes/providers_config.py)
picks that table's provider; whenever tables exist the agent's provider is a router over
them and the default endpoint (hermes/agent/providers/named.py).

Slow one-time work (assembling the local model) is reported through a
`ProgressCallback`; this layer draws nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from hermes.agent.engine import Agent, EngineOptions
from hermes.agent.instructions import ProjectInstructions, load_project_instructions
from hermes.agent.memory.files import MemoryCaps, MemoryFiles
from hermes.agent.progress import ProgressCallback, ProgressUpdate
from hermes.agent.provider import Provider, provider_factory
from hermes.agent.providers.json_actions import with_tool_protocol
from hermes.agent.tools.base import ToolRegistry
from hermes.agent.tools.memory import MEMORY, make_memory_tool
from hermes.agent.tools.skill import SKILL, make_skill_tool
from hermes.checkpoints.turn import CheckpointConfig
from hermes.config import Settings
from hermes.errors import ConfigError
from hermes.extensions.skills import SkillCatalog, load_skills
from hermes.providers_config import split_model
from hermes.store.api import AsyncSessionStore

if TYPE_CHECKING:
    from hermes.agent.providers.local import LocalStatus
    from hermes.agent.providers.local_model import StepProgress

NO_ENDPOINT = (
    "no model endpoint configured: set HERMES_BASE_URL and HERMES_MODEL "
    "(and HERMES_API_KEY if the endpoint needs one), e.g. `hermes config set base_url http://127.0.0.1:11434/v1`, "
    "or install hermes[local] for an offline model"
)
LOCAL_FALLBACK_NOTICE = (
    "no model endpoint configured: using the bundled local model "
    "(set HERMES_BASE_URL and HERMES_MODEL to use a hosted one)"
)
LOCAL_PROGRESS_TASK = "Preparing local model"

ProviderKind = Literal["openai", "local", "registered", "named"]


@dataclass(frozen=True, slots=True)
class ProviderChoice:
    kind: ProviderKind
    name: str
    """openai, local, the registered provider's name, or a `[providers.NAME]` table's name."""
    model: str
    reason: str
    """Why this provider was chosen, in one line (for `hermes doctor`)."""
    notice: str | None = None
    """The one line a front end shows at start-up when the choice was not explicit."""


def choose_provider(settings: Settings) -> ProviderChoice:
    """Decide which provider the settings select, without starting anything.

    A model written `NAME/MODEL` for a `[providers.NAME]` table picks that provider; with
    tables but no model and no endpoint, the first table that names a model is used.
    """
    named = _named_choice(settings)
    if named is not None:
        return named
    if settings.model and settings.model.startswith("default/"):
        settings = settings.replace(model=settings.model.removeprefix("default/"))
    wanted = settings.provider
    if wanted == "auto":
        if settings.base_url:
            wanted = "openai"
        else:
            local = _local_status(settings)
            if local is None or not local.available:
                raise ConfigError(NO_ENDPOINT)
            return _local_choice(local, "no endpoint configured and hermes[local] is installed", LOCAL_FALLBACK_NOTICE)
    if wanted == "openai":
        if not settings.base_url:
            raise ConfigError(NO_ENDPOINT)
        if not settings.model:
            raise ConfigError("no model configured: set HERMES_MODEL (or `hermes config set model NAME`)")
        return ProviderChoice("openai", "openai", settings.model, f"base_url is set ({settings.base_url})")
    if wanted == "local":
        local = _local_status(settings)
        if local is None or not local.available:
            detail = f" ({local.reason})" if local is not None else ""
            raise ConfigError(
                f"provider is 'local' but hermes[local] is not installed: pip install 'hermes-agent-cli[local]'{detail}"
            )
        return _local_choice(local, "provider = local", None)
    if provider_factory(wanted) is None:
        raise ConfigError(f"unknown provider {wanted!r}: use auto, openai or local")
    return ProviderChoice("registered", wanted, settings.model or wanted, f"provider = {wanted}")


def _named_choice(settings: Settings) -> ProviderChoice | None:
    names = {config.name for config in settings.providers}
    if settings.model:
        head, _ = split_model(settings.model, names)
        if head is not None:
            return ProviderChoice("named", head, settings.model, f"the model names the provider {head}")
        return None
    if settings.base_url or settings.provider != "auto":
        return None
    for config in settings.providers:
        if config.first_model:
            model = f"{config.name}/{config.first_model}"
            return ProviderChoice("named", config.name, model, f"no model set: the first of [providers] ({model})")
    return None


def prepare_provider(settings: Settings, choice: ProviderChoice, progress: ProgressCallback | None = None) -> None:
    """Do the chosen provider's slow one-time work now (assembling the local model), with progress.

    For front ends that build the agent elsewhere (the server) but want the progress shown.
    """
    if choice.kind == "local":
        from hermes.agent.providers.local import resolve_model

        resolve_model(settings, _bytes_to(progress))


def build_provider(
    settings: Settings, choice: ProviderChoice | None = None, *, progress: ProgressCallback | None = None
) -> Provider:
    """The chosen provider; with `[providers]` tables, a router over them and the default
    endpoint (hermes/agent/providers/named.py), so any turn may name any of them."""
    choice = choice or choose_provider(settings)
    if not settings.providers:
        return _build_one(settings, choice, progress)
    from hermes.agent.providers.named import ProviderRouter

    default: Provider | None = None
    if choice.kind != "named":
        default = _build_one(settings, choice, progress)
    elif settings.base_url:
        default = _build_one(settings, ProviderChoice("openai", "openai", "", "base_url is set"), progress)
    return ProviderRouter(default, settings.providers, settings)


def _build_one(settings: Settings, choice: ProviderChoice, progress: ProgressCallback | None) -> Provider:
    if choice.kind == "openai":
        from hermes.agent.providers.openai_compat import OpenAICompatProvider

        assert settings.base_url is not None
        return OpenAICompatProvider(
            base_url=settings.base_url,
            api_key=settings.api_key,
            connect_timeout=settings.request_timeout,
            read_timeout=max(settings.stream_stale_timeout + 30.0, 60.0),
        )
    if choice.kind == "local":
        from hermes.agent.providers.local import create_local_provider

        return create_local_provider(settings, progress=_bytes_to(progress))
    factory = provider_factory(choice.name)
    assert factory is not None
    return factory(settings)


def build_agent(
    settings: Settings,
    store: AsyncSessionStore | None,
    *,
    provider: Provider | None = None,
    tools: ToolRegistry | None = None,
    model: str | None = None,
    choice: ProviderChoice | None = None,
    instructions: ProjectInstructions | None = None,
    progress: ProgressCallback | None = None,
    skills: SkillCatalog | None = None,
) -> Agent:
    """The Agent every front end uses: provider from settings unless given, core tools.

    `instructions` default to the AGENTS.md files for the process's working directory, and
    `skills` to the skills found from there (hermes/extensions/skills.py); when there are
    any, the `skill` tool joins the tools (unless the registry has one already). With
    `memory` on, the `memory` tool joins them too and new sessions' prompts hold the memory.
    """
    options = EngineOptions.from_settings(settings)
    if provider is None:
        choice = choice or choose_provider(settings)
        provider = with_tool_protocol(
            build_provider(settings, choice, progress=progress),
            settings.tool_protocol,
            assist=settings.small_model_assist,
        )
        resolved_model = model or choice.model
    else:
        resolved_model = model or settings.model or provider.name
    local_model = getattr(provider, "model_name", None)
    if provider.name == "local" and local_model:
        # The bundled server serves one model; a slow CPU may read a long prompt for minutes.
        resolved_model = model or local_model
        options.stale_timeout = max(options.stale_timeout, getattr(provider, "recommended_stale_timeout", 0.0))
        if settings.max_iterations == Settings.__dataclass_fields__["max_iterations"].default:
            # Unless set: a CPU model call takes 5 to 20 s, so a turn stops (and says what
            # it did) within minutes rather than running on for 90 calls.
            options.max_iterations = getattr(provider, "recommended_max_iterations", options.max_iterations)
            options.turn_seconds = getattr(provider, "recommended_turn_seconds", options.turn_seconds)
    default_tools = tools is None
    if tools is None:
        from hermes.agent.safety.launch import ToolLauncher
        from hermes.agent.tools import default_registry
        from hermes.agent.tools.web import web_tools

        tools = default_registry(ToolLauncher.from_settings(settings))
        for tool in web_tools(settings):
            tools.register(tool)
    if skills is None:
        skills = load_skills(settings.home, Path.cwd())
    if skills.skills and tools.get(SKILL) is None:
        tools.register(make_skill_tool(skills))
    memory = memory_files(settings)
    if memory is not None and tools.get(MEMORY) is None:
        tools.register(make_memory_tool(memory))
    agent = Agent(
        provider,
        store=store,
        model=resolved_model,
        tools=tools,
        options=options,
        system_prompt=settings.system_prompt,
        instructions=load_project_instructions(settings) if instructions is None else instructions,
        skills=skills,
        checkpoints=CheckpointConfig(
            settings.home, settings.checkpoint_max_file_kb, settings.checkpoints,
            max_files=settings.checkpoint_max_files, timeout=settings.checkpoint_timeout,
        ),  # fmt: skip
    )
    if settings.hooks or settings.hooks_claude_compat:
        from hermes.agent.hooks import Hooks

        agent.hooks = Hooks.from_settings(settings)
    agent.memory = memory
    if settings.lsp:
        from hermes.agent.lsp.diagnostics import LanguageServers
        from hermes.agent.safety.launch import ToolLauncher

        launcher = ToolLauncher.from_settings(settings)
        configured = dict(settings.lsp_servers)
        agent.diagnostics = LanguageServers(launcher=launcher, configured=configured, timeout=settings.lsp_timeout)
    if default_tools:  # a caller's own registry gets exactly its tools
        from hermes.agent.subagents.definitions import load_agents
        from hermes.agent.subagents.task import add_subagents

        catalog = load_agents(settings.home, Path.cwd())
        add_subagents(agent, catalog, depth=settings.subagent_depth, concurrency=settings.subagent_concurrency)
    return agent


def memory_files(settings: Settings) -> MemoryFiles | None:
    """The memory files of `settings.home` with their caps; None when `memory = false`."""
    if not settings.memory:
        return None
    return MemoryFiles(settings.home, MemoryCaps(settings.memory_max_chars, settings.user_memory_max_chars))


def _local_choice(local: LocalStatus, why: str, notice: str | None) -> ProviderChoice:
    return ProviderChoice("local", "local", local.model_name or "local", f"{why}; {local.reason}", notice)


def _local_status(settings: Settings) -> LocalStatus | None:
    """The local provider's status, or None when its module cannot even be imported."""
    try:
        from hermes.agent.providers.local import local_status
    except ImportError:
        return None
    return local_status(settings)


def _bytes_to(progress: ProgressCallback | None) -> StepProgress | None:
    if progress is None:
        return None

    def report(step: str, done: int, total: int) -> None:
        progress(ProgressUpdate(LOCAL_PROGRESS_TASK, done, total, step))

    return report

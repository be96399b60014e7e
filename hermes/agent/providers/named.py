"""Named providers: the registry of provider kinds, and the router that picks one per model.

    router = ProviderRouter(default, settings.providers, settings)
    router.stream(ModelRequest(model="claude/claude-haiku-4-5", ...))   # → the `claude` table's provider
    router.stream(ModelRequest(model="gpt-4o", ...))                    # → the default endpoint

A kind ("openai", "anthropic") builds a provider from its `[providers.NAME]` table
(`PROVIDER_KINDS`, the one place that knows how); `register_kind` adds one.

Invariants:
- a model routes to a named provider only as `NAME/MODEL` with NAME configured (or
  `default/MODEL` for the default endpoint); any other name, slashes included, goes to
  the default endpoint unchanged, and is an error when there is none;
- a named provider is built on its first request and closed with the router; a missing
  key variable is an authentication error of that request, never a crash at start-up;
- the model list of a provider is its table's `models` when given, else the endpoint's
  own list (bounded by `LIST_TIMEOUT`); one provider failing to list leaves the others.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar

from hermes.agent.provider import ModelRequest, Provider, ProviderEvent
from hermes.errors import ProviderAuthError, ProviderError
from hermes.providers_config import ProviderConfig, split_model

if TYPE_CHECKING:
    from hermes.config import Settings

DEFAULT_NAME = "default"
LIST_TIMEOUT = 10.0

ProviderBuilder = Callable[[ProviderConfig, "Settings", "str | None"], Provider]
"""(table, settings, key) → a provider."""


def _openai(config: ProviderConfig, settings: Settings, key: str | None) -> Provider:
    from hermes.agent.providers.openai_compat import OpenAICompatProvider

    assert config.base_url is not None  # checked by providers_config
    return OpenAICompatProvider(
        base_url=config.base_url,
        api_key=key,
        connect_timeout=settings.request_timeout,
        read_timeout=max(settings.stream_stale_timeout + 30.0, 60.0),
    )


def _anthropic(config: ProviderConfig, settings: Settings, key: str | None) -> Provider:
    from hermes.agent.providers.anthropic_messages import DEFAULT_MAX_TOKENS, AnthropicProvider

    return AnthropicProvider(
        api_key=key,
        base_url=config.base_url,
        connect_timeout=settings.request_timeout,
        read_timeout=max(settings.stream_stale_timeout + 30.0, 60.0),
        max_tokens=config.max_tokens or DEFAULT_MAX_TOKENS,
        thinking_budget=config.thinking_budget,
        label=config.name,
    )


PROVIDER_KINDS: dict[str, ProviderBuilder] = {"openai": _openai, "anthropic": _anthropic}


def register_kind(kind: str, builder: ProviderBuilder) -> None:
    PROVIDER_KINDS[kind] = builder


def build_named(config: ProviderConfig, settings: Settings) -> Provider:
    """The provider of one table; ProviderAuthError when its key variable is unset."""
    key = None
    if config.api_key_env:
        key = os.environ.get(config.api_key_env) or None
        if key is None:
            raise ProviderAuthError(
                f"provider {config.name}: the environment variable {config.api_key_env} (its api_key_env) is not set",
                provider=config.name,
            )
    return PROVIDER_KINDS[config.kind](config, settings, key)


@dataclass(frozen=True, slots=True)
class ModelListing:
    """One provider's models for a picker: `NAME/MODEL` ids, or why they could not be listed."""

    provider: str
    models: tuple[str, ...]
    error: str | None = None


class ProviderRouter(Provider):
    """A provider that hands each request to the provider its model names."""

    name: ClassVar[str] = "router"

    def __init__(
        self,
        default: Provider | None,
        configs: tuple[ProviderConfig, ...],
        settings: Settings,
        *,
        default_models: tuple[str, ...] = (),
    ) -> None:
        self.default = default
        self.configs = {config.name: config for config in configs}
        self.settings = settings
        self.default_models = default_models
        self._built: dict[str, Provider] = {}
        self._names = frozenset({*self.configs, DEFAULT_NAME})

    def route(self, model: str) -> tuple[Provider, str]:
        """(the provider, the model id it is sent) for `model`."""
        head, rest = split_model(model, self._names)
        if head is None or head == DEFAULT_NAME:
            if self.default is None:
                names = ", ".join(f"{name}/MODEL" for name in self.configs)
                raise ProviderError(f"no provider serves the model {model!r}: pick one as {names}")
            return self.default, rest
        provider = self._built.get(head)
        if provider is None:
            provider = self._built[head] = build_named(self.configs[head], self.settings)
        return provider, rest

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        provider, model = self.route(request.model)
        async for event in provider.stream(replace(request, model=model)):
            yield event

    async def complete(self, request: ModelRequest) -> list[ProviderEvent]:
        provider, model = self.route(request.model)
        return await provider.complete(replace(request, model=model))

    def describe(self) -> str:
        named = ", ".join(f"{c.name} ({c.kind})" for c in self.configs.values())
        default = self.default.describe() if self.default is not None else "none"
        return f"default: {default}; named: {named}"

    def context_window(self) -> int | None:
        return self.default.context_window() if self.default is not None else None

    async def listings(self) -> list[ModelListing]:
        """Each provider's models (the default endpoint first), listed at once."""
        names: list[str] = ([DEFAULT_NAME] if self.default is not None else []) + list(self.configs)
        return list(await asyncio.gather(*(self._listing(name) for name in names)))

    async def _listing(self, name: str) -> ModelListing:
        config = self.configs.get(name)
        if config is not None and config.models:
            return ModelListing(name, tuple(f"{name}/{m}" for m in config.models))
        if config is None and self.default_models:
            return ModelListing(name, tuple(f"{name}/{m}" for m in self.default_models))
        try:
            provider = self.default if config is None else self.route(f"{name}/-")[0]
            lister = getattr(provider, "list_models", None)
            if lister is None:
                return ModelListing(name, (), "it cannot list its models; name them in its models list")
            warm = getattr(provider, "warm", None)
            if warm is not None:
                await warm()  # loading an SDK is not the endpoint's silence
            async with asyncio.timeout(LIST_TIMEOUT):
                found = await lister()
        except (ProviderError, TimeoutError) as exc:
            return ModelListing(name, (), str(exc) or f"no answer within {LIST_TIMEOUT:g} s")
        return ModelListing(name, tuple(f"{name}/{m}" for m in found))

    async def aclose(self) -> None:
        built, self._built = list(self._built.values()), {}
        for provider in built:
            await provider.aclose()
        if self.default is not None:
            await self.default.aclose()

"""`tool_protocol`: the provider as built (native) or wrapped in the JSON-action adapter (json)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import ClassVar

import pytest

from hermes.agent.factory import build_agent
from hermes.agent.provider import ModelRequest, Provider, ProviderEvent
from hermes.agent.providers.json_actions import JsonActionProvider, with_tool_protocol
from hermes.config import Settings
from hermes.errors import ConfigError


class Dummy(Provider):
    name: ClassVar[str] = "openai"

    async def stream(self, request: ModelRequest) -> AsyncIterator[ProviderEvent]:
        raise AssertionError("not called")
        yield  # pragma: no cover

    async def complete(self, request: ModelRequest) -> list[ProviderEvent]:
        raise AssertionError("not called")


class LocalLike(Dummy):
    name: ClassVar[str] = "local"


def settings(tmp_path: Path, **env: str) -> Settings:
    return Settings.load(env={"HERMES_HOME": str(tmp_path), **env})


def test_native_is_the_default_and_leaves_the_provider_alone(tmp_path: Path) -> None:
    provider = Dummy()
    assert settings(tmp_path).tool_protocol == "native"
    assert with_tool_protocol(provider, settings(tmp_path).tool_protocol) is provider


def test_json_wraps_any_endpoint_once(tmp_path: Path) -> None:
    provider = Dummy()
    wrapped = with_tool_protocol(provider, "json")
    assert isinstance(wrapped, JsonActionProvider) and wrapped.inner is provider
    assert with_tool_protocol(wrapped, "json") is wrapped
    local = LocalLike()  # the local provider speaks JSON actions already
    assert with_tool_protocol(local, "json") is local


def test_an_unknown_protocol_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unknown tool_protocol 'xml': use native or json"):
        with_tool_protocol(Dummy(), "xml")


async def test_build_agent_applies_the_setting_to_the_endpoint_provider(tmp_path: Path) -> None:
    agent = build_agent(
        settings(tmp_path, HERMES_BASE_URL="http://127.0.0.1:9/v1", HERMES_MODEL="m", HERMES_TOOL_PROTOCOL="json"), None
    )
    try:
        assert isinstance(agent.provider, JsonActionProvider)
        assert agent.provider.inner.name == "openai"
    finally:
        await agent.aclose()

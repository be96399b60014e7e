"""Provider choice: flags/env select openai, local or a registered provider; nothing configured is a clear error."""

from __future__ import annotations

import pytest

from hermes.agent.factory import NO_ENDPOINT, build_agent, choose_provider
from hermes.config import Settings
from hermes.errors import ConfigError


def settings(tmp_path, **values) -> Settings:
    return Settings.load({"home": str(tmp_path), **values}, env={})


def test_base_url_selects_the_openai_provider(tmp_path):
    choice = choose_provider(settings(tmp_path, base_url="http://127.0.0.1:9/v1", model="m"))
    assert (choice.name, choice.model, choice.notice) == ("openai", "m", None)


def test_openai_needs_a_model(tmp_path):
    with pytest.raises(ConfigError, match="set HERMES_MODEL"):
        choose_provider(settings(tmp_path, base_url="http://127.0.0.1:9/v1"))


def test_nothing_configured_says_exactly_what_to_set(tmp_path):
    with pytest.raises(ConfigError) as info:
        choose_provider(settings(tmp_path, provider="openai"))
    assert str(info.value) == NO_ENDPOINT
    assert "HERMES_BASE_URL" in NO_ENDPOINT and "HERMES_MODEL" in NO_ENDPOINT


def test_auto_without_endpoint_uses_local_when_installed_and_says_so(tmp_path):
    from hermes.agent.providers.local import local_available

    if not local_available():
        with pytest.raises(ConfigError, match="hermes\\[local\\]"):
            choose_provider(settings(tmp_path))
        return
    choice = choose_provider(settings(tmp_path))
    assert choice.name == "local"
    assert choice.notice is not None and "local model" in choice.notice
    assert choose_provider(settings(tmp_path, provider="local")).notice is None


def test_unknown_provider_name_is_a_config_error(tmp_path):
    with pytest.raises(ConfigError, match="unknown provider 'nope'"):
        choose_provider(settings(tmp_path, provider="nope"))


async def test_build_agent_uses_settings_for_engine_options(tmp_path):
    agent = build_agent(
        settings(tmp_path, base_url="http://127.0.0.1:9/v1", model="m", stream_retries=5, max_iterations=7), None
    )
    assert agent.model == "m"
    assert (agent.options.stream_retries, agent.options.max_iterations) == (5, 7)
    assert "terminal" in agent.tools.names()
    await agent.aclose()


def test_the_choice_says_its_kind_and_reason(tmp_path):
    choice = choose_provider(settings(tmp_path, base_url="http://127.0.0.1:9/v1", model="m"))
    assert (choice.kind, choice.name) == ("openai", "openai")
    assert "base_url is set" in choice.reason


def test_the_agent_layer_draws_nothing(tmp_path):
    """Progress is reported through a callback; only the CLI imports rich to draw it."""
    import subprocess
    import sys

    code = (
        "import sys, hermes.agent.factory, hermes.agent.engine, hermes.agent.providers.local_model\n"
        "import contextlib\n"
        "with contextlib.suppress(ImportError):\n"
        "    import hermes.agent.providers.local\n"
        "print(sorted(m for m in sys.modules if m == 'rich' or m.startswith('rich.')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "[]"


def test_prepare_provider_does_nothing_for_a_remote_endpoint(tmp_path):
    from hermes.agent.factory import prepare_provider

    updates = []
    choice = choose_provider(settings(tmp_path, base_url="http://127.0.0.1:9/v1", model="m"))
    prepare_provider(settings(tmp_path, base_url="http://127.0.0.1:9/v1", model="m"), choice, updates.append)
    assert updates == []

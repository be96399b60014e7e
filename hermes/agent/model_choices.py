"""The models a person may pick: each provider's list, for `/model`, `hermes models` and the server.

    listings = await model_listings(agent.provider, agent.model)

With `[providers]` tables the router lists every provider (hermes/agent/providers/named.py);
a single endpoint lists its own models as `default`; a provider that cannot list (the
bundled model, a scripted one) offers the model in use.
"""

from __future__ import annotations

import asyncio

from hermes.agent.provider import Provider
from hermes.agent.providers.named import DEFAULT_NAME, LIST_TIMEOUT, ModelListing, ProviderRouter
from hermes.errors import ProviderError

__all__ = ["ModelListing", "model_listings"]


async def model_listings(provider: Provider, current: str) -> list[ModelListing]:
    if isinstance(provider, ProviderRouter):
        return await provider.listings()
    lister = getattr(provider, "list_models", None)
    if lister is None:
        return [ModelListing(DEFAULT_NAME, (current,) if current else ())]
    try:
        async with asyncio.timeout(LIST_TIMEOUT):
            found = await lister()
    except (ProviderError, TimeoutError) as exc:
        return [ModelListing(DEFAULT_NAME, (current,) if current else (), str(exc) or "no answer in time")]
    return [ModelListing(DEFAULT_NAME, tuple(found))]

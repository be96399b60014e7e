"""`hermes models`: every model a turn may use, as the `NAME/MODEL` ids `-m` and `/model` take.

The default endpoint (`base_url`) lists its `/v1/models` as `default/…`; each
`[providers.NAME]` table its `models`, else its endpoint's own list. A provider that
cannot be reached is one line on stderr; the exit status is 1 when none could list.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import typer

from hermes.cli._common import load_settings, print_json
from hermes.errors import ConfigError

if TYPE_CHECKING:
    from hermes.agent.providers.named import ModelListing
    from hermes.config import Settings


def register(app: typer.Typer) -> None:
    app.command("models")(models)


def models(as_json: bool = typer.Option(False, "--json", help='Print [{"provider", "models", "error"}, ...].')) -> None:
    """List the models of the default endpoint and of each [providers.NAME] table."""
    import asyncio

    settings = load_settings()
    listings = asyncio.run(gather_listings(settings))
    current = settings.model or ""
    if as_json:
        print_json([{"provider": x.provider, "models": list(x.models), "error": x.error} for x in listings])
    else:
        for listing in listings:
            if listing.error:
                typer.echo(f"hermes: {listing.provider}: cannot list models: {listing.error}", err=True)
            for model in listing.models:
                here = model == current or (model.startswith("default/") and model.removeprefix("default/") == current)
                typer.echo(f"{model}{'  (current)' if here else ''}")
    if not any(listing.models for listing in listings):
        raise typer.Exit(1)


async def gather_listings(settings: Settings) -> list[ModelListing]:
    from hermes.agent.factory import ProviderChoice, build_provider, choose_provider
    from hermes.agent.model_choices import model_listings
    from hermes.agent.providers.named import DEFAULT_NAME, ModelListing, ProviderRouter

    listings: list[ModelListing] = []
    try:
        choice: ProviderChoice | None = choose_provider(settings)
    except ConfigError:
        if not settings.providers:
            raise
        choice = None
    if choice is not None and (choice.kind == "openai" or (choice.kind == "named" and settings.base_url)):
        endpoint = ProviderChoice("openai", "openai", settings.model or "", "base_url is set")
        provider = build_provider(settings.replace(providers=()), endpoint)
        try:
            found = await model_listings(provider, "")
        finally:
            await provider.aclose()
        listings += [ModelListing(DEFAULT_NAME, tuple(f"{DEFAULT_NAME}/{m}" for m in x.models), x.error) for x in found]
    elif choice is not None and choice.kind in ("local", "registered"):
        listings.append(ModelListing(choice.name, (choice.model,)))
    if settings.providers:
        router = ProviderRouter(None, settings.providers, settings)
        try:
            listings += await router.listings()
        finally:
            await router.aclose()
    return listings

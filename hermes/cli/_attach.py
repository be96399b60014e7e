"""What `hermes chat -q` attaches to its prompt: `@` mentions and `-i` images, read here
(on this machine, also when the turn runs on a server)."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

from hermes.agent.attach.images import ImageAttachment, load_image, with_images
from hermes.agent.attach.mentions import expand_mentions
from hermes.agent.safety.confinement import Confinement
from hermes.config import Settings
from hermes.messages import UserContent


def _prepare(settings: Settings, prompt: str, images: list[str], cwd: Path) -> tuple[UserContent, list[str]]:
    confinement = Confinement.from_settings(settings)
    loaded: list[ImageAttachment] = [load_image(path, cwd, confinement) for path in images]  # ImageRefused: exit 2
    expansion = expand_mentions(prompt, cwd, confinement)
    return with_images(expansion.text, loaded), list(expansion.notes)


async def prepare_input(
    settings: Settings, prompt: str, images: list[str], cwd: Path | None = None
) -> tuple[UserContent, list[str]]:
    """(the turn's input, notes on mentions that attached nothing). Raises ImageRefused."""
    return await asyncio.to_thread(_prepare, settings, prompt, images, cwd or Path(os.getcwd()))

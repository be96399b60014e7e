"""`/image PATH` (attach an image to the next prompt), `/image` (list them), `/image clear`,
and a pasted image path, in the chat TUI."""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING

from hermes.agent.attach.images import IMAGE_TYPES, ImageRefused
from hermes.tui.prompt_attachments import load_image_for, working_folder

if TYPE_CHECKING:
    from hermes.tui.command_screen import CommandScreen

IMAGE_SUFFIXES = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp"})


async def attach(chat: CommandScreen, written: str) -> bool:
    """Put the image at `written` on the chip row (True), or say why not (False)."""
    try:
        image = await load_image_for(chat, written)
    except ImageRefused as refused:
        chat.say(f"✗ {refused}", "error")
        return False
    chat.image_chips.add(image)
    return True


async def image_command(chat: CommandScreen, arg: str) -> None:
    chips = chat.image_chips
    if not arg:
        if chips.images:
            chat.say("images for the next prompt: " + ", ".join(image.name for image in chips.images), "info")
        else:
            kinds = ", ".join(kind.split("/")[1] for kind in IMAGE_TYPES)
            chat.say(f"usage: /image PATH ({kinds}) · /image clear", "info")
        return
    if arg == "clear":
        count = len(chips.take())
        chat.say(f"{count} image{'s' if count != 1 else ''} removed", "info")
        return
    for written in pasted_paths(arg) or [arg]:
        await attach(chat, written)


def pasted_paths(text: str) -> list[str] | None:
    """The image paths a paste (a terminal's drag and drop) holds, or None when it is other text.

    Accepts one or more paths, quoted or with backslash-escaped spaces, each an existing
    file named like an image; anything else is ordinary text for the prompt."""
    stripped = text.strip()
    if not stripped or "\n" in stripped:
        return None
    try:
        words = shlex.split(stripped)
    except ValueError:
        return None
    if not words:
        return None
    for word in words:
        path = Path(word.removeprefix("file://")).expanduser()
        if path.suffix.lower() not in IMAGE_SUFFIXES:
            return None
    return [word.removeprefix("file://") for word in words]


def is_existing_image_path(chat: CommandScreen, written: str) -> bool:
    path = Path(written).expanduser()
    return os.path.isfile(path if path.is_absolute() else working_folder(chat) / path)


async def pasted(chat: CommandScreen, text: str) -> None:
    """A paste of image paths: each existing one goes on the chip row; otherwise it is text."""
    paths = pasted_paths(text) or []
    if paths and all(is_existing_image_path(chat, path) for path in paths):
        for path in paths:
            await attach(chat, path)
        return
    chat.chat_input.insert(text)

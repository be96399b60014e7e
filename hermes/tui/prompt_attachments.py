"""The TUI's side of attachments: a prompt's `@` mentions and the images on the chip row,
read on this machine (also when the turn runs on a server) into the turn's input, and shown
as folded cards under the prompt."""

from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from hermes.agent.attach.images import ImageAttachment, load_image, with_images
from hermes.agent.attach.mentions import expand_mentions_async
from hermes.agent.safety.confinement import Confinement
from hermes.attachment_blocks import Attachment
from hermes.messages import UserContent
from hermes.tui.widgets.attachment_card import AttachmentCard, ImageCard
from hermes.tui.widgets.user_message import UserMessage

if TYPE_CHECKING:
    from textual.widget import Widget

    from hermes.config import Settings
    from hermes.tui.widgets.notice import Notice, NoticeKind
    from hermes.tui.widgets.transcript import Transcript


class InFolder(Protocol):
    """A screen with a working folder (None: the process's)."""

    cwd: str


class PromptScreen(InFolder, Protocol):
    """What reading a prompt's attachments needs of the chat screen (`ChatScreen` is one)."""

    settings: Settings

    @property
    def transcript(self) -> Transcript: ...

    def say(self, text: str, kind: NoticeKind = "info") -> Notice: ...


@dataclass(frozen=True, slots=True)
class PreparedPrompt:
    content: UserContent
    attachments: tuple[Attachment, ...]
    images: tuple[ImageAttachment, ...]
    notes: tuple[str, ...]


def working_folder(chat: InFolder) -> Path:
    return Path(chat.cwd or os.getcwd())


async def prepare_prompt(chat: PromptScreen, text: str, images: tuple[ImageAttachment, ...]) -> PreparedPrompt:
    """`text` with its mentions expanded and `images` added, as the turn's input."""
    confinement = Confinement.from_settings(chat.settings)
    expansion = await expand_mentions_async(text, working_folder(chat), confinement)
    return PreparedPrompt(with_images(expansion.text, images), expansion.attachments, images, expansion.notes)


def show_prepared(chat: PromptScreen, prompt: UserMessage | None, prepared: PreparedPrompt) -> None:
    """The prompt's cards (under it in the transcript) and a warning per refused mention."""
    cards: list[Widget] = [AttachmentCard(attachment) for attachment in prepared.attachments]
    cards += [ImageCard(image.part(), image.name) for image in prepared.images]
    if cards and prompt is not None and prompt.parent is not None:
        chat.transcript.mount_all(cards, after=prompt)
    for note in prepared.notes:
        chat.say(f"⚠ {note}", "warning")


async def load_image_for(chat: PromptScreen, written: str) -> ImageAttachment:
    """The image at `written` (relative to the chat's folder), checked. Raises ImageRefused."""
    confinement = Confinement.from_settings(chat.settings)
    return await asyncio.to_thread(load_image, written, working_folder(chat), confinement)

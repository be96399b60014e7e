"""What an `@` mention attached to a prompt, or an image sent with it: a collapsed card under
the prompt in the transcript ("📎 greet.py#L20-45 · 26 lines"); a click or Enter on its title
opens the content."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.widgets import Collapsible, Static

from hermes.attachment_blocks import Attachment, card_line, image_label


class AttachmentCard(Collapsible):
    DEFAULT_CSS = """
    AttachmentCard {
        margin: 0 0 0 2;
        padding: 0;
        border: none;
        background: transparent;
        color: $text-muted;
    }
    AttachmentCard > Contents {
        padding: 0 0 0 2;
        max-height: 20;
        overflow-y: auto;
    }
    AttachmentCard > CollapsibleTitle {
        color: $text-muted;
        padding: 0;
    }
    """

    def __init__(self, attachment: Attachment) -> None:
        self.attachment = attachment
        super().__init__(Static(Text(attachment.body), markup=False), title=card_line(attachment), collapsed=True)


class ImageCard(Static):
    """An image sent with a prompt: one line naming its type and size."""

    DEFAULT_CSS = """
    ImageCard {
        margin: 0 0 0 2;
        color: $text-muted;
    }
    """

    def __init__(self, part: dict[str, Any], name: str | None = None) -> None:
        label = image_label(part)
        text = f"🖼 {name} · {label}" if name else f"🖼 {label}"
        super().__init__(Text(text), markup=False)
        self.text = text

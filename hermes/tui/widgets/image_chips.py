"""The images waiting to go with the next prompt: a row of chips above the prompt box
("🖼 shot.png 12 KB"), hidden when there are none. Alt+X removes the last one."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from hermes.agent.attach.images import ImageAttachment
from hermes.attachment_blocks import image_label

REMOVE_KEY = "alt+x"


class ImageChips(Static):
    DEFAULT_CSS = """
    ImageChips {
        display: none;
        height: auto;
        padding: 0 1;
        color: $text;
    }
    ImageChips.-visible {
        display: block;
    }
    """

    def __init__(self, *, id: str | None = None) -> None:
        super().__init__("", id=id, markup=False)
        self.images: list[ImageAttachment] = []

    def add(self, image: ImageAttachment) -> None:
        self.images.append(image)
        self._show()

    def remove_last(self) -> ImageAttachment | None:
        removed = self.images.pop() if self.images else None
        self._show()
        return removed

    def take(self) -> tuple[ImageAttachment, ...]:
        """The images, for the prompt being sent; the row is emptied."""
        taken = tuple(self.images)
        self.images.clear()
        self._show()
        return taken

    @property
    def chip_text(self) -> str:
        chips = [f"[🖼 {image.name} · {image_label(image.part()).split(' · ')[-1]}]" for image in self.images]
        return "  ".join(chips) + f"   {REMOVE_KEY} removes the last" if chips else ""

    def _show(self) -> None:
        self.update(Text(self.chip_text))
        self.set_class(bool(self.images), "-visible")

"""An image file a person attaches to a prompt (`/image`, `chat -q -i`, an editor's image
block): checked and turned into the `image_url` content part the model reads.

The type is decided by the file's first bytes (PNG, JPEG, GIF, WebP), never by its name;
anything else, a file over `MAX_IMAGE_BYTES`, or a path the read policy refuses is an
`ImageRefused` with a one-line reason.
"""

from __future__ import annotations

import base64
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from hermes.agent.attach.read_policy import open_regular, refusal
from hermes.agent.safety.confinement import Confinement
from hermes.errors import UsageError
from hermes.messages import UserContent

MAX_IMAGE_BYTES = 5 * 1024 * 1024
"""The largest image accepted (what the common vision APIs take per image)."""
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")


class ImageRefused(UsageError):
    """The file cannot be attached as an image (the message says why)."""


@dataclass(frozen=True, slots=True)
class ImageAttachment:
    name: str
    """The file's name as the person gave it (shown on its chip)."""
    mime: str
    data: bytes

    @property
    def size(self) -> int:
        return len(self.data)

    def part(self) -> dict[str, Any]:
        """The OpenAI `image_url` content part, a base64 data URL."""
        encoded = base64.b64encode(self.data).decode("ascii")
        return {"type": "image_url", "image_url": {"url": f"data:{self.mime};base64,{encoded}"}}


def sniff_image_type(head: bytes) -> str | None:
    """The image type of a file from its first bytes, or None when it is none of IMAGE_TYPES."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if len(head) >= 12 and head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "image/webp"
    return None


def image_from_bytes(name: str, data: bytes, *, max_bytes: int = MAX_IMAGE_BYTES) -> ImageAttachment:
    """Check bytes that arrived without a file (an editor's image block)."""
    if len(data) > max_bytes:
        raise ImageRefused(f"{name}: the image is {len(data):,} bytes (the limit is {max_bytes:,})")
    mime = sniff_image_type(data[:16])
    if mime is None:
        raise ImageRefused(f"{name} is not a PNG, JPEG, GIF or WebP image")
    return ImageAttachment(name, mime, data)


def load_image(
    written: str, cwd: Path, confinement: Confinement, *, max_bytes: int = MAX_IMAGE_BYTES
) -> ImageAttachment:
    """The image at `written` (relative to `cwd`, `~/…` or absolute). Blocking file I/O."""
    path = Path(written).expanduser()
    absolute = Path(os.path.abspath(path if path.is_absolute() else cwd / path))
    if not os.path.lexists(absolute):
        raise ImageRefused(f"{written}: no such file")
    # An image path is named on purpose: only the secret rules apply, not the folder rule.
    why = refusal(absolute, str(absolute), cwd, confinement)
    if why is not None:
        raise ImageRefused(f"{written} was not attached: {why}")
    try:
        fd = open_regular(Path(os.path.realpath(absolute)))
    except OSError as exc:
        raise ImageRefused(f"{written} cannot be read: {exc.strerror or exc}") from None
    with os.fdopen(fd, "rb") as handle:
        data = handle.read(max_bytes + 1)
    return image_from_bytes(written, data, max_bytes=max_bytes)


def with_images(text: str, images: list[ImageAttachment] | tuple[ImageAttachment, ...]) -> UserContent:
    """A user message's content: `text` alone, or a text part followed by the image parts."""
    if not images:
        return text
    return [{"type": "text", "text": text}, *(image.part() for image in images)]

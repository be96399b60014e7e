"""`FrameTemplate`: the same bytes as `encode_frame` for every value put in its holes."""

from __future__ import annotations

import pytest

from hermes.server.http.sse import HOLE, FrameTemplate, encode_frame

TEXTS = ["", "Hel", 'say "hi"\n\tand\\leave', "naïve café ✓", "emoji 🎉 and \u2028 and \x00\x1f", "</script>"]


@pytest.mark.parametrize("ensure_ascii", [True, False], ids=["ascii", "utf8"])
@pytest.mark.parametrize("text", TEXTS)
def test_a_filled_template_is_the_encoded_frame(text: str, ensure_ascii: bool) -> None:
    fixed = {"item_id": "msg_1", "output_index": 2, "content_index": 0}
    payload = {"type": "response.output_text.delta", **fixed, "delta": HOLE, "logprobs": [], "sequence_number": HOLE}
    template = FrameTemplate(payload, event="response.output_text.delta", ensure_ascii=ensure_ascii)
    for seq in (0, 7, 12345):
        expected = {**payload, "delta": text, "sequence_number": seq}
        assert template.frame(text, seq) == encode_frame(
            expected, event="response.output_text.delta", ensure_ascii=ensure_ascii
        )


def test_one_value_per_hole() -> None:
    template = FrameTemplate({"a": HOLE, "b": HOLE})
    assert template.frame("x", 1) == encode_frame({"a": "x", "b": 1})
    with pytest.raises(ValueError):
        template.frame("x")

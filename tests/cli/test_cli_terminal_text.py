"""hermes.terminal_text: every control character a terminal acts on becomes visible text."""

from __future__ import annotations

import io
import json

from rich.console import Console
from rich.markdown import Markdown

from hermes.terminal_text import CONTROLS, for_terminal, json_for_terminal, without_controls

OSC52 = "\x1b]52;c;SGVybWVz\x07"


def test_escape_sequences_lose_their_introducer_and_stay_readable():
    assert for_terminal(f"a{OSC52}b") == "a^[]52;c;SGVybWVz^Gb"
    assert for_terminal("\x1b[2J\x1b]52;c;QUJD\x1b\\") == "^[[2J^[]52;c;QUJD^[\\"
    assert for_terminal("\x9b31m \x9d52;c;x\x9c") == "M-^[31m M-^]52;c;xM-^\\"  # the 8-bit CSI, OSC, ST
    assert for_terminal("cr\rdel\x7fnul\x00") == "cr^Mdel^?nul^@"


def test_newline_tab_and_ordinary_unicode_are_kept():
    text = "line\n\tindented — é ✓ 日本 \u00a0 \U0001f600"
    assert for_terminal(text) == text


def test_no_control_character_survives():
    every = "".join(chr(code) for code in range(0x00, 0x100))
    shown = for_terminal(every)
    assert not {chr(code) for code in CONTROLS if chr(code) not in "\n\t"} & set(shown)
    assert without_controls(every) == "".join(chr(c) for c in range(0x20, 0x7F)) + "".join(
        chr(c) for c in range(0xA0, 0x100)
    )


def test_a_sequence_split_across_streamed_pieces_is_harmless_piece_by_piece():
    pieces = ["x\x1b", "]52;c;", "SGVy\x07y"]
    assert "\x1b" not in "".join(for_terminal(piece) for piece in pieces)


def test_json_keeps_the_value_and_escapes_del_and_c1():
    value = {"text": f"{OSC52} \x9b31m \x7f \\\x9b"}
    document = json_for_terminal(json.dumps(value, ensure_ascii=False))
    assert not set(document) & {chr(code) for code in CONTROLS}
    assert json.loads(document) == value


def test_rich_passes_escapes_through_unless_they_are_replaced_first():
    """Why MarkdownRenderer scrubs: rich's Markdown keeps ESC and C1 (it drops only BEL, BS, VT, FF, CR)."""

    def rendered(text: str) -> str:
        out = io.StringIO()
        Console(file=out, force_terminal=True, width=80).print(Markdown(text))
        return out.getvalue()

    raw = f"hi {OSC52} \x1b[2J \x9b31m"
    assert "\x1b]52" in rendered(raw) and "\x9b" in rendered(raw)
    shown = rendered(for_terminal(raw))
    assert "\x1b]52" not in shown and "\x1b[2J" not in shown and "\x9b" not in shown
    assert "52;c;SGVybWVz" in shown

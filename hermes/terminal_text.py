"""Text from a model, a tool or a repository, made harmless for a terminal.

    for_terminal("a\\x1b]52;c;ZXZpbA==\\x07b")   ->  "a^[]52;c;ZXZpbA==^Gb"

Invariant: the result of `for_terminal` holds no character a terminal acts on except
newline and tab: no C0 control (U+0000–U+001F, carriage return included), no DEL
(U+007F), no C1 control (U+0080–U+009F, which UTF-8 terminals may read as the 8-bit
CSI, OSC, DCS … introducers). Each one is replaced by a visible stand-in, written the
way `cat -v` writes it: ESC is `^[`, BEL `^G`, CR `^M`, DEL `^?`, the 8-bit CSI U+009B
`M-^[`. Every escape sequence (CSI such as a clear screen `ESC [ 2 J`, OSC such as a
clipboard write `ESC ] 52 ; c ; … BEL`, DCS, APC, and their 8-bit forms) therefore
loses its introducer and is shown as plain text; nothing is parsed, so a sequence cut
across two streamed pieces is made harmless just the same.

`json_for_terminal` does the same for a JSON document without changing what it means:
json.dumps escapes C0 controls itself but writes DEL and C1 as they are (with
`ensure_ascii=False`); they become `\\u007f` … `\\u009f`, the same JSON value.

`without_controls` drops every control character, newline and tab too (for a renderer
that has already laid out one line and measured them as zero-width, such as the TUI's
last line filter: removing them keeps every width).

hermes' own colouring is added after this, to text that has been through it.
"""

from __future__ import annotations

KEPT = frozenset("\n\t")


def _caret(code: int) -> str:
    """`cat -v`'s notation of one control character."""
    if code == 0x7F:
        return "^?"
    if code >= 0x80:
        return "M-" + _caret(code - 0x80)
    return "^" + chr(code + 0x40)


CONTROLS: tuple[int, ...] = (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0))
"""Every code point `for_terminal` replaces (less the KEPT ones)."""
_STAND_INS = {code: _caret(code) for code in CONTROLS if chr(code) not in KEPT}
_DROPPED: dict[int, None] = dict.fromkeys(CONTROLS)


def for_terminal(text: str) -> str:
    """`text` with every control character but newline and tab replaced by a visible stand-in."""
    return text.translate(_STAND_INS)


_JSON_ESCAPES = {code: f"\\u{code:04x}" for code in (0x7F, *range(0x80, 0xA0))}


def json_for_terminal(document: str) -> str:
    """A JSON document (as json.dumps wrote it) with DEL and C1 written as \\u escapes: the same value."""
    return document.translate(_JSON_ESCAPES)


def without_controls(text: str) -> str:
    """`text` with every control character (newline and tab included) removed."""
    return text.translate(_DROPPED)

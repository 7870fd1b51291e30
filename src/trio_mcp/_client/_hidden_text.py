"""Find text a reader cannot see in what a server says about its tools.

Theory of operation
-------------------
Tool names, titles, descriptions and schemas go to a model, and usually only
part of them to a person. Characters that render as nothing (or that reorder or
repaint what is shown) let a server put instructions in front of the model that
the user reviewing the tool never sees ("tool poisoning", reliability catalogue
A25 / X-06). :func:`find_hidden_text` reports each such character in a string;
:func:`find_hidden_text_in_tool` walks a whole :class:`~trio_mcp.types.Tool`.
Nothing is changed or removed: the host decides (show the escaped text, warn,
refuse the tool). The client runs this on every tool definition it caches; see
``Client.hidden_text`` and the :class:`~trio_mcp._client._cache.HiddenTextFound`
event.

What is flagged (:class:`HiddenKind`):

- ``CONTROL``: Unicode category Cc (C0, DEL, C1) except tab, line feed, and a
  carriage return directly before a line feed (CRLF). ESC is how ANSI escape
  sequences start (``"\\x1b[8m"`` hides the text after it on a terminal); a lone
  CR lets later text overwrite earlier text on a terminal.
- ``BIDI``: bidirectional controls (U+061C, U+200E, U+200F, U+202A..U+202E,
  U+2066..U+2069), which reorder what is displayed ("Trojan Source").
- ``TAG``: the tag block U+E0000..U+E007F, an invisible copy of ASCII ("ASCII
  smuggling"). Allowed only inside an emoji subdivision flag (U+1F3F4, 1 to 6
  tag letters or digits, U+E007F), as in the flag of Scotland.
- ``VARIATION_SELECTOR``: U+FE00..U+FE0F, U+E0100..U+E01EF and the Mongolian
  free variation selectors, which can carry a byte each after one visible
  character. Allowed only directly after a base they apply to: U+FE0E/U+FE0F
  after a symbol, punctuation or digit (emoji and keycaps, ``"❤️"``, ``"1️⃣"``);
  U+FE00..U+FE0D after a math symbol or a non-ASCII letter; U+E0100.. after a CJK
  ideograph; the Mongolian ones after Mongolian letters. A run of selectors is
  always flagged.
- ``INVISIBLE``: every other format character (category Cf: zero-width space,
  word joiner, soft hyphen, BOM, invisible operators, interlinear annotation
  marks ...), surrogates, and the other default-ignorable code points (combining
  grapheme joiner, Hangul fillers, Khmer inherent vowels, the unassigned
  U+2065, U+FFF0..U+FFF8 and U+E0000..U+E0FFF). The soft hyphen is flagged
  because it is invisible mid-line and splits a word for a filter but not for
  a model. The zero-width joiner and non-joiner are allowed where writing needs
  them: one alone between two letters or marks of the Arabic, Indic, Southeast
  Asian and Mongolian blocks (Persian, Hindi ...), and the joiner between emoji
  (family and profession sequences).

Not flagged: letters, digits, marks, symbols and punctuation of any script
(Japanese, Arabic, Hebrew, emoji ...), spaces (visible as spaces), line and
paragraph separators, private-use and unassigned characters (they render as
boxes, not as nothing).

Spec: reliability catalogue X-06 (A25, tool poisoning).
"""

from __future__ import annotations

import enum
import functools
import re
import unicodedata
from collections.abc import Iterator
from typing import Any

import attrs

from ..types import Tool

#: A location inside a tool definition: wire names (``inputSchema``), object
#: keys and list indexes, outermost first.
Path = tuple[str | int, ...]


class HiddenKind(enum.Enum):
    """Why a character is reported (see the module documentation)."""

    CONTROL = "control character"
    BIDI = "bidirectional control"
    TAG = "tag character"
    VARIATION_SELECTOR = "stray variation selector"
    INVISIBLE = "invisible character"


# fmt: off
_C0_NAMES = (
    "NUL", "SOH", "STX", "ETX", "EOT", "ENQ", "ACK", "BEL",
    "BS", "HT", "LF", "VT", "FF", "CR", "SO", "SI",
    "DLE", "DC1", "DC2", "DC3", "DC4", "NAK", "SYN", "ETB",
    "CAN", "EM", "SUB", "ESC", "FS", "GS", "RS", "US",
)
# fmt: on


@attrs.frozen
class HiddenCharacter:
    """One character of a tool definition that a reader cannot see.

    ``path`` says where (``("inputSchema", "properties", "city",
    "description")``; empty for a bare string), ``index`` is the position of
    ``char`` in that string, and ``in_key`` is true when the string is the
    object key at ``path[-1]`` (a parameter name, say) rather than a value.
    """

    path: Path
    index: int
    char: str
    kind: HiddenKind
    in_key: bool = False

    @property
    def codepoint(self) -> str:
        """``"U+200B"``."""
        return f"U+{ord(self.char):04X}"

    @property
    def name(self) -> str:
        """The Unicode name (``"ZERO WIDTH SPACE"``; ``"ESC"`` for C0 controls)."""
        code = ord(self.char)
        if code < 0x20:
            return _C0_NAMES[code]
        if code == 0x7F:
            return "DEL"
        return unicodedata.name(self.char, "<unnamed>")

    @property
    def where(self) -> str:
        """``path`` for people: ``inputSchema.properties['ci\\u200bty'] (key)``."""
        text = ""
        for part in self.path:
            if isinstance(part, int):
                text += f"[{part}]"
            elif part.isascii() and part.isidentifier():
                text += f".{part}" if text else part
            else:
                text += f"[{part!a}]"  # escaped: the key may hold the character itself
        if self.in_key:
            text += " (key)"
        return text or "<text>"

    def __str__(self) -> str:
        return f"{self.where} at {self.index}: {self.codepoint} {self.name} ({self.kind.value})"


def find_hidden_text(text: str, path: Path = ()) -> tuple[HiddenCharacter, ...]:
    """Every hidden character of *text*, in order (empty: nothing hidden).

    *path* is copied into each finding (where *text* came from).
    """
    return tuple(_scan(text, path, in_key=False))


def find_hidden_text_in_tool(tool: Tool) -> tuple[HiddenCharacter, ...]:
    """Every hidden character in what *tool* tells a model or a user.

    Scanned: ``name``, ``title``, ``description``, ``annotations.title``, and
    every string and every object key (parameter names, ``description``,
    ``title``, ``enum`` and ``default`` values ...) of ``inputSchema`` and
    ``outputSchema``, at any depth. Not scanned: icons (URLs) and ``_meta``
    (not text for a reader). Paths use the wire names.
    """
    found: list[HiddenCharacter] = []
    texts: list[tuple[Path, str | None]] = [
        (("name",), tool.name),
        (("title",), tool.title),
        (("description",), tool.description),
    ]
    if tool.annotations is not None:
        texts.append((("annotations", "title"), tool.annotations.title))
    for path, text in texts:
        if text is not None:
            found.extend(_scan(text, path, in_key=False))
    found.extend(_scan_json(tool.input_schema, ("inputSchema",)))
    if tool.output_schema is not None:
        found.extend(_scan_json(tool.output_schema, ("outputSchema",)))
    return tuple(found)


def _scan_json(value: Any, path: Path) -> Iterator[HiddenCharacter]:
    # Depth-first in document order (a key, then its value) with an explicit
    # stack: a schema may be nested deeper than Python's recursion limit.
    stack: list[tuple[Any, Path, bool]] = [(value, path, False)]
    while stack:
        item, where, is_key = stack.pop()
        if isinstance(item, str):
            yield from _scan(item, where, in_key=is_key)
        elif isinstance(item, dict):
            for key, child in reversed(item.items()):
                stack.append((child, (*where, key), False))
                stack.append((key, (*where, key), True))
        elif isinstance(item, list):
            stack.extend(
                (child, (*where, i), False) for i, child in reversed(list(enumerate(item)))
            )


_BIDI = frozenset([0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)])
_JOINERS = (0x200C, 0x200D)
_SUBDIVISION_FLAG = re.compile(
    "\U0001f3f4([\U000e0030-\U000e0039\U000e0061-\U000e007a]{1,6})\U000e007f"
)
# Blocks whose scripts need the zero-width joiner and non-joiner between letters.
_JOINING_BLOCKS = ((0x0600, 0x1CFF), (0xA800, 0xABFF), (0xFB50, 0xFEFC), (0x10800, 0x11FFF))


def _scan(text: str, path: Path, *, in_key: bool) -> Iterator[HiddenCharacter]:
    if text.isascii() and text.isprintable():
        return  # the common case: nothing to look at
    flag_tags: set[int] | None = None
    # The regular expression finds the few candidates at C speed; each is
    # then judged in its context.
    for match in _candidates().finditer(text):
        index = match.start()
        char = text[index]
        kind = _classify(text, index, char)
        if kind is HiddenKind.TAG:
            if flag_tags is None:
                flag_tags = set()
                for flag in _SUBDIVISION_FLAG.finditer(text):
                    flag_tags.update(range(flag.start() + 1, flag.end()))
            if index in flag_tags:
                continue
        if kind is not None:
            yield HiddenCharacter(path, index, char, kind, in_key)


@functools.cache
def _candidates() -> re.Pattern[str]:
    """A character class of everything :func:`_classify` may flag.

    Built from this Python's Unicode database on first use (about 10 ms):
    Cc (but tab and line feed), Cf and Cs in planes 0 and 1 (planes 2 and 3 are
    ideographs, 15 and 16 private use) and plane 14, plus the variation
    selectors and the other default-ignorable code points.
    """
    codes = [
        code
        for block in (range(0x20000), range(0xE0000, 0xE1000))
        for code in block
        if code not in (0x09, 0x0A)
        and (
            unicodedata.category(chr(code)) in ("Cc", "Cf", "Cs")
            or _is_variation_selector(code)
            or _default_ignorable(code)
        )
    ]
    ranges: list[list[int]] = []
    for code in codes:
        if ranges and ranges[-1][1] == code - 1:
            ranges[-1][1] = code
        else:
            ranges.append([code, code])
    return re.compile("[" + "".join(f"\\U{low:08x}-\\U{high:08x}" for low, high in ranges) + "]")


def _classify(text: str, index: int, char: str) -> HiddenKind | None:
    code = ord(char)
    category = unicodedata.category(char)
    if category == "Cc":
        if char in "\t\n" or (char == "\r" and text.startswith("\n", index + 1)):
            return None
        return HiddenKind.CONTROL
    if code in _BIDI:
        return HiddenKind.BIDI
    if 0xE0000 <= code <= 0xE007F:
        return HiddenKind.TAG
    if _is_variation_selector(code):
        base = text[index - 1] if index else ""
        return None if base and _selects(code, base) else HiddenKind.VARIATION_SELECTOR
    if code in _JOINERS:
        return None if _joiner_is_needed(text, index, code) else HiddenKind.INVISIBLE
    if category in ("Cf", "Cs") or _default_ignorable(code):
        return HiddenKind.INVISIBLE
    return None


def _is_variation_selector(code: int) -> bool:
    return (
        0xFE00 <= code <= 0xFE0F
        or 0xE0100 <= code <= 0xE01EF
        or 0x180B <= code <= 0x180D
        or code == 0x180F
    )


def _selects(code: int, base: str) -> bool:
    """Whether variation selector *code* has a meaning after *base*."""
    category = unicodedata.category(base)
    if code in (0xFE0E, 0xFE0F):  # text / emoji presentation
        return category[0] in "SP" or category == "Nd"
    if 0xFE00 <= code <= 0xFE0D:
        return category == "Sm" or (category[0] == "L" and not base.isascii())
    if code >= 0xE0100:  # ideographic variation sequences
        return unicodedata.name(base, "").startswith("CJK")
    return unicodedata.name(base, "").startswith("MONGOLIAN")


def _joiner_is_needed(text: str, index: int, code: int) -> bool:
    if index == 0 or index + 1 >= len(text):
        return False
    before, after = text[index - 1], text[index + 1]
    # Emoji ZWJ sequences: the joiner comes after an emoji, its skin tone or
    # its VS16, and before another emoji.
    emoji_before = (
        unicodedata.category(before) == "So"
        or 0x1F3FB <= ord(before) <= 0x1F3FF
        or before == "\ufe0f"
    )
    if code == 0x200D and emoji_before and unicodedata.category(after) == "So":
        return True
    return _joining_letter(before) and _joining_letter(after)


def _joining_letter(char: str) -> bool:
    code = ord(char)
    return unicodedata.category(char)[0] in "LM" and any(
        low <= code <= high for low, high in _JOINING_BLOCKS
    )


def _default_ignorable(code: int) -> bool:
    # Default_Ignorable_Code_Point (DerivedCoreProperties.txt) outside Cf,
    # variation selectors and tags, which are handled above.
    return (
        code in (0x034F, 0x115F, 0x1160, 0x17B4, 0x17B5, 0x2065, 0x3164, 0xFFA0)
        or 0xFFF0 <= code <= 0xFFF8
        or 0xE0000 <= code <= 0xE0FFF
    )


__all__ = [
    "HiddenCharacter",
    "HiddenKind",
    "find_hidden_text",
    "find_hidden_text_in_tool",
]

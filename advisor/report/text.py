"""Sanitise free text for the PDF: strip control and bidi characters, collapse, truncate.

fpdf2 does not interpret HTML or markdown unless asked (the report never asks), so markup such as
``<script>`` is printed literally; nothing is escaped. What can break a layout is removed: control
characters (C0/C1 except newline/tab in notes), Unicode bidi overrides/marks (they reorder the
rest of the line), zero-width characters, and unbroken runs so long that a cell cannot wrap them.
"""

from __future__ import annotations

import re
import unicodedata

#: Limits for the free-text inputs (characters, after cleaning).
NAME_LIMIT = 200
NOTES_LIMIT = 2000
ELLIPSIS = "…"
#: Longest run without a break opportunity; longer runs get a space inserted (wrap point).
MAX_WORD = 60

_BIDI = dict.fromkeys(
    map(ord, "\u200e\u200f\u061c\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069"), None
)
_ZERO_WIDTH = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff\u00ad"), None)


def _keep(ch: str, multiline: bool) -> str:
    if ch == "\n" and multiline:
        return "\n"
    if ch in "\t\n\r\v\f":
        return " "
    cat = unicodedata.category(ch)
    if cat in ("Cc", "Cs", "Co", "Cn") or cat == "Cf":
        return ""
    if cat in ("Zl", "Zp"):
        return "\n" if multiline else " "
    return ch


def _break_long_runs(s: str, max_word: int) -> str:
    return re.sub(
        r"\S{" + str(max_word + 1) + ",}",
        lambda m: " ".join(
            m.group(0)[i : i + max_word] for i in range(0, len(m.group(0)), max_word)
        ),
        s,
    )


def clean(text: object, limit: int = NAME_LIMIT, *, multiline: bool = False) -> str:
    """Printable text of at most ``limit`` characters (an ellipsis marks a cut).

    >>> clean("Soci\\u00e9t\\u00e9 G\\u00e9n\\u00e9rale\\x00\\u202e <b>Z\\u00fcrich</b>")
    'Société Générale <b>Zürich</b>'
    >>> clean("x" * 300, limit=10)
    'xxxxxxxxx…'
    """
    s = "" if text is None else str(text)
    s = unicodedata.normalize("NFC", s[: limit * 4 + 16])  # bound the work on huge input
    s = s.translate(_BIDI).translate(_ZERO_WIDTH)
    s = "".join(_keep(ch, multiline) for ch in s)
    if multiline:
        s = "\n".join(re.sub(r"[ ]{2,}", " ", line).strip() for line in s.split("\n"))
        s = re.sub(r"\n{3,}", "\n\n", s).strip()
    else:
        s = re.sub(r"\s+", " ", s).strip()
    s = _break_long_runs(s, MAX_WORD)
    if len(s) > limit:
        s = s[: max(0, limit - 1)].rstrip() + ELLIPSIS
    return s


def dropped(text: str) -> list[str]:
    """The characters :func:`clean` takes out of a one-line name (controls, format characters
    such as bidi overrides and zero-width marks, line separators, unassigned code points; a tab
    or line break becomes a space), in order of first appearance.

    >>> dropped("Acme\\x1b[2J\\u202e x\\ty")
    ['\\x1b', '\\u202e', '\\t']
    """
    return list(dict.fromkeys(c for c in text if _keep(c, False) != c))


def dropped_note(field: str, value: str) -> str | None:
    """One line telling that the PDF prints ``value`` (the ``field`` a person typed) without
    the characters :func:`clean` drops, naming them; None when it keeps every one. The CLI's
    ``report --client`` and the app's PDF fields say the same (the PDF is the same either way).

    >>> print(dropped_note("--client", "Acme\\u202eZ"))
    --client 'Acme\\u202eZ': the PDF leaves out '\\u202e' (U+202E RIGHT-TO-LEFT OVERRIDE): control and format characters print as nothing or reorder the text; use visible characters only
    """
    chars = dropped(value)
    if not chars:
        return None
    from advisor.catalog.quoting import echo

    named = ", ".join(
        f"{c!r} (U+{ord(c):04X} {unicodedata.name(c, 'control')})" for c in chars[:10]
    ) + (f" and {len(chars) - 10} more" if len(chars) > 10 else "")
    return (
        f"{field} {echo(value)}: the PDF leaves out {named}: control and format characters print "
        "as nothing or reorder the text; use visible characters only"
    )


#: Blocks whose letters change shape with their neighbours or are reordered: Hebrew, Arabic,
#: Syriac, Thaana, NKo, Samaritan, Mandaic, Arabic Extended (0590-08FF); the Indic scripts,
#: Thai, Lao and Tibetan (0900-0FFF); Myanmar (1000-109F); Khmer (1780-17FF); Mongolian
#: (1800-18AF); the Hebrew and Arabic presentation forms (FB1D-FDFF, FE70-FEFF).
_SHAPED = ((0x0590, 0x08FF), (0x0900, 0x0FFF), (0x1000, 0x109F), (0x1780, 0x18AF),
           (0xFB1D, 0xFDFF), (0xFE70, 0xFEFF))  # fmt: skip


def needs_shaping(text: str) -> bool:
    """Whether ``text`` has letters that must be shaped (joined, reordered: Arabic, Hebrew,
    the Indic scripts...) to read right; Latin, Greek, Cyrillic and CJK print glyph by glyph.

    >>> needs_shaping("Zürich ≤ 8 µs 中文"), needs_shaping("شركة Acme")
    (False, True)
    """
    return not text.isascii() and any(
        lo <= ord(c) <= hi for c in text if ord(c) >= 0x0590 for lo, hi in _SHAPED
    )


def latin1(text: str) -> str:
    """Text a core (Latin-1) font can print: common symbols spelled out, the rest replaced."""
    table = {"≤": "<=", "≥": ">=", "×": "x", "μ": "u", "−": "-", "–": "-", "—": "-", "…": "...",
             "’": "'", "‘": "'", "“": '"', "”": '"', "⁹": "9", "³": "3", "⁰": "0", "²": "2",
             "→": "->", "±": "+/-", "·": "."}  # fmt: skip
    s = "".join(table.get(ch, ch) for ch in text)
    return s.encode("latin-1", "replace").decode("latin-1")

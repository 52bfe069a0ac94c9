"""Locate a Unicode TTF (DejaVu Sans regular + bold) for fpdf2, and fallback fonts for the
scripts DejaVu lacks (Chinese, Japanese, Korean, emoji).

fpdf2's core fonts are Latin-1 only ("≤", "μ", "×" fail), so the report registers a TTF. Search
order: ``ADVISOR_REPORT_FONT_DIR``, Debian's fonts-dejavu-core directory, matplotlib's bundled
copy (if matplotlib is installed). When none is found the report falls back to the core font
Helvetica and transliterates text to Latin-1 (``text.latin1``).

Fallbacks (Debian packages fonts-droid-fallback, fonts-nanum, fonts-noto-color-emoji; `.ci/run`
installs them) are loaded only when a text needs them (:func:`cover`), since parsing them costs
about a second. A character no font has is recorded, so the CLI and the app can name it
(:func:`unprintable`) instead of leaving a blank in the PDF.
"""

from __future__ import annotations

import logging
import os
import unicodedata
from dataclasses import dataclass
from functools import cache
from pathlib import Path

REGULAR = "DejaVuSans.ttf"
BOLD = "DejaVuSans-Bold.ttf"
FAMILY = "DejaVu"
FALLBACK_FAMILY = "Helvetica"


@dataclass(frozen=True)
class FontFiles:
    regular: Path
    bold: Path


def _candidates() -> list[Path]:
    dirs: list[Path] = []
    env = os.environ.get("ADVISOR_REPORT_FONT_DIR")
    if env:
        dirs.append(Path(env))
    dirs += [
        Path("/usr/share/fonts/truetype/dejavu"),
        Path("/usr/share/fonts/dejavu"),
        Path("/usr/share/fonts/TTF"),
    ]
    try:  # matplotlib ships DejaVu Sans in mpl-data/fonts/ttf
        import matplotlib  # type: ignore[import-not-found]

        dirs.append(Path(matplotlib.get_data_path()) / "fonts" / "ttf")
    except Exception:  # noqa: BLE001 - optional dependency
        pass
    return dirs


@cache
def find_dejavu() -> FontFiles | None:
    """The first directory holding both DejaVu Sans files, or None."""
    for d in _candidates():
        regular, bold = d / REGULAR, d / BOLD
        if regular.is_file() and bold.is_file():
            return FontFiles(regular, bold)
    return None


def register(pdf) -> str:
    """Register DejaVu (regular + bold) on an FPDF; returns the family name to use.

    Returns the core-font family when no TTF is found (text must then be Latin-1).
    """
    # fpdf2 logs each glyph no font has ("Font ... is missing the following glyphs") on stderr
    # when the PDF is written: the report says it once, plainly (``unprintable``, ``cover``)
    logging.getLogger("fpdf.output").setLevel(logging.ERROR)
    files = find_dejavu()
    if files is None:
        return FALLBACK_FAMILY
    pdf.add_font(FAMILY, "", str(files.regular))
    pdf.add_font(FAMILY, "B", str(files.bold))
    return FAMILY


#: (fpdf family, file name, folders under /usr/share/fonts/truetype) tried in order for a
#: character DejaVu lacks.
FALLBACKS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    ("DroidFallback", "DroidSansFallbackFull.ttf", ("droid",)),  # Chinese, Japanese
    ("Nanum", "NanumGothic.ttf", ("nanum",)),  # Korean (Hangul)
    ("NotoEmoji", "NotoColorEmoji.ttf", ("noto",)),  # emoji (colour bitmaps)
)
#: Debian packages providing FALLBACKS, for the message when a character has no font.
FALLBACK_PACKAGES = "fonts-droid-fallback, fonts-nanum, fonts-noto-color-emoji"


def _find(name: str, subdirs: tuple[str, ...]) -> Path | None:
    dirs = [Path(os.environ["ADVISOR_REPORT_FONT_DIR"])] if os.environ.get(
        "ADVISOR_REPORT_FONT_DIR") else []  # fmt: skip
    dirs += [Path("/usr/share/fonts/truetype") / d for d in subdirs]
    return next((d / name for d in dirs if (d / name).is_file()), None)


@cache
def _codepoints(path: Path) -> frozenset[int]:
    """Code points the font at ``path`` has a glyph for (its best cmap)."""
    from fontTools.ttLib import TTFont

    with TTFont(str(path), lazy=True) as font:
        return frozenset(font.getBestCmap() or {})


@cache
def _fallbacks() -> tuple[tuple[str, Path, frozenset[int]], ...]:
    # fontTools says, once per table, that it drops DroidSansFallback's hinting-source tables
    # (TSI0..TSI5) when fpdf2 subsets the font: expected, and not the user's business
    logging.getLogger("fontTools.subset").setLevel(logging.ERROR)
    found = []
    for family, name, subdirs in FALLBACKS:
        path = _find(name, subdirs)
        if path is not None:
            found.append((family, path, _codepoints(path)))
    return tuple(found)


def _needs_glyph(ch: str) -> bool:
    # format characters (joiners, direction marks) and variation selectors draw nothing
    return not ch.isspace() and unicodedata.category(ch) not in ("Cc", "Cf") and not (
        0xFE00 <= ord(ch) <= 0xFE0F or 0xE0100 <= ord(ch) <= 0xE01EF)  # fmt: skip


def unprintable(text: str) -> list[str]:
    """The characters of ``text`` that neither DejaVu nor an installed fallback can draw (in
    order of first appearance); with no DejaVu, those outside Latin-1.

    >>> unprintable("Zürich ≤ 8")
    []
    """
    main = find_dejavu()
    if main is None:  # the core font: Latin-1, some symbols spelled out (text.latin1)
        from advisor.report.text import latin1

        return list(dict.fromkeys(c for c in text if c != "?" and latin1(c) == "?"))
    have = _codepoints(main.regular)
    out: dict[str, None] = {}
    for ch in text:
        if ord(ch) in have or not _needs_glyph(ch):
            continue
        if not any(ord(ch) in cps for _, _, cps in _fallbacks()):
            out[ch] = None
    return list(out)


def describe(chars: list[str]) -> str:
    """Characters for a message: each with its code point and name.

    >>> describe(["\\u4e2d"])
    "'中' (U+4E2D CJK UNIFIED IDEOGRAPH-4E2D)"
    """
    return ", ".join(
        f"{ch!r} (U+{ord(ch):04X} {unicodedata.name(ch, 'unnamed')})" for ch in chars[:20]
    ) + (f" and {len(chars) - 20} more" if len(chars) > 20 else "")


def cover(pdf, text: str) -> str:
    """Before ``text`` is drawn on ``pdf`` (DejaVu registered): load the fallback fonts its
    characters need, record those no font has (``pdf.unprintable``), and return the text to draw,
    each of those a blank.

    A blank rather than the character: one no font has stays in DejaVu's run as its .notdef
    glyph, and with text shaping on (Hebrew, Arabic: ``text.needs_shaping``) fpdf2 2.8.9 then
    lays out the shaped run after it out of step: "Acme \U0002070e עברית 中文" printed
    "עברי ת", its last letter apart (in the page image and in pdftotext's text layer), for any
    such character (U+0F00, U+13000, U+2070E alike). A space has a glyph in every font.
    """
    main = find_dejavu()
    if main is None or text.isascii():
        return text
    have = _codepoints(main.regular)
    loaded: list[str] = pdf.__dict__.setdefault("fallback_families", [])
    missing: dict[str, None] = pdf.__dict__.setdefault("unprintable", {})
    for ch in set(text):
        if ord(ch) in have or not _needs_glyph(ch):
            continue
        family = next((f for f, _, cps in _fallbacks() if ord(ch) in cps), None)
        if family is None:
            missing[ch] = None
        elif family not in loaded:
            pdf.add_font(family, "", str(next(p for f, p, _ in _fallbacks() if f == family)))
            loaded.append(family)
            # the order of FALLBACKS, whatever order the characters came in
            order = [f for f, _, _ in _fallbacks() if f in loaded]
            pdf.set_fallback_fonts(order, exact_match=False)
    if not missing:
        return text
    return "".join(" " if ch in missing else ch for ch in text)

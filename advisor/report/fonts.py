"""Locate a Unicode TTF (DejaVu Sans regular + bold) for fpdf2.

fpdf2's core fonts are Latin-1 only ("≤", "μ", "×" fail), so the report registers a TTF. Search
order: ``ADVISOR_REPORT_FONT_DIR``, Debian's fonts-dejavu-core directory, matplotlib's bundled
copy (if matplotlib is installed). When none is found the report falls back to the core font
Helvetica and transliterates text to Latin-1 (``text.latin1``).
"""

from __future__ import annotations

import os
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
    files = find_dejavu()
    if files is None:
        return FALLBACK_FAMILY
    pdf.add_font(FAMILY, "", str(files.regular))
    pdf.add_font(FAMILY, "B", str(files.bold))
    return FAMILY

"""Arabic in the PDF is shaped (issue 36: it printed unjoined): fpdf2's HarfBuzz text shaping
(uharfbuzz) is on for text in scripts that need it, so letters take their joined forms and a
right-to-left run keeps its reading order."""

from __future__ import annotations

import io

from fontTools.ttLib import TTFont
from pypdf import PdfReader

from advisor.report.pdf import build_report
from advisor.scenario import Scenario
from advisor.search.recommend import recommend

#: "marhaban" (hello): meem, reh, hah, beh, alef. Joined, by the Unicode Arabic joining types
#: (Unicode 15 ch. 9.2, ArabicShaping.txt): meem is dual-joining and first -> initial U+FEE3;
#: reh joins only to its right -> final U+FEAE, and the hah after it starts again -> initial
#: U+FEA3; beh between hah and alef -> medial U+FE92; alef, right-joining, last -> final U+FE8E.
WORD = "مرحبا"
JOINED = {"uniFEE3", "uniFEAE", "uniFEA3", "uniFE92", "uniFE8E"}
#: The isolated (nominal) letters an unshaped PDF draws instead.
ISOLATED = {"uni0645", "uni0631", "uni062D", "uni0628", "uni0627"}


def _glyphs(pdf: bytes) -> set[str]:
    """Glyph names of every embedded TrueType subset (fpdf2 keeps the font's names)."""
    names: set[str] = set()
    for page in PdfReader(io.BytesIO(pdf)).pages:
        for ref in page["/Resources"]["/Font"].values():
            font = ref.get_object()
            for d in font.get("/DescendantFonts", []):
                data = d.get_object()["/FontDescriptor"]["/FontFile2"].get_data()
                names |= set(TTFont(io.BytesIO(data)).getGlyphOrder())
    return names


def test_arabic_is_joined_and_in_reading_order():
    s = Scenario()
    pdf = build_report(s, client=WORD, recommendation=recommend(s), sensitivities=False,
                       charts=False)  # fmt: skip
    glyphs = _glyphs(pdf)
    assert glyphs >= JOINED, sorted(glyphs & (JOINED | ISOLATED))
    assert not ISOLATED & glyphs  # no letter drawn in its isolated form
    page1 = PdfReader(io.BytesIO(pdf)).pages[0].extract_text()
    assert WORD in page1  # logical order (unshaped, fpdf2 wrote it reversed: "ابحرم")
    assert "Executive summary" in page1

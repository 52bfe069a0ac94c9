"""The PDF's page and its building blocks: the branded header and footer (page numbers),
headings, paragraphs, bullets and tables, in the fonts of ``fonts`` (every text through
``Doc.t``: a Latin-1 fallback, CJK/emoji fonts and Arabic shaping when it needs them)."""

from __future__ import annotations

from collections.abc import Sequence

from fpdf import FPDF
from fpdf.enums import XPos, YPos

import advisor
from advisor.report import fonts
from advisor.report.text import latin1, needs_shaping

TITLE = "LLM serving recommendation"


BRAND = "Inference Architect"


#: fpdf2 replaces its page-count alias by the number of pages wherever the alias appears in
#: drawn text; its default, ``{nb}``, turned a client named "Acme {nb}" into "Acme 8" on every
#: page. A NUL, which :meth:`Doc.t` takes out of every text, keeps the alias out of user text.
NB_PAGES = "\x00nb\x00"


ACCENT = (0, 114, 178)  # the charts' blue (theme.PALETTE[0])


GREY = (110, 110, 110)


LIGHT = (235, 241, 247)


class Doc(FPDF):
    def __init__(self, subtitle: str) -> None:
        super().__init__(orientation="P", unit="mm", format="A4")
        self.family = fonts.register(self)
        self.unicode = self.family == fonts.FAMILY
        self.subtitle = subtitle
        self.set_margins(16, 20, 16)
        self.set_auto_page_break(True, margin=18)
        self.set_title(TITLE)
        self.set_author(BRAND)
        self.set_creator(f"{BRAND} {advisor.__version__}")
        self.alias_nb_pages(NB_PAGES)

    def t(self, text: str) -> str:
        text = text.replace("\x00", "")  # never the page-count alias (NB_PAGES)
        if not self.unicode:
            return latin1(text)
        text = fonts.cover(self, text)  # CJK/emoji fallbacks; a character no font has: a blank
        self.shaping(needs_shaping(text))
        return text

    def shaping(self, on: bool) -> None:
        """HarfBuzz shaping (uharfbuzz) for the text drawn next: Arabic letters joined, right-
        to-left runs in reading order; off otherwise (glyph by glyph, as fast as before)."""
        if on != bool(self.text_shaping):
            self.set_text_shaping(on)

    def header(self) -> None:
        self.set_font(self.family, "B", 9)
        self.set_text_color(*ACCENT)
        self.set_xy(self.l_margin, 8)
        self.cell(self.epw / 2, 6, self.t(BRAND), align="L")
        self.set_font(self.family, "", 8)
        self.set_text_color(*GREY)
        self.cell(self.epw / 2, 6, self.t(self.subtitle), align="R")
        self.set_draw_color(*ACCENT)
        self.set_line_width(0.4)
        self.line(self.l_margin, 14.5, self.w - self.r_margin, 14.5)
        self.set_text_color(0, 0, 0)
        self.set_y(self.t_margin)

    def footer(self) -> None:
        self.set_y(-12)
        self.set_font(self.family, "", 8)
        self.set_text_color(*GREY)
        self.cell(self.epw / 2, 6, self.t(f"{BRAND} {advisor.__version__}"), align="L")
        self.cell(self.epw / 2, 6, f"Page {self.page_no()} of {NB_PAGES}", align="R")
        self.set_text_color(0, 0, 0)

    # building blocks
    def h1(self, text: str) -> None:
        if self.get_y() > self.h - 60:  # keep the heading with its first h2 and lines
            self.add_page()
        self.ln(3)
        self.set_font(self.family, "B", 14)
        self.set_text_color(*ACCENT)
        self.multi_cell(0, 7, self.t(text), new_x=XPos.LMARGIN, new_y=YPos.NEXT, align="L")
        self.set_text_color(0, 0, 0)
        self.ln(1)

    def h2(self, text: str) -> None:
        if self.get_y() > self.h - 50:
            self.add_page()
        self.ln(1.5)
        self.set_font(self.family, "B", 11)
        self.multi_cell(0, 6, self.t(text), new_x=XPos.LMARGIN, new_y=YPos.NEXT, align="L")

    def para(self, text: str, size: float = 10, bold: bool = False, colour=(0, 0, 0)) -> None:
        self.set_font(self.family, "B" if bold else "", size)
        self.set_text_color(*colour)
        self.multi_cell(0, size * 0.5, self.t(text), new_x=XPos.LMARGIN, new_y=YPos.NEXT, align="L")
        self.set_text_color(0, 0, 0)
        self.ln(1)

    def bullets(self, items: Sequence[str], size: float = 9.5) -> None:
        self.set_font(self.family, "", size)
        for item in items:
            self.set_x(self.l_margin + 2)
            self.cell(4, size * 0.5, self.t("•"))
            self.multi_cell(
                self.epw - 6,
                size * 0.5,
                self.t(item),
                new_x=XPos.LMARGIN,
                new_y=YPos.NEXT,
                align="L",
            )
        self.ln(1)

    def table(self, rows: Sequence[Sequence[str]], widths: Sequence[float], size: float = 8.5,
              align: str = "LEFT") -> None:  # fmt: skip
        self.set_font(self.family, "", size)
        with super().table(
            col_widths=tuple(widths), width=self.epw, line_height=size * 0.5,
            text_align=align if align != "RIGHT" else ("LEFT",) + ("RIGHT",) * (len(widths) - 1),
            headings_style=headings(self), cell_fill_color=(248, 250, 252),
            cell_fill_mode="ROWS", borders_layout="HORIZONTAL_LINES", padding=0.8,
        ) as tab:  # fmt: skip
            for r in rows:
                row = tab.row()
                for cell in r:
                    row.cell(self.t(str(cell)))
            # the cells are drawn when the table closes: shaped if any of them needs it
            self.shaping(self.unicode and any(needs_shaping(str(c)) for r in rows for c in r))
        self.ln(2)


def headings(doc: Doc):
    from fpdf.fonts import FontFace

    return FontFace(emphasis="BOLD", color=(255, 255, 255), fill_color=ACCENT, family=doc.family)

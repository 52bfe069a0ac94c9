"""Issue 16 item 8: a client name in Chinese, Japanese, Korean or emoji is printed in the PDF
(fallback fonts), and a character no installed font has is named on stderr and in the app.

The fallback fonts are Debian packages `make setup` and `.ci/run` install (scripts/system-deps.sh: fonts-droid-fallback, fonts-nanum,
fonts-noto-color-emoji); without them the CJK test is skipped saying which file is missing.
The text layer is read back with pypdf (fpdf2 writes a ToUnicode map for each embedded font).
"""

from __future__ import annotations

import io

import pytest
from pypdf import PdfReader
from streamlit.testing.v1 import AppTest

from advisor.cli import main
from advisor.report import fonts
from advisor.report.pdf import build_report, last_build_info
from advisor.scenario import Scenario
from tests.test_hardening_escape import APP

CLIENT = "株式会社テスト 客户 한국어 🚀"  # Japanese, Chinese (simplified), Korean, emoji
#: EGYPTIAN HIEROGLYPH A001 (U+13000): in none of DejaVu and the fallbacks (their cmaps).
NO_FONT = "\U00013000"
MISSING = [
    name for _, name, _ in fonts.FALLBACKS if fonts._find(name, ("droid", "nanum", "noto")) is None
]


@pytest.mark.skipif(bool(MISSING) or fonts.find_dejavu() is None,
                    reason=f"fallback fonts not installed: {MISSING} (see scripts/system-deps.sh)")  # fmt: skip
def test_cjk_and_emoji_client_name_is_in_the_text_layer():
    pdf = build_report(Scenario(), client=CLIENT, consultant="Ana", sensitivities=False,
                       charts=False)  # fmt: skip
    text = "\n".join(p.extract_text() for p in PdfReader(io.BytesIO(pdf)).pages)
    for word in CLIENT.split():
        assert word in text, word  # was: blank (DejaVu has no CJK glyphs)
    assert last_build_info()["unprintable"] == []


def test_a_character_no_font_has_is_named():
    assert fonts.unprintable(f"Zürich {NO_FONT} ≤") == [NO_FONT]
    assert "U+13000 EGYPTIAN HIEROGLYPH A001" in fonts.describe([NO_FONT])
    build_report(Scenario(), client=f"X {NO_FONT}", sensitivities=False, charts=False)
    assert last_build_info()["unprintable"] == [NO_FONT]


def test_cli_report_warns_on_stderr_naming_the_character(tmp_path, capsys):
    out = tmp_path / "r.pdf"
    code = main(["report", "--out", str(out), "--client", f"Acme {NO_FONT}", "--isl", "256",
                 "--osl", "32", "--no-sensitivities", "--no-disaggregated", "--json"])  # fmt: skip
    stdout, stderr = capsys.readouterr()
    assert code == 0 and out.read_bytes().startswith(b"%PDF")  # the PDF is still written
    warning = [line for line in stderr.splitlines() if line.startswith("advisor report: warning")]
    assert len(warning) == 1 and "U+13000" in warning[0], stderr
    assert '"unprintable": ["\\ud80c\\udc00"]' in stdout  # the JSON names it too


def test_app_warns_before_the_pdf_is_built(tmp_path, monkeypatch):
    monkeypatch.setenv("INFERENCE_ARCHITECT_DATA_DIR", str(tmp_path))
    at = AppTest.from_file(APP, default_timeout=120).run()  # the Recommendation page
    at.text_input(key="pdf_client").input(f"Acme {NO_FONT}").run()
    assert any("13000 EGYPTIAN HIEROGLYPH A001" in w.value for w in at.warning)  # md-escaped "+"


def test_without_dejavu_only_what_latin1_cannot_spell_is_named(monkeypatch):
    # the core font prints Latin-1; text.latin1 spells "≤" as "<=", so only "客" is lost
    monkeypatch.setattr(fonts, "find_dejavu", lambda: None)
    assert fonts.unprintable("≤ é 客 ?") == ["客"]

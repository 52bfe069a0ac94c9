"""Real browser: download the PDF summary from the Recommendation page and read it with pypdf.

The app is served by `streamlit run` (temp data folder), driven with playwright and Debian's
chromium. Expected values come from the page itself (the recommended deployment's description,
shown as "Recommended: ...") and from the default scenario (P99 TPOT target 50 ms,
advisor.scenario.SLA); the client name is what the test types.
"""

from __future__ import annotations

import io
import shutil

import pytest

from tests.app_server import ROOT, wait_ms

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium on PATH"),
]
OUT = ROOT / "test-output" / "pdf"
CLIENT = "Société Générale – Zürich"
#: The first PDF starts a browser for kaleido on a shared, slow machine.
DOWNLOAD_TIMEOUT_MS = wait_ms(90_000)


def test_download_pdf_summary(server, browser, tmp_path):
    from pypdf import PdfReader

    page = browser.new_page(viewport={"width": 1400, "height": 2000}, accept_downloads=True)
    page.set_default_timeout(wait_ms(60_000))
    page.goto(server + "/")
    best = page.locator('[data-testid="stAlert"]', has_text="Recommended:").first
    best.wait_for(timeout=wait_ms(60_000))
    description = best.inner_text().split("Recommended:", 1)[1].strip()
    assert description

    client = page.get_by_label("Client / engagement")
    client.fill(CLIENT)
    client.press("Enter")  # commits the value (a rerun); the button's callable then sees it
    page.wait_for_function(
        "(want) => [...document.querySelectorAll('input')].some(i => i.value === want)",
        arg=CLIENT,
    )
    page.wait_for_timeout(1500)  # let the rerun that carries the new value finish
    button = page.get_by_role("button", name="Download PDF summary")
    with page.expect_download(timeout=DOWNLOAD_TIMEOUT_MS) as d:
        button.click()
    path = tmp_path / "summary.pdf"
    d.value.save_as(path)
    OUT.mkdir(parents=True, exist_ok=True)
    shutil.copy(path, OUT / "browser-download.pdf")
    page.close()

    data = path.read_bytes()
    assert data.startswith(b"%PDF")
    reader = PdfReader(io.BytesIO(data))
    text = " ".join(" ".join(p.extract_text() for p in reader.pages).split())
    assert len(reader.pages) >= 3
    assert CLIENT in text
    assert description in text
    assert "P99 TPOT" in text and "≤ 50 ms" in text  # the default SLA (advisor.scenario.SLA)
    assert sum(len(p.images) for p in reader.pages) >= 1

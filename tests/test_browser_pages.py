"""Real browser: every page opened directly (a deep link) in a fresh browser context, at the two
projector sizes of issue 13 (1280x800 and 1920x1080).

Each page must show itself (no "Page not found" dialog, no exception) and no metric value, metric
label or button label may be cut off (Streamlit ends such text in "…" when it is wider than its
box: the text, measured with a DOM Range, is then wider than its element; scrollWidth was 1 px
over clientWidth for a cut "10.7 / 1…", too close to rounding to test). Screenshots go to
test-output/screenshots/size-<w>x<h>-<page>.png (the window) and -all.png (the whole page at
that width), looked at by hand.
"""

from __future__ import annotations

import shutil

import pytest

from tests.app_server import SHOTS, wait_ms
from tests.test_browser import IDLE_JS
from ui.nav import PAGES

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium on PATH"),
]
SIZES = [(1280, 800), (1920, 1080)]
#: Metric values, their labels and button labels whose text is wider than their box.
CUT_JS = """() => [...document.querySelectorAll(
    '[data-testid="stMetricValue"] > div, [data-testid="stMetricLabel"] p, '
    + '[data-testid="stMain"] button p')]
  .filter(e => { const r = document.createRange(); r.selectNodeContents(e);
                 return r.getBoundingClientRect().width > e.getBoundingClientRect().width + 0.5; })
  .map(e => e.innerText)"""


@pytest.mark.parametrize("size", SIZES, ids=[f"{w}x{h}" for w, h in SIZES])
@pytest.mark.parametrize("url", [u for _, _, u, _ in PAGES])
def test_deep_link_in_a_fresh_context_shows_the_page(server, browser, url, size):
    w, h = size
    ctx = browser.new_context(viewport={"width": w, "height": h})
    try:
        page = ctx.new_page()
        page.goto(f"{server}/{url}")
        page.wait_for_function(IDLE_JS, timeout=wait_ms(120_000), polling=250)
        text = page.locator("body").inner_text()
        assert "Page not found" not in text, url
        assert page.locator('[data-testid="stException"]').count() == 0, url
        SHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(SHOTS / f"size-{w}x{h}-{url}.png"), full_page=True)
        assert page.evaluate(CUT_JS) == [], url
        # The page scrolls inside Streamlit's main block: a tall window shows all of it at the
        # same width, for looking at (metric boxes keep the width they had).
        page.set_viewport_size({"width": w, "height": 5000})
        page.wait_for_function(IDLE_JS, timeout=wait_ms(120_000), polling=250)
        page.screenshot(path=str(SHOTS / f"size-{w}x{h}-{url}-all.png"))
    finally:
        ctx.close()

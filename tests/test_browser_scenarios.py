"""Real browser: save scenarios on the Scenarios page, reload the app (a new session), find them,
compare two; screenshots of the Recommendation, Scenarios and Compare pages go to
test-output/screenshots/. The app runs with its data folder in a temporary directory."""

from __future__ import annotations

import shutil

import pytest

from advisor.examples import EXAMPLES
from tests.app_server import SHOTS, wait_ms

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium on PATH"),
]
TITLES_JS = """(want) => want.every(w => [...document.querySelectorAll('.js-plotly-plot')]
    .some(p => p?.layout?.title?.text?.replace(/<[^>]*>/g, '') === w))"""


def _no_exception(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0


def _save_example(page, index: int, name: str) -> None:
    page.locator(".st-key-sc-ex-" + str(index) + " button").click()
    page.get_by_text("Loaded “").wait_for(timeout=wait_ms(20_000))
    page.locator(".st-key-sc-name input").fill(name)
    page.locator(".st-key-sc-name input").press("Enter")
    page.locator(".st-key-sc-save button").click()
    page.get_by_text(f"Saved “{name}”").wait_for(timeout=wait_ms(20_000))


def test_save_reload_find_compare(server, browser):
    SHOTS.mkdir(parents=True, exist_ok=True)
    ctx = browser.new_context(viewport={"width": 1500, "height": 1100})
    page = ctx.new_page()
    page.goto(server + "/")
    page.get_by_text("Recommended:").wait_for(timeout=wait_ms(60_000))
    page.wait_for_function(TITLES_JS, arg=[], timeout=wait_ms(30_000))
    page.locator(".js-plotly-plot").first.wait_for(timeout=wait_ms(30_000))
    _no_exception(page)
    page.screenshot(path=str(SHOTS / "recommendation.png"), full_page=True)
    # The main area scrolls inside the page: shoot the chart itself too.
    page.locator(".js-plotly-plot").first.screenshot(path=str(SHOTS / "recommendation-pareto.png"))

    page.goto(server + "/scenarios")
    page.get_by_role("heading", name="Examples").wait_for(timeout=wait_ms(30_000))
    _save_example(page, 0, "Workshop baseline")
    _save_example(page, 2, "Small model")
    _no_exception(page)
    page.screenshot(path=str(SHOTS / "scenarios.png"), full_page=True)

    # A reload starts a new session: the saved scenarios come from the database.
    page.reload()
    page.get_by_role("heading", name="Examples").wait_for(timeout=wait_ms(30_000))
    page.get_by_text("Workshop baseline", exact=True).wait_for(timeout=wait_ms(20_000))
    page.get_by_text("Small model", exact=True).wait_for(timeout=wait_ms(20_000))

    page.goto(server + "/compare")
    box = page.locator(".st-key-cmp-pick")
    box.wait_for(timeout=wait_ms(30_000))
    # Replace the default picks with the two saved scenarios.
    inp = box.locator("input")
    inp.click()
    for _ in range(4):
        inp.press("Backspace")
    page.get_by_text("Pick at least two scenarios.").wait_for(timeout=wait_ms(20_000))
    for label in ("default / Workshop baseline", "default / Small model"):
        inp.fill(label)
        inp.press("Enter")
    inp.press("Escape")
    page.locator("h1").first.click()
    page.wait_for_function(
        TITLES_JS,
        arg=[
            "Latency breakdown by scenario (ms)",
            "Throughput and TPOT against batch size, one replica",
        ],
        timeout=wait_ms(60_000),
    )
    _no_exception(page)
    assert page.get_by_text("Inputs").count() >= 1
    page.screenshot(path=str(SHOTS / "compare.png"), full_page=True)
    for i, name in enumerate(("compare-latency", "compare-batch")):
        page.locator(".js-plotly-plot").nth(i).screenshot(path=str(SHOTS / f"{name}.png"))
    ctx.close()
    assert EXAMPLES  # the examples the test saved exist

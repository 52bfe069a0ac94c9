"""Real browser: save scenarios on the Scenarios page, reload the app (a new session), find them,
compare two; screenshots of the Recommendation, Scenarios and Compare pages go to
test-output/screenshots/. The app runs with its data folder in a temporary directory."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from advisor.examples import EXAMPLES

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium on PATH"),
]
ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "test-output" / "screenshots"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
TITLES_JS = """(want) => want.every(w => [...document.querySelectorAll('.js-plotly-plot')]
    .some(p => p?.layout?.title?.text?.replace(/<[^>]*>/g, '') === w))"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = _free_port()
    env = {**os.environ, "INFERENCE_ARCHITECT_DATA_DIR": str(tmp_path_factory.mktemp("ia-data"))}
    streamlit = Path(sys.executable).with_name("streamlit")
    proc = subprocess.Popen(
        [str(streamlit), "run", "app.py", "--server.port", str(port), "--server.headless",
         "true", "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        for _ in range(120):
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=1) as r:
                    if r.read() == b"ok":
                        break
            except OSError:
                time.sleep(0.25)
        else:
            pytest.fail("streamlit did not become healthy in 30 s")
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=shutil.which("chromium"), headless=True, args=ARGS)
        yield b
        b.close()


def _no_exception(page) -> None:
    assert page.locator('[data-testid="stException"]').count() == 0


def _save_example(page, index: int, name: str) -> None:
    page.locator(".st-key-sc-ex-" + str(index) + " button").click()
    page.get_by_text("Loaded “").wait_for(timeout=20_000)
    page.locator(".st-key-sc-name input").fill(name)
    page.locator(".st-key-sc-name input").press("Enter")
    page.locator(".st-key-sc-save button").click()
    page.get_by_text(f"Saved “{name}”").wait_for(timeout=20_000)


def test_save_reload_find_compare(server, browser):
    SHOTS.mkdir(parents=True, exist_ok=True)
    ctx = browser.new_context(viewport={"width": 1500, "height": 1100})
    page = ctx.new_page()
    page.goto(server + "/")
    page.get_by_text("Recommended:").wait_for(timeout=60_000)
    page.wait_for_function(TITLES_JS, arg=[], timeout=30_000)
    page.locator(".js-plotly-plot").first.wait_for(timeout=30_000)
    _no_exception(page)
    page.screenshot(path=str(SHOTS / "recommendation.png"), full_page=True)
    # The main area scrolls inside the page: shoot the chart itself too.
    page.locator(".js-plotly-plot").first.screenshot(path=str(SHOTS / "recommendation-pareto.png"))

    page.goto(server + "/scenarios")
    page.get_by_role("heading", name="Examples").wait_for(timeout=30_000)
    _save_example(page, 0, "Workshop baseline")
    _save_example(page, 2, "Small model")
    _no_exception(page)
    page.screenshot(path=str(SHOTS / "scenarios.png"), full_page=True)

    # A reload starts a new session: the saved scenarios come from the database.
    page.reload()
    page.get_by_role("heading", name="Examples").wait_for(timeout=30_000)
    page.get_by_text("Workshop baseline", exact=True).wait_for(timeout=20_000)
    page.get_by_text("Small model", exact=True).wait_for(timeout=20_000)

    page.goto(server + "/compare")
    box = page.locator(".st-key-cmp-pick")
    box.wait_for(timeout=30_000)
    # Replace the default picks with the two saved scenarios.
    inp = box.locator("input")
    inp.click()
    for _ in range(4):
        inp.press("Backspace")
    page.get_by_text("Pick at least two scenarios.").wait_for(timeout=20_000)
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
        timeout=60_000,
    )
    _no_exception(page)
    assert page.get_by_text("Inputs").count() >= 1
    page.screenshot(path=str(SHOTS / "compare.png"), full_page=True)
    for i, name in enumerate(("compare-latency", "compare-batch")):
        page.locator(".js-plotly-plot").nth(i).screenshot(path=str(SHOTS / f"{name}.png"))
    ctx.close()
    assert EXAMPLES  # the examples the test saved exist

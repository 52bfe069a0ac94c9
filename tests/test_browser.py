"""Real browser: the app served by `streamlit run`, driven with playwright and Debian's chromium.

Changes the GPU and TP in the sidebar, waits for the memory chart's title to follow, opens the
resulting URL in a fresh page and checks the same numbers show. Screenshots of every page go to
test-output/screenshots/. Expected numbers: advisor.physics.memory.memory_budget.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from advisor.catalog import get_accelerator, get_model
from advisor.charts.memory_charts import memory_stack_title
from advisor.physics.memory import memory_budget
from app_format import gb

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium on PATH"),
]
ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "test-output" / "screenshots"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
# The frontend wraps titles in <b> tags: match the text inside.
TITLE_JS = """(want) => [...document.querySelectorAll('.js-plotly-plot')]
    .some(p => p?.layout?.title?.text?.replace(/<[^>]*>/g, '') === want)"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server():
    port = _free_port()
    streamlit = Path(sys.executable).with_name("streamlit")
    proc = subprocess.Popen(
        [str(streamlit), "run", "app.py", "--server.port", str(port), "--server.headless",
         "true", "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
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


def _metric(page, label: str) -> str:
    m = page.locator('[data-testid="stMetric"]', has_text=label).first
    return m.locator('[data-testid="stMetricValue"]').inner_text().strip()


def _wait_title(page, title: str) -> None:
    page.wait_for_function(TITLE_JS, arg=title, timeout=30_000)


def test_change_gpu_and_tp_then_share_the_link(server, browser):
    SHOTS.mkdir(parents=True, exist_ok=True)
    model = get_model("llama-3.1-70b")
    page = browser.new_page(viewport={"width": 1600, "height": 2400})
    page.goto(server + "/memory")
    _wait_title(page, memory_stack_title(model.name, get_accelerator("h100-sxm").name, 4, 1))

    sidebar = page.locator('[data-testid="stSidebar"]')
    gpus = sidebar.locator('[data-testid="stMultiSelect"]').first
    gpus.locator('button[aria-label="Remove NVIDIA H100 SXM5 80GB"]').first.click()
    gpus.locator("input").fill("MI300X")
    page.keyboard.press("Enter")
    page.keyboard.press("Escape")
    tp = sidebar.get_by_label("TP (tensor parallel)")
    tp.fill("2")
    tp.press("Enter")
    mi300x = get_accelerator("mi300x")
    title = memory_stack_title(model.name, mi300x.name, 2, 1)
    _wait_title(page, title)

    b = memory_budget(model, mi300x, tp=2, context_tokens=1024 + 256)
    shown = {k: _metric(page, k) for k in ("Weights per GPU", "Sequences (paged)")}
    assert shown == {
        "Weights per GPU": gb(b.weights_bytes_per_gpu),
        "Sequences (paged)": f"{b.max_concurrent_sequences:,}",
    }
    page.wait_for_function("() => location.search.includes('g=mi300x') && "
                           "location.search.includes('tp=2')", timeout=10_000)  # fmt: skip
    page.screenshot(path=str(SHOTS / "memory.png"), full_page=True)

    fresh = browser.new_page(viewport={"width": 1600, "height": 2400})
    fresh.goto(page.url)
    _wait_title(fresh, title)
    assert {k: _metric(fresh, k) for k in shown} == shown
    fresh.close()
    page.close()


@pytest.mark.parametrize("path,name", [("scenario", "scenario"), ("interconnect", "interconnect")])
def test_pages_render_and_screenshot(server, browser, path, name):
    SHOTS.mkdir(parents=True, exist_ok=True)
    page = browser.new_page(viewport={"width": 1600, "height": 2400})
    page.goto(f"{server}/{path}")
    if name == "interconnect":
        page.wait_for_function(
            "() => [...document.querySelectorAll('.js-plotly-plot')]"
            ".some(p => p?.layout?.title?.text?.includes('All-reduce time per layer'))",
            timeout=30_000,
        )
    else:
        page.get_by_text("Download the scenario (JSON)").wait_for(timeout=30_000)
    assert page.locator('[data-testid="stException"]').count() == 0
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)
    page.close()

"""Real browser: download the PDF summary from the Recommendation page and read it with pypdf.

The app is served by `streamlit run` (temp data folder), driven with playwright and Debian's
chromium. Expected values come from the page itself (the recommended deployment's description,
shown as "Recommended: ...") and from the default scenario (P99 TPOT target 50 ms,
advisor.scenario.SLA); the client name is what the test types.
"""

from __future__ import annotations

import io
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium on PATH"),
]
ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "test-output" / "pdf"
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip
CLIENT = "Société Générale – Zürich"
#: The first PDF starts a browser for kaleido on a shared, slow machine.
DOWNLOAD_TIMEOUT_MS = 90_000


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    port = _free_port()
    env = dict(os.environ, INFERENCE_ARCHITECT_DATA_DIR=str(tmp_path_factory.mktemp("data")))
    streamlit = Path(sys.executable).with_name("streamlit")
    proc = subprocess.Popen(
        [str(streamlit), "run", "app.py", "--server.port", str(port), "--server.headless",
         "true", "--server.address", "127.0.0.1", "--browser.gatherUsageStats", "false"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                    if r.read() == b"ok":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"streamlit did not become healthy (exit code {proc.poll()})")
            time.sleep(0.25)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=shutil.which("chromium"), headless=True, args=ARGS)
        yield b
        b.close()


def test_download_pdf_summary(server, browser, tmp_path):
    from pypdf import PdfReader

    page = browser.new_page(viewport={"width": 1400, "height": 2000}, accept_downloads=True)
    page.set_default_timeout(60_000)
    page.goto(server + "/")
    best = page.locator('[data-testid="stAlert"]', has_text="Recommended:").first
    best.wait_for(timeout=60_000)
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

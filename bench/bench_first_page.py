"""Time to the first page after the app starts, in a real browser (issue 38: 23 s on a loaded
machine), and the time of a sidebar change seen by the browser.

For each run: start ``streamlit run app.py`` of a tree on a free port (a fresh process: nothing
imported, nothing cached), open the Recommendation page in Debian's chromium and time until the
recommended deployment's "USD per M tokens" metric is drawn; then change the output tokens in
the sidebar and time until the page shows the new budget. Prints the median per tree; runs
alternate between the trees (``--tree``) so that the shared machine's load hits both alike:
compare the ratio. Needs chromium on PATH (skips otherwise).

    python bench/bench_first_page.py [--runs 3] [--tree /path/to/other/checkout]
"""

from __future__ import annotations

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking"]
#: The value of the recommended deployment's "USD per M tokens" metric (changes with the output
#: tokens at a fixed request rate), or null while the page redraws.
_METRIC = """() => {
  for (const m of document.querySelectorAll('[data-testid="stMetric"]')) {
    const l = m.querySelector('[data-testid="stMetricLabel"]');
    if (l && l.innerText.trim() === 'USD per M tokens')
      return m.querySelector('[data-testid="stMetricValue"]')?.innerText ?? null;
  }
  return null;
}"""


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def one_run(tree: Path, browser) -> tuple[float, float]:
    """(seconds from process start to the first recommendation drawn, seconds of one change)."""
    port = _port()
    env = {**os.environ, "INFERENCE_ARCHITECT_DATA_DIR": tempfile.mkdtemp(prefix="ia-bench-")}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.port", str(port),
         "--server.headless", "true", "--server.address", "127.0.0.1",
         "--browser.gatherUsageStats", "false"],
        cwd=tree, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        url = f"http://127.0.0.1:{port}"
        while True:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=1).read() == b"ok":
                    break
            except OSError:
                time.sleep(0.1)
        page = browser.new_page(viewport={"width": 1280, "height": 900})
        page.goto(f"{url}/recommendation")
        page.get_by_text("USD per M tokens").first.wait_for(timeout=300_000)
        first = time.perf_counter() - t0
        before = page.evaluate(_METRIC)
        box = page.get_by_label("Output tokens")
        t1 = time.perf_counter()
        box.fill("301")
        box.press("Enter")
        page.wait_for_function(
            f"(b) => {{ const v = ({_METRIC})(); return v !== null && v !== b; }}",
            arg=before, timeout=120_000,
        )  # fmt: skip
        change = time.perf_counter() - t1
        page.close()
        return first, change
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def main() -> None:
    from playwright.sync_api import sync_playwright

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--tree", type=Path, default=None, help="another checkout to compare with")
    a = ap.parse_args()
    chromium = shutil.which("chromium")
    if chromium is None:
        print("no chromium on PATH: skipped")
        return
    trees = [("this tree", ROOT)] + ([("other tree", a.tree)] if a.tree else [])
    res: dict[str, list[tuple[float, float]]] = {n: [] for n, _ in trees}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=ARGS)
        for _ in range(a.runs):
            for name, path in trees:
                res[name].append(one_run(path, browser))
        browser.close()
    med = {n: (statistics.median(f for f, _ in r), statistics.median(c for _, c in r))
           for n, r in res.items()}  # fmt: skip
    for n, (f, c) in med.items():
        print(f"{n:>10}: first page {f:.1f} s, sidebar change {c * 1e3:.0f} ms ({a.runs} runs)")
    if a.tree:
        (f1, c1), (f2, c2) = med["this tree"], med["other tree"]
        print(f"     ratio: first page {f1 / f2:.2f}x, sidebar change {c1 / c2:.2f}x")


if __name__ == "__main__":
    main()

"""Rerun time per page after an input change (issue 13: p50 <= 300 ms per page on this machine).

Each page of ui/nav.py PAGES runs under Streamlit's AppTest (the same script run as a browser
session, without the websocket); then the sidebar's output tokens change N times, each to a value
not seen before (every cache misses, as when a consultant types a new number), and each rerun is
timed: wall seconds and CPU seconds of this process (AppTest runs the script in this process).
Prints p50/p95 per page; never asserts. The machine is shared: compare ratios between runs.

    .venv/bin/python bench/bench_pages.py [--reruns 8] [--page latency]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def _pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(q * (len(xs) - 1)))]


def bench_page(path: str, reruns: int) -> tuple[list[float], list[float]]:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=300).run()
    at.switch_page(path).run()
    wall, cpu = [], []
    for i in range(reruns):
        w = at.number_input(key="w.out")
        w.set_value(300 + 7 * i)
        c0, t0 = time.process_time(), time.perf_counter()
        at.run()
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
        if at.exception:
            raise RuntimeError(f"{path}: {at.exception[0].message}")
    return wall, cpu


def main() -> None:
    from ui.nav import PAGES

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--reruns", type=int, default=8)
    ap.add_argument("--page", default=None, help="one page's URL path (default: every page)")
    args = ap.parse_args()
    os.environ.setdefault("INFERENCE_ARCHITECT_DATA_DIR", tempfile.mkdtemp(prefix="ia-bench-"))
    print(f"{'page':<16} {'p50 ms':>8} {'p95 ms':>8} {'CPU s/rerun':>12}  ({args.reruns} reruns)")
    for path, _title, url, _icon in PAGES:
        if args.page and url != args.page:
            continue
        wall, cpu = bench_page(path, args.reruns)
        print(f"{url:<16} {_pct(wall, 0.5) * 1e3:8.0f} {_pct(wall, 0.95) * 1e3:8.0f} "
              f"{statistics.median(cpu):12.3f}")  # fmt: skip


if __name__ == "__main__":
    main()

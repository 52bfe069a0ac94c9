"""The P99 TTFT of short benchmark runs: one request sets it.

Prints every shipped one-client run whose P99 TTFT reads its two slowest requests
(advisor/perf/validation/short_runs.py): prompts, median and P99 TTFT, the excess P99 - median,
and the held-out prediction of that P99 (data/crossval_percentiles.yaml: the constants refitted
without the run's source); then the excess per engine and accelerator family, and the
held-out P99 TTFT error of short runs (P99 reads <= 2 requests) against longer ones.

    .venv/bin/python bench/short_run_tails.py
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import numpy as np  # noqa: E402
import yaml  # noqa: E402

from advisor.catalog.loader import DATA_DIR  # noqa: E402
from advisor.perf.validation.percentiles import percentile_cases  # noqa: E402
from advisor.perf.validation.run_length import is_short_run  # noqa: E402
from advisor.perf.validation.short_runs import (  # noqa: E402
    excess_summary,
    published_short_runs,
)


def main() -> None:
    held = yaml.safe_load((DATA_DIR / "crossval_percentiles.yaml").read_text(encoding="utf-8"))
    by_measured = {(r["source"], round(float(r["measured"]), 6)): r for r in held["rows"]
                   if r["metric"] == "ttft" and float(r["quantile"]) == 0.99}  # fmt: skip
    print(
        "| engine | family | model | prompts | median TTFT s | P99 TTFT s | P99 - median s "
        "| held-out P99 s |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for t in published_short_runs():
        r = by_measured.get((t.source, round(t.p99_ttft_s, 6)))
        pred = f"{float(r['predicted']):.3f}" if r else "-"
        print(
            f"| {t.engine} | {t.accelerator_family} | {t.model} | {t.requests} | "
            f"{t.median_ttft_s:.3f} | {t.p99_ttft_s:.3f} | {t.excess_s:.3f} | {pred} |"
        )
    print()
    pairs = sorted({(t.engine, t.accelerator_family) for t in published_short_runs()})
    for eng, fam in pairs:
        s = excess_summary(eng, fam)
        print(
            f"{eng} on {fam}: {s['runs']} runs, P99 - median {s['median_excess_s']:.3f} s "
            f"(median), up to {s['max_excess_s']:.3f} s"
        )
    # held-out P99 TTFT error by how many requests the P99 reads
    n_of = {pc.id: pc.case.requests for pc in percentile_cases()[0]}
    cells: dict[str, list[float]] = {}
    for r in held["rows"]:
        if r["metric"] != "ttft" or float(r["quantile"]) != 0.99:
            continue
        n = n_of.get(r["id"])
        p, m = float(r["predicted"]), float(r["measured"])
        e = min(abs(p / m - 1.0), 1.0) if np.isfinite(p) else 1.0
        if not n or not np.isfinite(n):
            key = "run length not stated"
        elif is_short_run(int(n)):
            key = "P99 reads <= 2 requests"
        else:
            key = "P99 reads > 2 requests"
        cells.setdefault(key, []).append(e)
    print()
    for k, v in sorted(cells.items()):
        print(f"held-out P99 TTFT, {k}: {100 * float(np.median(v)):.1f}% ({len(v)} rows)")


if __name__ == "__main__":
    main()

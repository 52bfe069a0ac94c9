"""Do the prediction intervals hold? Coverage of the held-out measurements (issue 12 target:
70-90% of them inside their own 80% interval).

Reads the leave-one-source-out rows of data/crossval.yaml (``loso_rows``, written by
``python -m advisor crossval``) and scores every row by the interval built without its source
(as for the next deployment, a source the table has not seen), then without the row alone, for its
own kind, engine, accelerator family, model class (MoE or dense) and calibration state
(advisor/perf/model/intervals.coverage). Prints the coverage per kind, per model class and overall at
each confidence, and the interval factors of a few typical queries with their basis.

    .venv/bin/python bench/intervals.py [--confidence 0.8 0.5 0.9]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.perf.model.intervals import (  # noqa: E402
    KINDS,
    LEAVE_OUT,
    RANGES_PATH,
    coverage,
    factors_for,
    load_table,
)

QUERIES = (("trtllm", "hopper"), ("vllm", "hopper"), ("vllm", "cdna3"), ("sglang", "blackwell"),
           ("generic", "ampere"))  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--confidence", type=float, nargs="+", default=[0.8, 0.5, 0.9])
    ap.add_argument(
        "--crossval",
        type=Path,
        default=RANGES_PATH,
        help="data/crossval_ranges.json (default), or a crossval.yaml to read",
    )
    args = ap.parse_args()
    table = load_table(args.crossval)
    counts = Counter((r.kind, r.calibrated) for r in table.rows)
    print(f"{len(table.rows)} held-out rows in {args.crossval.name}:")
    for k in KINDS:
        print(f"  {k:<11} {counts[(k, True)]:>4} calibrated  {counts[(k, False)]:>4} uncalibrated")
    if not table.rows:
        print("no loso_rows: run python -m advisor crossval first")
        return
    for leave_out in LEAVE_OUT:
        print(f"each row scored by the range built without its {leave_out}"
              + (" (as for a new deployment)" if leave_out == "source" else "") + ":")  # fmt: skip
        for c in args.confidence:
            cov = coverage(table, c, leave_out)
            target = "  (target 70-90%)" if c == 0.8 else ""
            print(f"  coverage at {c:.0%}{target}:")
            for k, v in cov.items():
                print(f"    {k:<13} {v['rows']:>4} rows  {v['inside_pct']:5.1f}% inside")
    print("interval factors at 80% (x the prediction):")
    for engine, family in QUERIES:
        for moe in (False, True):
            for k in KINDS:
                iv = factors_for(k, engine, family, 0.8, table=table, moe=moe)
                print(f"  {engine:<8} {family:<10} {'MoE' if moe else 'dense':<5} {k:<10} "
                      f"[{iv.low:.2f}, {iv.high:.2f}]  {iv.basis}")  # fmt: skip


if __name__ == "__main__":
    main()

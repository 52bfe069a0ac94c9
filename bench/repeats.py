"""How far two runs of one published benchmark differ (advisor/perf/validation/repeats.py).

Prints, per statistic, the repeated benchmarks, their runs and the median and largest repeat floor
(the least error one prediction has on all runs of a benchmark); with --groups, every repeated
benchmark with its rows, values and floor, beside the model's held-out prediction of each row
(data/crossval.yaml and data/crossval_percentiles.yaml: the constants refitted without the row's
source).

    .venv/bin/python bench/repeats.py [--groups] [--write]

``--write`` regenerates data/repeats.json (the summary a benchmark forecast quotes) after the
measurement files change.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import yaml  # noqa: E402

from advisor.catalog.loader import DATA_DIR  # noqa: E402
from advisor.perf.validation.repeats import (  # noqa: E402
    repeat_groups,
    repeat_summary,
    write_summary,
)


def held_out() -> dict[str, float]:
    """Row id -> its held-out prediction, from the shipped files (a row's own id in each)."""
    out: dict[str, float] = {}
    cv = yaml.safe_load((DATA_DIR / "crossval.yaml").read_text(encoding="utf-8"))
    for r in cv.get("loso_rows", []):
        out[r["id"]] = float(r["predicted"])
    path = DATA_DIR / "crossval_percentiles.yaml"
    if path.exists():
        for r in yaml.safe_load(path.read_text(encoding="utf-8"))["rows"]:
            out.setdefault(r["id"], float(r["predicted"]))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--groups", action="store_true", help="also list every repeated benchmark")
    ap.add_argument("--write", action="store_true", help="regenerate data/repeats.json")
    args = ap.parse_args()
    if args.write:
        write_summary()
    groups = repeat_groups()
    print("| statistic | repeated benchmarks | runs | median floor | largest floor | largest |")
    print("|---|---|---|---|---|---|")
    for r in repeat_summary(groups):
        print(f"| {r['statistic']} | {r['benchmarks']} | {r['runs']} | "
              f"{r['median_floor_pct']:.1f}% | {r['largest_floor_pct']:.1f}% | {r['largest']} |")  # fmt: skip
    if not args.groups:
        return
    pred = held_out()
    print()
    for g in groups:
        print(f"{g.statistic}  floor {100 * g.floor:.1f}%  {g.setting}")
        for i, v, src in zip(g.ids, g.values, g.sources, strict=True):
            p = pred.get(i)
            held = f"held out {p:.4g} ({100 * (p / v - 1):+.0f}%)" if p else "not held out"
            print(f"    {i}  measured {v:.4g}  {held}  {src[:70]}")


if __name__ == "__main__":
    main()

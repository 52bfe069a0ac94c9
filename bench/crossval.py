"""Cross-validation figures: how well does the model predict measurements it was not fitted on?

Prints the held-out median/p90 |error| per metric family and scheme against the targets, and
timings (the folds and schemes are ``advisor.perf.calibration.crossval``'s; see its docstring). It writes
nothing: ``python -m advisor crossval`` (``make crossval``) regenerates data/crossval.yaml,
data/crossval_ranges.json and data/crossval_percentiles.yaml from the same functions.

    .venv/bin/python bench/crossval.py [--max-evals 300] [--all] [--schemes source,...] [--warm]
    .venv/bin/python bench/crossval.py --prior-weight W    # how calibrate.PRIOR_WEIGHT was chosen
    .venv/bin/python bench/crossval.py --markdown          # the README table, from the files
    .venv/bin/python bench/crossval.py --by-statistic      # the per-statistic table, likewise

``--warm --max-evals 12`` starts every fold from the full fit (which has seen the held-out rows)
instead of the constants' initial values: a quicker check (on 2026-11-30 it read within 0.4
points of the converged run in every column).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.perf.calibration.calibrate import PRIOR_WEIGHT  # noqa: E402
from advisor.perf.calibration.crossval import (  # noqa: E402
    DEFAULT_SCHEMES,
    PERCENTILES_PATH,
    SCHEMES,
    TARGETS,
    cross_validate,
)

#: Targets per statistic (issue 37), out of sample: steady means and medians per family, P99s.
STATISTIC_TARGETS = {"mean": 12, "median": 12, "p99": 20}


def statistic_table() -> str:
    """The leave-one-source-out table per statistic (issue 37), as markdown: median |error|
    (rows) of steady means, medians and start-up-wave means (closed-loop runs of stated length
    whose first wave is in their mean, reported apart) per metric family, from data/crossval.yaml
    and data/crossval_ranges.json; and of the published P50/P99 rows per metric, from
    data/crossval_percentiles.yaml. Every row counts (a failure as 100%).

    Beside each: the statistic's repeat floor where some of its rows are repeated runs of one
    benchmark (``perf.validation.repeats``): the median over those benchmarks of the least error
    any single prediction has on all their runs, and the model's held-out error on the same rows.
    """
    import yaml

    from advisor.catalog.loader import DATA_DIR
    from advisor.perf.model.intervals import load_table
    from advisor.perf.validation.repeats import repeat_groups

    doc = yaml.safe_load((DATA_DIR / "crossval.yaml").read_text(encoding="utf-8"))
    stat = {r.id: r.statistic for r in load_table().rows}
    cells: dict[tuple[str, str], dict[str, float]] = {}
    names = {"wave-mean": "start-up-wave mean", "median": "median"}
    for r in doc["loso_rows"]:
        if r["kind"] == "allreduce":
            continue
        p, m = float(r["predicted"]), float(r["measured"])
        e = abs(p / m - 1) if np.isfinite(p) and p > 0 else np.inf
        cells.setdefault((r["family"], names.get(stat.get(r["id"], ""), "mean")), {})[r["id"]] = e
    if PERCENTILES_PATH.exists():
        from advisor.perf.validation.percentiles import percentile_cases
        from advisor.perf.validation.run_length import is_short_run

        requests = {pc.id: pc.case.requests for pc in percentile_cases()[0]}
        pct = yaml.safe_load(PERCENTILES_PATH.read_text(encoding="utf-8"))["rows"]
        for r in pct:
            p, m = float(r["predicted"]), float(r["measured"])
            e = abs(p / m - 1) if np.isfinite(p) else np.inf
            q = {0.5: "P50", 0.9: "P90", 0.95: "P95", 0.99: "P99"}[float(r["quantile"])]
            cells.setdefault((f"published {r['metric'].upper()}", q), {})[r["id"]] = e
            n = requests.get(r["id"])
            if q == "P99" and r["metric"] == "ttft" and n and np.isfinite(n):
                # a run of <= 101 requests: its P99 is its slowest request (short_runs.py)
                which = (
                    "P99, runs whose P99 reads <= 2 requests"
                    if is_short_run(int(n))
                    else "P99, longer runs"
                )
                cells.setdefault(("published TTFT", which), {})[r["id"]] = e
    groups = repeat_groups()

    def median_pct(v) -> float:
        return 100 * float(np.median(np.minimum(np.array(list(v)), 1.0)))  # a failure: 100%

    def repeats(errors: dict[str, float]) -> str:
        """Repeat floor (benchmarks) and the model's error on their rows, or "-"."""
        inside = [g for g in groups if sum(i in errors for i in g.ids) >= 2]
        if not inside:
            return "- | -"
        ids = [i for g in inside for i in g.ids if i in errors]
        floor = 100 * float(np.median([g.floor for g in inside]))
        return f"{floor:.1f}% ({len(inside)}) | {median_pct(errors[i] for i in ids):.1f}%"

    lines = ["| family | statistic | median \\|error\\| (rows) | target | repeat floor "
             "(repeated benchmarks) | model on those rows |", "|---|---|---|---|---|---|"]  # fmt: skip
    for (fam, st), v in sorted(cells.items()):
        key = "p99" if st.startswith("P99") else ("median" if st in ("median", "P50") else
                                                  ("mean" if st == "mean" else ""))  # fmt: skip
        target = f"<= {STATISTIC_TARGETS[key]}%" if key else "reported apart"
        lines.append(f"| {fam} | {st} | {median_pct(v.values()):.1f}% ({len(v)}) | {target} | "
                     f"{repeats(v)} |")  # fmt: skip
    return "\n".join(lines)


COLUMNS = ("batch-1 decode", "TTFT", "TTFT/ITL under load", "offline throughput", "all-reduce",
           "vLLM/SGLang rows", "AMD rows")  # fmt: skip


def markdown(held_out: dict, in_sample: dict) -> str:
    """The README table: median |error| (rows) per scheme and family, the targets, in sample."""

    def cell(s: dict | None) -> str:
        if not s or not s.get("rows"):
            return "-"
        fail = f", {s['failures']} failed" if s.get("failures") else ""
        return f"{s['median_ape_pct']:.1f}% ({s['rows']}{fail})"

    head = "| median \\|error\\| (rows) | " + " | ".join(COLUMNS) + " |"
    lines = [head, "|" + "---|" * (len(COLUMNS) + 1)]
    names = {"source": "leave one source out", "accelerator_family": "leave one accelerator "
             "family out", "engine": "leave one engine out", "gpu": "leave one GPU out",
             "model": "leave one model family out"}  # fmt: skip
    for scheme, fams in held_out.items():
        lines.append(f"| **{names.get(scheme, scheme)}** | "
                     + " | ".join(cell(fams.get(c)) for c in COLUMNS) + " |")  # fmt: skip
    lines.append("| target (issue 12, out of sample) | "
                 + " | ".join(f"<= {TARGETS[c]}%" for c in COLUMNS) + " |")  # fmt: skip
    lines.append("| in sample (fitted to these rows) | "
                 + " | ".join(cell(in_sample.get(c)) for c in COLUMNS) + " |")  # fmt: skip
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-evals", type=int, default=300,
                    help="cap on each fold's evaluations (it stops on convergence)")  # fmt: skip
    ap.add_argument(
        "--jobs",
        type=int,
        default=os.cpu_count() or 1,
        help="folds fitted side by side in worker processes (default: the CPUs)",
    )
    ap.add_argument("--all", action="store_true", help="also leave one gpu / model family out")
    ap.add_argument("--schemes", default=None,
                    help=f"comma-separated subset of {', '.join(SCHEMES)} (default: "
                    f"{', '.join(DEFAULT_SCHEMES)})")  # fmt: skip
    ap.add_argument("--prior-weight", type=float, default=None,
                    help=f"weight of the constants' priors (default {PRIOR_WEIGHT}, "
                    "calibrate.PRIOR_WEIGHT); another value first refits all rows with it, then "
                    "cross-validates: how the default was chosen")  # fmt: skip
    ap.add_argument("--markdown", action="store_true",
                    help="print the README table from data/crossval.yaml (no refit)")  # fmt: skip
    ap.add_argument("--by-statistic", dest="by_statistic", action="store_true",
                    help="print the leave-one-source-out table per statistic (mean, median, "
                    "start-up-wave mean, published P50/P99) from the data files (no refit)")  # fmt: skip
    ap.add_argument("--warm", action="store_true",
                    help="start every fold's refit from the full fit (which has seen the held-out "
                    "rows): a quicker check with a few --max-evals")  # fmt: skip
    args = ap.parse_args()
    if not 1 <= args.jobs <= 64:
        ap.error(f"--jobs: {args.jobs} is outside 1-64")
    if args.by_statistic:
        print(statistic_table())
        return
    if args.markdown:
        import yaml

        from advisor.catalog.loader import DATA_DIR
        from advisor.perf.validation.validate import validation_report

        doc = yaml.safe_load((DATA_DIR / "crossval.yaml").read_text(encoding="utf-8"))
        print(markdown(doc["held_out"], validation_report()["families"]))
        return
    if args.prior_weight is not None and not 0.0 <= args.prior_weight <= 100.0:
        ap.error(f"--prior-weight: {args.prior_weight} is outside 0-100")
    chosen = list(SCHEMES if args.all else DEFAULT_SCHEMES)
    if args.schemes:
        chosen = [s.strip() for s in args.schemes.split(",")]
        unknown = [s for s in chosen if s not in SCHEMES]
        if unknown:
            ap.error(f"--schemes: unknown {', '.join(unknown)} (allowed: {', '.join(SCHEMES)})")
    result = cross_validate(
        chosen, args.max_evals, args.jobs, warm=args.warm, prior_weight=args.prior_weight,
        log=lambda line: print(line, flush=True),
    )  # fmt: skip
    print(f"total {result['total_s']:.0f} s")


if __name__ == "__main__":
    main()

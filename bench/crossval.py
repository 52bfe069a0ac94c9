"""Cross-validation of the calibration: how well does the model predict measurements it was not
fitted on? For each scheme, refits the constants without one group at a time and predicts that
group's rows:

- source: the publication (repository + path of the ``source`` column; every revision of one
  page is one source). The headline out-of-sample figure.
- accelerator family: hopper, ampere, ada, blackwell, cdna3, ... (a family held out falls
  back to its priors: how the tool does on hardware nobody measured).
- engine (leave one serving engine out: how a profile without rows does);
- gpu, model family (``--all``): the older groupings.

All-reduce rows are refitted the same way through the collectives model's own fit.
Prints the held-out median/p90 |error| per metric family, the targets, and timings.

    .venv/bin/python bench/crossval.py [--max-evals 300] [--all] [--write] [--markdown] [--warm]

--write stores data/crossval.yaml: the tables (``held_out``) and, for the leave-one-source-out
scheme, every held-out prediction (``loso_rows``: id, kind, family, engine, accelerator_family,
calibrated, measured, predicted; attention_dp: true for attention-DP deployments), which the
prediction intervals are built from.

Every fold's refit starts from the constants' initial values (``calibrate._BOUNDS``), not from
the full fit, which has seen the held-out rows, and runs until the optimiser converges (scipy's
ftol test stops it after some 10 evaluations and 8-9 Jacobians; ``--max-evals`` is a cap): the
held-out figures then owe nothing to the full fit. The folds are independent: ``--jobs``
worker processes (default: the CPUs) fit them side by side, and each fit's Jacobian perturbs
together the constants no row shares (``calibrate.grouped_jacobian``); the three schemes take
~27 minutes on 2 cores for 1,621 rows and the prefill dispatch constants (on the 1,464 rows
before them, 9 minutes instead of 43 before both, with the same predictions to 1e-12).
``--warm --max-evals 12`` starts from the full fit instead, a quicker check that ``--write``
refuses (on 2026-11-30 it read within 0.4 points of the converged run in every
column).
"""

from __future__ import annotations

import argparse
import datetime
import multiprocessing
import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.perf import profiles  # noqa: E402
from advisor.perf.calibrate import PRIOR_WEIGHT, fit  # noqa: E402
from advisor.perf.intervals import ErrorTable  # noqa: E402
from advisor.perf.measurements import Case, cases, load_rows, source_key  # noqa: E402
from advisor.perf.validate import (  # noqa: E402
    COARSE_KIND,
    FAMILIES,
    SLICES,
    Prediction,
    collective_predictions,
    error_stats,
    predict_cases,
)

SCHEMES: dict[str, Callable[[Case], str]] = {
    "source": lambda c: source_key(c.source),
    "accelerator_family": lambda c: c.config.gpu.family,
    "gpu": lambda c: c.config.gpu.id,
    "model": lambda c: c.config.model.id.rsplit("-", 1)[0],
    "engine": lambda c: c.config.engine,
}
DEFAULT_SCHEMES = ("source", "accelerator_family", "engine")
#: Targets of issue 12: out-of-sample (leave-one-source-out) median |error| per family / slice.
TARGETS = {
    "batch-1 decode": 12, "TTFT": 12, "TTFT/ITL under load": 12, "offline throughput": 12,
    "all-reduce": 12, "vLLM/SGLang rows": 15, "AMD rows": 15,
}  # fmt: skip


def _collective_folds(key_of: Callable[[dict], str]) -> list[tuple[Prediction, bool]]:
    """Held-out all-reduce predictions, each with whether its link kind had training rows."""
    from advisor.perf.collective_fit import fit_calibration, load_collective_rows

    raw = {r["id"]: r for r in load_rows()}
    rows = [r for r in load_collective_rows() if not r.reason]
    out: list[tuple[Prediction, bool]] = []
    for g in sorted({key_of(raw[r.row_id]) for r in rows}):
        test = {r.row_id for r in rows if key_of(raw[r.row_id]) == g}
        train = [r for r in rows if r.row_id not in test]
        links_seen = {r.link_id for r in train}
        try:
            cal = fit_calibration(train)
        except (ValueError, ZeroDivisionError, ArithmeticError) as exc:
            print(f"  collectives without {g}: fit impossible ({exc}); rows count as failures")
            cal = None
        preds, _ = collective_predictions(cal, test) if cal else ([], [])
        if cal is None:
            preds = [
                Prediction(r.row_id, "all-reduce", r.metric, "nccl", "", "", r.measured, np.inf)
                for r in rows if r.row_id in test
            ]  # fmt: skip
        link = {r.row_id: r.link_id for r in rows}
        out += [(p, cal is not None and link[p.id] in links_seen) for p in preds]
    return out


def _family_of_row(row: dict) -> str:
    from advisor.catalog import get_accelerator
    from advisor.perf.measurements import gpu_id

    gid = gpu_id(row.get("gpu", ""))
    return get_accelerator(gid).family if gid else "?"


#: The rows the folds split, set before the worker processes fork (they inherit it unpickled).
_ITEMS: list[Case] = []
#: Published percentile rows (``percentiles.percentile_cases``) predicted by the source folds
#: with ``--percentiles``; empty otherwise.
_PCT: list = []


#: The percentile rows of the last source scheme run (``--percentiles``).
PERCENTILE_ROWS: list[dict] = []


def _percentile_rows(v: str, fams: set, engines: set) -> list[dict]:
    """The held-out predictions of the percentile rows of source ``v`` (the active constants
    were fitted without it), in data/crossval_percentiles.yaml's schema."""
    from advisor.perf.percentiles import predict_percentiles

    pcs = [pc for pc in _PCT if source_key(pc.source) == v]
    out = []
    for pp in predict_percentiles(pcs):
        c = pp.pc.case
        out.append({
            "id": pp.pc.id, "source": v, "metric": pp.pc.metric, "quantile": pp.pc.quantile,
            "engine": c.config.engine, "accelerator_family": c.config.gpu.family,
            "calibrated": c.config.gpu.family in fams and c.config.engine in engines,
            "moe": bool(c.config.model.is_moe), "attention_dp": bool(c.config.dp_attention),
            "closed_loop": pp.pc.closed_loop, "utilisation": round(float(pp.utilisation), 4),
            "measured": float(pp.pc.measured_s), "predicted": float(pp.predicted_s),
        })  # fmt: skip
    return out


def _fold(name: str, v: str, warm: dict | None, max_evals: int, prior_weight: float):
    """Refit without group ``v`` of scheme ``name``; its rows' held-out predictions."""
    t0 = time.perf_counter()
    key = SCHEMES[name]
    train = [c for c in _ITEMS if key(c) != v]
    test = [c for c in _ITEMS if key(c) == v]
    doc = fit(train, max_nfev=max_evals, warm=warm, prior_weight=prior_weight)
    fams = set(doc["families"])
    engines = {e for e, p in doc["engines"].items() if p.get("rows")}
    profiles.set_active(doc)
    try:
        pred = predict_cases(test)
        pct = _percentile_rows(v, fams, engines) if name == "source" and _PCT else []
    finally:
        profiles.set_active(None)
    rows = []
    for c, p in zip(test, pred, strict=True):
        rows.append({
            "id": c.id, "source": source_key(c.source), "kind": COARSE_KIND[c.kind],
            "family": c.family,
            "engine": c.config.engine, "accelerator_family": c.config.gpu.family,
            "calibrated": c.config.gpu.family in fams and c.config.engine in engines,
            "measured": float(c.measured), "predicted": float(p),
            **({"attention_dp": True} if c.config.dp_attention else {}),
            **({"moe": True} if c.config.model.is_moe else {}),
        })  # fmt: skip
    return rows + [{"percentile": True, **r} for r in pct], time.perf_counter() - t0


def run_scheme(
    name: str,
    items: list[Case],
    warm: dict | None,
    max_evals: int,
    prior_weight: float = PRIOR_WEIGHT,
    jobs: int = 1,
) -> list[dict]:
    """Held-out predictions of one scheme, one dict per row (loso_rows' schema).

    The folds are independent fits: ``jobs`` worker processes run them side by side, and the
    rows come back in the order of the groups, whatever order the folds finish in.
    """
    global _ITEMS
    _ITEMS = items
    groups = sorted({SCHEMES[name](c) for c in items}
                    | ({source_key(pc.source) for pc in _PCT} if name == "source" else set()))  # fmt: skip
    args = [(name, v, warm, max_evals, prior_weight) for v in groups]
    done: dict[str, list[dict]] = {}
    if jobs > 1:
        ctx = multiprocessing.get_context("fork")  # workers inherit _ITEMS and the loaded data
        with ProcessPoolExecutor(max_workers=jobs, mp_context=ctx) as pool:
            futures = {pool.submit(_fold, *a): a[1] for a in args}
            for fut in as_completed(futures):
                v = futures[fut]
                done[v], seconds = fut.result()
                print(f"  held out {name}={v}: {len(done[v])} rows, {seconds:.0f} s", flush=True)
    else:
        for a in args:
            done[a[1]], seconds = _fold(*a)
            print(f"  held out {name}={a[1]}: {len(done[a[1]])} rows, {seconds:.0f} s", flush=True)
    rows: list[dict] = [r for v in groups for r in done[v] if not r.get("percentile")]
    PERCENTILE_ROWS[:] = [
        {k: x for k, x in r.items() if k != "percentile"}
        for v in groups for r in done[v] if r.get("percentile")
    ]  # fmt: skip
    if name in ("source", "accelerator_family"):
        by = (lambda r: source_key(r.get("source", ""))) if name == "source" else _family_of_row
        raw = {r["id"]: r for r in load_rows()}
        for p, calibrated in _collective_folds(by):
            rows.append({
                "id": p.id, "source": source_key(raw[p.id].get("source", "")),
                "kind": "allreduce", "family": "all-reduce", "engine": "nccl",
                "accelerator_family": _family_of_row(raw[p.id]),
                "calibrated": calibrated, "measured": p.measured,
                "predicted": p.predicted,
            })  # fmt: skip
    return rows


def table(rows: list[dict]) -> dict[str, dict]:
    """error_stats per metric family and per target slice of held-out rows."""

    def err(r: dict) -> float:
        p = r["predicted"]
        return p / r["measured"] - 1 if np.isfinite(p) and p > 0 else float("inf")

    out: dict[str, dict] = {}
    for fam in FAMILIES:
        out[fam] = error_stats(err(r) for r in rows if r["family"] == fam)
    for sl, keep in SLICES.items():
        out[sl] = error_stats(
            err(r) for r in rows if keep(_Row(r["engine"], r["accelerator_family"]))
        )
    return {k: {kk: round(vv, 1) if isinstance(vv, float) else vv for kk, vv in v.items()}
            for k, v in out.items() if v["rows"]}  # fmt: skip


class _Row:
    def __init__(self, engine: str, accelerator_family: str):
        self.engine, self.accelerator_family = engine, accelerator_family


def print_table(name: str, t: dict[str, dict]) -> None:
    print(f"leave-one-{name.replace(' ', '-')}-out (held-out rows only):")
    for fam, s in t.items():
        target = TARGETS.get(fam)
        mark = (
            "" if target is None else ("  meets" if s["median_ape_pct"] <= target else "  MISSES")
        )
        print(f"  {fam:<22} {s['rows']:>4} rows  median {s['median_ape_pct']:6.1f}%  "
              f"p90 {s['p90_ape_pct']:6.1f}%  failures {s['failures']}"
              f"{'' if target is None else f'  (target <= {target}%)'}{mark}")  # fmt: skip


#: Case kinds of one request at a time (no queue): light load whatever the deployment.
_ONE_AT_A_TIME = ("decode_b1", "tpot_b1", "ttft_b1", "itl_fit_intercept", "itl_fit_slope")


def utilisations(items: list[Case]) -> np.ndarray:
    """Utilisation of each case's deployment at the case's load (``intervals.load_regime``).

    Poisson rows: offered rate / capacity (``latency_under_load``'s utilisation, at the
    REQUESTED rate). Closed loops of N clients (and static batches of N): the throughput the
    model gives them / capacity, or N / the KV slots when N is larger (the rest wait for a
    slot: a queue). Offline runs: infinite (every request queued at once). One request at a
    time (batch-1 rows): 0. Predicted with data/calibration.yaml: a property of the
    deployment and its load, never of the measured value.
    """
    from advisor.perf.predict import concurrency_throughput
    from advisor.perf.replica import build_replicas
    from advisor.perf.validate import service_for
    from advisor.physics.queueing import latency_under_load

    out = np.zeros(len(items))
    by_kind: dict[str, list[int]] = {}
    for i, c in enumerate(items):
        by_kind.setdefault(c.kind, []).append(i)
    for kind, idx in by_kind.items():
        if kind in _ONE_AT_A_TIME:
            continue
        if kind == "offline":
            out[idx] = np.inf
            continue
        sel = [items[i] for i in idx]
        r = build_replicas([c.config for c in sel])
        isl = np.array([c.isl for c in sel], dtype=float)
        osl = np.array([c.osl for c in sel], dtype=float)
        sm = service_for(r, isl, osl)
        if kind.startswith("load_"):
            qps = np.array([c.qps for c in sel], dtype=float)
            out[idx] = latency_under_load(sm, qps, osl, isl_tokens=isl).utilisation
            continue
        n = np.array([c.batch for c in sel], dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            cap = 1.0 / (sm.prefill_s + np.maximum(osl - 1, 0) * sm.per_token_at_max_batch_s())
            x = concurrency_throughput(r, n, isl, osl) / osl
            out[idx] = np.maximum(x / cap, n / np.asarray(sm.max_running, dtype=float))
    return out


def row_statistic(c: Case) -> str:
    """What a row reports, for the ranges and the per-statistic table: "wave-mean" for the
    mean TTFT / E2E of a closed-loop run of stated length whose first N requests left at once
    (its start-up wave, ``predict.first_wave_ttft_s``), else the row's mean or median."""
    wave = (c.kind in ("conc_ttft", "conc_e2e") and c.statistic == "mean" and c.batch > 1
            and c.requests > c.batch)  # fmt: skip
    return "wave-mean" if wave else c.statistic


def ranges_table(doc: dict) -> ErrorTable:
    """The error table of a crossval.yaml document with each row's load regime and statistic
    (computed from the row's case with the current constants; rows no longer representable
    keep "")."""
    import dataclasses

    from advisor.perf.intervals import load_regime, table_from_doc

    t = table_from_doc(doc)
    items, _ = cases()
    by_id = {c.id: c for c in items}
    util = dict(zip([c.id for c in items], utilisations(items), strict=True))
    rows = []
    for r in t.rows:
        c = by_id.get(r.id)
        extra = {} if c is None else {"regime": load_regime(float(util[r.id])),
                                      "statistic": row_statistic(c)}  # fmt: skip
        rows.append(dataclasses.replace(r, **extra))
    return dataclasses.replace(t, rows=tuple(rows) + percentile_error_rows())


def percentile_error_rows() -> tuple:
    """ErrorRows of the P90 / P99 rows of data/crossval_percentiles.yaml (TTFT, TPOT, E2E; the
    model predicts no ITL percentile range), each with its load regime; () without the file."""
    import yaml

    from advisor.perf.intervals import ErrorRow, load_regime, log_ratio
    from advisor.perf.percentiles import TAIL_STATISTIC

    if not PERCENTILES_PATH.exists():
        return ()
    doc = yaml.safe_load(PERCENTILES_PATH.read_text(encoding="utf-8"))
    out = []
    for r in doc.get("rows") or []:
        stat = TAIL_STATISTIC.get(float(r["quantile"]))
        if stat is None or r["metric"] not in ("ttft", "tpot", "e2e"):
            continue
        out.append(ErrorRow(
            id=f"{r['id']}", kind=r["metric"], engine=r["engine"],
            accelerator_family=r["accelerator_family"], calibrated=bool(r["calibrated"]),
            log_ratio=log_ratio(float(r["measured"]), float(r["predicted"])),
            attention_dp=bool(r["attention_dp"]), moe=bool(r["moe"]), source=r["source"],
            regime=load_regime(float(r["utilisation"])), statistic=stat,
        ))  # fmt: skip
    return tuple(out)


PERCENTILES_PATH = Path(__file__).resolve().parent.parent / "data" / "crossval_percentiles.yaml"


def write_percentiles(args: argparse.Namespace, seconds: float) -> None:
    """data/crossval_percentiles.yaml: every published percentile row predicted by the
    constants fitted without its source, then data/crossval_ranges.json again."""
    import yaml

    how = (f"bench/crossval.py --schemes source --percentiles --max-evals {args.max_evals}"
           + (" --warm" if args.warm else ""))  # fmt: skip
    doc = {
        "generated_by": how,
        "generated_on": datetime.date.today().isoformat(),
        "meaning": "each published percentile row (P50/P90/P95/P99 of TTFT, TPOT, ITL, E2E) "
        "predicted by the percentile model with the constants refitted without its source"
        + (" (folds started from the full fit: --warm)" if args.warm else "")
        + "; predicted inf = unstable, a failure, never dropped.",
        "seconds": seconds,
        "rows": PERCENTILE_ROWS,
    }
    PERCENTILES_PATH.write_text(yaml.safe_dump(doc, sort_keys=False, width=100), encoding="utf-8")
    print(f"wrote data/crossval_percentiles.yaml ({len(PERCENTILE_ROWS)} rows)")
    write_ranges()


def write_ranges() -> None:
    """data/crossval_ranges.json from data/crossval.yaml (``intervals.compact_doc``)."""
    import json

    import yaml

    from advisor.catalog.loader import DATA_DIR
    from advisor.perf.intervals import RANGES_PATH, compact_doc

    doc = yaml.safe_load((DATA_DIR / "crossval.yaml").read_text(encoding="utf-8"))
    made = f"bench/crossval.py --ranges from data/crossval.yaml of {doc.get('generated_on')}"
    out = compact_doc(ranges_table(doc), made)
    text = json.dumps(out, separators=(",", ":"))
    RANGES_PATH.write_text(text.replace("],[", "],\n[") + "\n", encoding="utf-8")
    print(f"wrote {RANGES_PATH.relative_to(DATA_DIR.parent)} ({len(out['rows'])} rows)")


#: Targets per statistic (issue 37), out of sample: steady means and medians per family, P99s.
STATISTIC_TARGETS = {"mean": 12, "median": 12, "p99": 20}


def statistic_table() -> str:
    """The leave-one-source-out table per statistic (issue 37), as markdown: median |error|
    (rows) of steady means, medians and start-up-wave means (closed-loop runs of stated length
    whose first wave is in their mean, reported apart) per metric family, from data/crossval.yaml
    and data/crossval_ranges.json; and of the published P50/P99 rows per metric, from
    data/crossval_percentiles.yaml. Every row counts (a failure as 100%)."""
    import yaml

    from advisor.catalog.loader import DATA_DIR
    from advisor.perf.intervals import load_table

    doc = yaml.safe_load((DATA_DIR / "crossval.yaml").read_text(encoding="utf-8"))
    stat = {r.id: r.statistic for r in load_table().rows}
    cells: dict[tuple[str, str], list[float]] = {}
    names = {"wave-mean": "start-up-wave mean", "median": "median"}
    for r in doc["loso_rows"]:
        if r["kind"] == "allreduce":
            continue
        p, m = float(r["predicted"]), float(r["measured"])
        e = abs(p / m - 1) if np.isfinite(p) and p > 0 else np.inf
        cells.setdefault((r["family"], names.get(stat.get(r["id"], ""), "mean")), []).append(e)
    if PERCENTILES_PATH.exists():
        pct = yaml.safe_load(PERCENTILES_PATH.read_text(encoding="utf-8"))["rows"]
        for r in pct:
            p, m = float(r["predicted"]), float(r["measured"])
            e = abs(p / m - 1) if np.isfinite(p) else np.inf
            q = {0.5: "P50", 0.9: "P90", 0.95: "P95", 0.99: "P99"}[float(r["quantile"])]
            cells.setdefault((f"published {r['metric'].upper()}", q), []).append(e)

    def cell(v: list[float]) -> str:
        x = np.minimum(np.array(v), 1.0)  # a failure counts as a 100% error, never dropped
        return f"{100 * float(np.median(x)):.1f}% ({len(v)})"

    lines = ["| family | statistic | median \\|error\\| (rows) | target |", "|---|---|---|---|"]
    for (fam, st), v in sorted(cells.items()):
        key = "p99" if st == "P99" else ("median" if st in ("median", "P50") else
                                         ("mean" if st == "mean" else ""))  # fmt: skip
        target = f"<= {STATISTIC_TARGETS[key]}%" if key else "reported apart"
        lines.append(f"| {fam} | {st} | {cell(v)} | {target} |")
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
    ap.add_argument("--write", action="store_true", help="write data/crossval.yaml")
    ap.add_argument("--prior-weight", type=float, default=None,
                    help=f"weight of the constants' priors (default {PRIOR_WEIGHT}, "
                    "calibrate.PRIOR_WEIGHT); another value first refits all rows with it, then "
                    "cross-validates: how the default was chosen")  # fmt: skip
    ap.add_argument("--markdown", action="store_true",
                    help="print the README table from data/crossval.yaml (no refit)")  # fmt: skip
    ap.add_argument("--percentiles", action="store_true",
                    help="leave one source out for the published percentile rows (P50/P90/P99 "
                    "of TTFT, TPOT, ITL, E2E) too, and write data/crossval_percentiles.yaml "
                    "(with --schemes source; --warm allowed: the file says how it was made)")  # fmt: skip
    ap.add_argument("--by-statistic", dest="by_statistic", action="store_true",
                    help="print the leave-one-source-out table per statistic (mean, median, "
                    "start-up-wave mean, published P50/P99) from the data files (no refit)")  # fmt: skip
    ap.add_argument("--ranges", action="store_true",
                    help="write data/crossval_ranges.json (the compact table the answers' ranges "
                    "read) from data/crossval.yaml, with each row's load regime (no refit)")  # fmt: skip
    ap.add_argument("--warm", action="store_true",
                    help="start every fold's refit from the full fit (which has seen the held-out "
                    "rows): a quicker check with a few --max-evals; not for --write")  # fmt: skip
    args = ap.parse_args()
    if not 1 <= args.jobs <= 64:
        ap.error(f"--jobs: {args.jobs} is outside 1-64")
    if args.ranges:
        write_ranges()
        return
    if args.by_statistic:
        print(statistic_table())
        return
    if args.markdown:
        import yaml

        from advisor.catalog.loader import DATA_DIR
        from advisor.perf.validate import validation_report

        doc = yaml.safe_load((DATA_DIR / "crossval.yaml").read_text(encoding="utf-8"))
        print(markdown(doc["held_out"], validation_report()["families"]))
        return
    t_start = time.perf_counter()
    items, _ = cases()
    warm = profiles._calibration()
    weight = PRIOR_WEIGHT if args.prior_weight is None else args.prior_weight
    if args.prior_weight is not None and not 0.0 <= args.prior_weight <= 100.0:
        ap.error(f"--prior-weight: {args.prior_weight} is outside 0-100")
    if args.prior_weight is not None and args.write:
        ap.error("--prior-weight: compare weights without --write (data/ keeps the default)")
    if args.percentiles:
        from advisor.perf.percentiles import percentile_cases

        global _PCT
        _PCT = percentile_cases()[0]
    if args.warm and args.write:
        ap.error("--warm: a quick check; data/crossval.yaml keeps folds refitted from scratch")
    if args.prior_weight is not None and args.warm:  # the full fit at that weight to start from
        warm = fit(items, max_nfev=40, warm=warm, prior_weight=weight)
    tables: dict[str, dict] = {}
    loso: list[dict] = []
    seconds: dict[str, float] = {}
    chosen = SCHEMES if args.all else DEFAULT_SCHEMES
    if args.schemes:
        chosen = [s.strip() for s in args.schemes.split(",")]
        unknown = [s for s in chosen if s not in SCHEMES]
        if unknown:
            ap.error(f"--schemes: unknown {', '.join(unknown)} (allowed: {', '.join(SCHEMES)})")
    for name in chosen:
        t0 = time.perf_counter()
        rows = run_scheme(
            name, items, warm if args.warm else None, args.max_evals, weight, args.jobs
        )
        seconds[name] = round(time.perf_counter() - t0, 1)
        tables[name] = table(rows)
        if name == "source":
            loso = rows
        print_table(name, tables[name])
        print(f"  ({seconds[name]:.0f} s)", flush=True)
    total = time.perf_counter() - t_start
    print(f"total {total:.0f} s")
    if args.percentiles and PERCENTILE_ROWS:
        write_percentiles(args, round(seconds.get("source", 0.0), 1))
    if args.write:
        import yaml

        from advisor.catalog.loader import DATA_DIR

        doc = {
            "generated_by": f"bench/crossval.py --max-evals {args.max_evals}"
            + (" --all" if args.all else "")
            + " --write",
            "generated_on": datetime.date.today().isoformat(),
            "meaning": "refit the constants without one group (a source = repository + path; an "
            "accelerator family; ...), predict that group's rows: absolute % error on rows the "
            "fit never saw. A row predicted unstable or not at all is a failure (infinite "
            "error), never dropped.",
            "targets_median_ape_pct": TARGETS,
            "seconds": {**seconds, "total": round(total, 1)},
            "held_out": tables,
            "loso_rows": loso,
        }
        (DATA_DIR / "crossval.yaml").write_text(
            yaml.safe_dump(doc, sort_keys=False, width=100), encoding="utf-8"
        )
        print("wrote data/crossval.yaml")
        write_ranges()


if __name__ == "__main__":
    main()

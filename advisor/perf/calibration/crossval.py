"""Cross-validation of the calibration: how well does the model predict measurements it was not
fitted on? ``python -m advisor crossval`` (``make crossval``) regenerates data/crossval.yaml,
data/crossval_ranges.json and, with ``--percentiles``, data/crossval_percentiles.yaml from these
functions; bench/crossval.py prints the same figures without writing.

For each scheme, the constants are refitted without one group at a time and that group's rows
are predicted:

- source: the publication (repository + path of the ``source`` column; every revision of one
  page is one source). The headline out-of-sample figure, and the rows the prediction intervals
  are built from (``loso_rows``: id, kind, family, engine, accelerator_family, calibrated,
  measured, predicted; attention_dp / moe: true where they hold).
- accelerator family: hopper, ampere, ada, blackwell, cdna3, ... (a family held out falls
  back to its priors: how the tool does on hardware nobody measured).
- engine (leave one serving engine out: how a profile without rows does);
- gpu, model family (``--all``): the older groupings.

All-reduce rows are refitted the same way through the collectives model's own fit.

Every fold's refit starts from the constants' initial values (``calibrate._BOUNDS``), not from
the full fit, which has seen the held-out rows, and runs until the optimiser converges (scipy's
ftol test stops it after some 10 evaluations and 8-9 Jacobians; ``max_evals`` is a cap): the
held-out figures then owe nothing to the full fit. The folds are independent: ``jobs`` worker
processes fit them side by side, and each fit's Jacobian perturbs together the constants no row
shares (``calibrate.grouped_jacobian``); the three default schemes take ~31 minutes on 2 cores
for 1,621 rows. ``warm`` starts every fold from the full fit instead: a quicker check, which
only the percentile file may be written from (it says so in its header).
"""

from __future__ import annotations

import datetime
import multiprocessing
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed

import numpy as np

from advisor.catalog.loader import DATA_DIR
from advisor.perf.calibration.calibrate import PRIOR_WEIGHT, fit
from advisor.perf.model import profiles
from advisor.perf.model.intervals import CROSSVAL_PATH, RANGES_PATH, ErrorTable
from advisor.perf.validation.measurements import Case, cases, load_rows, source_key
from advisor.perf.validation.validate import (
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
PERCENTILES_PATH = DATA_DIR / "crossval_percentiles.yaml"
#: The command that regenerates the files, named in their headers.
COMMAND = "python -m advisor crossval"

Log = Callable[[str], None]


def _collective_folds(key_of: Callable[[dict], str], log: Log) -> list[tuple[Prediction, bool]]:
    """Held-out all-reduce predictions, each with whether its link kind had training rows."""
    from advisor.perf.calibration.collective_fit import fit_calibration
    from advisor.perf.validation.collectives import load_collective_rows

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
            log(f"  collectives without {g}: fit impossible ({exc}); rows count as failures")
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
    from advisor.perf.validation.measurements import gpu_id

    gid = gpu_id(row.get("gpu", ""))
    return get_accelerator(gid).family if gid else "?"


#: The rows the folds split, set before the worker processes fork (they inherit it unpickled).
_ITEMS: list[Case] = []
#: Published percentile rows (``percentiles.percentile_cases``) predicted by the source folds
#: when asked (``cross_validate(percentiles=True)``); empty otherwise.
_PCT: list = []


def _percentile_rows(v: str, fams: set, engines: set) -> list[dict]:
    """The held-out predictions of the percentile rows of source ``v`` (the active constants
    were fitted without it), in data/crossval_percentiles.yaml's schema."""
    from advisor.perf.validation.percentiles import predict_percentiles

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
    log: Log = print,
) -> tuple[list[dict], list[dict]]:
    """Held-out predictions of one scheme, one dict per row (loso_rows' schema), and those of
    the published percentile rows (source scheme with percentile cases set; else []).

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
                log(f"  held out {name}={v}: {len(done[v])} rows, {seconds:.0f} s")
    else:
        for a in args:
            done[a[1]], seconds = _fold(*a)
            log(f"  held out {name}={a[1]}: {len(done[a[1]])} rows, {seconds:.0f} s")
    rows: list[dict] = [r for v in groups for r in done[v] if not r.get("percentile")]
    pct = [
        {k: x for k, x in r.items() if k != "percentile"}
        for v in groups for r in done[v] if r.get("percentile")
    ]  # fmt: skip
    if name in ("source", "accelerator_family"):
        by = (lambda r: source_key(r.get("source", ""))) if name == "source" else _family_of_row
        raw = {r["id"]: r for r in load_rows()}
        for p, calibrated in _collective_folds(by, log):
            rows.append({
                "id": p.id, "source": source_key(raw[p.id].get("source", "")),
                "kind": "allreduce", "family": "all-reduce", "engine": "nccl",
                "accelerator_family": _family_of_row(raw[p.id]),
                "calibrated": calibrated, "measured": p.measured,
                "predicted": p.predicted,
            })  # fmt: skip
    return rows, pct


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


def table_lines(name: str, t: dict[str, dict]) -> list[str]:
    """One scheme's held-out table as text, each family against its target (``TARGETS``)."""
    lines = [f"leave-one-{name.replace(' ', '-').replace('_', '-')}-out (held-out rows only):"]
    for fam, s in t.items():
        target = TARGETS.get(fam)
        mark = (
            "" if target is None else ("  meets" if s["median_ape_pct"] <= target else "  MISSES")
        )
        lines.append(f"  {fam:<22} {s['rows']:>4} rows  median {s['median_ape_pct']:6.1f}%  "
                     f"p90 {s['p90_ape_pct']:6.1f}%  failures {s['failures']}"
                     f"{'' if target is None else f'  (target <= {target}%)'}{mark}")  # fmt: skip
    return lines


def cross_validate(
    schemes: Sequence[str] = DEFAULT_SCHEMES,
    max_evals: int = 300,
    jobs: int = 1,
    warm: bool = False,
    prior_weight: float | None = None,
    percentiles: bool = False,
    log: Log = print,
) -> dict:
    """Run the schemes' folds: ``{"tables": scheme -> family -> stats, "loso_rows": the source
    scheme's rows, "percentile_rows": the published percentile rows' (``percentiles``, source
    scheme), "seconds": scheme -> s, "total_s"}``. ``log`` gets each fold's progress and table.

    ``prior_weight`` other than None refits with that weight (``calibrate.PRIOR_WEIGHT`` is
    the default); with ``warm`` the folds start from the full fit at that weight.
    """
    global _PCT
    unknown = [s for s in schemes if s not in SCHEMES]
    if unknown:
        raise ValueError(f"schemes: unknown {', '.join(unknown)} (allowed: {', '.join(SCHEMES)})")
    t_start = time.perf_counter()
    items, _ = cases()
    start = profiles._calibration()
    weight = PRIOR_WEIGHT if prior_weight is None else prior_weight
    if percentiles:
        from advisor.perf.validation.percentiles import percentile_cases

        _PCT = percentile_cases()[0]
    if prior_weight is not None and warm:  # the full fit at that weight to start from
        start = fit(items, max_nfev=40, warm=start, prior_weight=weight)
    tables: dict[str, dict] = {}
    loso: list[dict] = []
    pct: list[dict] = []
    seconds: dict[str, float] = {}
    try:
        for name in schemes:
            t0 = time.perf_counter()
            rows, got = run_scheme(
                name, items, start if warm else None, max_evals, weight, jobs, log
            )
            seconds[name] = round(time.perf_counter() - t0, 1)
            tables[name] = table(rows)
            if name == "source":
                loso, pct = rows, got
            for line in table_lines(name, tables[name]):
                log(line)
            log(f"  ({seconds[name]:.0f} s)")
    finally:
        _PCT = []
    total = time.perf_counter() - t_start
    return {"tables": tables, "loso_rows": loso, "percentile_rows": pct, "seconds": seconds,
            "total_s": total}  # fmt: skip


def command(
    max_evals: int, schemes: Sequence[str], percentiles: bool = False, warm: bool = False
) -> str:
    """The ``python -m advisor crossval`` line that makes these files (their headers name it).

    >>> command(300, DEFAULT_SCHEMES)
    'python -m advisor crossval --max-evals 300'
    >>> command(12, ["source"], percentiles=True, warm=True)
    'python -m advisor crossval --max-evals 12 --schemes source --percentiles --warm'
    """
    picked = "" if tuple(schemes) == DEFAULT_SCHEMES else f" --schemes {','.join(schemes)}"
    if tuple(schemes) == tuple(SCHEMES):
        picked = " --all"
    return (f"{COMMAND} --max-evals {max_evals}{picked}" + (" --percentiles" if percentiles
            else "") + (" --warm" if warm else ""))  # fmt: skip


def crossval_doc(result: dict, how: str) -> dict:
    """data/crossval.yaml's document: the tables and the leave-one-source-out rows."""
    return {
        "generated_by": how,
        "generated_on": datetime.date.today().isoformat(),
        "meaning": "refit the constants without one group (a source = repository + path; an "
        "accelerator family; ...), predict that group's rows: absolute % error on rows the "
        "fit never saw. A row predicted unstable or not at all is a failure (infinite "
        "error), never dropped.",
        "targets_median_ape_pct": TARGETS,
        "seconds": {**result["seconds"], "total": round(result["total_s"], 1)},
        "held_out": result["tables"],
        "loso_rows": result["loso_rows"],
    }


def percentiles_doc(rows: list[dict], how: str, warm: bool, seconds: float) -> dict:
    """data/crossval_percentiles.yaml's document: every published percentile row predicted by
    the constants fitted without its source."""
    return {
        "generated_by": how,
        "generated_on": datetime.date.today().isoformat(),
        "meaning": "each published percentile row (P50/P90/P95/P99 of TTFT, TPOT, ITL, E2E) "
        "predicted by the percentile model with the constants refitted without its source"
        + (" (folds started from the full fit: --warm)" if warm else "")
        + "; predicted inf = unstable, a failure, never dropped.",
        "seconds": seconds,
        "rows": rows,
    }


def write_yaml(doc: dict, path) -> None:  # noqa: ANN001 - a Path
    import yaml

    path.write_text(yaml.safe_dump(doc, sort_keys=False, width=100), encoding="utf-8")


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
    from advisor.perf.model.predict import concurrency_throughput
    from advisor.perf.model.replica import build_replicas
    from advisor.perf.model.service import service_for
    from advisor.physics.queueing.model import latency_under_load

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
    keep ""), and the tail rows of data/crossval_percentiles.yaml."""
    import dataclasses

    from advisor.perf.model.intervals import load_regime, table_from_doc

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
    """ErrorRows of the P90 / P99 rows of data/crossval_percentiles.yaml (TTFT, TPOT, E2E, ITL:
    the inter-token gap's tail, a stalled decode step, is not a TPOT's), each with its load
    regime; () without the file."""
    import yaml

    from advisor.perf.model.intervals import ErrorRow, load_regime, log_ratio
    from advisor.perf.validation.percentiles import TAIL_STATISTIC, percentile_cases
    from advisor.perf.validation.run_length import run_statistic_of_tail

    if not PERCENTILES_PATH.exists():
        return ()
    doc = yaml.safe_load(PERCENTILES_PATH.read_text(encoding="utf-8"))
    requests = {pc.id: float(pc.case.requests) for pc in percentile_cases()[0]}
    out = []
    for r in doc.get("rows") or []:
        q = float(r["quantile"])
        stat = run_statistic_of_tail(TAIL_STATISTIC.get(q, ""), requests.get(r["id"], 0.0))
        # the tails only: a published median is a median row of data/crossval.yaml's kind
        # already, and here it would also enter the means' pool (statistic "median" is steady)
        if not stat.startswith(("p90", "p99")) or r["metric"] not in ("ttft", "tpot", "e2e", "itl"):
            continue
        out.append(ErrorRow(
            id=f"{r['id']}", kind=r["metric"], engine=r["engine"],
            accelerator_family=r["accelerator_family"], calibrated=bool(r["calibrated"]),
            log_ratio=log_ratio(float(r["measured"]), float(r["predicted"])),
            attention_dp=bool(r["attention_dp"]), moe=bool(r["moe"]), source=r["source"],
            regime=load_regime(float(r["utilisation"])), statistic=stat,
        ))  # fmt: skip
    return tuple(out)


def write_ranges() -> int:
    """data/crossval_ranges.json from data/crossval.yaml and data/crossval_percentiles.yaml
    (``intervals.compact_doc``); the number of rows written."""
    import json

    import yaml

    from advisor.perf.model.intervals import compact_doc

    doc = yaml.safe_load(CROSSVAL_PATH.read_text(encoding="utf-8"))
    made = f"{COMMAND} --ranges from data/crossval.yaml of {doc.get('generated_on')}"
    out = compact_doc(ranges_table(doc), made)
    text = json.dumps(out, separators=(",", ":"))
    RANGES_PATH.write_text(text.replace("],[", "],\n[") + "\n", encoding="utf-8")
    return len(out["rows"])


def regenerate(
    schemes: Sequence[str] = DEFAULT_SCHEMES,
    max_evals: int = 300,
    jobs: int = 1,
    percentiles: bool = False,
    warm: bool = False,
    log: Log = print,
) -> dict:
    """Cross-validate and write the files: data/crossval.yaml (unless ``warm``: folds started
    from the full fit are a quick check, not the shipped table), data/crossval_percentiles.yaml
    (``percentiles``), then data/crossval_ranges.json from them. The leave-one-source-out rows
    are what the ranges read, so ``schemes`` must hold "source".

    Returns the cross-validation result (``cross_validate``) with ``wrote``: file -> rows.
    """
    if "source" not in schemes:
        raise ValueError("schemes: the files hold the leave-one-source-out rows; include source")
    if warm and not percentiles:
        raise ValueError("warm: only the percentile file may be written from warm folds")
    result = cross_validate(schemes, max_evals, jobs, warm=warm, percentiles=percentiles, log=log)
    how = command(max_evals, schemes, percentiles, warm)
    wrote: dict[str, int] = {}
    if percentiles:
        seconds = round(result["seconds"].get("source", 0.0), 1)
        write_yaml(percentiles_doc(result["percentile_rows"], how, warm, seconds), PERCENTILES_PATH)
        wrote["data/crossval_percentiles.yaml"] = len(result["percentile_rows"])
    if not warm:
        write_yaml(crossval_doc(result, how), CROSSVAL_PATH)
        wrote["data/crossval.yaml"] = len(result["loso_rows"])
    wrote["data/crossval_ranges.json"] = write_ranges()
    return {**result, "wrote": wrote, "generated_by": how}

"""Predict every usable measurement and summarise the error per metric family.

``python -m advisor validate`` prints, per family (batch-1 decode, TTFT, TTFT/ITL under load,
offline throughput, all-reduce): rows used, median and p90 absolute percentage error, and the
signed bias (median of predicted / measured - 1); rows it cannot represent are counted with the
reason.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from advisor.catalog.files import load_data_yaml, without_block
from advisor.perf.model.predict import (
    concurrency_throughput,
    concurrency_tpot,
    concurrency_ttft,
    first_wave_iteration,
    first_wave_ttft_s,
    offline_throughput,
    static_throughput,
    with_first_wave,
)
from advisor.perf.model.replica import ReplicaArrays, build_replicas
from advisor.perf.model.service import service_for
from advisor.perf.model.step import (
    decode_step,
    prefill,
)
from advisor.perf.validation.bench_run import replayable, replayed_values, run_statistic
from advisor.perf.validation.client_draws import client_lengths
from advisor.perf.validation.measurements import Case, Skipped, cases, gpu_id, load_rows

FAMILIES = (
    "batch-1 decode",
    "TTFT",
    "TTFT/ITL under load",
    "offline throughput",
    "all-reduce",
)


#: Kinds whose value is output tokens/s of the whole deployment (replicas x one replica).
THROUGHPUT_KINDS = ("offline", "static", "conc_tput", "load_tput")
#: Prediction kind -> the coarse kind of crossval's loso_rows (and the intervals).
COARSE_KIND = {
    # decode_b1 is tokens/s (1 / TPOT); the ITL-vs-context slope is no headline quantity.
    "decode_b1": "decode_b1", "tpot_b1": "tpot", "itl_fit_intercept": "tpot",
    "itl_fit_slope": "itl_slope", "ttft_b1": "ttft", "load_ttft": "ttft", "conc_ttft": "ttft",
    "load_itl": "tpot", "conc_tpot": "tpot", "load_e2e": "e2e", "conc_e2e": "e2e",
    "static_e2e": "e2e",
    "offline": "throughput", "static": "throughput", "conc_tput": "throughput",
    "load_tput": "throughput",
}  # fmt: skip


@dataclass(frozen=True)
class Prediction:
    id: str
    family: str
    kind: str
    engine: str
    gpu: str
    model: str
    measured: float
    predicted: float
    accelerator_family: str = ""
    source: str = ""

    @property
    def error(self) -> float:
        """Signed relative error: predicted / measured - 1 (inf when nothing finite predicted)."""
        if not np.isfinite(self.predicted) or self.predicted <= 0:
            return float("inf")
        return self.predicted / self.measured - 1.0


def predict_cases(items: list[Case], replay: bool = True) -> np.ndarray:
    """Predicted value (same unit as ``Case.measured``) for each case, vectorised by kind.

    ``replay``: a closed-loop row the replay answers (``bench_run.replayable``: a TTFT row of a
    run of stated length and lengths; a TTFT, TPOT or E2E row of a run whose requests' lengths
    are the client's own) takes its statistic from the run replayed
    (:mod:`advisor.perf.validation.bench_run`); False gives the steady state with the start-up
    wave's mean, the fit's fast form (``calibrate.replay_factors``).
    """

    out = np.full(len(items), np.nan)
    by_kind: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(items):
        by_kind[c.kind].append(i)
    for kind, idx in by_kind.items():
        sel = [items[i] for i in idx]
        r = build_replicas([c.config for c in sel])
        isl = np.array([c.isl for c in sel], dtype=float)
        osl = np.array([c.osl for c in sel], dtype=float)
        batch = np.array([c.batch for c in sel], dtype=float)
        if kind == "decode_b1":
            val = 1.0 / decode_step(r, 1.0, isl + osl / 2.0).total
        elif kind == "tpot_b1":
            val = decode_step(r, 1.0, isl + osl / 2.0).total
        elif kind == "ttft_b1":
            val = _one_client_ttft(sel, r, isl)
        elif kind == "itl_fit_intercept":
            val = decode_step(r, 1.0, 1.0).total
        elif kind == "itl_fit_slope":
            val = (decode_step(r, 1.0, 100_001.0).total - decode_step(r, 1.0, 1.0).total) / 1e5
        elif kind == "offline":
            val = offline_throughput(r, isl, osl)
        elif kind == "static":
            val = static_throughput(r, batch, isl, osl)
        elif kind == "static_e2e":  # the batch's whole run: output tokens / output tokens/s
            val = batch * osl / static_throughput(r, batch, isl, osl)
        elif kind == "conc_tpot":
            val = concurrency_tpot(r, batch, isl, osl)
        elif kind == "conc_ttft":
            val = _closed_loop_ttft(sel, r, batch, isl, osl)
        elif kind == "conc_e2e":
            tpot = concurrency_tpot(r, batch, isl, osl)
            val = (
                _closed_loop_ttft(sel, r, batch, isl, osl, tpot) + np.maximum(osl - 1.0, 0.0) * tpot
            )
        elif kind == "conc_tput":
            val = concurrency_throughput(r, batch, isl, osl)
        elif kind in ("load_ttft", "load_itl", "load_e2e", "load_tput"):
            val = _load_prediction(kind, sel, r, isl, osl)
        else:  # pragma: no cover - parse_row only emits the kinds above
            raise ValueError(f"unknown case kind {kind!r}")
        if kind in THROUGHPUT_KINDS:
            val = val * np.array([c.replicas for c in sel], dtype=float)
        out[idx] = val
    if replay:
        idx = [i for i, c in enumerate(items) if replayable(c)]
        if idx:
            out[idx] = replayed_values([items[i] for i in idx])
    return out


def _one_client_ttft(sel: list[Case], r: ReplicaArrays, isl: np.ndarray) -> np.ndarray:
    """TTFT of one client's requests: the prefill of the mean prompt, or, for a run whose sent
    lengths are known (``client_draws.client_lengths``), the row's statistic over the prefills of
    the prompts it sent (one client: nothing queues, each TTFT is its own prompt's prefill).

        TTFT = stat_i prefill(L_i)    (stat: the row's mean or median; else prefill(mean L))
    """
    val = prefill(r, isl).total
    draws = {k: client_lengths(c.row.get("notes", "") or "") for k, c in enumerate(sel)}
    draws = {k: d[0] for k, d in draws.items() if d is not None}
    if not draws:
        return val
    rows = np.concatenate([np.full(d.size, k) for k, d in draws.items()])
    each = prefill(r.take(rows), np.concatenate(list(draws.values())).astype(float)).total
    start = 0
    for k, d in draws.items():
        val[k] = run_statistic(each[start : start + d.size], sel[k].statistic)
        start += d.size
    return val


def _closed_loop_ttft(sel: list[Case], r: ReplicaArrays, n, isl, osl, tpot=None) -> np.ndarray:
    """Mean (or median) TTFT of a closed-loop run: the steady state, plus, for a mean over a
    run of stated length, its start-up wave (``predict.first_wave_ttft_s``). A median of a run
    whose wave is under half its requests is the steady state's. ``tpot``: the rows'
    ``concurrency_tpot``, when the caller has it already."""
    steady = concurrency_ttft(r, n, isl, osl, tpot)
    budget = np.array([c.prefill_budget_tokens for c in sel], dtype=float)
    iteration, m, delay = first_wave_iteration(r, isl, n, budget)
    wave = first_wave_ttft_s(iteration, m, n) + delay
    runs = np.array([c.requests if c.statistic == "mean" else 0 for c in sel], dtype=float)
    return with_first_wave(steady, np.maximum(wave, steady), n, runs)


#: Offered rate, as a fraction of capacity, at which an overloaded finite run is evaluated: the
#: running batch sits at its maximum, the backlog comes from overload_queue_wait_s.
SATURATED_FRACTION = 0.98


def _load_prediction(kind: str, sel: list[Case], r: ReplicaArrays, isl, osl) -> np.ndarray:
    """Poisson load at the REQUESTED (offered) rate; the achieved rate is an output, never used.

    Above the predicted capacity there is no steady state: a run of N stated requests is
    predicted as the saturated server (rate just below capacity) plus the finite run's backlog
    (overload_queue_wait_s) on the first token; with N unknown it is a failure (inf).
    """
    from advisor.perf.model.predict import overload_queue_wait_s
    from advisor.physics.queueing.model import latency_under_load

    qps = np.array([c.qps for c in sel], dtype=float)
    sm = service_for(r, isl, osl)
    res = latency_under_load(sm, qps, osl, isl_tokens=isl)
    if kind == "load_tput":  # output tokens/s: offered load, or capacity once saturated
        return np.minimum(qps, res.capacity_req_per_s) * osl
    n_req = np.array([c.requests for c in sel], dtype=float)
    over = ~res.stable & (n_req > 1) & np.isfinite(res.capacity_req_per_s)
    if over.any():
        sat = np.where(over, SATURATED_FRACTION * res.capacity_req_per_s, qps)
        res_sat = latency_under_load(sm, sat, osl, isl_tokens=isl)
        backlog = overload_queue_wait_s(n_req, qps, res.capacity_req_per_s)
    median = np.array([c.statistic == "median" for c in sel])

    def pick(st_now, st_sat, extra):
        val = np.where(median, st_now.p50_s, st_now.mean_s)
        if over.any():
            sat_val = np.where(median, st_sat.p50_s, st_sat.mean_s) + extra
            val = np.where(over, sat_val, val)
        return np.where(res.stable | over, val, np.inf)

    if kind == "load_ttft":
        return pick(res.ttft, res_sat.ttft if over.any() else None, backlog if over.any() else 0)
    if kind == "load_itl":
        return pick(res.tpot, res_sat.tpot if over.any() else None, 0.0)
    return pick(res.e2e, res_sat.e2e if over.any() else None, backlog if over.any() else 0)


def predictions() -> tuple[list[Prediction], list[Skipped]]:
    items, skipped = cases()
    pred = predict_cases(items)
    got = [
        Prediction(
            id=c.id,
            family=c.family,
            kind=c.kind,
            engine=c.config.engine,
            gpu=c.config.gpu.id,
            model=c.config.model.id,
            measured=c.measured,
            predicted=float(p),
            accelerator_family=c.config.gpu.family,
            source=c.source,
        )  # fmt: skip
        for c, p in zip(items, pred, strict=True)
    ]
    return got, skipped


def collective_predictions(
    calibration: dict | None = None, ids: set[str] | None = None
) -> tuple[list[Prediction], list[Skipped]]:
    """All-reduce rows through the collectives model (its fitted CALIBRATION unless given);
    ``ids`` restricts to those rows."""
    from advisor.perf.validation.collectives import load_collective_rows, validate_collectives

    raw = {r["id"]: r for r in load_rows()}
    rows = [r for r in load_collective_rows() if ids is None or r.row_id in ids]
    got, skipped = [], []
    for item in validate_collectives(rows, calibration=calibration):
        if item.predicted is None:
            skipped.append(Skipped(item.row_id, item.metric, item.reason or "not representable"))
            continue
        src = raw.get(item.row_id, {})
        gid = gpu_id(src.get("gpu", ""))
        got.append(
            Prediction(
                id=item.row_id, family="all-reduce", kind=item.metric, engine="nccl",
                gpu=gid or "", model="", measured=float(item.measured),
                predicted=float(item.predicted),
                accelerator_family=_family_of(gid), source=src.get("source", ""),
            )
        )  # fmt: skip
    return got, skipped


def _family_of(gid: str | None) -> str:
    from advisor.catalog import get_accelerator

    return get_accelerator(gid).family if gid else ""


#: |error| a failed prediction (unstable, or no finite value) counts as in every median and p90.
FAILURE_ERROR_PCT = 100.0


def error_stats(errors: Iterable[float]) -> dict[str, float]:
    """Rows, median and p90 |error| %, signed median bias % of signed relative errors.

    A non-finite error (the model called the deployment unstable, or predicted nothing) is a
    failure: it counts as a FAILURE_ERROR_PCT (100%) |error|, an unusable answer, and is never
    dropped; ``failures`` says how many.

    >>> s = error_stats([0.1, -0.2, float("inf")])
    >>> s["rows"], s["failures"], round(s["median_ape_pct"], 1), s["p90_ape_pct"]
    (3, 1, 20.0, 100.0)
    """
    e = np.asarray(list(errors), dtype=float)
    if e.size == 0:
        return {"rows": 0, "failures": 0}
    bad = ~np.isfinite(e)
    signed = np.where(bad, FAILURE_ERROR_PCT / 100, e)
    ape = np.abs(signed) * 100
    return {
        "rows": int(e.size),
        "median_ape_pct": float(np.median(ape)),
        "p90_ape_pct": float(np.percentile(ape, 90, method="higher")),
        "bias_pct": float(np.median(signed) * 100),
        "failures": int(bad.sum()),
    }


#: Cross-cutting slices the targets also name (<= 15% median |error|).
SLICES = {
    "vLLM/SGLang rows": lambda p: p.engine in ("vllm", "vllm-v0", "sglang"),
    "AMD rows": lambda p: p.accelerator_family.startswith("cdna"),
}


def summarise(preds: list[Prediction]) -> dict[str, dict[str, float]]:
    """Per metric family (FAMILIES), then per slice (SLICES): error_stats of its rows."""
    table = {fam: error_stats(p.error for p in preds if p.family == fam) for fam in FAMILIES}
    for name, keep in SLICES.items():
        table[name] = error_stats(p.error for p in preds if keep(p))
    return table


def out_of_sample() -> dict | None:
    """The held-out error table written by ``python -m advisor crossval`` (data/crossval.yaml).

    Rows: one per (held-out grouping, metric family) with rows, median and p90 |error| in %;
    ``schemes``: grouping -> family -> stats, leave-one-source-out first. None when the file is
    absent or unreadable.
    """
    import yaml

    from advisor.catalog.loader import DATA_DIR

    path = DATA_DIR / "crossval.yaml"
    try:
        # without its per-row predictions (loso_rows, 16,000 of its lines): only the held-out
        # table is read here, once per PDF and per Trust page (issue 38)
        doc = load_data_yaml(without_block(path.read_text(encoding="utf-8"), "loso_rows"))
    except (OSError, yaml.YAMLError):
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("held_out"), dict):
        return None
    schemes = {g: f for g, f in doc["held_out"].items() if isinstance(f, dict)}
    rows = [
        {"held out": f"one {group.replace('_', ' ')} at a time", "family": fam, **stats}
        for group, fams in schemes.items()
        for fam, stats in (fams or {}).items()
    ]
    return {"rows": rows, "schemes": schemes, "generated_on": str(doc.get("generated_on", "")),
            "generated_by": doc.get("generated_by", "")}  # fmt: skip


def validation_report() -> dict:
    """In-sample validation: every usable row predicted with the constants fitted to all rows.

    ``out_of_sample`` (data/crossval.yaml, written by ``python -m advisor crossval``) is the error on rows
    the fit never saw; it is the figure to quote, this table is the in-sample one.
    """
    preds, skipped = predictions()
    cpreds, cskipped = collective_predictions()
    allp = preds + cpreds
    # A collective row is "skipped" by the serving parser and handled by the collectives model.
    skipped = [s for s in skipped if not s.reason.startswith("collective:")] + cskipped
    reasons = Counter(s.reason for s in skipped)
    return {
        "sample": "in-sample: the constants were fitted to these rows",
        "families": summarise(allp),
        "out_of_sample": out_of_sample(),
        "failures": [
            {
                "id": p.id,
                "family": p.family,
                "kind": p.kind,
                "engine": p.engine,
                "gpu": p.gpu,
                "model": p.model,
                "reason": "predicted unstable (offered rate above capacity)"
                if p.kind.startswith("load_")
                else "no finite prediction",
            }
            for p in allp
            if not np.isfinite(p.error)
        ],  # fmt: skip
        "rows_total": len(load_rows()),
        "rows_used": len(allp),
        "rows_skipped": len(skipped),
        "skipped_reasons": dict(reasons.most_common()),
        "rows": [
            {
                "id": p.id,
                "family": p.family,
                "kind": p.kind,
                "engine": p.engine,
                "gpu": p.gpu,
                "accelerator_family": p.accelerator_family,
                "model": p.model,
                "measured": p.measured,
                "predicted": p.predicted,
                "error_pct": p.error * 100,
            }  # fmt: skip
            for p in allp
        ],
    }

"""The latency percentile model checked against published median / P90 / P99 serving rows.

Every SLA decision uses a percentile of :func:`advisor.physics.queueing.model.latency_under_load`
(TTFT / TPOT / E2E: two-moment gamma fits around the queueing means). Until this check it was
compared only with the project's own simulator. Here every measurement row whose metric is a
percentile (``ttft|tpot|itl|e2e`` with ``_median``, ``_p50``, ``_p90``, ``_p95``, ``_p99``) is
read; its deployment goes through the same parser as every other row
(:func:`advisor.perf.validation.measurements.parse_row`), so a row is representable exactly when its model,
GPU, precision and load condition are; the reason is counted otherwise.

Prediction at the row's load, never at an output of the benchmark:

* "max concurrency N" / "concurrency N": a closed loop of N clients (no think time), the
  latency at the throughput X with X x E2E_mean(X) = N (:mod:`advisor.perf.model.closed_loop`, the
  model ``recommend`` uses for concurrent users);
* "request rate R": Poisson arrivals at the REQUESTED rate R (per replica).

Lengths: the row's isl / osl (or the notes' token totals, read by the same parser). The
spread of the lengths matters for the tails: ``sglang.bench_serving --dataset-name random``
draws each length uniformly from [r L, L] (``--random-range-ratio r``, default 0), vLLM's
``bench serve`` from [L (1 - r), L (1 + r)] (default 0: fixed);
:func:`advisor.perf.validation.client_draws.length_cv` reads this from the notes.

ITL percentiles are compared with the model's inter-token gap
(:func:`advisor.physics.queueing.inter_token.inter_token_stats`): a mixture of plain decode
steps and steps that carry a prefill (or a chunk of one), in the share the arrival rate and the
prompt give (a P99 ITL is a decode step stalled by another request's prefill as soon as more than 1% of
the gaps carry one; the P99 of a request's mean gap, its TPOT, is much smaller). Until
2026-12-03 they were compared with the TPOT percentiles. A run the replay reproduces request by request
(the client's own lengths, and send times for a request rate: ``_run_key``) reads its ITL
percentiles from the replay's token gaps instead, every iteration's length once per answer that
got a token at its end (since 2026-12-05): which prefills stall which decodes is then the run's,
not a Poisson mixture's.

Errors are signed (predicted / measured - 1) and absolute in %. A row predicted unstable
(load above capacity) is a failure: listed with an infinite error, it counts as a 100 % error
in every median (:func:`advisor.perf.validation.validate.error_stats`), never dropped. Load levels
use the predicted utilisation at the row's load: low < 0.3, medium < 0.7, high otherwise
(and unstable). The tail shape, P99 / P50 predicted against measured for the same deployment,
load and metric, is independent of the calibration of the mean.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass

import numpy as np

from advisor.perf.model.closed_loop import closed_loop_load
from advisor.perf.model.replica import build_replicas
from advisor.perf.model.service import service_for
from advisor.perf.validation.bench_run import (
    RunSamples,
    gap_statistic,
    replay_runs,
    replayable,
    run_statistic,
)
from advisor.perf.validation.client_draws import (
    SHAREGPT,
    client_arrivals,
    client_lengths,
    length_cv,
)
from advisor.perf.validation.measurements import Case, Skipped, load_rows, parse_row, source_key
from advisor.perf.validation.run_length import run_statistic_of_tail
from advisor.perf.validation.validate import error_stats
from advisor.physics.queueing.model import latency_under_load
from advisor.physics.queueing.results import LoadResult

#: A percentile latency metric: (quantity, unit, statistic).
PERCENTILE_METRIC = re.compile(r"^(ttft|tpot|itl|e2e|e2el)_(ms|s)_(median|p50|p90|p95|p99)$")
QUANTILE_OF = {"median": 0.50, "p50": 0.50, "p90": 0.90, "p95": 0.95, "p99": 0.99}
LABEL_OF = {0.50: "P50", 0.90: "P90", 0.95: "P95", 0.99: "P99"}
LEVELS = ("low", "medium", "high")
METRICS = ("ttft", "tpot", "itl", "e2e")


@dataclass(frozen=True)
class PercentileCase:
    """One percentile row the model can predict (SI: seconds)."""

    id: str
    source: str
    metric: str  # ttft | tpot | itl | e2e
    quantile: float  # 0.5, 0.9, 0.95 or 0.99
    measured_s: float
    case: Case  # the deployment, lengths and load (kind conc_* / ttft_b1 / tpot_b1 / load_*)
    isl_cv: float
    osl_cv: float

    @property
    def closed_loop(self) -> bool:
        return not self.case.kind.startswith("load_")

    @property
    def load(self) -> float:
        """Clients per replica (closed loop) or requested req/s per replica (Poisson)."""
        return self.case.batch if self.closed_loop else self.case.qps


_TOTALS = re.compile(r"(\d+) input / (\d+) output tokens over (\d+) completed requests")


def _with_lengths(row: dict) -> dict:
    """The row with empty isl / osl filled from a bench_serving JSON's totals in the notes.

    "152612 input / 160347 output tokens over 300 completed requests": the workload's mean
    lengths (a condition of the run, like the "N prompts: X input / Y generated" totals that
    :func:`advisor.perf.validation.measurements.parse_row` reads itself).

    >>> _with_lengths({"isl": "", "osl": "", "notes": "8 input / 6 output tokens over 4 "
    ...                "completed requests"})["isl"]
    '2'
    """
    m = _TOTALS.search(row.get("notes", ""))
    if (row.get("isl") or row.get("osl")) or not m:
        return row
    i, o, n = (int(g) for g in m.groups())
    return dict(row, isl=f"{i / n:g}", osl=f"{o / n:g}")


def percentile_case(row: dict) -> PercentileCase | Skipped | None:
    """A measurement row as a percentile case, Skipped with the reason, or None (not a percentile).

    The deployment is parsed by :func:`advisor.perf.validation.measurements.parse_row` on the row read as
    the median of the same quantity (so the percentile rows are representable exactly when the
    median rows are), after :func:`_with_lengths`; ShareGPT workloads are not representable here
    (the rows state the mean lengths, not their spread, which sets the tails).
    """
    m = PERCENTILE_METRIC.match(row.get("metric", ""))
    if not m:
        return None
    what = "e2e" if m.group(1) == "e2el" else m.group(1)
    # an ITL row's deployment and load are read as for a TPOT row (the parser knows those);
    # its percentile is then the inter-token gap's (physics.queueing.inter_token.inter_token_stats)
    as_metric = "tpot" if what == "itl" else what
    parsed = parse_row(dict(_with_lengths(row), metric=f"{as_metric}_ms_median", unit="ms"))
    if isinstance(parsed, Skipped):
        return Skipped(row["id"], row["metric"], parsed.reason)
    try:
        value = float(row["value"])
    except ValueError:
        return Skipped(row["id"], row["metric"], f"value {row['value']!r} is not a number")
    if not value > 0:
        return Skipped(row["id"], row["metric"], f"value {value!r} is not > 0")
    notes = row.get("notes", "")
    if SHAREGPT.search(notes):
        return Skipped(
            row["id"], row["metric"],
            "ShareGPT lengths: only their mean is stated, and their spread sets the percentiles",
        )  # fmt: skip
    cv = length_cv(notes)
    return PercentileCase(
        id=row["id"], source=row.get("source", ""), metric=what,
        quantile=QUANTILE_OF[m.group(3)], measured_s=value * (1e-3 if m.group(2) == "ms" else 1.0),
        case=parsed, isl_cv=cv, osl_cv=cv,
    )  # fmt: skip


def percentile_cases(rows: list[dict] | None = None) -> tuple[list[PercentileCase], list[Skipped]]:
    """Every percentile row of the measurement files: (representable cases, skipped with reasons)."""
    got: list[PercentileCase] = []
    skipped: list[Skipped] = []
    for row in load_rows() if rows is None else rows:
        pc = percentile_case(row)
        if isinstance(pc, PercentileCase):
            got.append(pc)
        elif pc is not None:
            skipped.append(pc)
    return got, skipped


def utilisation_level(utilisation: float, stable: bool) -> str:
    """Load level of a prediction: low (rho < 0.3), medium (< 0.7), high (else, or unstable).

    >>> utilisation_level(0.1, True), utilisation_level(0.5, True), utilisation_level(0.2, False)
    ('low', 'medium', 'high')
    """
    if not stable or utilisation >= 0.7:
        return "high"
    return "low" if utilisation < 0.3 else "medium"


def _deployment(c: Case) -> tuple:
    g = c.config
    return (g.model.id, g.gpu.id, g.tp, g.pp, g.weights, g.kv, g.engine, g.ep, g.dp_attention,
            g.gpu_memory_utilization, g.int4_group_size, c.replicas)  # fmt: skip


def _load_results(items: list[PercentileCase]) -> list[tuple[LoadResult, int]]:
    """The queueing model at each case's load, vectorised: (LoadResult, candidate index) per case.

    One candidate per distinct (deployment, lengths, load); closed loops solved together
    (:func:`advisor.perf.model.closed_loop.closed_loop_load`), Poisson rows in one call.
    """
    keys = [
        (_deployment(pc.case), pc.case.isl, pc.case.osl, pc.isl_cv, pc.closed_loop, pc.load)
        for pc in items
    ]
    first: dict[tuple, int] = {}
    for i, k in enumerate(keys):
        first.setdefault(k, i)
    out: dict[tuple, tuple[LoadResult, int]] = {}
    for closed in (True, False):
        uniq = [k for k in first if k[4] == closed]
        if not uniq:
            continue
        sel = [items[first[k]] for k in uniq]
        r = build_replicas([pc.case.config for pc in sel])
        isl = np.array([pc.case.isl for pc in sel], dtype=float)
        osl = np.array([pc.case.osl for pc in sel], dtype=float)
        cv = np.array([pc.isl_cv for pc in sel], dtype=float)
        load = np.array([pc.load for pc in sel], dtype=float)
        # a random dataset's lengths are uniform (client_draws.length_cv): its E2E tail stops
        # at the longest answer, where a gamma's would run on
        kw = dict(isl_tokens=isl, isl_cv=cv, osl_cv=cv, with_itl=True, length_dist="uniform")
        sm = service_for(r, isl, osl)
        if closed:

            def subset(_sm, rows, r=r, isl=isl, osl=osl):
                return service_for(r.take(rows), isl[rows], osl[rows])

            res = closed_loop_load(sm, load, osl, kw, subset=subset)[0]
        else:
            res = latency_under_load(sm, load, osl, **kw)
        out.update({k: (res, j) for j, k in enumerate(uniq)})
    return [out[k] for k in keys]


@dataclass(frozen=True)
class PercentilePrediction:
    """Measured against predicted for one percentile row (predicted inf when unstable)."""

    pc: PercentileCase
    predicted_s: float
    utilisation: float
    stable: bool
    #: an E2E row's TTFT at the same quantile (its range is composed of the two parts:
    #: intervals.e2e_from_parts); NaN for the other metrics
    ttft_s: float = math.nan

    @property
    def level(self) -> str:
        return utilisation_level(self.utilisation, self.stable)

    @property
    def error(self) -> float:
        """Signed relative error predicted / measured - 1 (inf when predicted unstable)."""
        return self.predicted_s / self.pc.measured_s - 1.0


def predict_percentiles(
    items: list[PercentileCase], replay: bool = True
) -> list[PercentilePrediction]:
    """The model's percentile for each case at the case's load (inf where predicted unstable).

    ``replay=False``: every row from the queueing model, what ``estimate`` prints for a steady
    service (``percentile_report(steady=True)``, to see the two side by side).

    A row whose run the replay reproduces (``_run_key``) takes the quantile of its replayed
    run, start-up rounds and an overloaded run's backlog included (a finite run ends, so it is
    never "unstable"); the others the queueing model's, with the start-up wave's where it holds
    the quantile (``_first_wave_quantile_s``).
    """
    replayed = _replayed_runs(items) if replay else {}
    out = []
    for pc, (res, j) in zip(items, _load_results(items), strict=True):
        stats = {"ttft": res.ttft, "tpot": res.tpot, "itl": res.itl, "e2e": res.e2e}[pc.metric]
        stable = bool(res.stable[j])
        pred = float(stats.quantile_s(pc.quantile)[j]) if stable else math.inf
        run = replayed.get(_run_key(pc))
        # the TTFT at the same quantile: a TTFT row's prediction, an E2E row's range's first part
        ttft = math.nan
        if run is not None:
            pred = replayed_quantile_s(run, pc.metric, pc.quantile)
            if pc.metric == "e2e":
                ttft = replayed_quantile_s(run, "ttft", pc.quantile)
            stable = True  # a finite run ends: its backlog is in its samples
        elif stable and pc.metric in ("ttft", "e2e"):
            ttft = max(float(res.ttft.quantile_s(pc.quantile)[j]), _first_wave_quantile_s(pc))
            if pc.metric == "ttft":
                pred = ttft
        out.append(PercentilePrediction(pc, pred, float(res.utilisation[j]), stable,
                                        ttft if pc.metric == "e2e" else math.nan))  # fmt: skip
    return out


def replayed_quantile_s(run: RunSamples, metric: str, quantile: float) -> float:
    """Quantile of a replayed run's TTFT, TPOT, E2E (over its requests) or ITL (over every token
    gap of every answer, ``bench_run.gap_statistic``), as the benchmark client computes it."""
    statistic = f"p{100.0 * quantile:g}"
    if metric == "itl":
        return gap_statistic(run.gap_s, run.gap_count, statistic)
    return run_statistic(getattr(run, f"{metric}_s"), statistic)


def _run_key(pc: PercentileCase) -> tuple | None:
    """The replayed run a row reads (rows of one run share it), or None: a closed-loop TTFT row
    of a run the replay can draw (``bench_run.replayable``); a TTFT, TPOT or E2E row of a
    closed-loop run whose requests' lengths are the client's own (``client_draws.client_lengths``:
    every request's output length is known, so its TPOT and E2E are too); and one of a
    request-rate run whose send times are the client's own too (``client_draws.client_arrivals``),
    on one replica. An ITL row of such a run reads the replay's token gaps (every iteration's
    length, once per answer that got a token at its end: a prefill that stalls 99 decoding
    answers is 99 long gaps); ITL rows of other runs keep the queueing model's mixture."""
    c = pc.case
    notes = c.row.get("notes", "") or ""
    if pc.metric == "itl" and pc.closed_loop and client_lengths(notes) is None:
        return None  # a seeded stand-in draw would set the gaps' tail, not the client's prompts
    if pc.closed_loop:
        ok = client_lengths(notes) is not None or (pc.metric == "ttft" and replayable(c))
    else:
        ok = c.replicas == 1 and client_arrivals(notes, float(c.qps)) is not None
    if not ok:
        return None
    return (_deployment(c), c.isl, c.osl, c.batch, c.qps, pc.closed_loop, c.requests,
            c.prefill_budget_tokens, pc.isl_cv)  # fmt: skip


def _replayed_runs(items: list[PercentileCase]) -> dict[tuple, RunSamples]:
    """Every distinct replayed run among ``items``: its per-request TTFT, TPOT and E2E samples
    and its token gaps."""
    runs: dict[tuple, Case] = {}
    for pc in items:
        key = _run_key(pc)
        if key is not None:
            runs.setdefault(key, pc.case)
    samples = replay_runs(list(runs.values()))
    return {key: s for key, s in zip(runs, samples, strict=True)}


def _first_wave_quantile_s(pc: PercentileCase) -> float:
    """The TTFT quantile a closed-loop run's start-up wave sets, or 0 when it cannot set it.

    A run of R requests whose first n = concurrency leave at once (``predict.first_wave_ttfts_s``)
    has n / R of its TTFTs in the wave. When that share is at least the tail 1 - q and the wave
    lies above the steady state, the q quantile is the wave's own at level 1 - (1 - q) R / n
    (the steady state then contributes nothing above it); the caller keeps the larger of this
    and the steady-state quantile.
    """
    from advisor.perf.model.predict import first_wave_iteration, first_wave_ttfts_s
    from advisor.perf.model.replica import build_replicas

    c = pc.case
    n, runs = float(c.batch), float(c.requests)
    if not pc.closed_loop or n <= 1 or runs <= n or n / runs < 1.0 - pc.quantile - 1e-9:
        return 0.0
    iteration, m, delay = first_wave_iteration(
        build_replicas([c.config]),
        np.array([c.isl]),
        np.array([n]),
        np.array([c.prefill_budget_tokens]),
    )
    wave = first_wave_ttfts_s(float(iteration[0]), float(m[0]), n) + float(delay[0])
    level = max(1.0 - (1.0 - pc.quantile) * runs / n, 0.0)
    return float(wave[min(int(math.ceil(level * n)) - 1 if level > 0 else 0, wave.size - 1)])


#: The metrics an SLA is stated in (scenario.SLA): the headline table pools these.
SLA_METRICS = ("ttft", "tpot", "e2e")


def summarise_percentiles(preds: list[PercentilePrediction]) -> dict[str, dict[str, dict]]:
    """Error tables: ``headline`` per percentile and load level ("P99 high") pooled over the SLA
    metrics (TTFT, TPOT, E2E); ``by_metric`` per metric, percentile and level ("TTFT P99 high"),
    ITL included (the model's inter-token gap; no SLA is stated in ITL).

    Every prediction counts (an unstable one as a failure, 100 % |error|).
    """
    head: dict[str, list[float]] = {}
    per: dict[str, list[float]] = {}
    order = sorted(
        preds, key=lambda p: (METRICS.index(p.pc.metric), p.pc.quantile, LEVELS.index(p.level))
    )
    for p in sorted(order, key=lambda p: (p.pc.quantile, LEVELS.index(p.level))):
        if p.pc.metric in SLA_METRICS:
            head.setdefault(f"{LABEL_OF[p.pc.quantile]} {p.level}", []).append(p.error)
    for p in order:
        key = f"{p.pc.metric.upper()} {LABEL_OF[p.pc.quantile]} {p.level}"
        per.setdefault(key, []).append(p.error)
    return {
        "headline": {k: error_stats(v) for k, v in head.items()},
        "by_metric": {k: error_stats(v) for k, v in per.items()},
    }


def tail_ratios(preds: list[PercentilePrediction]) -> list[dict]:
    """P99 / P50, predicted and measured, for each (source, deployment, load, metric) with both.

    The ratio's error (predicted ratio / measured ratio - 1) does not depend on how well the
    mean is calibrated: it checks the shape of the tail.
    """
    by: dict[tuple, dict[float, PercentilePrediction]] = {}
    for p in preds:
        c = p.pc.case
        key = (source_key(p.pc.source), _deployment(c), c.isl, c.osl, p.pc.closed_loop,
               p.pc.load, p.pc.metric)  # fmt: skip
        by.setdefault(key, {})[p.pc.quantile] = p
    out = []
    for key, qs in by.items():
        if 0.5 not in qs or 0.99 not in qs:
            continue
        lo, hi = qs[0.5], qs[0.99]
        meas = hi.pc.measured_s / lo.pc.measured_s
        with np.errstate(divide="ignore", invalid="ignore"):
            pred = hi.predicted_s / lo.predicted_s if math.isfinite(lo.predicted_s) else math.inf
        out.append(
            {
                "ids": f"{lo.pc.id}/{hi.pc.id}", "metric": key[-1], "level": hi.level,
                "gpu": key[1][1], "load": ("N=" if key[4] else "R=") + f"{key[5]:g}",
                "measured_ratio": meas, "predicted_ratio": pred,
                "error": pred / meas - 1.0 if math.isfinite(pred) else math.inf,
            }
        )  # fmt: skip
    return out


#: Percentile -> the statistic of the range a prediction of it carries (intervals.STATISTICS).
TAIL_STATISTIC = {0.5: "median", 0.9: "p90", 0.99: "p99"}
#: The prediction kind of advisor/perf/model/intervals.py whose range a percentile row's metric
#: carries in the answers (an ITL tail is ranged by the held-out ITL tails where there are
#: enough, else as a TPOT: intervals._any_kind).
RANGE_KIND = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2e": "e2e"}


#: The two ranges an answer shows beside a predicted percentile (``range_coverage``).
RANGES = ("benchmark", "steady")


def range_coverage(
    preds: list[PercentilePrediction], confidence: float = 0.8, ranges: str = "benchmark"
) -> dict[str, dict]:
    """Share of published percentiles inside a range an answer shows beside its prediction.

    ``ranges`` "benchmark": the range ``estimate`` prints beside each percentile and the app,
    the PDF and ``recommend`` name "a benchmark run's published P99": the prediction x the
    interval factors of its kind, engine, accelerator family, model class, load regime and
    statistic (``intervals.range_factors``: a P90/P99 from the held-out percentile rows where
    there are enough, else from mean and median rows; an E2E from its TTFT and TPOT parts).
    "steady": the steady-service range an SLA verdict reads (``search/sla.py``, the factors of
    ``intervals.factors_for``: mean and median rows of the kind at the load regime, no ITL).
    Each is scored against the published percentile itself, built without the row's source (as
    for a new deployment): the tail's own error (its shape) is in it too. A row predicted
    unstable is outside. Keys "P50", "P99" (all metrics) and "P99 TTFT"-style per metric: rows
    and inside_pct.
    """
    if ranges not in RANGES:
        raise ValueError(f"ranges {ranges!r}; allowed: {', '.join(RANGES)}")
    from advisor.perf.model.intervals import (
        e2e_range,
        is_calibrated,
        load_regime,
        range_factors,
    )

    inside: dict[str, list[bool]] = {}
    steady = ranges == "steady"
    for p in preds:
        c = p.pc.case
        if steady and p.pc.metric == "itl":
            continue  # no SLA is stated in ITL: the verdict ranges none
        fam_ok, eng_ok = is_calibrated(c.config.engine, c.config.gpu.family)
        kw = dict(
            family_calibrated=fam_ok, engine_calibrated=eng_ok, moe=c.config.model.is_moe,
            attention_dp=False if steady else c.config.dp_attention,
            regime=load_regime(p.utilisation if p.stable else math.inf),
            statistic="mean" if steady else run_statistic_of_tail(
                TAIL_STATISTIC.get(p.pc.quantile, "mean"), float(c.requests)
            ),
            exclude_source=source_key(p.pc.source),
        )  # fmt: skip
        if not steady and p.pc.metric == "e2e" and math.isfinite(p.ttft_s) and p.stable:
            (lo, hi), _ = e2e_range(c.config.engine, c.config.gpu.family, confidence,
                                    p.ttft_s, p.predicted_s, **kw)  # fmt: skip
        else:
            iv = range_factors(RANGE_KIND[p.pc.metric], c.config.engine, c.config.gpu.family,
                               confidence, **kw)  # fmt: skip
            lo, hi = iv.low * p.predicted_s, iv.high * p.predicted_s
        ok = p.stable and lo <= p.pc.measured_s <= hi
        label = LABEL_OF[p.pc.quantile]
        inside.setdefault(label, []).append(ok)
        inside.setdefault(f"{label} {p.pc.metric.upper()}", []).append(ok)
    return {
        k: {"rows": len(v), "inside_pct": 100.0 * sum(v) / len(v)}
        for k, v in sorted(inside.items())
    }


def _reason_key(reason: str) -> str:
    """Reasons grouped for counting: a load condition without its numbers and metric.

    >>> _reason_key("condition 'max (all 800 prompts at once)' for ttft_ms_median not modelled")
    "condition 'max (all N prompts at once)' not modelled"
    """
    if reason.startswith("condition "):
        return re.sub(r"\d+", "N", reason.split(" for ")[0]) + " not modelled"
    return reason


def percentile_report(rows: list[dict] | None = None, steady: bool = False) -> dict:
    """The percentile check: counts, errors per percentile and load level, tail ratios, rows.
    ``steady``: no row from a replayed run (``predict_percentiles(replay=False)``)."""
    items, skipped = percentile_cases(rows)
    preds = predict_percentiles(items, replay=not steady)
    ratios = tail_ratios(preds)
    by_metric: dict[str, list[float]] = {}
    for t in ratios:
        by_metric.setdefault(t["metric"].upper(), []).append(t["error"])
    return {
        "rows_total": len(items) + len(skipped),
        "rows_used": len(preds),
        "rows_skipped": len(skipped),
        "skipped_reasons": dict(Counter(_reason_key(s.reason) for s in skipped).most_common()),
        "by_percentile": summarise_percentiles(preds),
        "tail_ratio": {k: error_stats(v) for k, v in sorted(by_metric.items())},
        "tail_ratio_rows": ratios,
        "range_coverage": range_coverage(preds),
        "range_coverage_steady": range_coverage(preds, ranges="steady"),
        "failures": [
            {
                "id": p.pc.id,
                "metric": p.pc.metric,
                "gpu": p.pc.case.config.gpu.id,
                "reason": "predicted unstable (load above capacity)",
            }
            for p in preds
            if not p.stable
        ],  # fmt: skip
        "rows": [
            {
                "id": p.pc.id,
                "metric": p.pc.metric,
                "percentile": LABEL_OF[p.pc.quantile],
                "gpu": p.pc.case.config.gpu.id,
                "model": p.pc.case.config.model.id,
                "engine": p.pc.case.config.engine,
                "load": ("concurrency " if p.pc.closed_loop else "rate ") + f"{p.pc.load:g}",
                "isl": p.pc.case.isl,
                "osl": p.pc.case.osl,
                "length_cv": p.pc.isl_cv,
                "level": p.level,
                "utilisation": p.utilisation,
                "measured_ms": p.pc.measured_s * 1e3,
                "predicted_ms": p.predicted_s * 1e3,
                "error_pct": p.error * 100.0,
            }
            for p in preds
        ],  # fmt: skip
    }


def render_percentiles(rep: dict) -> list[str]:
    """Text lines of the percentile section (``advisor validate`` and bench/percentiles.py)."""
    lines = [
        "PERCENTILES (published median/P90/P99 TTFT, TPOT, ITL, E2E vs the queueing model's "
        "percentiles at the row's load; ITL: the inter-token gap's):",
        f"  rows: {rep['rows_total']} percentile rows, {rep['rows_used']} predicted, "
        f"{rep['rows_skipped']} not representable",
        "  The engine constants were fitted to rows that include these runs' medians: P50/P99",
        "  errors are in sample for the mean; the P99/P50 ratio (tail shape) does not depend on",
        "  that fit.",
        f"  {'group':<18} {'rows':>5} {'median |err|':>13} {'p90 |err|':>10} {'bias':>8} "
        f"{'failures':>9}",
    ]
    for title, table in (
        ("SLA metrics (TTFT, TPOT, E2E) pooled:", rep["by_percentile"]["headline"]),
        ("per metric (ITL: plain steps and steps carrying a prefill, mixed):",
         rep["by_percentile"]["by_metric"]),
    ):  # fmt: skip
        lines.append(f"  {title}")
        for name, s in table.items():
            lines.append(
                f"  {name:<18} {s['rows']:>5} {s['median_ape_pct']:>12.1f}% "
                f"{s['p90_ape_pct']:>9.1f}% {s['bias_pct']:>+7.1f}% {s['failures']:>9}"
            )
    lines.append("  tail shape P99/P50, predicted ratio vs measured ratio:")
    for name, s in rep["tail_ratio"].items():
        lines.append(
            f"  {name + ' ratio':<18} {s['rows']:>5} {s['median_ape_pct']:>12.1f}% "
            f"{s['p90_ape_pct']:>9.1f}% {s['bias_pct']:>+7.1f}% {s['failures']:>9}"
        )
    cov, cov_s = rep["range_coverage"], rep.get("range_coverage_steady") or {}
    lines.append("  inside the 80% ranges an answer shows beside its predicted percentile:")
    lines.append(f"  {'':<18} {'rows':>5} {'benchmark':>12}   steady (rows: no ITL)")
    lines += [f"  {k:<18} {v['rows']:>5} {v['inside_pct']:>11.1f}%   "
              + (f"{cov_s[k]['inside_pct']:.1f}% ({cov_s[k]['rows']})" if k in cov_s else "-")
              for k, v in cov.items()]  # fmt: skip
    if rep["failures"]:
        lines.append(
            f"  predicted unstable (failures, counted as 100 % error): {len(rep['failures'])}"
        )
        lines += [f"    {f['id']} {f['metric']} {f['gpu']}" for f in rep["failures"]]
    lines.append("  not representable:")
    lines += [f"    {n:>3}  {reason}" for reason, n in rep["skipped_reasons"].items()]
    return lines

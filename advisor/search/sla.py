"""The SLA test at a stated confidence, for every target (TTFT, TPOT, E2E).

The verdict policy (docs/accuracy.md "The SLA verdict"): a deployment meets a P-th percentile
target T only when the upper end of the interval of that predicted percentile, at the
scenario's confidence c (``sla.confidence``, default 0.8), is within it:

    P_pred x high_c(kind, engine, accelerator family, model class, load regime) <= T

where ``high_c`` is the upper factor of advisor/perf/model/intervals.py: the leave-one-source-out
errors of mean and median predictions of that kind, for that engine, accelerator family and
model class, at the candidate's load regime (light, near saturation, overloaded: its
utilisation, ``intervals.load_regime``), wider where the family or engine is uncalibrated. So
an accelerator predicted from priors, or a deployment near saturation where the model's
queueing errs more, needs more headroom to win; a lightly loaded one is judged on the errors
of lightly loaded measurements. The verdict uses the mean/median errors, not the held-out
P99 rows: published P99 TTFTs carry benchmarks' start-up waves that a steady service does not
pay, and ranges built on them (shown beside each percentile by ``estimate``) would refuse
deployments the steady model and the published medians support. ``sla.confidence`` 0.5 puts
the verdict on the median error (about the point prediction).

Three verdicts (issue 38: with ranges up to 7x wide, "meets with confidence" alone refused every
deployment of questions a point prediction answers): **meets** (the upper end of every range
within its target), **at risk** (every point prediction within its target, some range's upper
end not: the answer names the target, the range and the measurement that narrows it),
**misses** (a point prediction misses, or the utilisation cap is broken). The search recommends
the cheapest deployment that meets; when none does, the cheapest at risk, flagged as such.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from advisor.catalog import get_accelerator
from advisor.perf.model.intervals import (
    LIGHT_BELOW,
    OVERLOADED_FROM,
    REGIMES,
    Interval,
    factors_for,
    is_wide,
    load_regime,
    measurement_advice,
)

#: A deployment's verdict against the SLA (module docstring).
MEETS, AT_RISK, MISSES = "meets", "at risk", "misses"
#: The search keeps a verdict per candidate as its index here (int8: tens of thousands of
#: candidates; strings cost ~6 ms a search).
VERDICTS = (MEETS, AT_RISK, MISSES)
CODE = {v: i for i, v in enumerate(VERDICTS)}

#: Stated target name -> (prediction kind of advisor/perf/model/intervals.py, SLA field).
TARGETS = (("TTFT", "ttft", "ttft_ms"), ("TPOT", "tpot", "tpot_ms"), ("E2E", "e2e", "e2e_ms"))


def intervals_by_gpu(
    sc, gpu_ids: Sequence[str], regime: str | None = None, names: Sequence[str] | None = None
) -> dict[str, dict[str, Interval]]:
    """gpu id -> target name -> Interval (factors) at the scenario's engine and confidence, at
    load ``regime`` (None: any load), for the target ``names`` (None: TTFT, TPOT and E2E)."""
    out = {}
    moe = sc.model_spec().is_moe
    for g in sorted(set(gpu_ids)):
        fam = get_accelerator(g).family
        out[g] = {
            name: factors_for(
                kind, sc.options.engine, fam, sc.sla.confidence, moe=moe, regime=regime
            )  # fmt: skip
            for name, kind, _ in TARGETS
            if names is None or name in names
        }
    return out


def sla_checks(
    sc, gpu_ids: Sequence[str], utilisation: np.ndarray | None = None
) -> list[tuple[str, float, np.ndarray]]:
    """(name, target ms, upper factor per candidate) for each stated target; a candidate meets
    the target when its predicted percentile x the factor is within the target.
    ``utilisation`` per candidate sets its load regime (None: any load)."""
    gpus = np.asarray(gpu_ids, dtype=str).reshape(-1)
    names = sorted(set(gpus.tolist()))
    code = {g: i for i, g in enumerate(names)}
    return sla_checks_coded(sc, names, np.array([code[g] for g in gpus.tolist()], dtype=int),
                            utilisation)  # fmt: skip


def sla_checks_coded(
    sc, gpu_names: Sequence[str], gpu_code: np.ndarray, utilisation: np.ndarray | None = None
) -> list[tuple[str, float, np.ndarray]]:
    """``sla_checks`` of candidates given as an index ``gpu_code`` into ``gpu_names`` (the
    search's tens of thousands of candidates on a handful of accelerators: no per-candidate
    strings, ~80 ms of a first search)."""
    # one interval per (accelerator, regime), spread over the candidates by index
    code = np.asarray(gpu_code, dtype=int).reshape(-1)
    regs: tuple[str | None, ...] = (None,) if utilisation is None else REGIMES
    reg = np.zeros(code.size, dtype=int) if utilisation is None else _regime_codes(utilisation)
    seen = np.bincount(reg, minlength=len(regs)) > 0  # only the regimes some candidate is in
    # only the stated targets: an E2E interval without E2E rows is the hull of two more (~1/2
    # of a fresh process's interval work when no E2E target is set)
    stated = [name for name, _, field in TARGETS if getattr(sc.sla, field) is not None]
    ivs = [intervals_by_gpu(sc, sorted(set(gpu_names)), r, stated) if seen[k] else None
           for k, r in enumerate(regs)]  # fmt: skip
    out = []
    for name, _, field in TARGETS:
        target = getattr(sc.sla, field)
        if target is None:
            continue
        high = np.array([[iv[g][name].high if iv else np.nan for iv in ivs] for g in gpu_names],
                        dtype=float)  # fmt: skip
        out.append((name, float(target), high[code, reg]))
    return out


def _regime_codes(utilisation: np.ndarray) -> np.ndarray:
    """Index into REGIMES of ``intervals.load_regime`` of many utilisations at once (the same
    thresholds).

    >>> _regime_codes(np.array([0.2, 0.5, 0.99, 1.0, np.inf, np.nan])).tolist()
    [0, 1, 1, 2, 2, 2]
    """
    u = np.asarray(utilisation, dtype=float).reshape(-1)
    out = np.where(u < LIGHT_BELOW, 0, 1)
    return np.where(~np.isfinite(u) | (u >= OVERLOADED_FROM), 2, out)


def percentile_intervals(
    sc, gpu: str, ttft_ms: float, tpot_ms: float, e2e_ms: float,
    utilisation: float | None = None, attention_dp: bool = False,
) -> dict:  # fmt: skip
    """The intervals of a deployment's predicted SLA percentiles (ms), at its load regime
    (``utilisation``; None: any load).

    ``ttft_ms``/``tpot_ms``/``e2e_ms``: the steady-service range the verdict reads (the factors
    of ``intervals_by_gpu``, as ``intervals.steady_percentile_ranges`` applies them for
    ``estimate``);
    ``benchmark``: the range of the same percentile as a benchmark run would publish it, from
    the held-out published percentiles of that statistic (``intervals.percentile_intervals``,
    what ``estimate`` prints beside each percentile: runs of more than 101 prompts, start-up
    waves included), with its ``basis``. Both are shown, each under its own name.
    """
    from advisor.perf.model.intervals import percentile_intervals as published_ranges

    regime = None if utilisation is None else load_regime(utilisation)
    iv = intervals_by_gpu(sc, [gpu], regime)[gpu]
    got = {"TTFT": ttft_ms, "TPOT": tpot_ms, "E2E": e2e_ms}
    fam, moe = get_accelerator(gpu).family, sc.model_spec().is_moe
    points = {f"{kind}_ms": got[name] for name, kind, _ in TARGETS}
    # the verdict's own factors (sla_checks reads the same intervals_by_gpu); ``estimate``
    # computes these ranges with intervals.steady_percentile_ranges, over the same factors_for
    steady = {f"{kind}_ms": iv[name].of(got[name]) for name, kind, _ in TARGETS}
    p = f"p{sc.sla.percentile}"
    finite = {k: {p: v} for k, v in points.items() if np.isfinite(v)}
    bench = published_ranges(
        {"engine": sc.options.engine, "percentiles": finite, "load_regime": regime,
         "attention_data_parallel": attention_dp},
        fam, sc.sla.confidence, moe=moe,
    )  # fmt: skip
    return {
        "confidence": sc.sla.confidence,
        "percentile": sc.sla.percentile,
        **steady,
        "calibrated": all(v.calibrated for v in iv.values()),
        "load_regime": regime,
        "wide": [
            f"P{sc.sla.percentile} {name}"
            for name, kind, _ in TARGETS
            if is_wide(got[name], *steady[f"{kind}_ms"])
        ],  # fmt: skip
        "basis": f"TTFT: {iv['TTFT'].basis}. TPOT: {iv['TPOT'].basis}. E2E: {iv['E2E'].basis}.",
        "benchmark": {
            **{k: bench[k][p] for k in finite if p in bench.get(k, {})},
            "basis": "; ".join(
                f"{k.split()[0].removesuffix('_ms').upper()}: {b}"
                for k, b in bench["basis"].items()
            ),
        },  # fmt: skip
    }


def confidence_note(sc) -> str:
    """The assumption behind "meets the SLA", for the recommendation's list of assumptions."""
    c = f"{sc.sla.confidence:.0%}"
    return (
        f"A target counts as met only when the upper end of the {c} steady-service range of the "
        f"predicted P{sc.sla.percentile} is within it: ranges from the out-of-sample "
        "(leave-one-source-out) errors of means and medians of that prediction kind for the "
        "engine and accelerator family at the deployment's load, among models of "
        "the same class (mixture-of-experts or dense), wider where either is uncalibrated "
        "(advisor/perf/model/intervals.py; sla.confidence). When none meets so, the cheapest "
        "deployment whose predictions meet every target is recommended, flagged at risk."
    )


def verdicts(ratio_high: np.ndarray, ratio_point: np.ndarray) -> np.ndarray:
    """The verdict per candidate (its index in VERDICTS) from its worst (upper end of the range
    / target) and worst (point prediction / target), each with the utilisation cap folded in
    (<= 1 is within).

    A point prediction past its target misses even where the range ends inside it: where the
    model runs high (the measured errors put the range below the prediction,
    ``intervals.side_of_range``) the range alone would call "meets" a deployment the Pareto
    chart draws past the SLA line (Llama-3.1-70B, 8 H100, 5 req/s: P99 TPOT 50.7 ms against
    50 ms, 2026-12-07).

    >>> [VERDICTS[v] for v in verdicts(np.array([0.9, 1.4, 1.4, 0.97]),
    ...                                np.array([0.5, 0.8, 1.1, 1.01]))]
    ['meets', 'at risk', 'misses', 'misses']
    """
    hi, pt = np.asarray(ratio_high, dtype=float), np.asarray(ratio_point, dtype=float)
    code = np.full(hi.shape, CODE[MISSES], dtype=np.int8)
    code[pt <= 1.0] = CODE[AT_RISK]
    code[(hi <= 1.0) & (pt <= 1.0)] = CODE[MEETS]
    return code


def risk_lines(sc, gpu: str, points_ms: dict[str, float], intervals: dict) -> list[str]:
    """Why a deployment is "at risk": each stated target its prediction meets while the upper
    end of the range passes it, with the range, then the measurement that would narrow it
    (the Calibrate page's); [] when no range reaches past its target.

    ``points_ms``: the predicted percentile by target name; ``intervals``: the deployment's
    ``percentile_intervals``.
    """
    pct, conf = sc.sla.percentile, f"{sc.sla.confidence:.0%}"
    out, names = [], []
    for name, kind, field in TARGETS:
        target = getattr(sc.sla, field)
        if target is None:
            continue
        lo, hi = intervals[f"{kind}_ms"]
        point = points_ms[name]
        if point <= target < hi:
            names.append(f"P{pct} {name}")
            out.append(
                f"P{pct} {name} {point:,.1f} ms meets {target:,g} ms on the prediction, but its "
                f"{conf} range {lo:,.1f}-{hi:,.1f} ms reaches past it"
            )
    if out:
        load = f"the scenario's load ({' and '.join(names)})"
        out.append(measurement_advice(sc.options.engine, gpu, load))
    return out


def risk_headline(sc, description: str, lines: list[str], over_budget: int = 0) -> str:
    """The headline of a recommendation "at risk" (every view shows it beside the deployment);
    ``over_budget``: deployments that meet with confidence but cost more than the budget cap.

    >>> from advisor.scenario import Scenario
    >>> risk_headline(Scenario(), "1 x TP=8", ["P99 TPOT 50.0 ms meets ..."])[:60]
    'At risk: no deployment meets P99 TTFT ≤ 2,000 ms, TPOT ≤ 50 '
    >>> risk_headline(Scenario(), "1 x TP=8", ["..."], 3)[:44]
    'At risk: no deployment within the budget mee'
    """
    within = " within the budget" if over_budget else ""
    beyond = f" ({over_budget:,} that meet it cost more than the budget cap)" if over_budget else ""
    return (
        f"At risk: no deployment{within} meets {sc.sla.describe()}{beyond}; the cheapest "
        f"whose predictions meet it is recommended ({description}): "
        + "; ".join(lines[:-1] or lines)
        + (f". {lines[-1]}." if len(lines) > 1 else ".")
    )

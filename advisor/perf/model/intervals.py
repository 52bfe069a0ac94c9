"""Prediction intervals from the model's out-of-sample errors.

An interval at confidence c for a prediction p of kind k (ttft, tpot, e2e, throughput) is

    [p x exp(q_lo), p x exp(q_hi)],   q = quantiles (1-c)/2 and (1+c)/2 of log(measured / predicted)

over the held-out rows of the leave-one-source-out cross-validation (``loso_rows`` of
data/crossval.yaml, written by python -m advisor crossval): each row is a published measurement predicted
by constants fitted without that row's source. Quantiles put the p-quantile at order statistic
p (n + 1) (Hyndman & Fan 1996 type 6, numpy's "weibull"), so the interval between them holds
a new draw from the same errors with probability c whatever n is: the k-th of n sorted values
lies below a new one with probability k / (n + 1). numpy's default (type 7, at (n - 1) p + 1)
spans only c (n - 1) / (n + 1) of it: 69% for an "80%" interval from 12 rows; held out, its
intervals held 77.6% of the measurements at 80% and 71.2% of the TTFTs (2026-12-01).

The rows are read from data/crossval_ranges.json (``load_table``; ``python -m advisor crossval``
writes it from data/crossval.yaml and data/crossval_percentiles.yaml), each with its load regime
(``load_regime``) and statistic. A steady (mean/median) prediction draws on mean and median rows
(the start-up-wave means of short closed loops stay out: no steady answer has that wave); a
P90/P99 on the held-out P90/P99 rows of its kind where they are enough (else the mean/median
rows, and the basis says so). Latency kinds then keep the rows of the query's load regime when
there are enough (``_select``).

Which rows: first those of the same architecture class (mixture-of-experts or dense, ``moe``
in ``loso_rows``), then, in that class, the first level of this hierarchy with at least
``MIN_ROWS`` rows of kind k from at least ``MIN_SOURCES`` sources (``source`` in ``loso_rows``):

1. the same engine on the same accelerator family,
2. the same accelerator family (any engine),
3. the same engine (any family),
4. all rows of kind k of the class.

Only when the class has too few rows (or sources) of kind k do the levels run over both
classes (ending at all rows of kind k), and the basis says so. Why the class first: the model's
MoE predictions miss by more than its dense ones (expert routing, grouped GEMMs, MLA), so one
pool over both gave MoE answers intervals too narrow to hold: held out, 69% of MoE measurements
fell inside their 80% interval against 81% of dense ones (2026-12-01, bench/intervals.py).

A deployment with attention data parallelism first looks among the held-out rows that ran that
layout (``attention_dp`` in ``loso_rows``), at the same levels and then all of them; only with
too few such rows (or sources) of kind k does it fall back to every layout, and says so.

A calibrated query (its family and its engine both have fitted constants) draws on the rows
marked ``calibrated`` (their family and engine were in the fit that predicted them).

Uncalibrated accelerator family or engine (no rows in the fit, constants are priors): the
interval is widened on both sides in log space by

    w = sqrt(w_family^2 + w_engine^2),  w_g = ln(1 + P90_g / 100) x z((1+c)/2) / z(0.95)

where P90_g is the 90th percentile absolute error of the leave-one-group-out cross-validation
for the prediction's metric families (data/crossval.yaml ``held_out``: group
``accelerator_family`` when present, else ``gpu``, for an uncalibrated family; ``engine`` for an
uncalibrated engine), read as the half-width of a two-sided 90% interval of a normal log error
and rescaled to confidence c by the normal quantile z. The two terms add in quadrature as
independent error sources. If at least ``MIN_ROWS`` rows of kind k are themselves marked
uncalibrated, the interval also covers their quantiles (hull). Source of the rule: issue 12
("wider where uncalibrated"); MI300X predictions from priors were found ~2x off (issue 12), which
the leave-one-GPU-out P90 (~35-50%) widens towards.

A row whose prediction failed (non-finite: an unstable queue, a zero throughput) stays in the
table, never dropped: beyond every finite row in the direction of the failure, it counts as the
worst finite miss of its kind that way (so a quantile among the failures is at least that wide).

E2E: from rows of kind e2e when a level above "all rows" has ``MIN_ROWS`` of them (E2E rows of
other engines and families say little: the all-rows level is then mostly one engine); otherwise
the TTFT and TPOT intervals combined,
``e2e = ttft + (osl - 1) x tpot`` at both ends (the errors assumed to move together: they share
the family and engine constants), and in the search the larger of the two upper factors.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from statistics import NormalDist

from advisor.catalog.loader import DATA_DIR

CROSSVAL_PATH = DATA_DIR / "crossval.yaml"
#: "itl": the held-out published P90/P99 inter-token gaps only (no mean ITL row is in the table:
#: a mean ITL is read as the TPOT); a statistic without enough of them is ranged as a TPOT.
KINDS = ("ttft", "tpot", "e2e", "throughput", "itl")
DEFAULT_CONFIDENCE = 0.8
CONFIDENCE_RANGE = (0.5, 0.99)
#: Fewest held-out rows a hierarchy level needs: with 10 rows the 10%/90% quantiles of an 80%
#: interval fall between the 1st/2nd and 9th/10th order statistics, not beyond the sample.
MIN_ROWS = 10
#: Fewest sources (repository + path, or page) a hierarchy level needs. Rows of one source share
#: its setup and its systematic miss, so one or two sources say little about the next
#: deployment, which is a new source. Scored that way (leave one source out, bench/intervals.py,
#: 2026-12-01), 80% ranges held 67.3% of the held-out measurements (E2E 63.4%) with levels of
#: any source count and 77.6% with this rule.
MIN_SOURCES = 3
#: A failed prediction with no finite row of its kind beyond it counts as this factor off.
FAILED_FACTOR = 100.0

#: Case kind (advisor/perf/validation/measurements.py) or its coarse kind (validate.COARSE_KIND) ->
#: (prediction kind, power): measured and predicted are the headline quantity raised to
#: ``power`` (batch-1 decode reported as tokens/s = 1 / TPOT changes the sign of the log ratio).
CASE_KINDS: dict[str, tuple[str, int]] = {
    "ttft_b1": ("ttft", 1),
    "load_ttft": ("ttft", 1),
    "conc_ttft": ("ttft", 1),
    "tpot_b1": ("tpot", 1),
    "itl_fit_intercept": ("tpot", 1),
    "load_itl": ("tpot", 1),
    "conc_tpot": ("tpot", 1),
    "load_e2e": ("e2e", 1),
    "conc_e2e": ("e2e", 1),
    "static_e2e": ("e2e", 1),
    "offline": ("throughput", 1),
    "static": ("throughput", 1),
    "conc_tput": ("throughput", 1),
    "load_tput": ("throughput", 1),
    **{k: (k, 1) for k in KINDS},
}
#: Below this a "decode_b1" value is the ITL-versus-context slope (s per context token, ~1e-7 to
#: 1e-5), not a headline number; up to 1 it is seconds per token (TPOT at batch 1 is 2-200 ms);
#: above 1 it is tokens/s (no batch-1 stream decodes slower than one token a second).
_SLOPE_BELOW, _SECONDS_UP_TO = 1e-4, 1.0


def _case_kind(kind: str, measured: float) -> tuple[str, int] | None:
    """(prediction kind, power) of a stored row; None for rows that are no headline number.

    The coarse kind "decode_b1" (bench/crossval.py) joins tokens/s, seconds per token and the
    ITL slope; their magnitudes tell them apart (see _SLOPE_BELOW).

    >>> _case_kind("decode_b1", 95.0), _case_kind("decode_b1", 0.012), _case_kind("decode_b1", 3e-7)
    (('tpot', -1), ('tpot', 1), None)
    """
    if kind == "decode_b1":
        if measured < _SLOPE_BELOW:
            return None
        return ("tpot", 1) if measured <= _SECONDS_UP_TO else ("tpot", -1)
    return CASE_KINDS.get(kind)


#: Metric families of the validation table (advisor/perf/validation/validate.FAMILIES) behind each kind:
#: whose leave-one-group-out P90 widens an uncalibrated interval.
KIND_FAMILIES: dict[str, tuple[str, ...]] = {
    "ttft": ("TTFT", "TTFT/ITL under load"),
    "tpot": ("batch-1 decode", "TTFT/ITL under load"),
    "e2e": ("TTFT", "batch-1 decode", "TTFT/ITL under load"),
    "throughput": ("offline throughput",),
    "itl": ("TTFT/ITL under load",),
}


@dataclass(frozen=True)
class ErrorRow:
    """One held-out prediction: log(measured / predicted) of a headline quantity."""

    id: str
    kind: str  # ttft | tpot | e2e | throughput
    engine: str
    accelerator_family: str
    calibrated: bool
    log_ratio: float
    attention_dp: bool = False
    moe: bool = False  # the model is a mixture of experts (its architecture class)
    source: str = ""  # measurements.source_key of the row's source; "" -> the row's own id
    #: Load regime of the row's deployment at its load (``load_regime``); "" when not recorded.
    regime: str = ""
    #: What the row reports: mean | median | wave-mean (a closed-loop mean that carries its
    #: start-up wave) | p90 | p99; "" when not recorded.
    statistic: str = ""

    def __post_init__(self) -> None:
        if not self.source:  # a row of unknown source counts as a source of its own
            object.__setattr__(self, "source", self.id)


@dataclass(frozen=True)
class ErrorTable:
    rows: tuple[ErrorRow, ...]
    #: (group, metric family) -> P90 absolute % error of leave-one-group-out cross-validation.
    p90_by_group: Mapping[tuple[str, str], float]


@dataclass(frozen=True)
class Interval:
    """Multiplicative bounds: the interval of a prediction p is [p x low, p x high]."""

    low: float
    high: float
    basis: str
    rows: int
    calibrated: bool
    #: Rows of the same engine and/or family (not the all-rows fallback, not an empty table).
    matched: bool = True

    def of(self, predicted: float) -> list[float]:
        return [predicted * self.low, predicted * self.high]


def check_confidence(confidence: float, field: str = "confidence") -> float:
    """``confidence`` if within CONFIDENCE_RANGE, else ValueError naming field, value and range."""
    lo, hi = CONFIDENCE_RANGE
    if not (isinstance(confidence, int | float) and lo <= confidence <= hi):
        raise ValueError(f"{field} {confidence!r} is outside {lo}..{hi}")
    return float(confidence)


def log_ratio(measured: float, predicted: float, power: int = 1) -> float:
    """log(measured / predicted) of the headline quantity; -inf/+inf for a failed prediction.

    >>> round(log_ratio(120.0, 100.0), 4)  # measured 20% above predicted: ln 1.2
    0.1823
    >>> round(log_ratio(50.0, 40.0, power=-1), 4)  # tok/s 25% above -> TPOT 20% below: ln 0.8
    -0.2231
    >>> log_ratio(0.5, math.inf), log_ratio(900.0, 0.0)  # predicted unstable; no throughput
    (-inf, inf)
    """
    if not math.isfinite(predicted) or predicted <= 0:
        # latency predicted unbounded (inf/nan) = too high; throughput predicted 0 = too low
        failed_high = not predicted <= 0
        return -math.inf * power if failed_high else math.inf * power
    return math.log(measured / predicted) * power


def _failures_at_the_extremes(rows: list[ErrorRow]) -> list[ErrorRow]:
    """Each failed row (+-inf) at the worst finite miss of its kind in its direction.

    Its error is larger than any finite one, so it sits beyond every finite row in the order;
    a quantile that falls among the failures reports the worst finite miss (the interval is at
    least that wide). No finite row that way: a factor of FAILED_FACTOR.
    """
    out = []
    for r in rows:
        if math.isfinite(r.log_ratio):
            out.append(r)
            continue
        same = [x.log_ratio for x in rows if x.kind == r.kind and math.isfinite(x.log_ratio)]
        if r.log_ratio < 0:
            worst = min([v for v in same if v < 0], default=-math.log(FAILED_FACTOR))
        else:
            worst = max([v for v in same if v > 0], default=math.log(FAILED_FACTOR))
        out.append(dataclasses.replace(r, log_ratio=worst))
    return out


def rows_from_doc(doc: Mapping) -> list[ErrorRow]:
    """ErrorRows from the ``loso_rows`` list of a crossval.yaml document (unknown kinds skipped:
    all-reduce and the ITL-vs-context slope are not headline numbers)."""
    out = []
    for r in doc.get("loso_rows") or []:
        kind = _case_kind(str(r["kind"]), float(r["measured"]))
        if kind is None:
            continue
        out.append(
            ErrorRow(
                id=str(r["id"]), kind=kind[0], engine=str(r["engine"]),
                accelerator_family=str(r["accelerator_family"]),
                calibrated=bool(r["calibrated"]),
                log_ratio=log_ratio(float(r["measured"]), float(r["predicted"]), kind[1]),
                attention_dp=r.get("attention_dp") is True, moe=r.get("moe") is True,
                source=str(r.get("source") or ""), regime=str(r.get("regime") or ""),
                statistic=str(r.get("statistic") or ""),
            )
        )  # fmt: skip
    return _failures_at_the_extremes(out)


def _p90s(doc: Mapping) -> dict[tuple[str, str], float]:
    out = {}
    for group, fams in (doc.get("held_out") or {}).items():
        for fam, stats in (fams or {}).items():
            p90 = float(stats.get("p90_ape_pct", "nan")) if isinstance(stats, Mapping) else 0
            # an infinite P90 (more than 10% failures) gives no spread; the others still do
            if math.isfinite(p90):
                out[(str(group), str(fam))] = p90
    return out


def table_from_doc(doc: Mapping) -> ErrorTable:
    return ErrorTable(rows=tuple(rows_from_doc(doc)), p90_by_group=_p90s(doc))


#: The columns of a row of data/crossval_ranges.json, in order.
COMPACT_COLUMNS = ("id", "kind", "engine", "accelerator_family", "calibrated", "log_ratio",
                   "attention_dp", "moe", "source", "regime", "statistic")  # fmt: skip


def _json_float(x: float) -> float | str:
    """A log ratio as JSON holds it: rounded to 1e-6 (0.0001% of a ratio), "inf"/"-inf" kept."""
    return round(x, 6) if math.isfinite(x) else ("inf" if x > 0 else "-inf")


def compact_doc(table: ErrorTable, generated_from: str) -> dict:
    """The error table as data/crossval_ranges.json holds it: only what the ranges read.

    One list per row (``COMPACT_COLUMNS``, sources by index into ``sources``), the P90s as
    [group, family, p90]. Read by ``load_table`` in a few ms, where yaml.safe_load of the
    445 KB data/crossval.yaml took 1.5-2.6 s of a fresh process's first ``recommend`` (issue 38).

    >>> t = ErrorTable((ErrorRow("A1", "ttft", "vllm", "hopper", True, 0.1, source="s"),), {})
    >>> d = compact_doc(t, "x"); d["rows"], d["sources"]
    ([['A1', 'ttft', 'vllm', 'hopper', 1, 0.1, 0, 0, 0, '', '']], ['s'])
    >>> table_from_compact(d) == t
    True
    """
    sources = sorted({r.source for r in table.rows})
    index = {s: i for i, s in enumerate(sources)}
    rows = [
        [r.id, r.kind, r.engine, r.accelerator_family, int(r.calibrated),
         _json_float(r.log_ratio), int(r.attention_dp), int(r.moe), index[r.source], r.regime,
         r.statistic]
        for r in table.rows
    ]  # fmt: skip
    p90 = [[g, f, v] for (g, f), v in sorted(table.p90_by_group.items())]
    return {"generated_from": generated_from, "columns": list(COMPACT_COLUMNS),
            "sources": sources, "rows": rows, "p90_by_group": p90}  # fmt: skip


def table_from_compact(doc: Mapping) -> ErrorTable:
    """The ErrorTable of a data/crossval_ranges.json document (``compact_doc``)."""
    if list(doc.get("columns") or []) != list(COMPACT_COLUMNS):
        raise ValueError(f"crossval_ranges columns {doc.get('columns')!r}; expected "
                         f"{list(COMPACT_COLUMNS)} (regenerate: python -m advisor crossval --ranges)")  # fmt: skip
    src = doc["sources"]
    # The frozen dataclass's __init__ sets each of the 11 fields through object.__setattr__:
    # 7 of the ~10 ms a fresh process's first search spent reading the ranges (1,781 rows).
    # The same rows filled in directly (its __post_init__: a row without a source is its own).
    new, cls = object.__new__, ErrorRow
    rows = []
    for i, k, e, f, c, lr, dp, m, s, reg, st in doc["rows"]:
        r = new(cls)
        r.__dict__.update(id=i, kind=k, engine=e, accelerator_family=f, calibrated=bool(c),
                          log_ratio=float(lr), attention_dp=bool(dp), moe=bool(m),
                          source=src[s] or i, regime=reg, statistic=st)  # fmt: skip
        rows.append(r)
    return ErrorTable(tuple(rows), {(g, f): float(v) for g, f, v in doc.get("p90_by_group") or []})


#: The compact table the answers read (python -m advisor crossval writes it from
#: data/crossval.yaml, which stays the full, human-readable report).
RANGES_PATH = DATA_DIR / "crossval_ranges.json"


@cache
def load_table(path: Path = RANGES_PATH) -> ErrorTable:
    """The error table: data/crossval_ranges.json (or a crossval.yaml given as ``path``), read
    on first use; empty when the file or its rows are absent."""
    if not path.exists():
        return ErrorTable((), {})
    if path.suffix == ".json":
        import json

        return table_from_compact(json.loads(path.read_text(encoding="utf-8")))
    from advisor.catalog.files import load_data_yaml

    doc = load_data_yaml(path.read_text(encoding="utf-8")) or {}
    return table_from_doc(doc if isinstance(doc, dict) else {})


#: Relative distance past an end of a range below which an estimate still counts as inside it.
SIDE_TOLERANCE = 0.01


def side_of_range(point: float, low: float, high: float) -> str:
    """Where an estimate sits against its own range: "" inside, else which way the model errs.

    The range is the estimate times the measured / predicted quantiles of its kind, so when
    even the upper quantile is below 1 the measurements of that kind came in under the model
    (it runs high there), and the other way round; saying so keeps a range that excludes its
    own estimate from reading as a mistake. Within ``SIDE_TOLERANCE`` (1%) of an end counts as
    inside: a quantile at ratio 1.0 puts an end on the estimate itself.

    >>> side_of_range(11.9, 9.6, 11.7), side_of_range(10.0, 9.6, 11.7), side_of_range(5, 6, 9)
    ('runs high', '', 'runs low')
    >>> side_of_range(3094, 2083, 3093)  # 0.03% past the end: inside
    ''
    """
    if point > high * (1.0 + SIDE_TOLERANCE):
        return "runs high"
    if point < low * (1.0 - SIDE_TOLERANCE):
        return "runs low"
    return ""


def range_note(point: float, low: float, high: float) -> str:
    """The suffix a printed range carries when it excludes its estimate: "; the model runs high
    here" (or low), else "".

    >>> range_note(34.3, 27.7, 33.8), range_note(30.0, 27.7, 33.8)
    ('; the model runs high here', '')
    """
    side = side_of_range(point, low, high)
    return f"; the model {side} here" if side else ""


def quantile_bounds(log_ratios: Iterable[float], confidence: float) -> tuple[float, float]:
    """Empirical quantiles (1-c)/2 and (1+c)/2 of log(measured / predicted), as factors.

    At order statistic p (n + 1) (type 6, module docstring), clamped to the extremes.

    >>> lo, hi = quantile_bounds([math.log(x) for x in (0.8, 1.0, 1.25)], 0.5)
    >>> round(lo, 4), round(hi, 4)  # quartiles of 3 values: order statistics 1 and 3 (p x 4)
    (0.8, 1.25)
    >>> lo, hi = quantile_bounds([math.log(x) for x in (0.8, 0.9, 1.0, 1.1, 1.25)], 0.5)
    >>> round(lo, 4), round(hi, 4)  # of 5: statistics 1.5 and 4.5, halfway in logs
    (0.8485, 1.1726)
    """
    x = sorted(float(v) for v in log_ratios)
    return math.exp(_weibull(x, (1 - confidence) / 2)), math.exp(_weibull(x, (1 + confidence) / 2))


def _weibull(x: list[float], p: float) -> float:
    """Quantile p of sorted ``x`` at order statistic p (n + 1), interpolated, clamped to the
    extremes (numpy's method="weibull", without its import of numpy.ma: ~60 ms of a fresh
    process's first answer).

    >>> _weibull([1.0, 2.0, 3.0, 4.0], 0.5), _weibull([1.0, 2.0], 0.1), _weibull([5.0], 0.9)
    (2.5, 1.0, 5.0)
    """
    h = min(max(p * (len(x) + 1), 1.0), float(len(x)))
    k = int(math.floor(h))
    if k >= len(x):
        return x[-1]
    lo, hi = x[k - 1], x[k]
    if h == k or lo == hi:
        return lo
    return lo + (h - k) * (hi - lo)


def uncalibrated_widening(
    table: ErrorTable, kind: str, confidence: float, family_ok: bool, engine_ok: bool
) -> tuple[float, str]:
    """Log-space half-width w added on both sides of an uncalibrated interval (module docstring).

    >>> t = ErrorTable((), {("gpu", "offline throughput"): 35.0})
    >>> w, _ = uncalibrated_widening(t, "throughput", 0.9, family_ok=False, engine_ok=True)
    >>> round(w, 4)  # ln(1.35) at c = 0.9: z ratio 1
    0.3001
    """
    z = NormalDist().inv_cdf((1 + confidence) / 2) / NormalDist().inv_cdf(0.95)
    groups = []
    if not family_ok:
        fam_group = (
            "accelerator_family"
            if any(g == "accelerator_family" for g, _ in table.p90_by_group)
            else "gpu"
        )
        groups.append(fam_group)
    if not engine_ok:
        groups.append("engine")
    parts, why = [], []
    for g in groups:
        p90 = [table.p90_by_group.get((g, f)) for f in KIND_FAMILIES[kind]]
        p90 = [v for v in p90 if v is not None]
        if not p90:
            continue
        parts.append(math.log1p(max(p90) / 100) * z)
        why.append(f"leave-one-{g.replace('_', '-')}-out P90 {max(p90):.0f}%")
    return math.sqrt(sum(p * p for p in parts)), ", ".join(why)


ALL_ROWS = "all engines and accelerators"

#: Load regimes, by the utilisation u = offered request rate / the deployment's capacity (the
#: queueing model's, ``physics.queueing.model.latency_under_load``; for a closed loop of N clients
#: its throughput / capacity, or N / the KV slots when N is larger).
REGIMES = ("light", "near saturation", "overloaded")
#: Below this utilisation a request rarely waits for another's prefill: "light".
LIGHT_BELOW = 0.5
#: At or above this the offered load exceeds what the deployment serves (a queue grows for
#: the run's length; offline runs and closed loops with more clients than KV slots): "overloaded".
OVERLOADED_FROM = 1.0


def load_regime(utilisation: float) -> str:
    """The load regime of a prediction at utilisation u: light (u < 0.5), near saturation
    (0.5 <= u < 1) or overloaded (u >= 1, or not finite: no steady state).

    Why these: the model's errors differ by regime. At light load a latency is the step
    and the prefill, which batch-1 rows check; near saturation the queueing waits (the tail's
    shape, the running batch's fixed point) dominate and the model's spread doubles; overloaded
    runs are finite backlogs (the run's length sets them).

    >>> load_regime(0.2), load_regime(0.5), load_regime(0.95), load_regime(1.4), load_regime(math.inf)
    ('light', 'near saturation', 'near saturation', 'overloaded', 'overloaded')
    """
    if not math.isfinite(utilisation) or utilisation >= OVERLOADED_FROM:
        return "overloaded"
    return "light" if utilisation < LIGHT_BELOW else "near saturation"


#: Statistics a range can be asked for: a steady mean (the model's point predictions), or a
#: percentile (median, P90, P99) checked against held-out rows of that statistic. A "-short"
#: tail is the same percentile of a run so short that it reads at most two requests (a P99 of
#: at most 101 prompts: ``perf.validation.short_runs``): one slow request sets it (a cold
#: first request that compiles kernels stood 38-48 s above the median of a 60 ms one), so its
#: rows range only runs that short, and a run of the benchmark clients' default 1,000 prompts is
#: ranged by the longer runs' rows.
STATISTICS = ("mean", "median", "p90", "p99", "wave-mean", "p90-short", "p99-short")
#: How a basis names each statistic's rows.
STATISTIC_NAME = {
    "median": "median", "wave-mean": "start-up-wave mean", "p90": "P90", "p99": "P99",
    "p90-short": "short-run P90", "p99-short": "short-run P99",
}  # fmt: skip


def _enough(rows: list[ErrorRow]) -> bool:
    """A level speaks for a new deployment: MIN_ROWS rows from MIN_SOURCES sources or more."""
    return len(rows) >= MIN_ROWS and len({r.source for r in rows}) >= MIN_SOURCES


def _select(
    fitted: list[ErrorRow], engine: str, family: str, attention_dp: bool = False,
    moe: bool | None = None, regime: str | None = None,
) -> tuple[str, list[float], bool]:  # fmt: skip
    """The first level of the hierarchy that is ``_enough`` (else all rows): label, log ratios,
    and whether that level is of the engine and/or family (not all rows of the pool).

    ``attention_dp``: the rows of that layout first (the same levels, then all of them).
    ``moe``: the rows of that architecture class first (MoE when True, dense when False; both
    when None), with every level inside the class; too few of them: both classes.
    ``regime``: inside the class, the rows of that load regime (``load_regime``) first; too
    few of them: every regime (rows without a recorded regime count in no regime).
    """
    few = f"fewer than {MIN_ROWS} rows or {MIN_SOURCES} sources"
    if attention_dp:
        dp_rows = [r for r in fitted if r.attention_dp]
        if _enough(dp_rows):
            label, chosen, specific = _select(dp_rows, engine, family, moe=moe, regime=regime)
            return f"attention-DP deployments: {label}", chosen, specific
        label, chosen, specific = _select(fitted, engine, family, moe=moe, regime=regime)
        return f"{label}; {few} of held-out attention-DP deployments, any layout", chosen, specific
    if moe is not None:
        same = [r for r in fitted if r.moe == moe]
        cls = "MoE" if moe else "dense"
        if _enough(same):
            label, chosen, specific = _select(same, engine, family, regime=regime)
            return f"{cls} models: {label}", chosen, specific
        label, chosen, specific = _select(fitted, engine, family, regime=regime)
        return f"{label}; {few} of held-out {cls}-model rows, both classes", chosen, specific
    if regime:
        at = [r for r in fitted if r.regime == regime]
        if _enough(at):
            label, chosen, specific = _select(at, engine, family)
            return f"{regime} load, {label}", chosen, specific
        label, chosen, specific = _select(fitted, engine, family)
        return f"{label}; {few} at {regime} load, any load", chosen, specific
    levels = (
        (f"{engine} on {family}", lambda r: r.engine == engine and r.accelerator_family == family),
        (f"{family}, any engine", lambda r: r.accelerator_family == family),
        (f"{engine}, any accelerator", lambda r: r.engine == engine),
    )
    for label, keep in levels:
        chosen = [r for r in fitted if keep(r)]
        if _enough(chosen):
            return label, [r.log_ratio for r in chosen], True
    return ALL_ROWS, [r.log_ratio for r in fitted], False


def interval_factors(
    kind: str,
    engine: str,
    family: str,
    confidence: float = DEFAULT_CONFIDENCE,
    *,
    family_calibrated: bool = True,
    engine_calibrated: bool = True,
    table: ErrorTable | None = None,
    exclude_id: str | None = None,
    attention_dp: bool = False,
    moe: bool | None = None,
    exclude_source: str | None = None,
    regime: str | None = None,
    statistic: str = "mean",
) -> Interval:
    """Multiplicative interval for a ``kind`` prediction of ``engine`` on accelerator ``family``.

    ``exclude_id`` leaves one row out, ``exclude_source`` every row of one source (the coverage
    check scores each row by an interval built without it, or without its source). No rows of
    the kind: [1, 1] (widened if uncalibrated) with a basis saying so.
    ``attention_dp``: the prediction is for that layout; ``moe``: for a mixture-of-experts
    (True) or dense (False) model, None for a pool over both (``_select``); ``regime``: the
    load regime of the prediction (``load_regime``), None for any.
    ``statistic``: "mean" (a steady mean: rows of means and medians; the means of short
    closed-loop runs that carry a start-up wave, which no steady prediction has, are their own
    family and stay out) or "median"/"p90"/"p99" (a predicted percentile: the held-out rows of
    that statistic when there are enough, else the mean/median rows, and the basis says so;
    likewise when the statistic's rows at ``regime`` are too few and the mean/median rows there
    are enough: the regime moves a percentile's errors more than the statistic does), or
    "wave-mean" (the mean of a finite closed-loop run with its start-up wave, which only a
    benchmark forecast predicts: ``perf.validation.bench_forecast``; those rows, likewise), or
    "p90-short"/"p99-short" (that tail of a run of at most ~101 prompts, which one slow request
    sets: the rows of runs that short; a "p90"/"p99" reads the longer runs' rows only).
    A P50 ranged by the means' errors held 65.3% of 219 published P50s at 80% (TTFT 58.9%: a
    median TTFT misses more than a mean); by the medians' own, 70.3% (bench/percentiles.py,
    2026-12-03 table).
    """
    if kind not in KINDS:
        raise ValueError(f"kind {kind!r}; allowed: {', '.join(KINDS)}")
    if statistic not in STATISTICS:
        raise ValueError(f"statistic {statistic!r}; allowed: {', '.join(STATISTICS)}")
    check_confidence(confidence)
    table = load_table() if table is None else table
    calibrated = family_calibrated and engine_calibrated
    if exclude_id is None and exclude_source is None:
        pool = _of_kind(table, kind)
    else:
        pool = [r for r in table.rows
                if r.kind == kind and r.id != exclude_id and r.source != exclude_source]  # fmt: skip
    steady = [r for r in pool if r.statistic in ("", "mean", "median")]
    what, note = kind, ""
    if statistic != "mean":
        own = [r for r in pool if r.statistic == statistic]
        name = STATISTIC_NAME[statistic]

        def at_regime(rows: list[ErrorRow]) -> bool:  # as _select reaches the regime level
            same = [r for r in rows if moe is None or r.moe == moe]
            return _enough([r for r in (same if _enough(same) else rows) if r.regime == regime])

        # the load regime moves a percentile's errors more than the statistic does (an
        # overloaded run's median TTFT 17-38x off, a light one's within 2x): the regime's
        # mean/median rows. Not a start-up-wave mean nor a short run's tail: no steady row
        # carries the wave or the one slow request.
        if (statistic not in ("wave-mean", "p90-short", "p99-short") and _enough(own)
                and regime and not at_regime(own) and at_regime(steady)):  # fmt: skip
            pool = steady
            note = f"; too few held-out {name} rows at {regime} load: mean/median rows"
        elif _enough(own):
            pool, what = own, f"{name} {kind}"
        else:
            pool = steady
            note = f"; {len(own)} held-out {name} rows, too few: mean/median rows"
    else:
        pool = steady
    fitted = [r for r in pool if r.calibrated] or pool
    # Throughput's errors do not split by regime usefully: offline rows are "overloaded" and
    # come from a few large sources, so a regime level there held 64.7% of the held-out
    # throughputs at 80% against 73.2% without (bench/intervals.py, 2026-12-03).
    regime = None if kind == "throughput" else regime
    label, chosen, specific = _select(fitted, engine, family, attention_dp, moe, regime)
    matched = bool(chosen) and specific
    if chosen:
        lo, hi = quantile_bounds(chosen, confidence)
        basis = f"{len(chosen)} held-out {what} rows ({label}){note}"
    else:
        lo, hi = 1.0, 1.0
        basis = f"no out-of-sample {kind} rows in data/crossval.yaml"
    if calibrated:
        return Interval(lo, hi, basis, len(chosen), True, matched)
    w, why = uncalibrated_widening(table, kind, confidence, family_calibrated, engine_calibrated)
    lo, hi = lo * math.exp(-w), hi * math.exp(w)
    what = " and ".join(
        x
        for x, ok in (
            (f"{family} family", family_calibrated),
            (f"engine {engine}", engine_calibrated),
        )
        if not ok
    )
    basis += f"; widened for the uncalibrated {what} ({why or 'no cross-validation spread'})"
    own = [r.log_ratio for r in pool if not r.calibrated and (moe is None or r.moe == moe)]
    if len(own) >= MIN_ROWS:
        olo, ohi = quantile_bounds(own, confidence)
        lo, hi = min(lo, olo), max(hi, ohi)
        basis += f"; covers {len(own)} held-out rows predicted uncalibrated"
    return Interval(lo, hi, basis, len(chosen), False, matched)


def _of_kind(table: ErrorTable, kind: str) -> list[ErrorRow]:
    """The rows of ``kind`` (a copy), filtered once per table (the first search asks for each
    kind a dozen times: ~1/3 of its interval time)."""
    key = (id(table), kind)
    if key not in _KIND_ROWS or _KIND_ROWS[key][0] is not table:
        if len(_KIND_ROWS) > 64:
            _KIND_ROWS.clear()
        _KIND_ROWS[key] = (table, [r for r in table.rows if r.kind == kind])
    return list(_KIND_ROWS[key][1])


_KIND_ROWS: dict[tuple, tuple[ErrorTable, list[ErrorRow]]] = {}


def is_calibrated(engine: str, family: str) -> tuple[bool, bool]:
    """(family has fitted constants, engine has fitted constants) in data/calibration.yaml."""
    from advisor.perf.model.profiles import engine_profile, family_efficiency

    return family_efficiency(family).fitted, engine_profile(engine).fitted


def factors_for(
    kind: str, engine: str, family: str, confidence: float = DEFAULT_CONFIDENCE,
    table: ErrorTable | None = None, moe: bool | None = None, regime: str | None = None,
    statistic: str = "mean",
) -> Interval:  # fmt: skip
    """``interval_factors`` with the calibration state read from data/calibration.yaml; kind e2e
    without e2e rows: the wider of the TTFT and TPOT factors at each end (an upper bound of the
    combination, for percentiles that cannot be split into TTFT and TPOT)."""
    fam_ok, eng_ok = is_calibrated(engine, family)
    t = load_table() if table is None else table
    # The search asks for the same few (kind, engine, family) once per deployment it reports.
    key = (id(t), kind, engine, family, confidence, fam_ok, eng_ok, moe, regime, statistic)
    if key in _MEMO:
        return _MEMO[key][1]
    if len(_MEMO) > 4096:
        _MEMO.clear()
    got = _any_kind(kind, engine, family, confidence, family_calibrated=fam_ok,
                    engine_calibrated=eng_ok, table=t, moe=moe, regime=regime,
                    statistic=statistic)  # fmt: skip
    _MEMO[key] = (t, got)  # holding t keeps its id from being reused
    return got


_MEMO: dict[tuple, tuple[ErrorTable, Interval]] = {}


def range_factors(kind: str, engine: str, family: str, confidence: float, **kw) -> Interval:
    """The interval an answer shows (``interval_factors`` keywords; for e2e without rows of
    this engine or family, the hull of the TTFT and TPOT intervals)."""
    return _any_kind(kind, engine, family, confidence, **kw)


def _any_kind(kind: str, engine: str, family: str, confidence: float, **kw) -> Interval:
    """``interval_factors``; for e2e without E2E rows of this engine or family, the hull of the
    TTFT and TPOT intervals (an upper bound of TTFT + (osl - 1) x TPOT at each end)."""
    got = interval_factors(kind, engine, family, confidence, **kw)
    if kind == "itl":  # its own tail rows, else as a TPOT (a mean ITL is the mean TPOT)
        if got.rows:
            return got
        tp = interval_factors("tpot", engine, family, confidence, **kw)
        return dataclasses.replace(tp, basis=f"as a TPOT (too few held-out ITL rows of this "
                                             f"statistic): {tp.basis}")  # fmt: skip
    if kind != "e2e" or got.matched:
        return got
    a = interval_factors("ttft", engine, family, confidence, **kw)
    b = interval_factors("tpot", engine, family, confidence, **kw)
    return Interval(min(a.low, b.low), max(a.high, b.high), f"TTFT: {a.basis}; TPOT: {b.basis}",
                    a.rows + b.rows, a.calibrated, a.matched or b.matched)  # fmt: skip


def e2e_from_parts(
    ttft_point: float, e2e_point: float, ttft_iv: Interval, tpot_iv: Interval
) -> list[float]:
    """[low, high] of an end-to-end latency from the ranges of its two parts.

        E2E = TTFT + (E2E - TTFT),   low = TTFT x l_TTFT + (E2E - TTFT) x l_TPOT  (high alike)

    A request's decode part is (osl - 1) x its TPOT by the clients' definition of TPOT
    ((e2el - ttft) / (output tokens - 1)), so it errs as TPOT errs and the first token as TTFT
    does. Source: vLLM benchmarks/serve (``calculate_metrics``), SGLang bench_serving, the same
    definitions. The hull of the two factor ranges applied to the whole E2E (the earlier range)
    put a 256-token answer's lower end at TTFT's lowest factor of all of it: 0.04 x 5.2 s.

    >>> a, b = Interval(0.5, 2.0, "", 10, True), Interval(0.9, 1.2, "", 10, True)
    >>> e2e_from_parts(100.0, 5100.0, a, b)  # 100 x 0.5 + 5000 x 0.9, 100 x 2 + 5000 x 1.2
    [4550.0, 6200.0]
    """
    decode = max(e2e_point - ttft_point, 0.0)
    return [ttft_point * ttft_iv.low + decode * tpot_iv.low,
            ttft_point * ttft_iv.high + decode * tpot_iv.high]  # fmt: skip


def e2e_range(
    engine: str, family: str, confidence: float, ttft_point: float, e2e_point: float, **kw
) -> tuple[list[float], str]:
    """([low, high], basis) of an E2E prediction: from held-out E2E rows of this engine or
    family where there are (``interval_factors``), else from its parts' ranges
    (:func:`e2e_from_parts`, each of the keywords' statistic and regime)."""
    got = interval_factors("e2e", engine, family, confidence, **kw)
    if got.matched:
        return got.of(e2e_point), got.basis
    a = interval_factors("ttft", engine, family, confidence, **kw)
    b = interval_factors("tpot", engine, family, confidence, **kw)
    return (e2e_from_parts(ttft_point, e2e_point, a, b),
            f"TTFT + the rest at TPOT's error: TTFT: {a.basis}; TPOT: {b.basis}")  # fmt: skip


def estimate_intervals(
    result: Mapping, family: str, confidence: float = DEFAULT_CONFIDENCE,
    throughput_is_input: bool = False, table: ErrorTable | None = None,
    moe: bool | None = None,
) -> dict:  # fmt: skip
    """The ``intervals`` block of an estimate: [low, high] of each headline number.

    ``throughput_is_input``: under a given request rate the delivered throughput is the offered
    one (when stable), so its interval is the point itself. ``moe``: the model's architecture
    class (``_select``).
    """
    engine = str(result["engine"])
    fam_ok, eng_ok = is_calibrated(engine, family)
    kw = dict(family_calibrated=fam_ok, engine_calibrated=eng_ok, table=table,
              attention_dp=bool(result.get("attention_data_parallel")), moe=moe,
              regime=result.get("load_regime"))  # fmt: skip
    iv = {k: interval_factors(k, engine, family, confidence, **kw) for k in ("ttft", "tpot")}
    ttft, tpot = float(result["ttft_ms"]), float(result["tpot_ms"])
    e = interval_factors("e2e", engine, family, confidence, **kw)
    if e.matched:
        e2e, e2e_basis = e.of(float(result["e2e_ms"])), e.basis
    else:
        decode = (float(result["osl"]) - 1) * tpot
        e2e = e2e_from_parts(ttft, ttft + decode, iv["ttft"], iv["tpot"])
        e2e_basis = "TTFT + (osl-1) x TPOT at each end"
    thr = float(result["throughput_tok_s"])
    if throughput_is_input:
        thr_iv, thr_basis = [thr, thr], "the offered load (a stable queue delivers it)"
    else:
        it = interval_factors("throughput", engine, family, confidence, **kw)
        thr_iv, thr_basis = it.of(thr), it.basis
    return {
        "confidence": confidence,
        "ttft_ms": iv["ttft"].of(ttft),
        "tpot_ms": iv["tpot"].of(tpot),
        "e2e_ms": e2e,
        "throughput_tok_s": thr_iv,
        "basis": f"TTFT: {iv['ttft'].basis}. TPOT: {iv['tpot'].basis}. E2E: {e2e_basis}. "
        f"Throughput: {thr_basis}.",
        "calibrated": fam_ok and eng_ok,
        "family_calibrated": fam_ok,
        "engine_calibrated": eng_ok,
    }


#: A range is "wide" when an end lies beyond this factor of its prediction: it then names the
#: measurement that would narrow it (``narrowing_advice``).
WIDE_FACTOR = 3.0
#: Percentile of an answer -> the statistic of its range (P95 reads as P99: the nearer tail).
PERCENTILE_STATISTIC = {"p50": "median", "p90": "p90", "p95": "p99", "p99": "p99"}
#: Metric of an answer -> the prediction kind of its range (an ITL's own held-out tails where
#: there are enough, else the TPOT's: ``_any_kind``).
METRIC_KIND = {"ttft_ms": "ttft", "tpot_ms": "tpot", "itl_ms": "itl", "e2e_ms": "e2e"}


def is_wide(point: float, low: float, high: float) -> bool:
    """An end of the range beyond WIDE_FACTOR (3x) of the prediction, either way.

    >>> is_wide(1.66, 1.4, 11.7), is_wide(100, 80, 250), is_wide(100, 30, 120)
    (True, False, True)
    """
    return high > WIDE_FACTOR * point or low * WIDE_FACTOR < point


def narrowing_advice(what: str, engine: str, gpu: str, load: str, range_name: str = "range") -> str:
    """What to measure when a range is too wide to inform (issue 37): the client's own run of
    that statistic at that load, which the Calibrate page (``calibrate --from``) fits.
    ``range_name``: which of a percentile's two ranges ("steady-service range", "benchmark-run
    range")."""
    return (
        f"{what}: the {range_name} is wider than {WIDE_FACTOR:g}x the prediction, so it cannot decide "
        f"the answer. {measurement_advice(engine, gpu, load)}"
    )


def measurement_advice(engine: str, gpu: str, load: str) -> str:
    """The measurement that narrows a range: the client's own serving run, which the Calibrate
    page fits (for a wide range, ``narrowing_advice``; for an SLA verdict "at risk",
    search/sla.py)."""
    return (
        f"Measure it: one replica of this deployment ({engine} on {gpu}) under {load} and at a "
        "lower and a higher load (three runs: a profile is judged on runs held out, and applies "
        "over the range they span) with the engine's serving benchmark (vllm bench serve / "
        "sglang.bench_serving / trtllm-bench), then load the results on the Calibrate page (or "
        "`python -m advisor calibrate --from FILE ...`): the answer then uses your cluster's "
        "constants where they help"
    )


def percentile_intervals(
    result: Mapping, family: str, confidence: float = DEFAULT_CONFIDENCE,
    table: ErrorTable | None = None, moe: bool | None = None,
) -> dict:  # fmt: skip
    """The range of each predicted percentile of an estimate (``result["percentiles"]``): its
    kind, engine, family, class, load regime (``result["load_regime"]``) and statistic (P50,
    P90, P99 from held-out median, P90, P99 rows where enough, else mean/median rows). The
    P90/P99 are those of a run of the benchmark clients' default length (``--num-prompts``
    1,000 in vllm bench serve and sglang.bench_serving), ranged by the rows of runs long enough
    that no single request sets them (a forecast of a shorter run asks for "p99-short" itself:
    ``perf.validation.bench_forecast``). ``wide``: the percentiles whose range is wider than
    WIDE_FACTOR x the prediction."""
    engine = str(result["engine"])
    fam_ok, eng_ok = is_calibrated(engine, family)
    kw = dict(family_calibrated=fam_ok, engine_calibrated=eng_ok, table=table,
              attention_dp=bool(result.get("attention_data_parallel")), moe=moe,
              regime=result.get("load_regime"))  # fmt: skip
    out: dict = {"confidence": confidence, "basis": {}, "wide": []}
    for metric, pct in result["percentiles"].items():
        out[metric] = {}
        for p, point in pct.items():
            if p not in PERCENTILE_STATISTIC or not math.isfinite(point):
                continue
            stat = PERCENTILE_STATISTIC[p]
            ttft = (result["percentiles"].get("ttft_ms") or {}).get(p)
            if metric == "e2e_ms" and ttft is not None and math.isfinite(ttft):
                (lo, hi), basis = e2e_range(engine, family, confidence, ttft, point,
                                            statistic=stat, **kw)  # fmt: skip
            else:
                iv = range_factors(METRIC_KIND[metric], engine, family, confidence,
                                   statistic=stat, **kw)  # fmt: skip
                (lo, hi), basis = iv.of(point), iv.basis
            out[metric][p] = [lo, hi]
            out["basis"][f"{metric} {p}"] = basis
            if p != "p95" and is_wide(point, lo, hi):  # the answers show P50, P90, P99
                out["wide"].append(f"{p.upper()} {metric.removesuffix('_ms').upper()}")
    return out


#: The metrics an SLA is stated in (no ITL), by the key of an answer's ms figures.
SLA_METRIC_KIND = {k: v for k, v in METRIC_KIND.items() if k != "itl_ms"}


def steady_percentile_ranges(
    points_ms: Mapping[str, float], engine: str, family: str, confidence: float,
    moe: bool | None, regime: str | None, table: ErrorTable | None = None,
) -> dict[str, list[float]]:  # fmt: skip
    """The steady-service range of predicted percentiles (ms), by metric key ("ttft_ms",
    "tpot_ms", "e2e_ms"): the prediction x the factors of the held-out errors of mean and median
    predictions of its kind, engine, accelerator family and model class at its load regime
    (``factors_for`` with statistic "mean"; an E2E without E2E rows takes the wider of the TTFT
    and TPOT factors at each end).

        [P x exp(q_lo), P x exp(q_hi)],  q over log(measured / predicted) of steady rows

    The SLA verdict reads its upper end (search/sla.py: published P99 TTFTs carry benchmark
    runs' start-up waves and cold first requests, which a warm steady service does not pay, so
    ranging a P99 by them would refuse deployments the steady model and the published medians
    support). A benchmark run's published percentile is ranged by the held-out rows of that
    statistic instead (``percentile_intervals``); both are shown, each under its own name.
    The factors do not depend on the percentile: a P50 and a P99 scale alike.

    Hand check: ten held-out vLLM-on-Hopper TTFT means from ten sources, each measured 1.25x its
    prediction, put a 100 ms prediction's range at [125, 125] ms, whatever the confidence.

    >>> rows = tuple(ErrorRow(f"r{i}", "ttft", "vllm", "hopper", True, math.log(1.25),
    ...                       source=f"s{i}") for i in range(10))
    >>> got = steady_percentile_ranges({"ttft_ms": 100.0}, "vllm", "hopper", 0.8, moe=False,
    ...                                regime=None, table=ErrorTable(rows, {}))
    >>> [round(x, 6) for x in got["ttft_ms"]]
    [125.0, 125.0]
    """
    out = {}
    for key, point in points_ms.items():
        iv = factors_for(SLA_METRIC_KIND[key], engine, family, confidence, table=table, moe=moe,
                         regime=regime)  # fmt: skip
        out[key] = iv.of(float(point))
    return out


LEAVE_OUT = ("source", "row")


def coverage(
    table: ErrorTable, confidence: float = DEFAULT_CONFIDENCE, leave_out: str = "source"
) -> dict[str, dict]:
    """Share of held-out measurements inside their own interval, per kind and overall.

    Each row is scored by the interval built without its source's rows (``leave_out``
    "source": as for the next deployment, a source the table has never seen) or without the
    row alone ("row": its siblings, which share its source's miss, stay in), for its own
    engine, family, model class and calibration state (a row marked uncalibrated is scored as
    an uncalibrated family); target 70-90% at c = 0.8 (issue 12). Keys: the kinds, "dense
    models", "MoE models", "calibrated", "uncalibrated" and "all".
    """
    if leave_out not in LEAVE_OUT:
        raise ValueError(f"leave_out {leave_out!r}; allowed: {', '.join(LEAVE_OUT)}")
    inside: dict[str, list[bool]] = {}
    for r in table.rows:
        iv = _any_kind(
            r.kind, r.engine, r.accelerator_family, confidence, table=table,
            family_calibrated=r.calibrated, engine_calibrated=True, exclude_id=r.id,
            exclude_source=r.source if leave_out == "source" else None,
            attention_dp=r.attention_dp, moe=r.moe, regime=r.regime or None,
            statistic=r.statistic if r.statistic in STATISTICS else "mean",
        )  # fmt: skip
        if iv.rows == 0:
            continue
        ok = math.log(iv.low) <= r.log_ratio <= math.log(iv.high)
        if r.statistic == "wave-mean":  # only a benchmark forecast predicts it: scored apart
            inside.setdefault("start-up-wave means", []).append(ok)
            continue
        if r.regime:
            inside.setdefault(f"{r.regime} load", []).append(ok)
        inside.setdefault(r.kind, []).append(ok)
        inside.setdefault("MoE models" if r.moe else "dense models", []).append(ok)
        inside.setdefault("calibrated" if r.calibrated else "uncalibrated", []).append(ok)
    order = [*KINDS, "dense models", "MoE models", "calibrated", "uncalibrated",
             *(f"{g} load" for g in REGIMES), "start-up-wave means"]  # fmt: skip
    out = {
        k: {"rows": len(inside[k]), "inside_pct": 100 * sum(inside[k]) / len(inside[k])}
        for k in order
        if inside.get(k)
    }
    every = inside.get("calibrated", []) + inside.get("uncalibrated", [])
    if every:
        out["all"] = {"rows": len(every), "inside_pct": 100 * sum(every) / len(every)}
    return out

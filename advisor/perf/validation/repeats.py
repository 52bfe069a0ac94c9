"""Repeated runs among the published measurements: how far two runs of one benchmark differ, which
no model can beat on them.

Some publications ran the same benchmark twice: sgl-cookbook's Qwen3 page measured Qwen3-235B-A22B
on 8 x B200 with SGLang 0.5.6, then replaced the results with a run of Qwen3-235B-A22B-Instruct-2507
(the same architecture, the same seeded prompts: "6101 input / 4210 generated tokens" in both) at
the same client settings; its MiniMax page did the same for MiniMax-M2 and M2.1 on 8 x MI300X.
Throughput, TPOT, ITL and E2E repeat within about 1% between such runs, the first tokens do not:
the one-client median TTFT read 65.2 ms in one run and 92.2 ms in the other, the 64-client P99
TTFT 6.30 s and 0.51 s. A prediction of a statistic cannot be nearer to both runs than
:func:`repeat_floor` of their values, so the median floor over the repeated runs of a statistic is
the least median error any model could show on them. The per-statistic accuracy table prints it
beside each target (``bench/crossval.py --by-statistic``), the Trust page shows it.

Two rows are runs of one benchmark when everything the model reads of them is equal (model
architecture, accelerator, parallel layout, dtypes, engine and version, lengths, clients or
request rate, number of requests) and they measure the same statistic; a row copied unchanged into
a second revision of a page is one run, not a repeat (same value: left out).
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from advisor.catalog.loader import DATA_DIR
from advisor.perf.validation.measurements import Case, cases, load_rows


def repeat_floor(values) -> float:
    """The least error one prediction can have on every run of a repeated measurement.

        floor = (max - min) / (max + min)

    The prediction p = 2 max min / (max + min) (the harmonic mean of the extremes) is off by
    exactly this from both: p / min - 1 = (max - min) / (max + min) = 1 - p / max. Moving p
    brings it nearer one extreme and further from the other, and the runs between the extremes
    are nearer than both. Errors are the project's |predicted / measured - 1|.

    Source: minimax of |p / a - 1| and |p / b - 1| over p (the two are equal at p = 2ab / (a + b)).

    Hand check: the one-client median TTFTs of the two sgl-cookbook Qwen3-235B runs on 8 x B200,
    65.2 ms and 92.2 ms (rows C0003, S0002): 27.0 / 157.4 = 17.15%; p = 76.4 ms is 17.15% above
    the first and below the second.

    >>> round(repeat_floor([0.0652, 0.0922]), 4)
    0.1715
    >>> repeat_floor([2.0, 2.0, 2.0])
    0.0
    """
    v = np.asarray(values, dtype=float)
    if v.size == 0 or not np.all(np.isfinite(v)) or np.any(v <= 0):
        raise ValueError(f"values: got {values!r}, allowed one or more finite numbers > 0")
    return float((v.max() - v.min()) / (v.max() + v.min()))


@dataclass(frozen=True)
class RepeatGroup:
    """Rows that measured one statistic of one benchmark in separate runs."""

    statistic: str  # the row's metric as published, e.g. "ttft_ms_p99"
    ids: tuple[str, ...]
    values: tuple[float, ...]  # SI, in the order of ``ids``
    sources: tuple[str, ...]
    setting: str  # the benchmark in words: model, accelerator, layout, clients

    @property
    def floor(self) -> float:
        return repeat_floor(self.values)


def _benchmark(c: Case) -> tuple:
    """Everything the model reads of a row's run, and how its precision was qualified: equal keys
    are one benchmark. The qualifier (the published precision's words in parentheses) tells
    torchao's float8 weight-only run from its dynamic per-tensor and per-row ones, which the model
    reads as one fp8 deployment."""
    from advisor.perf.validation.percentiles import _deployment

    qualifiers = tuple(_qualifier(c.row.get(k, "")) for k in ("precision_weights", "precision_kv"))
    return (c.kind, *_deployment(c), c.row.get("engine", ""), round(c.isl, 3), round(c.osl, 3),
            c.batch, c.qps, c.requests, c.prefill_budget_tokens, qualifiers)  # fmt: skip


def _qualifier(precision: str) -> str:
    """The words in parentheses of a published precision ("" if none).

    >>> _qualifier("FP8 (dynamic activation quant, per-row)"), _qualifier("BF16")
    ('dynamic activation quant, per-row', '')
    """
    m = re.search(r"\((.*)\)", precision or "")
    return m.group(1).strip() if m else ""


def _setting(c: Case) -> str:
    g = c.config
    load = f"{c.qps:g} req/s" if c.kind.startswith("load_") else f"{c.batch:g} client(s)"
    runs = f", {c.requests} requests" if c.requests else ""
    return f"{g.model.id} on {g.tp * g.pp} x {g.gpu.id}, {c.row.get('engine', '')}, {load}{runs}"


def repeat_groups(items: list[Case] | None = None) -> list[RepeatGroup]:
    """Every statistic measured in two or more runs of one benchmark, from ``items`` (default:
    every row the model represents, published percentiles included).

    Rows of one group share :func:`_benchmark` and the published metric; rows with the value of
    another row of the group are dropped as copies of one run, and a group needs two runs left.
    """
    if items is None:
        items = _all_cases()
    metric = {r["id"]: r.get("metric", "") for r in load_rows()}
    by_key: dict[tuple, list[Case]] = defaultdict(list)
    for c in items:
        by_key[_benchmark(c) + (metric.get(c.id) or c.row.get("metric", ""),)].append(c)
    out = []
    for key, rows in by_key.items():
        runs: dict[float, Case] = {}
        for c in sorted(rows, key=lambda c: c.id):
            runs.setdefault(float(c.measured), c)
        if len(runs) < 2:
            continue
        kept = list(runs.values())
        out.append(RepeatGroup(
            statistic=key[-1], ids=tuple(c.id for c in kept),
            values=tuple(float(c.measured) for c in kept),
            sources=tuple(c.source for c in kept), setting=_setting(kept[0]),
        ))  # fmt: skip
    return sorted(out, key=lambda g: (g.statistic, g.ids))


def _all_cases() -> list[Case]:
    """The representable rows, each once: the validation cases, and the published percentile
    rows (P99s and the like) as their percentile case's deployment and load."""
    from dataclasses import replace

    from advisor.perf.validation.percentiles import percentile_cases

    items = {c.id: c for c in cases()[0]}
    for pc in percentile_cases()[0]:
        if pc.id not in items:
            items[pc.id] = replace(pc.case, id=pc.id, measured=pc.measured_s, source=pc.source)
    return list(items.values())


#: Readable names of the published metrics' parts (``ttft_ms_p99`` -> "TTFT P99").
_QUANTITY = {"ttft": "TTFT", "tpot": "TPOT", "itl": "ITL", "e2e": "E2E",
             "output_throughput": "output throughput", "throughput": "throughput",
             "decode_tok_s_single_stream": "one-stream decode speed"}  # fmt: skip
_STAT = {"median": "median", "p50": "median", "p90": "P90", "p95": "P95", "p99": "P99",
         "mean": "mean"}  # fmt: skip


def statistic_label(metric: str) -> str:
    """A published metric in words: quantity and statistic (a bare metric is a mean).

    >>> statistic_label("ttft_ms_p99"), statistic_label("tpot_ms_median")
    ('TTFT P99', 'TPOT median')
    >>> statistic_label("output_throughput_tok_s"), statistic_label("itl_ms")
    ('output throughput mean', 'ITL mean')
    """
    parts = metric.split("_")
    stat = _STAT.get(parts[-1], "mean")
    for name, label in sorted(_QUANTITY.items(), key=lambda kv: -len(kv[0])):
        if metric.startswith(name):
            return f"{label} {stat}"
    return f"{metric} {stat}"


def repeat_summary(groups: list[RepeatGroup] | None = None) -> list[dict]:
    """Per statistic: repeated benchmarks, their runs, the median and largest floor (%), and the
    setting of the largest; ordered by median floor, largest first."""
    if groups is None:
        groups = repeat_groups()
    by_stat: dict[str, list[RepeatGroup]] = defaultdict(list)
    for g in groups:
        by_stat[statistic_label(g.statistic)].append(g)
    rows = []
    for label, gs in by_stat.items():
        floors = [g.floor for g in gs]
        worst = max(gs, key=lambda g: g.floor)
        rows.append({
            "statistic": label, "benchmarks": len(gs), "runs": sum(len(g.ids) for g in gs),
            "median_floor_pct": 100.0 * float(np.median(floors)),
            "largest_floor_pct": 100.0 * worst.floor,
            "largest": f"{worst.setting}: " + " vs ".join(
                f"{v:.4g} ({i})" for i, v in zip(worst.ids, worst.values, strict=True)),
        })  # fmt: skip
    return sorted(rows, key=lambda r: (-r["median_floor_pct"], r["statistic"]))


def floor_by_id(groups: list[RepeatGroup] | None = None) -> dict[str, float]:
    """Row id -> the floor of its repeat group (rows without a repeat are absent)."""
    if groups is None:
        groups = repeat_groups()
    return {i: g.floor for g in groups for i in g.ids}


#: The shipped summary (:func:`repeat_summary` of the shipped measurement files), read by
#: :func:`ttft_repeat_note` so a forecast does not parse every row (about 1.5 s) to quote it;
#: ``bench/repeats.py --write`` regenerates it and tests/test_repeats.py checks it is current.
SUMMARY_PATH = DATA_DIR / "repeats.json"


def write_summary(path: Path = SUMMARY_PATH) -> list[dict]:
    """Write :func:`repeat_summary` to ``path`` (JSON) and return it."""
    rows = repeat_summary()
    path.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    return rows


@lru_cache(maxsize=1)
def shipped_summary() -> tuple[dict, ...]:
    """The summary in data/repeats.json (empty if the file is missing or unreadable)."""
    try:
        rows = json.loads(SUMMARY_PATH.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ()
    return tuple(r for r in rows if isinstance(r, dict))


def ttft_repeat_note() -> str | None:
    """A benchmark forecast's note on how far published repeats of one benchmark agree on the
    first token (None when no TTFT is repeated in the shipped summary): the median repeat floor
    of the P99 and median TTFT, and of the median TPOT for contrast."""
    rows = {r.get("statistic"): r for r in shipped_summary()}
    p99 = rows.get("TTFT P99")
    if p99 is None:
        return None
    parts = [
        f"P99 TTFT only within +-{p99['median_floor_pct']:.0f}% of a middle value "
        f"(median of {p99['benchmarks']}; the worst pair +-{p99['largest_floor_pct']:.0f}%)"
    ]
    for stat, name in (("TTFT median", "median TTFT"), ("TPOT median", "median TPOT")):
        if stat in rows:
            parts.append(f"{name} within +-{max(rows[stat]['median_floor_pct'], 1.0):.0f}%")
    return ("published repeats of one benchmark (same model, GPUs, engine, prompts and clients) "
            f"agree on {', '.join(parts)}: run yours twice before reading a first-token gap "
            "as the model's")  # fmt: skip

"""Predict every usable measurement and summarise the error per metric family.

``python -m advisor validate`` prints, per family (batch-1 decode, TTFT, TTFT/ITL under load,
offline throughput, all-reduce): rows used, median and p90 absolute percentage error, and the
signed bias (median of predicted / measured - 1); rows it cannot represent are counted with the
reason.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

import numpy as np

from advisor.perf.measurements import Case, Skipped, cases, load_rows
from advisor.perf.predict import (
    concurrency_throughput,
    concurrency_tpot,
    offline_throughput,
    static_throughput,
)
from advisor.perf.replica import ReplicaArrays, build_replicas, max_running
from advisor.perf.step import decode_step, prefill

FAMILIES = (
    "batch-1 decode",
    "TTFT",
    "TTFT/ITL under load",
    "offline throughput",
    "all-reduce",
)


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

    @property
    def error(self) -> float:
        """Signed relative error: predicted / measured - 1."""
        return self.predicted / self.measured - 1.0


def service_for(r: ReplicaArrays, isl: np.ndarray, osl: np.ndarray):
    """The queueing model's view of replicas: step(b) at the mean context, prefill, KV cap."""
    from advisor.physics.queueing import ServiceModel

    ctx = np.asarray(isl, dtype=float) + np.asarray(osl, dtype=float) / 2.0
    cap = np.maximum(np.minimum(max_running(r, isl + osl), r.max_num_seqs), 1.0)
    pre = prefill(r, isl).total
    return ServiceModel(
        decode_step_base_s=0.0,
        decode_step_per_seq_s=0.0,
        prefill_s=pre,
        max_running=cap,
        decode_step_fn=lambda b: decode_step(r, b, ctx).total,
    )


def predict_cases(items: list[Case]) -> np.ndarray:
    """Predicted value (same unit as ``Case.measured``) for each case, vectorised by kind."""
    from advisor.physics.queueing import latency_under_load

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
        elif kind == "ttft_b1":
            val = prefill(r, isl).total
        elif kind == "itl_fit_intercept":
            val = decode_step(r, 1.0, 1.0).total
        elif kind == "itl_fit_slope":
            val = (decode_step(r, 1.0, 100_001.0).total - decode_step(r, 1.0, 1.0).total) / 1e5
        elif kind == "offline":
            val = offline_throughput(r, isl, osl)
        elif kind == "static":
            val = static_throughput(r, batch, isl, osl)
        elif kind == "conc_tpot":
            val = concurrency_tpot(r, batch, isl, osl)
        elif kind == "conc_tput":
            val = concurrency_throughput(r, batch, isl, osl)
        elif kind in ("load_ttft", "load_itl"):
            qps = np.array([c.qps for c in sel], dtype=float)
            res = latency_under_load(service_for(r, isl, osl), qps, osl, isl_tokens=isl)
            val = res.ttft.mean_s if kind == "load_ttft" else res.tpot.mean_s
        else:  # pragma: no cover - parse_row only emits the kinds above
            raise ValueError(f"unknown case kind {kind!r}")
        out[idx] = val
    return out


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
        )  # fmt: skip
        for c, p in zip(items, pred, strict=True)
    ]
    return got, skipped


def collective_predictions() -> tuple[list[Prediction], list[Skipped]]:
    """All-reduce rows through the collectives model's own validation."""
    from advisor.perf.collective_fit import validate_collectives

    got, skipped = [], []
    for item in validate_collectives():
        if item.predicted is None:
            skipped.append(Skipped(item.row_id, item.metric, item.reason or "not representable"))
            continue
        got.append(
            Prediction(
                id=item.row_id,
                family="all-reduce",
                kind=item.metric,
                engine="nccl",
                gpu="",
                model="",
                measured=float(item.measured),
                predicted=float(item.predicted),
            )  # fmt: skip
        )
    return got, skipped


def summarise(preds: list[Prediction]) -> dict[str, dict[str, float]]:
    table: dict[str, dict[str, float]] = {}
    for fam in FAMILIES:
        errs = np.array([p.error for p in preds if p.family == fam and np.isfinite(p.predicted)])
        bad = sum(1 for p in preds if p.family == fam and not np.isfinite(p.predicted))
        if errs.size == 0:
            table[fam] = {"rows": 0, "non_finite": bad}
            continue
        ape = np.abs(errs) * 100
        table[fam] = {
            "rows": int(errs.size),
            "median_ape_pct": float(np.median(ape)),
            "p90_ape_pct": float(np.percentile(ape, 90)),
            "bias_pct": float(np.median(errs) * 100),
            "non_finite": bad,
        }
    return table


def validation_report() -> dict:
    preds, skipped = predictions()
    cpreds, cskipped = collective_predictions()
    allp = preds + cpreds
    # A collective row is "skipped" by the serving parser and handled by the collectives model.
    skipped = [s for s in skipped if not s.reason.startswith("collective:")] + cskipped
    reasons = Counter(s.reason for s in skipped)
    return {
        "families": summarise(allp),
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
                "model": p.model,
                "measured": p.measured,
                "predicted": p.predicted,
                "error_pct": p.error * 100,
            }  # fmt: skip
            for p in allp
        ],
    }

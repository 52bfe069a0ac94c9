"""The Trust page's data: every validation prediction beside its published measurement and source.

Joins ``validation_report()`` rows with data/measurements.csv (source, metric, published value
and unit, notes) and lists the rows the model cannot represent, each with its reason.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from advisor.perf.validation.measurements import cases, load_rows
from advisor.perf.validation.validate import FAILURE_ERROR_PCT

#: Unit of ``measured``/``predicted`` per prediction kind (validate.predict_cases, SI).
KIND_UNITS: dict[str, str] = {
    "decode_b1": "tokens/s (one stream)",
    "ttft_b1": "s",
    "itl_fit_intercept": "s",
    "itl_fit_slope": "s per context token",
    "offline": "output tokens/s",
    "static": "output tokens/s",
    "tpot_b1": "s",
    "static_e2e": "s",
    "conc_ttft": "s",
    "conc_tpot": "s",
    "conc_e2e": "s",
    "conc_tput": "output tokens/s",
    "load_ttft": "s",
    "load_itl": "s",
    "load_e2e": "s",
    "load_tput": "output tokens/s",
    "allreduce_latency_us": "µs",
    "allgather_latency_us": "µs",
    "reducescatter_latency_us": "µs",
    "allreduce_busbw_gbps": "GB/s",
}


def trust_rows(report: Mapping) -> list[dict]:
    """Validation rows with the CSV's source, metric, published value/unit and notes added."""
    raw = {r["id"]: r for r in load_rows()}
    out = []
    for r in report["rows"]:
        src = raw.get(r["id"], {})
        out.append({
            **r,
            "unit": KIND_UNITS.get(r["kind"], ""),
            "source": src.get("source", ""),
            "metric": src.get("metric", ""),
            "published": f"{src.get('value', '')} {src.get('unit', '')}".strip(),
            "gpu_name": src.get("gpu", r["gpu"]),
            "model_name": src.get("model", r["model"]),
            "notes": src.get("notes", ""),
        })  # fmt: skip
    return out


def skipped_rows() -> list[dict]:
    """Rows the model does not represent: id, metric, reason, source (as validation_report)."""
    from advisor.perf.validation.collectives import validate_collectives

    raw = {r["id"]: r for r in load_rows()}
    _, skipped = cases()
    rows = [(s.id, s.metric, s.reason) for s in skipped if not s.reason.startswith("collective:")]
    rows += [
        (v.row_id, v.metric, v.reason or "not representable")
        for v in validate_collectives()
        if v.predicted is None
    ]
    return [
        {"id": i, "metric": m, "reason": why, "source": raw.get(i, {}).get("source", "")}
        for i, m, why in rows
    ]


def filter_rows(
    rows: Iterable[dict],
    gpus: Iterable[str] = (),
    engines: Iterable[str] = (),
    models: Iterable[str] = (),
    families: Iterable[str] = (),
) -> list[dict]:
    """Rows matching every non-empty filter (an empty filter keeps everything).

    >>> rows = [{"gpu": "h100-sxm", "engine": "vllm", "model": "m", "family": "TTFT"}]
    >>> len(filter_rows(rows, gpus=["a100"])), len(filter_rows(rows, engines=["vllm"]))
    (0, 1)
    """
    sets = [(k, set(v)) for k, v in (("gpu", gpus), ("engine", engines), ("model", models),
                                     ("family", families))]  # fmt: skip
    return [r for r in rows if all(not s or r[k] in s for k, s in sets)]


def error_table(rows: Iterable[dict], families: Iterable[str]) -> list[dict]:
    """Per family: rows, median and p90 absolute % error, signed median bias %, failures
    (predicted unstable, counted as a 100% error), within ±10/25%.

    >>> t = error_table([{"family": "TTFT", "error_pct": e} for e in (-10.0, 5.0, 20.0)], ["TTFT"])
    >>> t[0]["median |error| %"], t[0]["within ±10%"]
    (10.0, '2 / 3')
    """
    out = []
    rows = list(rows)
    for fam in families:
        e = np.array([r["error_pct"] for r in rows if r["family"] == fam], dtype=float)
        if e.size == 0:
            continue
        failed = ~np.isfinite(e)
        # A failure (predicted unstable: non-finite error) counts as a 100% error, never dropped.
        e = np.where(np.isfinite(e), e, FAILURE_ERROR_PCT)
        a = np.abs(e)
        out.append({
            "family": fam, "rows": int(e.size),
            "median |error| %": round(float(np.median(a)), 1),
            "p90 |error| %": round(float(np.percentile(a, 90, method="higher")), 1),
            "bias %": round(float(np.median(e)), 1),
            "failures": int(failed.sum()),
            "within ±10%": f"{int((a <= 10).sum())} / {e.size}",
            "within ±25%": f"{int((a <= 25).sum())} / {e.size}",
        })  # fmt: skip
    return out

"""Fit the collectives model's constants to the measured all-reduce rows.

:func:`fit_calibration` gives :data:`advisor.physics.collectives.CALIBRATION` (stored there, and
checked to match a fresh fit by tests/test_collective_fit.py) from the rows
:mod:`advisor.perf.validation.collectives` reads; ``python -m
advisor.perf.calibration.collective_fit`` prints a fresh fit and the validation table.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

import numpy as np

from advisor.catalog.specs import Interconnect
from advisor.perf.validation.collectives import (
    ONE_PROCESS_HARNESS,
    CollectiveRow,
    links_for,
    load_collective_rows,
    measured_time_s,
    model_time_s,
    summarize,
    validate_collectives,
)
from advisor.physics.collectives import (
    CUSTOM_ALGORITHMS,
    NCCL_ALGORITHMS,
    busbw_bytes_per_s,
    two_shot_allreduce_time_s,
)

#: Harnesses whose overhead is fitted: nccl-tests with a process per GPU, in one process per
#: runtime, and torch.distributed.
HARNESSES = ("nccl-tests", *ONE_PROCESS_HARNESS.values(), "torch.distributed")


def fit_calibration(
    rows: Sequence[CollectiveRow],
    links: Mapping[str, Interconnect] | None = None,
    *,
    large_bytes: float = 2**30,
    small_bytes: float = 2**20,
) -> dict:
    """Fit :data:`CALIBRATION` from measurement rows (reproducible; medians and one line fit).

    1. Per link kind: median of measured ring busbw / raw per-GPU bandwidth over ring rows with
       S >= ``large_bytes`` (latency negligible there). Kinds without rows: pooled median.
    2. NVLS: median of (busbw x (N+1) / (2(N-1))) / (fraction x raw) over NVLS rows S >= large.
    3. Custom one/two-shot: least squares t = base + x / eff, x = two-shot bytes / (f x B).
    4. Harness overhead: median of (measured - modelled) over each harness's rows S <= small,
       clipped at 0 (``HARNESSES``: nccl-tests with a process per GPU and in one process per
       runtime, torch.distributed).
    """
    links = links_for(rows, links)
    ok = [r for r in rows if not r.reason]
    big = [r for r in ok if r.message_bytes >= large_bytes]

    def busbw_measured(r: CollectiveRow) -> float:
        t = measured_time_s(r)
        return float(busbw_bytes_per_s(r.message_bytes / t, r.op, r.n_gpus))

    def raw(r: CollectiveRow) -> float:
        return links[r.link_id].effective_bandwidth_bytes_per_s(r.n_gpus)

    ratios: dict[str, list[float]] = {}
    for r in big:
        if r.algorithms == ("ring",) or (
            r.algorithms == NCCL_ALGORITHMS and not links[r.link_id].in_switch_reduction
        ):
            ratios.setdefault(links[r.link_id].kind, []).append(busbw_measured(r) / raw(r))
    pooled = statistics.median([x for v in ratios.values() for x in v])
    eff = {k: round(statistics.median(v), 4) for k, v in sorted(ratios.items())}
    for kind in ("pcie", "nvlink", "xgmi", "infiniband", "ethernet"):
        eff.setdefault(kind, round(pooled, 4))

    nvls = [
        busbw_measured(r) * (r.n_gpus + 1) / (2 * (r.n_gpus - 1))
        / (eff[links[r.link_id].kind] * raw(r))
        for r in big
        if r.algorithms == ("nvls",)
    ]  # fmt: skip
    cal: dict = {
        "link_efficiency": eff,
        "nvls_efficiency": round(statistics.median(nvls), 4),
        "custom_efficiency": 1.0,
        "custom_base_latency_s": 0.0,
        "harness_overhead_s": {},
    }

    custom = [r for r in ok if r.algorithms == CUSTOM_ALGORITHMS]
    if len(custom) >= 2:
        x = np.array(
            [
                float(two_shot_allreduce_time_s(r.message_bytes, r.n_gpus, eff[links[r.link_id].kind] * raw(r), 0.0))
                for r in custom
            ]
        )  # fmt: skip
        y = np.array([measured_time_s(r) - 2 * links[r.link_id].latency_s for r in custom])
        slope, intercept = np.polyfit(x, y, 1)
        cal["custom_efficiency"] = round(float(1 / slope), 4)
        cal["custom_base_latency_s"] = round(float(intercept), 8)

    over: dict[str, list[float]] = {}
    for r in ok:
        if r.harness in HARNESSES and r.message_bytes <= small_bytes:
            resid = measured_time_s(r) - model_time_s(r, links[r.link_id], cal)
            over.setdefault(r.harness, []).append(max(0.0, resid))
    cal["harness_overhead_s"] = {k: round(statistics.median(v), 8) for k, v in sorted(over.items())}
    return cal


if __name__ == "__main__":  # print a fresh fit and the validation table
    import json

    rows_ = load_collective_rows()
    fitted = fit_calibration(rows_)
    print(json.dumps(fitted, indent=2))
    for v in validate_collectives(rows_, None, fitted):
        if v.predicted is None:
            print(f"{v.row_id} {v.metric:26s} {v.measured:10.2f}  --  {v.reason}")
        else:
            print(
                f"{v.row_id} {v.metric:26s} {v.measured:10.2f} {v.predicted:10.2f} "
                f"{v.abs_pct_error:6.1f}%  {v.algorithm}"
            )
    print(summarize(validate_collectives(rows_, None, fitted)))

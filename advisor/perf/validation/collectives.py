"""Collective measurement rows: parsing data/measurements*.csv and validating the model on them.

The formulas live in :mod:`advisor.physics.collectives`; this module reads the nccl-tests /
torch.distributed / custom all-reduce rows (:func:`load_collective_rows`; a client's nccl-tests
file becomes the same :class:`CollectiveRow`) and compares the model's predictions with them
(:func:`validate_collectives`). The fit of :data:`~advisor.physics.collectives.CALIBRATION` to
these rows is :func:`advisor.perf.calibration.collective_fit.fit_calibration`.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from advisor.catalog.measurement_row import message_bytes
from advisor.catalog.specs import Interconnect
from advisor.physics.collectives import (
    CALIBRATION,
    CUSTOM_ALGORITHMS,
    NCCL_ALGORITHMS,
    busbw_bytes_per_s,
    collective,
    collective_time_s,
    time_from_busbw_s,
)

COLLECTIVE_METRICS: dict[str, str] = {
    "allreduce_busbw_gbps": "allreduce",
    "allreduce_latency_us": "allreduce",
    "allgather_latency_us": "allgather",
    "reducescatter_latency_us": "reducescatter",
}

#: GPU name pattern in measurements.csv -> interconnect id of its all-reduce link.
GPU_LINKS: tuple[tuple[str, str], ...] = (
    (r"\bA100-SXM", "nvlink3"),
    (r"\bH100-SXM", "nvlink4"),
    (r"\bH200-SXM", "nvlink4"),
    (r"\bB200-SXM", "nvlink5"),
    (r"\bMI300X\b", "xgmi"),
    (r"\bMI325X\b", "xgmi"),
    (r"\bMI35[05]X \(8x\b", "xgmi-mi350"),  # one 8-GPU node; multi-node rows need the NICs
    (r"\bPCIe5\b", "pcie5"),
)


class CollectiveRow(NamedTuple):
    """One measurement row read as a collective (fields None when it cannot be read)."""

    row_id: str
    metric: str
    op: str | None
    n_gpus: int | None
    message_bytes: float | None
    measured: float
    unit: str
    link_id: str | None
    algorithms: tuple[str, ...] | None
    harness: str
    reason: str  # empty when representable


def _row_algorithms(engine: str, notes: str, n: int) -> tuple[str, ...]:
    text = f"{engine} {notes}"
    if "custom all-reduce" in text:
        return CUSTOM_ALGORITHMS
    if "NVLS_ENABLE=0" in text or "algo Ring" in text or "NCCL ring" in text:
        return ("ring",)
    if "algo NVLS" in text or "NVLS/SHARP engaged" in text or "NVLink SHARP" in text:
        return ("nvls",)
    m = re.search(r"n>=(\d+)", text)
    if m and "NVLS" in text:
        return ("nvls",) if n >= int(m.group(1)) else ("ring",)
    return NCCL_ALGORITHMS  # NCCL's own choice (NVLS enabled or not): the fastest available


#: nccl-tests launched as one process driving every GPU (``-g N``, N > 1): one host thread
#: launches the N GPUs' kernels in turn, which a process per GPU (``mpirun -np N ... -g 1``, as
#: an engine runs) does not pay; by runtime, whose launches cost differently. 8 x MI300X, 8 B -
#: 128 KiB: 44-53 us in one process (ROCm system-acceptance docs, ROCm/rccl issue 1562, Azure's
#: benchmarking guide), 14-19 us with a process per GPU (hisohara/ai-scripts, K0019-K0036).
ONE_PROCESS_HARNESS = {"nvlink": "nccl-tests -g (one process, CUDA)",
                       "xgmi": "nccl-tests -g (one process, HIP)"}  # fmt: skip
_ONE_PROCESS = re.compile(r"(?<![\w-])-g\s*([2-9]|\d{2,})\b")


def one_process_harness(link_kind: str) -> str:
    """The harness name of an nccl-tests run in one process on ``link_kind`` (CUDA unless the
    link is AMD's Infinity Fabric)."""
    return ONE_PROCESS_HARNESS["xgmi" if link_kind == "xgmi" else "nvlink"]


def _row_harness(engine: str, notes: str, link_kind: str = "") -> str:
    if "custom all-reduce" in engine:
        return "custom-eager"
    if "kernel device time" in notes:
        return "device"
    if "nccl-tests" in engine or "all_reduce_perf" in engine:
        if _ONE_PROCESS.search(f"{engine} {notes}"):
            return one_process_harness(link_kind)
        return "nccl-tests"
    if "torch.distributed" in engine or "all_reduce_bench" in engine:
        return "torch.distributed"
    return "unknown"


def parse_collective_row(row: Mapping[str, str]) -> CollectiveRow:
    """Read one measurements.csv row (a ``csv.DictReader`` dict) as a collective, or say why not."""
    rid, metric = row["id"], row["metric"]
    engine, notes, gpu = row.get("engine", ""), row.get("notes", ""), row.get("gpu", "")
    measured, unit = float(row["value"]), row.get("unit", "")
    op = COLLECTIVE_METRICS.get(metric)

    def bad(reason: str) -> CollectiveRow:
        return CollectiveRow(rid, metric, op, None, None, measured, unit, None, None, "", reason)

    if op is None:
        return bad(f"metric {metric!r} is not a collective time or busbw (point-to-point copy)")
    try:
        n = int(row["num_gpus"])
    except (KeyError, ValueError):
        return bad(f"num_gpus {row.get('num_gpus')!r} is not an integer")
    size = message_bytes(row.get("batch_or_concurrency", ""))
    if size is None:
        return bad(f"no message size in {row.get('batch_or_concurrency')!r}")
    link_id = next((lid for pat, lid in GPU_LINKS if re.search(pat, gpu)), None)
    if link_id is None:
        return bad(f"no link known for gpu {gpu!r}")
    from advisor.catalog.loader import get_interconnect

    # the catalog's kind, not the id's spelling: a link named otherwise is still Infinity Fabric
    kind = get_interconnect(link_id).kind
    return CollectiveRow(
        rid, metric, op, n, float(size), measured, unit, link_id,
        _row_algorithms(engine, notes, n), _row_harness(engine, notes, kind), "",
    )  # fmt: skip


def load_collective_rows(path: Path | None = None) -> list[CollectiveRow]:
    """Every collective-metric row of data/measurements*.csv (plus p2p rows, unrepresentable)."""
    if path is None:
        from advisor.catalog.loader import measurement_rows

        rows = list(measurement_rows())
    else:
        with open(path, newline="", encoding="utf-8") as fh:
            rows = list(csv.DictReader(fh))
    keep = set(COLLECTIVE_METRICS) | {"p2p_bw_unidir_gbps", "p2p_bw_bidir_gbps"}
    return [parse_collective_row(r) for r in rows if r["metric"] in keep]


def measured_time_s(r: CollectiveRow) -> float:
    """The row's measured time of one call, s (a bus bandwidth row converted through its size)."""
    if r.metric.endswith("_busbw_gbps"):
        return float(time_from_busbw_s(r.message_bytes, r.measured * 1e9, r.op, r.n_gpus))
    return r.measured * 1e-6


def model_time_s(
    r: CollectiveRow, link: Interconnect, cal: Mapping, algorithms: Sequence[str] | None = None
) -> float:
    """The model's device time for the row's call on ``link`` with calibration ``cal``, s."""
    return float(
        collective_time_s(
            r.op, r.message_bytes, r.n_gpus, link,
            algorithms=algorithms or r.algorithms, calibration=cal,
        )
    )  # fmt: skip


def links_for(rows: Iterable[CollectiveRow], links: Mapping[str, Interconnect] | None) -> dict:
    """``links`` as given, else the catalog's interconnect of every row's link id."""
    if links is not None:
        return dict(links)
    from advisor.catalog.loader import get_interconnect

    return {r.link_id: get_interconnect(r.link_id) for r in rows if r.link_id}


class ValidationRow(NamedTuple):
    """Measured vs predicted for one row (predicted None and a reason when not representable)."""

    row_id: str
    metric: str
    measured: float
    predicted: float | None
    abs_pct_error: float | None
    algorithm: str
    reason: str


def validate_collectives(
    rows: Sequence[CollectiveRow] | None = None,
    links: Mapping[str, Interconnect] | None = None,
    calibration: Mapping | None = None,
) -> list[ValidationRow]:
    """Predict each row's metric (busbw in GB/s or time in us) and its absolute % error.

    The row's harness overhead (fitted; see :data:`CALIBRATION`) is added to the modelled device
    time before comparing, since nccl-tests and torch.distributed time the whole call.
    """
    rows = load_collective_rows() if rows is None else rows
    cal = CALIBRATION if calibration is None else calibration
    links = links_for(rows, links)
    out: list[ValidationRow] = []
    for r in rows:
        if r.reason:
            out.append(ValidationRow(r.row_id, r.metric, r.measured, None, None, "", r.reason))
            continue
        link = links[r.link_id]
        res = collective(
            r.op, r.message_bytes, r.n_gpus, link, algorithms=r.algorithms, calibration=cal
        )
        t = res.time_s + cal["harness_overhead_s"].get(r.harness, 0.0)
        if r.metric.endswith("_busbw_gbps"):
            pred = float(busbw_bytes_per_s(r.message_bytes / t, r.op, r.n_gpus)) / 1e9
        else:
            pred = t * 1e6
        err = abs(pred - r.measured) / r.measured * 100
        out.append(ValidationRow(r.row_id, r.metric, r.measured, pred, err, res.algorithm, ""))
    return out


def summarize(results: Sequence[ValidationRow], metrics: Iterable[str] | None = None) -> dict:
    """Count, median / p90 absolute % error and median signed bias of represented rows."""
    keep = set(metrics) if metrics is not None else None
    errs, signed = [], []
    for v in results:
        if v.predicted is None or (keep is not None and v.metric not in keep):
            continue
        errs.append(v.abs_pct_error)
        signed.append((v.predicted - v.measured) / v.measured * 100)
    if not errs:
        return {"rows": 0}
    return {
        "rows": len(errs),
        "median_abs_pct": float(np.median(errs)),
        "p90_abs_pct": float(np.percentile(errs, 90)),
        "median_bias_pct": float(np.median(signed)),
    }

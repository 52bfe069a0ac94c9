"""Sweeps for the latency page: step time and throughput against batch, and roofline points.

Pure numpy over ``decode_step``/``prefill`` (the same physics ``estimate`` uses), vectorised by
repeating the one replica once per batch size (``ReplicaArrays.take``).
"""

from __future__ import annotations

import numpy as np

from advisor.catalog.specs import Accelerator, ModelSpec

# One ReplicaConfig of an EstimateInput: the layout (EP, attention DP) included. A copy here
# without them put the closed loop of users, the Latency page's roofline and batch sweeps and the
# Speculative page on the plain-TP layout (2026-12-07)
from advisor.perf.model.estimate import EstimateInput, replica_config
from advisor.perf.model.replica import ReplicaArrays, max_running, repeat
from advisor.perf.model.step import COMPONENTS, StepTimes, decode_step, prefill
from advisor.physics.roofline import ridge_point_flops_per_byte


def batch_cap(r: ReplicaArrays, context_tokens: float) -> int:
    """Largest running batch: sequences whose KV fits, capped by the engine's max_num_seqs (>= 0).

    >>> from advisor.catalog import get_accelerator, get_model
    >>> from advisor.perf.model.replica import ReplicaConfig, build_replicas
    >>> r = build_replicas([ReplicaConfig(get_model("llama-3.1-8b"), get_accelerator("h100-sxm"))])
    >>> batch_cap(r, 2048) == min(int(max_running(r, 2048)[0]), int(r.max_num_seqs[0]))
    True
    """
    return int(min(max_running(r, context_tokens)[0], r.max_num_seqs[0]))


def batch_grid(max_batch: int, points: int = 60) -> np.ndarray:
    """Integer batch sizes 1..max_batch, geometrically spaced, unique, always ending at max_batch.

    >>> batch_grid(4).tolist()
    [1.0, 2.0, 3.0, 4.0]
    """
    top = max(int(max_batch), 1)
    grid = np.round(np.geomspace(1, top, num=min(points, top)))
    grid = np.unique(grid, return_index=True)[0]  # plain np.unique imports numpy.ma (30-100 ms)
    return grid.astype(float)


def batch_sweep(r: ReplicaArrays, context_tokens: float, batches: np.ndarray) -> dict:
    """Decode step (= TPOT without prefill interruptions) and throughput per replica vs batch.

    throughput = batch / step time (output tokens/s of one replica); components in ms.
    """
    b = np.asarray(batches, dtype=float)
    s = decode_step(repeat(r, b.size), b, np.full(b.size, float(context_tokens)))
    return {
        "batch": b,
        "step_ms": s.total * 1e3,
        "throughput_tok_s": b / s.total,
        "components_ms": {k: np.asarray(getattr(s, k)) * 1e3 for k in COMPONENTS},
        "intensity": s.flops_per_gpu / s.bytes_per_gpu,
    }


def intensity(s: StepTimes) -> float:
    """Arithmetic intensity (FLOP per byte of memory traffic) of a step's busiest GPU."""
    return float(s.flops_per_gpu[0] / s.bytes_per_gpu[0])


def roofline_points(
    r: ReplicaArrays, isl_tokens: float, batch: float, context_tokens: float
) -> dict:
    """Prefill and decode arithmetic intensity against the achievable roofline of the GPU.

    ``peak_flops_per_s`` and ``bandwidth_bytes_per_s`` are the calibrated achievable values
    (datasheet x efficiency), the ones step times use; the ridge point is their ratio.
    """
    pre = prefill(r, float(isl_tokens))
    dec = decode_step(r, float(batch), float(context_tokens))
    peak, bw = float(r.peak_flops[0]), float(r.hbm_bw[0])
    return {
        "peak_flops_per_s": peak,
        "bandwidth_bytes_per_s": bw,
        "ridge_flops_per_byte": float(ridge_point_flops_per_byte(peak, bw)),
        "prefill_intensity": intensity(pre),
        "decode_intensity": intensity(dec),
        "batch": float(batch),
        "isl_tokens": float(isl_tokens),
    }


def scenario_input(scenario, tp: int, pp: int, concurrency: int | None = None) -> EstimateInput:
    """The EstimateInput of a Scenario's single deployment (first GPU, first dtypes) at TP x PP.

    Load: ``concurrency`` if given (sequences on the one replica); else the scenario's arrival rate, or
    the request rate its concurrent users put on the deployment (``closed_loop_qps``: users with
    think time, the interactive response-time law), over the replicas the GPUs hold (``qps``
    with ``dp`` = replicas: steady-state queueing means and percentiles). Users on a deployment
    where no sequence fits are spread over the replicas as a fixed concurrency (the estimate
    then says why it does not fit).
    """

    hw, w, o = scenario.hardware, scenario.workload, scenario.options
    replicas = max(1, hw.total_gpus // (tp * pp))
    load: dict = {}
    if concurrency is not None:
        load = {"concurrency": int(concurrency)}
    elif w.concurrent_users is not None:
        load = {"concurrency": w.concurrent_users, "dp": replicas}
    else:
        load = {"qps": float(w.arrival_rate_per_s), "dp": replicas, "concurrency": None}
    inp = EstimateInput(
        tp=tp, pp=pp, weights=o.weight_dtypes[0], kv=o.kv_dtypes[0], isl=w.isl_tokens,
        osl=w.osl_tokens, link=hw.intra_link, inter_link=hw.inter_link,
        gpus_per_node=hw.gpus_per_node, engine=o.engine, **load,
    )  # fmt: skip
    return inp if concurrency is not None else users_load(scenario, inp)


def users_load(scenario, inp: EstimateInput, gpu_id: str | None = None) -> EstimateInput:
    """``inp`` under the request rate the scenario's concurrent users put on its ``dp``
    replicas of ``gpu_id`` (default: the scenario's first accelerator) (``closed_loop_qps``);
    unchanged under an arrival rate or when nothing fits."""
    from advisor.catalog import accelerators

    w = scenario.workload
    if w.concurrent_users is None:
        return inp
    gpu = accelerators()[gpu_id or scenario.hardware.gpus[0]]
    inp = inp.model_copy(update={"users": w.concurrent_users, "think_time_s": w.think_time_s})
    x = closed_loop_qps(scenario.model_spec(), gpu, inp, w.concurrent_users, w.think_time_s)
    return inp if x is None else inp.model_copy(update={"qps": x, "concurrency": None})


def closed_loop_qps(
    model: ModelSpec, gpu: Accelerator, inp: EstimateInput, users: int, think_time_s: float
) -> float | None:
    """Requests/s that ``users`` users thinking ``think_time_s`` s put on ``inp.dp`` replicas.

    The fixed point X = N / (Z + E2E_mean(X)) (interactive response-time law,
    physics/queueing/closed_loop.py) on the queueing model ``estimate`` uses under a rate
    (``service_for`` + ``latency_under_load``), capped just below the replicas' capacity. None when no sequence
    fits on a replica.
    """
    from advisor.perf.model.closed_loop import closed_loop_load
    from advisor.perf.model.replica import build_replicas
    from advisor.perf.model.service import service_for

    r = build_replicas([replica_config(model, gpu, inp)])
    isl, osl = float(inp.isl), float(inp.osl)
    if batch_cap(r, isl + osl) < 1:
        return None
    # The estimate's own queueing model: the step on a batch grid, interpolated (the exact step
    # inside the fixed point costs ~0.4 s per load; the estimate at the found rate is exact).
    sm = service_for(r, np.array([isl]), np.array([osl]))
    kw = {"isl_tokens": isl, "policy": inp.batching}
    _, x = closed_loop_load(sm, float(users), osl, kw, dp=np.array([float(inp.dp)]),
                            think_time_s=think_time_s)  # fmt: skip
    return float(x[0])


def fmt_ms(x_ms: float | None) -> str:
    """A latency in ms with sensible precision (s above 1,000 ms); '—' when absent.

    >>> fmt_ms(6184.46), fmt_ms(128.29), fmt_ms(23.75), fmt_ms(1.1503), fmt_ms(None)
    ('6.18 s', '128 ms', '23.8 ms', '1.15 ms', '—')
    >>> fmt_ms(11_770.0), fmt_ms(88_024.7), fmt_ms(123_456.0)  # 3 significant figures
    ('11.8 s', '88.0 s', '123 s')
    """
    if x_ms is None or not np.isfinite(x_ms):
        return "—" if x_ms is None else "∞"
    if x_ms >= 100_000:
        return f"{x_ms / 1e3:,.0f} s"
    if x_ms >= 10_000:
        return f"{x_ms / 1e3:,.1f} s"
    if x_ms >= 1000:
        return f"{x_ms / 1e3:,.2f} s"
    if x_ms >= 100:
        return f"{x_ms:.0f} ms"
    if x_ms >= 10:
        return f"{x_ms:.1f} ms"
    return f"{x_ms:.2f} ms"

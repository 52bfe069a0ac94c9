"""Turning a stated deployment and measured serving figures into calibration ``Case`` objects."""

from __future__ import annotations

from advisor.catalog import get_accelerator, get_model
from advisor.perf.importers.common import BenchmarkFileError, Deployment
from advisor.perf.model.replica import ReplicaConfig
from advisor.perf.validation.measurements import Case


def replica_config(dep: Deployment) -> ReplicaConfig:
    """The replica the measurements ran on, as data/measurements.csv rows are read
    (TensorRT-LLM benchmarks give the KV cache 95% of free memory, the others 90%)."""
    return ReplicaConfig(
        model=get_model(dep.model), gpu=get_accelerator(dep.gpu), tp=dep.tp, pp=dep.pp,
        weights=dep.weights, kv=dep.kv, engine=dep.engine, ep=dep.ep,
        dp_attention=dep.dp_attention,
        gpu_memory_utilization=0.95 if dep.engine == "trtllm" else 0.90,
    )  # fmt: skip


def lengths(
    dep: Deployment, name: str, isl: float | None, osl: float | None
) -> tuple[float, float]:
    """Input/output tokens per request: the file's when it has them, else the user's --isl/--osl."""
    isl = isl if isl is not None else dep.isl
    osl = osl if osl is not None else dep.osl
    if isl is None or osl is None:
        raise BenchmarkFileError(
            f"{name}: the file does not give input/output lengths per request; state --isl and --osl"
        )
    if osl < 1 or isl < 1:
        raise BenchmarkFileError(
            f"{name}: input/output lengths {isl:g}/{osl:g} tokens; each must be >= 1"
        )
    return float(isl), float(osl)


def make_case(
    dep: Deployment,
    name: str,
    tag: str,
    kind: str,
    family: str,
    *,
    isl: float,
    osl: float,
    measured: float,
    unit: str,
    batch: float = 1.0,
    qps: float = 0.0,
    requests: int = 0,
    statistic: str = "mean",
    row: dict | None = None,
) -> Case:
    """One client measurement as a Case; its id names the file and the metric. ``requests``:
    the run's completed requests (a mean TTFT over a finite run includes its start-up wave);
    ``row``: what the replay reads of the run (``importers.per_request``: each request's lengths
    and send times), as a published row's notes are read."""
    return Case(
        id=f"{name}:{tag}", kind=kind, family=family, config=replica_config(dep), isl=isl,
        osl=osl, batch=batch, qps=qps, measured=measured, unit=unit, gpus=dep.tp * dep.pp,
        source=f"client file {name}", requests=requests, statistic=statistic,
        row=dict(row or {}),
    )  # fmt: skip

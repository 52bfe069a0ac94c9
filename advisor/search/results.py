"""The search's result types: a deployment with its predicted percentiles, the Pareto points,
near misses, the article's decision-matrix comparison, the capacity plan, the recommendation.

Their own module so that recommend.py, capacity.py and explain.py all import them from below
(no import cycle between the search steps and the search).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

from advisor.search.deployment_spec import DeploymentSpec

_M = ConfigDict(extra="forbid")
PCT = ("p50", "p90", "p95", "p99")


def decode_batch(running_batch: float) -> float:
    """The batch of the decode step a request's token waits for: its own sequence and the
    others in decode (the search's mean running batch), at least 1:

        b = 1 + n   (physics/queueing/running_batch.DecodePhase, the tagged batch)

    The one definition every view shows as "decode batch" (issue 38: 77 / 76 / 75.8 in three
    views), rounded to whole sequences by ``decode_batch_seqs``.

    >>> decode_batch(75.8), decode_batch_seqs(75.8), decode_batch_seqs(0.0)
    (76.8, 77, 1)
    """
    return max(1.0, float(running_batch) + 1.0)


def decode_batch_seqs(running_batch: float) -> int:
    """``decode_batch`` as whole sequences (a page's estimate runs that many per replica)."""
    return max(1, round(decode_batch(running_batch)))


def priced_step_ms(d: Deployment) -> tuple[dict[str, float], float, float] | None:
    """The decode step the search priced for ``d``: (its parts in ms, their sum in ms, the
    decode batch), or None when ``d`` carries no breakdown (a Pareto point's).

    The one figure every view quotes for the deployment in focus (Recommendation's explanation,
    the PDF, the Latency and Interconnect pages; issue 38: 2.70 ms of all-reduce on
    Recommendation and in the PDF, 2.77 / 2.76 ms on Interconnect / Latency, which
    re-evaluated the step exactly at other batches). It is the step of the search's batch
    grid (``evaluate.decode_step_ms``), not a second evaluation.
    """
    bd = d.step_breakdown_ms
    if not bd:
        return None
    parts = {k: v for k, v in bd.items() if k != "batch"}
    return parts, sum(parts.values()), bd.get("batch", decode_batch(d.running_batch))


class Percentiles(BaseModel):
    """One latency's percentiles (ms); the SLA's percentile is one of them."""

    model_config = _M
    p50: float
    p90: float
    p95: float
    p99: float

    def at(self, pct: int) -> float:
        """The ``pct``-th percentile (50, 90, 95 or 99).

        >>> Percentiles(p50=1.0, p90=2.0, p95=3.0, p99=4.0).at(95)
        3.0
        """
        if pct not in (50, 90, 95, 99):
            raise ValueError(f"percentile={pct!r}; allowed: 50, 90, 95, 99")
        return float(getattr(self, f"p{pct}"))


class Deployment(BaseModel):
    """One evaluated deployment with its predicted behaviour at the offered load (ms, tok/s, USD)."""

    model_config = _M
    kind: str  # "aggregated" | "disaggregated"
    description: str
    gpu: str
    tp: int
    pp: int
    dp: int
    weights: str
    kv: str
    speculative: bool
    #: MoE layout of a (decode-pool) replica: expert parallel and attention data parallel
    #: degrees over its TP GPUs (1 = off; else = TP, e.g. DEP8: tp 8, ep 8, attention_dp 8).
    ep: int = 1
    attention_dp: int = 1
    #: {"tp", "dp", "ep", "attention_dp"} of each pool, disaggregated only
    prefill_pool: dict[str, int] | None = None
    decode_pool: dict[str, int] | None = None
    gpus: int
    nodes: int
    ttft_ms: Percentiles
    tpot_ms: Percentiles
    e2e_ms: Percentiles
    stable: bool
    unstable_reason: str | None = None
    #: Meets every target with confidence (the upper end of each range) and the headroom.
    meets_sla: bool
    #: "meets" | "at risk" (every point prediction within its target, some range's upper end
    #: not) | "misses" (search/sla.py verdicts).
    sla_verdict: str = "meets"
    #: At risk: each target whose range reaches past it, with the range, then the measurement
    #: that would narrow it (search/sla.risk_lines); else [].
    at_risk: list[str] = []
    #: Worst (upper end of the predicted percentile's range at the SLA's confidence / target) over
    #: the stated targets, or utilisation / max_utilisation; <= 1 meets the SLA.
    sla_ratio: float
    throughput_tok_s: float
    throughput_per_gpu_tok_s: float
    usd_per_hour: float
    usd_per_million_tokens: float
    max_rate_req_s: float  # stability limit of the whole deployment
    headroom: float  # max_rate_req_s / offered rate
    running_batch: float  # mean sequences in decode per (decode) replica
    #: Decode step of a (decode) replica at running_batch + 1, by component (ms) + "batch".
    step_breakdown_ms: dict[str, float] = {}
    #: Prefill of one prompt alone on a (prefill) replica, by component (ms).
    prefill_breakdown_ms: dict[str, float] = {}
    kv_transfer_ms: float | None = None  # disaggregated: KV cache moved per request
    #: The deployment as a user would set it by hand (advisor/search/deployment_spec.py).
    spec: DeploymentSpec | None = None
    #: Why the active client profile did not price it (outside the profile's deployment or its
    #: runs' range: the shipped calibration did), or None: it did, or no profile is active for
    #: its accelerator and engine (advisor/search/profile_scope.py).
    client_profile_fallback: str | None = None
    #: Interval of each predicted SLA percentile at the SLA's confidence (advisor/search/sla.py):
    #: confidence, percentile, ttft_ms/tpot_ms/e2e_ms [low, high], calibrated, basis.
    intervals: dict[str, Any] | None = None
    #: Mean TPOT at the offered load (the percentiles' mean): the decode step plus, aggregated,
    #: the prefills of arriving prompts that stall it; a disaggregated decode pool never stalls.
    tpot_mean_ms: float | None = None
    #: GPUs of the N+1 spare replica(s) (options.redundancy), included in ``gpus``.
    spare_gpus: int = 0
    #: Purchase price of its whole servers (bought GPUs; None when rented), USD.
    capex_usd: float | None = None
    #: Its purchase is above the scenario's cost.max_capex_usd (so not recommended).
    over_budget: bool = False


class ParetoPoint(BaseModel):
    model_config = _M
    description: str
    gpus: int
    throughput_per_gpu_tok_s: float
    usd_per_million_tokens: float
    latency_ms: float
    meets_sla: bool  # every stated target (TTFT, TPOT, E2E) and the headroom
    #: "meets" | "at risk" | "misses" (Deployment.sla_verdict).
    sla_verdict: str = "meets"
    spec: DeploymentSpec | None = None
    #: Its purchase is above the scenario's budget cap (cost.max_capex_usd).
    over_budget: bool = False
    #: TTFT, TPOT and end-to-end latency at the SLA's percentile (ms).
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_ms: float | None = None
    #: What the search ranks by first (search.ranking), and the headroom it ranks by after the
    #: GPUs: why a point that meets the SLA at a lower cost per token can still rank below.
    usd_per_hour: float | None = None
    headroom: float | None = None


class NearMiss(BaseModel):
    model_config = _M
    deployment: Deployment
    fails: list[str]


class DecisionMatrix(BaseModel):
    model_config = _M
    model_params_b: float
    row: str
    article_answer: str
    note: str
    agrees: bool | None
    differences: list[str]
    article_shaped: Deployment | None = None
    #: The row's replica as the article writes it, e.g. "TP=2, PP=1" (decision_matrix.py).
    article_shape: str = ""


class CapacityRow(BaseModel):
    model_config = _M
    target_rate_req_s: float
    replicas: int  # disaggregated: prefill + decode replicas
    gpus: int
    nodes: int
    prefill_replicas: int | None = None  # disaggregated only
    decode_replicas: int | None = None


class Capacity(BaseModel):
    """Replicas for target rates (advisor/search/capacity.py). For a disaggregated winner the
    ``replica`` / ``gpus_per_replica`` / ``max_rate_per_replica_at_sla_req_s`` fields describe
    a decode replica and the ``prefill_*`` fields a prefill replica."""

    model_config = _M
    kind: str = "aggregated"  # "aggregated" | "disaggregated"
    replica: str
    gpus_per_replica: int
    max_rate_per_replica_at_sla_req_s: float
    prefill_gpus_per_replica: int | None = None
    prefill_max_rate_per_replica_at_sla_req_s: float | None = None
    sla_headroom: float  # multiple of the offered rate the deployment serves within the SLA
    #: The winner is "at risk": rates within the SLA judged on the point predictions.
    at_risk: bool = False
    rows: list[CapacityRow]


class Recommendation(BaseModel):
    model_config = _M
    scenario: str
    model: str
    sla: str
    latency_metric: str  # the metric on the Pareto frontiers, e.g. "P99 TPOT"
    #: Confidence at which "meets the SLA" is decided (scenario sla.confidence).
    confidence: float = 0.8
    #: Headline warning when the winner's accelerator or engine is uncalibrated (predictions from
    #: priors, with its range), else None; the first line of ``explanation`` too.
    warning: str | None = None
    best: Deployment | None
    #: When ``best`` is "at risk" (none meets with confidence): the headline that says so, with
    #: the targets, ranges and measurement (search/sla.risk_headline); else None.
    at_risk: str | None = None
    #: Deployments whose point predictions meet the SLA but whose ranges do not.
    at_risk_count: int = 0
    no_best_reason: str | None = None
    pareto: list[ParetoPoint]
    pareto_cost: list[ParetoPoint]
    near_misses: list[NearMiss]
    explanation: list[str]
    candidates_evaluated: int
    feasible: int
    rejected: dict[str, int]
    decision_matrix: DecisionMatrix
    capacity: Capacity | None
    cost_basis: list[str]
    assumptions: list[str]
    elapsed_ms: float
    #: The stable deployment with the lowest latency on ``latency_metric`` (SLA or not).
    lowest_latency: Deployment | None = None
    #: Exclusive wall time per search phase (advisor/search/timing.py PHASES), ms.
    phase_ms: dict[str, float] = {}

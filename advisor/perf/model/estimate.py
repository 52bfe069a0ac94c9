"""The estimate for one deployment: TTFT, TPOT, end-to-end latency and throughput, with breakdown.

The CLI's ``estimate`` and the app's single-deployment pages call ``estimate``; the search calls
the same step-time functions on many candidates at once, so both give the same numbers.

Load modes: a fixed number of requests in flight (``concurrency``: N clients in a closed loop,
the total over the deployment, spread evenly over its DP replicas), as many as the KV cache
holds (``concurrency="max"``: offline throughput, as trtllm-bench and MLPerf Offline measure),
or Poisson arrivals at ``qps`` requests/s (steady-state means from the queueing model; the
running batch follows from Little's law).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, model_validator

from advisor.catalog import get_interconnect, interconnects
from advisor.catalog.specs import Accelerator, ModelSpec
from advisor.perf.model.intervals import (
    SLA_METRIC_KIND,
    estimate_intervals,
    percentile_intervals,
    steady_percentile_ranges,
)
from advisor.perf.model.predict import (
    concurrency_tpot,
    concurrency_ttft,
    offline_step,
    prefill_interruption_s,
    prefill_stall_per_token_s,
    static_throughput,
)
from advisor.perf.model.profile_range import work_of
from advisor.perf.model.profiles import collective_efficiency, engine_profile, family_efficiency
from advisor.perf.model.replica import (
    ReplicaArrays,
    ReplicaConfig,
    build_replicas,
    low_precision_experts,
    max_running,
    pp_link_for,
    profile_problem,
    tp_link_for,
    with_draft,
)
from advisor.perf.model.speculative_sweep import draft_config, step_times
from advisor.perf.model.step import (
    StepTimes,
    decode_step,
    host_bound_prompt_tokens,
    kernel_layer_overhead_s,
    prefill,
)
from advisor.physics.memory import (
    MemoryBudget,
    expert_parallel_blocker,
    memory_budget,
    moe_spread_blocker,
)
from advisor.physics.speculative import expected_tokens_per_step
from advisor.scenario import DEFAULT_ENGINE, Engine

_STRICT = ConfigDict(extra="forbid", frozen=True)


class EstimateInput(BaseModel):
    """Everything ``estimate`` needs besides the model and GPU specs (validated bounds)."""

    model_config = _STRICT

    tp: Annotated[int, Field(ge=1, le=1024)] = 1
    pp: Annotated[int, Field(ge=1, le=1024)] = 1
    dp: Annotated[int, Field(ge=1, le=100_000)] = 1
    weights: Literal["fp32", "bf16", "fp16", "fp8", "int8", "int4", "mxfp4", "nvfp4"] = "fp16"
    kv: Literal["fp16", "bf16", "fp8", "int8"] = "fp16"
    isl: Annotated[int, Field(ge=1, le=10_000_000)] = 1024
    osl: Annotated[int, Field(ge=1, le=1_000_000)] = 256
    #: Requests in flight over the whole deployment (N clients in a closed loop), spread as
    #: evenly as whole requests go over the ``dp`` replicas; "max": every replica's KV cache full.
    concurrency: Annotated[int, Field(ge=1, le=1_000_000)] | Literal["max"] | None = 1
    qps: Annotated[float, Field(gt=0, le=1e7)] | None = None
    link: str | None = None
    inter_link: str | None = None
    gpus_per_node: Annotated[int, Field(ge=1, le=72)] = 8
    engine: Engine = DEFAULT_ENGINE
    #: MoE expert parallelism over the TP group (whole experts per GPU, two all-to-alls per layer).
    ep: bool = False
    #: MoE attention data parallel over the TP group (whole attention weights on every GPU,
    #: each sequence's KV on one GPU; MLP/experts stay TP or EP): perf.model.replica.ReplicaConfig.
    dp_attention: bool = False
    #: Scheduling: iteration-level (Orca), with chunked prefill (Sarathi-Serve), or static batches.
    batching: Literal["continuous", "chunked", "static"] = "continuous"
    spec_draft: ModelSpec | None = None
    spec_tokens: Annotated[int, Field(ge=1, le=16)] = 4
    spec_acceptance: Annotated[float, Field(ge=0, le=1)] = 0.7
    #: Confidence of the intervals around each headline number (advisor/perf/model/intervals.py).
    confidence: Annotated[float, Field(ge=0.5, le=0.99)] = 0.8
    #: A decode-pool replica of disaggregated serving: its prompts are prefilled on the other
    #: pool, so decode never stalls for them and TPOT is the decode step (as in the search's
    #: decode pool, advisor/search/disaggregated.py). Needs a fixed concurrency.
    prefill_elsewhere: bool = False
    #: Concurrent users in a closed loop behind ``qps`` (perf.model.sweeps.users_load), with
    #: their think time: a client profile's range reads the load as theirs
    #: (advisor/perf/model/profile_range.work_of), as the search does.
    users: Annotated[int, Field(ge=1, le=1_000_000)] | None = None
    think_time_s: Annotated[float, Field(ge=0, le=3600)] = 0.0
    #: Compute the percentiles of a fixed-concurrency load (the closed-loop queueing model,
    #: about 0.4 s each); False for a sweep that draws means only (the Compare batch sweep: 29
    #: of them made the comparison PDF take 15 s warm, issue 38).
    percentiles: bool = True

    @model_validator(mode="after")
    def _prefill_elsewhere(self) -> EstimateInput:
        if self.prefill_elsewhere and (
            self.qps is not None or not isinstance(self.concurrency, int)
            or self.batching == "static"
        ):  # fmt: skip
            raise ValueError(
                "prefill_elsewhere (a disaggregated decode pool) needs a fixed concurrency N "
                f"with continuous batching (got qps={self.qps}, concurrency={self.concurrency!r},"
                f" batching={self.batching!r})"
            )
        return self


def _components(s: StepTimes) -> dict[str, float]:
    return s.component_dict(0)


def _speculative_tpot(
    cfg: ReplicaConfig, draft: ModelSpec, b: float, ctx: float, k: int, a: float
) -> tuple[float, float, dict]:
    """TPOT with speculative decoding: (k draft steps + one verify step of k+1 tokens) / E.

    The draft runs on the same GPUs with the same TP (vLLM's draft-model mode); verification
    processes b x (k+1) query tokens in one target step, which turns compute-bound at large
    batch. Source: Leviathan et al. 2023; formulas.md "Speculative decoding".
    """
    iteration, draft_step, verify, plain = _speculative_steps(cfg, draft, b, ctx, k)
    e = float(expected_tokens_per_step(a, k))
    tpot = iteration / e
    info = {
        "expected_tokens_per_step": e,
        "draft_step_ms": draft_step * 1e3,
        "verify_step_ms": verify * 1e3,
        "plain_step_ms": plain * 1e3,
        "speedup": plain / tpot,
    }
    return tpot, plain, info


def _speculative_steps(
    cfg: ReplicaConfig, draft: ModelSpec, b: float, ctx: float, k: int
) -> tuple[float, float, float, float]:
    """(iteration, draft step, verify step, plain step) in s at ``b`` sequences; one speculative
    iteration = k draft steps, then one verify step of k + 1 tokens per sequence."""
    t = step_times(cfg, draft, np.array([max(b, 1.0)]), np.array([k]), ctx)
    draft_step, verify = float(t["draft_s"][0]), float(t["verify_s"][0, 0])
    return k * draft_step + verify, draft_step, verify, float(t["plain_s"][0])


def _infeasible(
    base: dict, reasons: list[str], suggestions: list[str], concurrency: int, breakdown: dict
) -> dict:
    """The result of a deployment that cannot run as asked: no latencies, the reasons why."""
    return {
        **base, "fits": False, "reasons": reasons, "suggestions": suggestions,
        "ttft_ms": None, "tpot_ms": None, "e2e_ms": None, "throughput_tok_s": 0.0,
        "throughput_tok_s_per_gpu": 0.0, "concurrency": concurrency, "breakdown": breakdown,
    }  # fmt: skip


def context_warnings(model: ModelSpec, isl: int, osl: int) -> list[str]:
    """A warning when isl + osl exceeds the model's trained context (max_position_embeddings).

    Such a sequence is estimated, not refused: engines run it when told to (vLLM
    ``--max-model-len`` with VLLM_ALLOW_LONG_MAX_MODEL_LEN=1, RoPE scaling overrides) and
    published measurements include such rows; only the quality is not guaranteed. Serving
    recommendations still refuse it (advisor.search.recommend).

    >>> from advisor.catalog import get_model
    >>> context_warnings(get_model("llama-2-7b"), 4000, 96)
    []
    >>> print(context_warnings(get_model("llama-2-7b"), 4000, 200)[0][:70])  # config: 4096
    isl + osl = 4,200 tokens exceeds llama-2-7b's trained context of 4,096
    """
    n, limit = isl + osl, model.max_position_embeddings
    if n <= limit:
        return []
    return [
        f"isl + osl = {n:,} tokens exceeds {model.id}'s trained context of {limit:,} tokens "
        "(max_position_embeddings): estimated anyway, as engines run it when the limit is raised; "
        "output quality beyond the trained context is not guaranteed"
    ]


@dataclass(frozen=True)
class _Deployment:
    """What ``estimate`` runs: one replica's arrays (with its draft's, when speculating), its
    memory budget, and the sequences its KV budget and engine hold at isl + osl tokens."""

    cfg: ReplicaConfig
    r: ReplicaArrays
    draft: ReplicaArrays | None
    mem: MemoryBudget
    cap: float
    isl: float
    osl: float


@dataclass
class _Load:
    """What one load mode yields: mean TTFT and TPOT (s), output tokens/s of all replicas, the
    mean running sequences per replica (and in flight over all of them when not that times DP),
    notes, and result fields of that mode (percentiles, KV offload...)."""

    ttft_s: float
    tpot_s: float
    throughput_tok_s: float
    concurrency: float
    notes: list[str] = field(default_factory=list)
    extra: dict = field(default_factory=dict)
    speculative: dict | None = None
    in_flight: float | None = None


@dataclass(frozen=True)
class _Refusal:
    """A load the deployment cannot run as asked: why, and the concurrency that was asked."""

    reasons: list[str]
    concurrency: int


def estimate(model: ModelSpec, gpu: Accelerator, inp: EstimateInput) -> dict:
    """Predict latency and throughput of one deployment; infeasible ones come back with reasons.

    A client profile active for this accelerator and engine applies only inside the conditions
    it was checked on (advisor/perf/model/profile_range.py): the replica is built with the
    deployment and workload of ``inp`` (``replica_config``), and outside them with the shipped
    calibration; ``client_profile_fallback`` (also a note) says why.
    """
    out = _estimate(model, gpu, inp)
    why = profile_fallback(model, gpu, inp)
    if why is None:
        return out
    note = f"client profile not applied: {why}; the shipped calibration is used"
    return {**out, "client_profile_fallback": why, "notes": [*out.get("notes", []), note]}


def profile_fallback(model: ModelSpec, gpu: Accelerator, inp: EstimateInput) -> str | None:
    """Why the active client profile does not apply to this estimate's replica, or None (also
    None when no profile is active for its accelerator and engine)."""
    return profile_problem(replica_config(model, gpu, inp))


def _estimate(model: ModelSpec, gpu: Accelerator, inp: EstimateInput) -> dict:
    """The estimate itself (see ``estimate``).

    Steps: the replica and its memory budget (``_deployment``); what every result carries
    (``_header``); whether it fits; the load mode's means (``_at_request_rate``,
    ``_static_batch``, ``_offline``, ``_closed_loop``); E2E = TTFT + (osl - 1) x TPOT; the
    intervals from the held-out error (``perf.model.intervals.estimate_intervals``).
    Every result carries ``warnings`` (e.g. a sequence longer than the trained context).
    """
    dep = _deployment(model, gpu, inp)
    base = _header(model, gpu, inp, dep)
    reasons = list(dep.mem.reasons)
    if dep.mem.fits and dep.cap < 1:
        reasons.append(f"no {int(dep.isl + dep.osl)}-token sequence fits in the KV budget")
    if reasons:
        return _infeasible(base, reasons, dep.mem.suggestions, 0, {})

    pre = prefill(dep.r, dep.isl)
    breakdown = {"prefill": _components(pre)}
    if inp.qps is not None:
        load = _at_request_rate(dep, inp, float(pre.total[0]), breakdown)
    elif inp.concurrency == "max" and inp.batching != "static":
        load = _offline(dep, inp, float(pre.total[0]), breakdown)
    else:
        load = _over_replicas(dep, inp, float(pre.total[0]), breakdown)
    if isinstance(load, dict):  # unstable at the request rate: the result says why
        return {**base, **load}
    if isinstance(load, _Refusal):
        return _infeasible(base, load.reasons, dep.mem.suggestions, load.concurrency, breakdown)

    base.update(load.extra)
    if inp.qps is None and inp.percentiles and "percentiles" not in base:
        why = _no_percentiles(inp)
        if why is None:
            base.update(_closed_loop_percentiles(dep, inp, float(inp.concurrency)))
        base.setdefault("percentiles_note", why or "the closed loop is beyond its capacity")
    e2e = load.ttft_s + (dep.osl - 1) * load.tpot_s
    in_flight = load.concurrency * inp.dp if load.in_flight is None else load.in_flight
    gpus = inp.tp * inp.pp * inp.dp
    out = {
        **base, "fits": True, "reasons": [], "suggestions": [],
        "ttft_ms": load.ttft_s * 1e3, "tpot_ms": load.tpot_s * 1e3, "e2e_ms": e2e * 1e3,
        "throughput_tok_s": load.throughput_tok_s,
        "throughput_tok_s_per_gpu": load.throughput_tok_s / gpus,
        "concurrency": in_flight, "running_per_replica": load.concurrency,
        "breakdown": breakdown, "notes": _serving_notes(model, inp) + _host_bound_notes(dep, pre) + load.notes,
    }  # fmt: skip
    if load.speculative is not None:
        out["speculative"] = load.speculative
    out["intervals"] = estimate_intervals(
        out, gpu.family, inp.confidence, inp.qps is not None, moe=model.is_moe
    )
    if "percentiles" in out:
        out["percentile_intervals"] = percentile_intervals(out, gpu.family, inp.confidence,
                                                           moe=model.is_moe)  # fmt: skip
        out["steady_intervals"] = _steady_intervals(out, gpu.family, inp.confidence, model.is_moe)
    return out


def _steady_intervals(out: dict, family: str, confidence: float, moe: bool) -> dict:
    """The steady-service range of the P50/P90/P99 of TTFT, TPOT and E2E: the range an SLA
    verdict reads (``intervals.steady_percentile_ranges``, as search/sla.percentile_intervals
    computes it for the app, the PDF and ``recommend``), beside the benchmark-statistic ranges
    of ``percentile_intervals``."""
    got: dict = {"confidence": confidence, "load_regime": out.get("load_regime")}
    for p in ("p50", "p90", "p99"):
        points = {k: out["percentiles"][k][p] for k in SLA_METRIC_KIND
                  if math.isfinite(out["percentiles"][k][p])}  # fmt: skip
        ranges = steady_percentile_ranges(points, str(out["engine"]), family, confidence, moe,
                                          out.get("load_regime"))  # fmt: skip
        for k, r in ranges.items():
            got.setdefault(k, {})[p] = r
    return got


def _no_percentiles(inp: EstimateInput) -> str | None:
    """Why a fixed-concurrency estimate has no percentiles, or None when it has them."""
    if inp.concurrency == "max":
        return "offline (every request queued at once): no steady latency distribution"
    if inp.batching == "static":
        return "static batches: every request of a batch waits the same; see TTFT and TPOT"
    if inp.spec_draft is not None:
        return "speculative decoding: the queueing model has no percentiles for it"
    if inp.prefill_elsewhere:
        return "a disaggregated decode pool: percentiles are the search's (recommend)"
    return None


def replica_config(model: ModelSpec, gpu: Accelerator, inp: EstimateInput) -> ReplicaConfig:
    """One replica of the deployment ``inp`` describes (its links, layout and engine)."""
    intra = get_interconnect(inp.link) if inp.link else None
    inter = get_interconnect(inp.inter_link) if inp.inter_link else None
    return ReplicaConfig(
        model=model, gpu=gpu, tp=inp.tp, pp=inp.pp, weights=inp.weights, kv=inp.kv,
        engine=inp.engine, intra_link=intra, inter_link=inter, gpus_per_node=inp.gpus_per_node,
        ep=inp.ep, dp_attention=inp.dp_attention,
        work=work_of(inp.isl, inp.osl, inp.qps, inp.concurrency, inp.batching, inp.dp, inp.users,
                     inp.think_time_s, inp.prefill_elsewhere),
    )  # fmt: skip


def _deployment(model: ModelSpec, gpu: Accelerator, inp: EstimateInput) -> _Deployment:
    """One replica of the deployment (a draft model's beside it when speculating) and its
    memory budget at isl + osl tokens; cap = min(KV budget / KV per sequence, max_num_seqs)."""
    cfg = replica_config(model, gpu, inp)
    r = build_replicas([cfg])
    ctx_max = float(inp.isl + inp.osl)
    draft_tp, d = 1, None
    if inp.spec_draft is not None:
        dcfg = draft_config(cfg, inp.spec_draft)
        draft_tp, d = dcfg.tp, build_replicas([dcfg])
        r = with_draft(r, d, np.array([0]))
    mem = memory_budget(
        model, gpu, tp=inp.tp, pp=inp.pp, weights_dtype=inp.weights, kv_dtype=inp.kv,
        context_tokens=int(ctx_max), suggest=True, draft=inp.spec_draft, draft_tp=draft_tp,
        attention_dp=bool(r.dp_attn[0]), engine=inp.engine,
    )  # fmt: skip
    cap = float(np.minimum(max_running(r, ctx_max), r.max_num_seqs)[0])
    return _Deployment(cfg, r, d, mem, cap, float(inp.isl), float(inp.osl))


def _header(model: ModelSpec, gpu: Accelerator, inp: EstimateInput, dep: _Deployment) -> dict:
    """What every result carries, feasible or not: the deployment, the engine profile and
    accelerator efficiencies it runs with, its links, memory budget and context warnings."""
    r, mem, cfg = dep.r, dep.mem, dep.cfg
    eng = engine_profile(inp.engine)
    eff = family_efficiency(gpu.family)
    coll = collective_efficiency(tp_link_for(cfg, interconnects()))
    return {
        "model": model.id, "gpu": gpu.id, "tp": inp.tp, "pp": inp.pp, "dp": inp.dp,
        "gpus": inp.tp * inp.pp * inp.dp, "weights": inp.weights, "kv": inp.kv,
        "isl": inp.isl, "osl": inp.osl,
        "engine": inp.engine, "expert_parallel": bool(r.ep[0]),
        "attention_data_parallel": bool(r.dp_attn[0]),
        "engine_profile": {
            "name": eng.name, "calibrated": eng.fitted, "step_overhead_ms": eng.step_overhead_s * 1e3,
            "layer_overhead_us": eng.layer_overhead_s * 1e6,  # a reference layer of 12 kernels
            # this model's layer: its decode-graph kernels at the engine's time per kernel
            "layer_kernels": float(r.graph_kernels_per_layer[0]),
            "layer_overhead_here_us": float(kernel_layer_overhead_s(r)[0]) * 1e6,
            "kernel_dispatch_us": eng.kernel_dispatch_s * 1e6,
            "seq_overhead_us": eng.seq_overhead_s * 1e6, "request_overhead_ms": eng.request_overhead_s * 1e3,
            "efficiency": eng.efficiency, "mem_efficiency": eng.mem_efficiency,
            "calibrated_batched": eng.calibrated_batched,
            "calibrated_under_load": eng.calibrated_under_load,
            "max_num_seqs": eng.max_num_seqs,
            "eta_mem": eff.eta_mem, "eta_compute_16": eff.eta_compute_16,
            "eta_compute_fp8": eff.eta_compute_fp8, "eta_compute_fp4": eff.eta_compute_fp4,
            "family_calibrated": eff.fitted,
            # the value this deployment's link uses (1 over PCIe: physics.collectives.kernel_bound),
            # its fabric's own fit, or borrowed and flagged where the fabric has no rows
            "collective_efficiency": float(r.comm_eff[0]),
            "collective_fabric": coll.fabric,
            "collective_calibrated": coll.calibrated,
            "collective_note": coll.note,
            # the routed experts' kernels (MoE models only): fraction of the GEMM efficiency,
            # fitted apart for fp8/fp4 experts (profiles.moe_efficiency)
            "moe_efficiency": float(r.moe_eff[0]) if model.is_moe else None,
            # and their fixed time per expert of a MoE layer, per accelerator family and expert
            # precision (profiles.moe_expert_overhead_s), in microseconds
            "moe_expert_overhead_us": float(r.moe_expert_overhead_s[0]) * 1e6 if model.is_moe else None,
            "low_precision_experts": low_precision_experts(model, inp.weights) if model.is_moe else None,
            # a batch of n tokens routes like n^g independent ones (profiles.routing_draw_exponent)
            "routing_draw_exponent": float(r.routing_exp[0]) if model.is_moe else None,
        },
        "tp_link": tp_link_for(cfg, interconnects()).id if inp.tp > 1 else None,
        "pp_link": pp_link_for(cfg, interconnects()).id if inp.pp > 1 else None,
        "max_concurrency": int(dep.cap),
        "warnings": context_warnings(model, inp.isl, inp.osl),
        "memory": {
            "weights_gb_per_gpu": mem.weights_bytes_per_gpu / 1e9,
            "kv_budget_gb_per_gpu": mem.kv_budget_bytes_per_gpu / 1e9,
            "draft_weights_gb_per_gpu": mem.draft_weights_bytes_per_gpu / 1e9,
            "kv_bytes_per_token": mem.kv_bytes_per_token,
        },
    }  # fmt: skip


def _serving_notes(model: ModelSpec, inp: EstimateInput) -> list[str]:
    """What a feasible result says first: an engine not calibrated under load, and MoE options
    the model's shapes make the engine ignore (``physics.memory.moe_spread_blocker``)."""
    eng = engine_profile(inp.engine)
    notes: list[str] = []
    if not eng.calibrated_under_load and (inp.qps is not None or inp.concurrency != 1):
        notes.append(
            f"engine {inp.engine!r} is not calibrated under serving load: fitted on {eng.rows} "
            f"rows, {eng.rows_batched} batched, {eng.rows_under_load} at a fixed concurrency or "
            "request rate; its serving overheads are extrapolated"
        )
    blocker = moe_spread_blocker(model, inp.tp)
    ep_blocker = expert_parallel_blocker(model, inp.tp)
    if inp.ep and ep_blocker:
        notes.append(f"expert parallelism ignored: {ep_blocker}")
    if inp.dp_attention and blocker:
        notes.append(f"attention data parallelism ignored: {blocker}")
    return notes


#: A host wait shorter than this is noise, not a prefill the host sets.
HOST_BOUND_MIN_S = 1e-3


def _host_bound_notes(dep: _Deployment, pre: StepTimes) -> list[str]:
    """Where the host's dispatch sets the prefill: TTFT then does not follow the prompt length
    up to the crossover (``step.host_bound_prompt_tokens``), while published SGLang first tokens
    do (sgl-cookbook Qwen3-235B on 8 x B200, rows C0003, S0002, C0081, E0154)."""
    host = float(pre.host[0])
    if host < HOST_BOUND_MIN_S:
        return []
    gpu = float(pre.total[0] - pre.overhead[0]) - host
    until = float(host_bound_prompt_tokens(dep.r)[0])
    return [
        f"prefill set by the host: the CPU takes {(gpu + host) * 1e3:.1f} ms to issue the "
        f"kernels of this {dep.isl:,.0f}-token prefill, longer than the GPU's {gpu * 1e3:.1f} ms "
        f"of work, so the predicted first token is the same for any prompt up to about "
        f"{until:,.0f} tokens. Published SGLang first tokens do grow with the prompt there "
        "(sgl-cookbook, Qwen3-235B on 8 x B200: 65-92 ms at 610 tokens, 115-147 ms at 4,194, "
        "which this model predicts alike): expect shorter first tokens than shown for short "
        "prompts and longer ones near that length"
    ]


def _at_request_rate(
    dep: _Deployment, inp: EstimateInput, prefill_s: float, breakdown: dict
) -> _Load | dict:
    """Poisson arrivals at qps / dp per replica: the queueing model's steady-state means and
    percentiles (``physics.queueing.model.latency_under_load``); the running batch b from Little's
    law, the decode step at b, throughput = qps x osl. Above capacity: the fields of an
    unstable result (latencies inf, throughput at capacity) with the reason."""
    from advisor.perf.model.service import service_for
    from advisor.physics.queueing.model import latency_under_load

    isl, osl = dep.isl, dep.osl
    res = latency_under_load(
        service_for(dep.r, np.array([isl]), np.array([osl])), inp.qps / inp.dp, osl,
        isl_tokens=isl, policy=inp.batching, with_itl=True,
    )  # fmt: skip
    if not bool(res.stable[0]):
        cap_rate = float(res.capacity_req_per_s[0]) * inp.dp
        gpus = inp.tp * inp.pp * inp.dp
        return {
            "fits": True, "stable": False,
            "reasons": [f"{inp.qps:g} req/s exceeds the capacity of about {cap_rate:.3g} req/s "
                        f"({inp.dp} replica(s)); the queue grows without bound"],
            "ttft_ms": math.inf, "tpot_ms": math.inf, "e2e_ms": math.inf,
            "throughput_tok_s": cap_rate * osl, "throughput_tok_s_per_gpu": cap_rate * osl / gpus,
            "concurrency": int(dep.cap) * inp.dp, "running_per_replica": int(dep.cap),
            "breakdown": breakdown, "suggestions": [],
        }  # fmt: skip
    b = float(res.running_mean[0])
    ttft = float(res.ttft.mean_s[0])
    breakdown["decode_step"] = _components(decode_step(dep.r, max(b, 1.0), isl + osl / 2.0))
    breakdown["queueing_ms"] = (ttft - prefill_s) * 1e3
    return _Load(ttft, float(res.tpot.mean_s[0]), inp.qps * osl, b,
                 extra=load_percentiles(res, "poisson"))  # fmt: skip


def load_percentiles(res, load: str) -> dict:
    """The ``percentiles`` (ms: P50, P90, P95, P99 of TTFT, TPOT, ITL and E2E), ``utilisation``
    and ``load_regime`` fields of a result, from the queueing model at its load (replica 0 of
    ``res``, a ``LoadResult`` computed ``with_itl``). ``load``: "poisson" (a request rate) or
    "closed loop" (clients at the rate their cycle gives, ``perf.model.closed_loop``)."""
    from advisor.perf.model.intervals import load_regime

    stats = (("ttft_ms", res.ttft), ("tpot_ms", res.tpot), ("itl_ms", res.itl), ("e2e_ms", res.e2e))
    u = float(res.utilisation[0])
    return {
        "percentiles": {
            name: {f"p{q}": float(getattr(st, f"p{q}_s")[0]) * 1e3 for q in (50, 90, 95, 99)}
            for name, st in stats
        },
        "percentiles_load": load,
        "utilisation": u,
        "load_regime": load_regime(u),
    }


def _closed_loop_percentiles(dep: _Deployment, inp: EstimateInput, clients: float) -> dict:
    """Percentiles of ``clients`` clients in a closed loop over the ``dp`` replicas (no think
    time): the queueing model at the rate X with X x E2E_mean(X) = clients, the model
    ``recommend`` uses for concurrent users and ``perf.validation.percentiles`` checks against published
    ``--max-concurrency`` P50/P99 rows (its means can differ from the closed loop's above by a
    few per cent: two models of one load)."""
    from advisor.perf.model.closed_loop import closed_loop_load
    from advisor.perf.model.service import service_for

    sm = service_for(dep.r, np.array([dep.isl]), np.array([dep.osl]))
    kw = {"isl_tokens": dep.isl, "policy": inp.batching, "with_itl": True}
    res, _ = closed_loop_load(sm, clients, dep.osl, kw, dp=np.array([float(inp.dp)]))
    return load_percentiles(res, "closed loop") if bool(res.stable[0]) else {}


def _static_batch(dep: _Deployment, inp: EstimateInput, n: float, breakdown: dict) -> _Load | str:
    """Static batching on one replica: the whole batch of n prefills together (that gives the
    first token), then decodes osl - 1 steps in lockstep; nobody joins until the longest
    finishes (Orca's "scheduling delay"). TTFT = prefill(n), TPOT = step(n), throughput (of
    this replica) from ``predict.static_throughput``. A batch above the KV budget's cap: why."""
    if n > dep.cap:
        return (
            f"a static batch of {int(n)} exceeds the {int(dep.cap)} sequences the KV budget holds"
        )
    isl, osl = dep.isl, dep.osl
    pre = prefill(dep.r, isl, n)
    breakdown["prefill"] = _components(pre)
    step = decode_step(dep.r, n, isl + osl / 2.0)
    breakdown["decode_step"] = _components(step)
    return _Load(
        float(pre.total[0]), float(step.total[0]),
        float(static_throughput(dep.r, n, isl, osl)[0]), n,
        notes=[f"static batching: {int(n)} prompts prefill together, then decode in lockstep"],
    )  # fmt: skip


def _offline(dep: _Deployment, inp: EstimateInput, prefill_s: float, breakdown: dict) -> _Load:
    """All requests queued (``concurrency="max"``): as many sequences as the KV cache and the
    engine hold, each iteration also prefilling the replacements' prompts
    (``predict.offline_step``); throughput = batch / step x dp."""
    b_arr, step = offline_step(dep.r, np.array([dep.isl]), np.array([dep.osl]))
    b, tpot = float(b_arr[0]), float(step.total[0])
    breakdown["decode_step"] = _components(step)
    return _Load(
        prefill_s, tpot, b / tpot * inp.dp, b,
        notes=[f"offline: {int(b)} sequences running, each iteration also prefills "
               f"{b * dep.isl / dep.osl:.0f} prompt tokens of the requests that replace finished ones"],
    )  # fmt: skip


def _over_replicas(
    dep: _Deployment, inp: EstimateInput, prefill_s: float, breakdown: dict
) -> _Load | _Refusal:
    """N requests in flight over the deployment (``concurrency``, N clients in a closed loop):
    spread as evenly as whole requests go, r = N mod DP replicas run k + 1 = N // DP + 1 and the
    others k (none when N < DP). Each busy kind of replica is run (``_closed_loop``,
    ``_static_batch``; the breakdown is the busier one's); throughput adds up, and the mean
    TTFT, TPOT and E2E are over requests (weights: each kind's request rate), so
    throughput = N x osl / E2E (Little's law over the whole deployment) holds exactly.
    Source: Little 1961 (L = lambda W); formulas.md "Batching and queueing".
    """
    total = dep.cap * inp.dp if inp.concurrency == "max" else float(inp.concurrency or 1)
    k, extra = divmod(int(total), inp.dp)
    kinds = [(n, count) for n, count in ((k + 1, extra), (k, inp.dp - extra)) if n and count]
    loads = []
    for i, (n, _count) in enumerate(kinds):
        bd = breakdown if i == 0 else {"prefill": dict(breakdown["prefill"])}
        if inp.batching == "static":
            load = _static_batch(dep, inp, float(n), bd)
        else:
            load = _closed_loop(dep, inp, float(n), prefill_s, bd)
        if isinstance(load, str):
            spread = (f"--concurrency {int(total)} over {inp.dp} replicas puts {n} on a replica: "
                      if inp.dp > 1 else "")  # fmt: skip
            return _Refusal([spread + load], int(total))
        loads.append(load)
    rates = [
        count * ld.throughput_tok_s / dep.osl for (_, count), ld in zip(kinds, loads, strict=True)
    ]
    first = loads[0]
    if len(kinds) > 1:
        first.notes.append(
            f"{int(total)} requests over {inp.dp} replicas: {kinds[0][1]} run {kinds[0][0]}, "
            f"{kinds[1][1]} run {kinds[1][0]}; means are over requests"
        )
    elif kinds[0][1] < inp.dp:
        first.notes.append(f"{int(total)} requests over {inp.dp} replicas: "
                           f"{inp.dp - kinds[0][1]} replica(s) idle")  # fmt: skip

    def mean(attr: str) -> float:
        return sum(x * getattr(ld, attr) for x, ld in zip(rates, loads, strict=True)) / sum(rates)

    return _Load(
        mean("ttft_s"),
        mean("tpot_s"),
        sum(rates) * dep.osl,
        total / inp.dp,
        notes=first.notes,
        extra=first.extra,
        speculative=first.speculative,
        in_flight=total,
    )


def _closed_loop(
    dep: _Deployment, inp: EstimateInput, n: float, prefill_s: float, breakdown: dict
) -> _Load | str:
    """n sequences kept running on one replica (n clients in a closed loop, or a decode pool).

    TPOT = step(n) + prefill stalls of the n - 1 others' replacements
    (``predict.concurrency_tpot``; with speculation k draft steps and a verify per E tokens,
    the draft's prefill stalling too; a decode pool never stalls); + KV offload over PCIe where
    n exceeds the KV budget (``kv_offload_time_s``). TTFT = prefill (+ the draft's) + the wait
    for the iteration in flight and the prompts queued before it (``predict.concurrency_ttft``).
    Throughput (of this replica) by Little's law: n x osl / (TTFT + (osl - 1) x TPOT). Too
    many sequences for the KV budget, even with the overflow offloaded: why.
    """
    r, d, isl, osl, cfg = dep.r, dep.draft, dep.isl, dep.osl, dep.cfg
    ctx = isl + osl / 2.0
    notes: list[str] = []
    extra: dict = {}
    offload_s = 0.0
    if n > dep.cap:
        offload = _kv_offload(cfg, r, n, isl + osl, ctx)
        if offload is None:
            return (f"{int(n)} sequences exceed the {int(dep.cap)} sequences of "
                    f"{int(isl + osl)} tokens the KV budget holds, and offloading the overflow to "
                    "host memory does not help here (use --concurrency max, more TP or DP, or "
                    "lower-bit KV)")  # fmt: skip
        offload_s = offload["offload_ms_per_step"] / 1e3
        extra["kv_offload"] = offload
        notes.append(offload["note"])
    step = decode_step(r, n, ctx)
    breakdown["decode_step"] = _components(step)
    if offload_s:
        breakdown["decode_step"]["kv_offload"] = offload_s * 1e3
    ttft, spec = prefill_s, None
    if inp.spec_draft is not None and d is not None:
        tpot, _, spec = _speculative_tpot(
            cfg, inp.spec_draft, n, ctx, inp.spec_tokens, inp.spec_acceptance
        )
        # the draft also prefills the prompt before it can propose (as the search counts it)
        draft_pre = float(prefill_interruption_s(d, isl)[0])
        ttft += draft_pre
        breakdown["prefill"]["draft"] = draft_pre * 1e3
        if n > 1:  # the other requests' replacements stall the batch, draft pass included;
            # a decode pool's prompts are prefilled on the other pool: only the draft's pass
            # over each new prompt (it builds the draft's KV there) stalls it
            target_pre = 0.0 if inp.prefill_elsewhere else float(prefill_interruption_s(r, isl)[0])
            p_s = target_pre + draft_pre
            stall = float(prefill_stall_per_token_s(n, osl, p_s))
            tpot += stall
            breakdown["prefill_interruptions_ms_per_token"] = stall * 1e3
    elif inp.prefill_elsewhere:
        tpot = float(step.total[0])
        notes.append("decode pool: prompts are prefilled on the other pool, so decode "
                     "never stalls for them")  # fmt: skip
    elif n > 1:
        tpot = float(concurrency_tpot(r, n, isl, osl)[0])
        breakdown["prefill_interruptions_ms_per_token"] = (tpot - float(step.total[0])) * 1e3
    else:
        tpot = float(step.total[0])
    if n > 1 and not inp.prefill_elsewhere:
        # the TTFT the validation predicts for such rows; with speculation the iteration in
        # flight is k draft steps and a verify, and the cycle runs at the speculative TPOT
        spec_loop = {}
        if spec is not None:
            spec_loop = dict(
                tpot_s=np.array([tpot]),
                iteration_s=np.array([_speculative_steps(
                    cfg, inp.spec_draft, n - 1.0, ctx, inp.spec_tokens
                )[0]]),
            )  # fmt: skip
        wait = float(concurrency_ttft(r, n, isl, osl, **spec_loop)[0]) - prefill_s
        ttft += wait
        breakdown["queueing_ms"] = wait * 1e3
    tpot += offload_s
    throughput = n * osl / (ttft + (osl - 1) * tpot)
    return _Load(ttft, tpot, throughput, n, notes=notes, extra=extra, speculative=spec)


#: Pinned host-to-device copies reach ~80% of the raw PCIe rate (CUDA samples bandwidthTest:
#: ~25-26 GB/s on Gen4 x16 of 31.5 raw; ~50 GB/s on Gen5 x16 of 63).
PINNED_H2D_FRACTION = 0.8


def kv_offload_time_s(overflow_bytes: float, pcie_bytes_per_s: float) -> float:
    """Extra decode-step time when KV overflow lives in host memory: overflow / PCIe bandwidth.

    Every step attends over the whole context, so the offloaded part of the KV cache crosses
    PCIe (host to device, one direction) once per step, after the on-GPU part (no overlap).
    Source: formulas.md "Units and conventions" (PCIe per-direction rates); FlexGen (Sheng et al.
    2023, ICML) for the offloading schedule.

    >>> round(kv_offload_time_s(6.3e9, 63e9) * 1e3, 1)  # 6.3 GB over PCIe Gen5 x16: 100 ms
    100.0
    """
    return overflow_bytes / pcie_bytes_per_s


def _kv_offload(cfg: ReplicaConfig, r, n: float, ctx_max: float, ctx_mean: float) -> dict | None:
    """What running ``n`` sequences costs with the KV overflow in host memory, and the TP alternative."""
    from advisor.perf.model.replica import kv_memory_per_sequence

    budget = float(r.kv_budget_bytes[0])
    if budget <= 0:
        return None
    link = get_interconnect(cfg.gpu.pcie_link)
    pcie_bw = link.bandwidth_bytes_per_s * PINNED_H2D_FRACTION
    need = float(kv_memory_per_sequence(r, ctx_mean)[0]) * n
    overflow = max(need - budget, 0.0)
    t = kv_offload_time_s(overflow, pcie_bw)
    out = {
        "overflow_gb_per_gpu": overflow / 1e9,
        "pcie_link": link.id,
        "pcie_gb_per_s": pcie_bw / 1e9,
        "offload_ms_per_step": t * 1e3,
    }
    alt = None
    for tp in (cfg.tp * 2, cfg.tp * 4):
        if tp > max(cfg.gpu.scale_up_domain, 8):
            break
        alt_cfg = ReplicaConfig(**{**cfg.__dict__, "tp": tp})
        ra = build_replicas([alt_cfg])
        if float(np.minimum(max_running(ra, ctx_max), ra.max_num_seqs)[0]) >= n:
            alt = (tp, float(decode_step(ra, n, ctx_mean).total[0]))
            break
    plain = float(decode_step(r, n, ctx_mean).total[0])
    note = (
        f"KV offload: {overflow / 1e9:.1f} GB per GPU of KV cache lives in host memory and crosses "
        f"{link.name} ({pcie_bw / 1e9:.0f} GB/s achievable) every step: +{t * 1e3:.1f} ms on a "
        f"{plain * 1e3:.1f} ms step"
    )
    if alt is not None:
        out["alternative"] = {"tp": alt[0], "decode_step_ms": alt[1] * 1e3}
        note += (
            f"; TP={alt[0]} holds all {int(n)} sequences on GPU with a {alt[1] * 1e3:.1f} ms step"
        )
    out["note"] = note
    return out

"""The server settings the search's memory budget assumed, per pool of a deployment.

The search sizes each replica's KV cache as the engine profile reads its memory fraction
(``perf.model.replica.build_replicas``: vLLM-style fraction of the whole GPU, or TensorRT-LLM's fraction of what
is free after weights and activations), caps the running batch at min(sequences whose KV fits
at ISL + OSL, the engine's max_num_seqs) and sizes the activation peak at 8,192 batched tokens
(``physics.memory.activation_reserve_bytes``). The launch flags must say the same, whatever the
engine: each engine's memory knob is derived here from the same KV budget in bytes, so vLLM,
SGLang and TensorRT-LLM all leave that budget to the KV cache.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from advisor.catalog import accelerators
from advisor.catalog.specs import Accelerator, ModelSpec
from advisor.physics.memory import (
    DEFAULT_MAX_BATCHED_TOKENS,
    activation_reserve_bytes,
    kv_bytes_per_sequence_per_gpu,
)
from advisor.scenario import Scenario
from advisor.search.deployment_spec import DeploymentSpec
from advisor.search.evaluate import _build
from advisor.search.space import Shape, replica_config, scenario_draft

#: Decimals of the memory fractions written on a command line (4: 1e-4 x 80 GB = 8 MB).
FRACTION_DECIMALS = 4


def vllm_gpu_memory_utilization(
    kv_budget_bytes: float, fixed_bytes: float, capacity_bytes: float
) -> float:
    """vLLM ``--gpu-memory-utilization`` that leaves ``kv_budget_bytes`` per GPU to the KV cache.

        u = (B_kv + F) / C

    F = weights (and a speculative draft's) + activation peak + runtime overhead per GPU,
    C = GPU capacity. Source: vLLM CacheConfig.gpu_memory_utilization, "the fraction of GPU
    memory to be used for the model executor"; the KV cache gets u x C minus what the profiling
    run measured (weights, peak activations, non-torch memory).

    >>> # hand calculation: 80 GB GPU, 35 GB fixed, 37 GB of KV -> (37 + 35) / 80
    >>> vllm_gpu_memory_utilization(37e9, 35e9, 80e9)
    0.9
    """
    return (kv_budget_bytes + fixed_bytes) / capacity_bytes


def trtllm_free_gpu_memory_fraction(
    kv_budget_bytes: float, fixed_bytes: float, capacity_bytes: float
) -> float:
    """TensorRT-LLM ``--kv_cache_free_gpu_memory_fraction`` leaving the same KV budget.

        f = B_kv / (C - F)

    Source: trtllm-serve's option help (tensorrt_llm/commands/serve.py), "Free GPU memory
    fraction reserved for KV Cache, after allocating model weights and buffers".

    >>> # hand calculation: 37 GB of KV out of 80 - 35 = 45 GB free
    >>> round(trtllm_free_gpu_memory_fraction(37e9, 35e9, 80e9), 4)
    0.8222
    """
    return kv_budget_bytes / (capacity_bytes - fixed_bytes)


def sglang_mem_fraction_static(
    kv_budget_bytes: float, static_weights_bytes: float, capacity_bytes: float
) -> float:
    """SGLang ``--mem-fraction-static`` (weights + KV pool) leaving the same KV budget.

        s = (B_kv + W) / C

    W = weights (and a draft's) per GPU; activations live outside the static fraction.
    Source: SGLang ServerArgs.mem_fraction_static help, "the fraction of the memory used for
    static allocation (model weights and KV cache memory pool)".

    >>> # hand calculation: (37 GB of KV + 33 GB of weights) / 80 GB
    >>> sglang_mem_fraction_static(37e9, 33e9, 80e9)
    0.875
    """
    return (kv_budget_bytes + static_weights_bytes) / capacity_bytes


#: Standard normal quantile of the 99.9th percentile: the longest request the server is told to
#: accept covers all but 1 in 1,000 of the workload's lengths.
Z_999 = 3.0902


def lognormal_quantile_tokens(mean_tokens: float, cv: float, z: float = Z_999) -> float:
    """The ``z`` quantile of a length with mean ``mean_tokens`` and coefficient of variation
    ``cv``, taken as lognormal (a positive, right-skewed length; the workload states only its
    mean and CV).

        s^2 = ln(1 + cv^2),  mu = ln(mean) - s^2 / 2,  q = exp(mu + z s)

    Source: the lognormal's moments, E = exp(mu + s^2/2), CV^2 = exp(s^2) - 1 (Johnson, Kotz &
    Balakrishnan, Continuous Univariate Distributions vol. 1, ch. 14).

    >>> # hand calculation: mean 1,000, CV 0.5: s = sqrt(ln 1.25) = 0.472381,
    >>> # mu = ln 1000 - 0.111572 = 6.796183, q = e^(6.796183 + 3.0902 x 0.472381) = e^8.255934
    >>> round(lognormal_quantile_tokens(1000, 0.5))
    3850
    >>> lognormal_quantile_tokens(1000, 0.0)  # fixed lengths: the mean itself
    1000.0
    """
    if cv == 0:
        return float(mean_tokens)
    s2 = np.log1p(cv * cv)
    return float(np.exp(np.log(mean_tokens) - s2 / 2 + z * np.sqrt(s2)))


def context_tokens(sc: Scenario, max_context: int | None = None) -> tuple[int, str]:
    """The longest request (prompt + output, tokens) the servers must accept, and why: the
    stated maximum, else the workload's lengths at their 99.9th percentile (ISL + OSL when the
    lengths are fixed), never past the model's context window."""
    w, limit = sc.workload, sc.model_spec().max_position_embeddings
    if max_context is not None:
        n, why = max_context, "the longest request stated"
    elif w.isl_cv == 0 and w.osl_cv == 0:
        n, why = w.isl_tokens + w.osl_tokens, "ISL + OSL (the workload's lengths are fixed)"
    else:
        n = int(np.ceil(lognormal_quantile_tokens(w.isl_tokens, w.isl_cv)) +
                np.ceil(lognormal_quantile_tokens(w.osl_tokens, w.osl_cv)))  # fmt: skip
        why = (f"the 99.9th percentile of the workload's prompt and output lengths (ISL "
               f"{w.isl_tokens:,} CV {w.isl_cv:g}, OSL {w.osl_tokens:,} CV {w.osl_cv:g}, taken "
               "as lognormal)")  # fmt: skip
    if n > limit:
        n, why = limit, f"{why}, cut to the model's context window ({limit:,})"
    return n, why


@dataclass(frozen=True)
class PoolSettings:
    """One pool of identical replicas and the server settings the search assumed for it."""

    role: str  # "server" (aggregated), "prefill" or "decode"
    tp: int
    pp: int
    replicas: int
    capacity_bytes: float
    kv_budget_bytes: float  # per GPU
    weights_bytes: float  # per GPU, a speculative draft's included
    reserve_bytes: float  # activation peak + runtime overhead per GPU
    max_num_seqs: int
    max_model_len: int
    max_num_batched_tokens: int
    speculative: bool
    #: MoE layout over the replica's TP GPUs: expert parallel, attention data parallel.
    ep: bool = False
    dp_attention: bool = False

    @property
    def gpus_per_replica(self) -> int:
        return self.tp * self.pp

    @property
    def gpu_memory_utilization(self) -> float:
        f = self.weights_bytes + self.reserve_bytes
        return round(
            vllm_gpu_memory_utilization(self.kv_budget_bytes, f, self.capacity_bytes),
            FRACTION_DECIMALS,
        )

    @property
    def free_gpu_memory_fraction(self) -> float:
        f = self.weights_bytes + self.reserve_bytes
        return round(
            trtllm_free_gpu_memory_fraction(self.kv_budget_bytes, f, self.capacity_bytes),
            FRACTION_DECIMALS,
        )

    @property
    def mem_fraction_static(self) -> float:
        return round(
            sglang_mem_fraction_static(
                self.kv_budget_bytes, self.weights_bytes, self.capacity_bytes
            ),
            FRACTION_DECIMALS,
        )


@dataclass(frozen=True)
class Plan:
    """A deployment's pools with their settings, or why it cannot run."""

    spec: DeploymentSpec
    model: ModelSpec
    gpu: Accelerator
    gpus_per_node: int
    pools: tuple[PoolSettings, ...]
    draft_model: str | None
    spec_tokens: int
    reasons: tuple[str, ...] = ()
    #: Why max model length is what it is (settings.context_tokens).
    context_why: str = ""

    @property
    def feasible(self) -> bool:
        return not self.reasons


def _pool(
    sc: Scenario, role: str, shape: Shape, replicas: int, context: int
) -> PoolSettings | list[str]:
    st, rejected = _build(sc, [shape], [replica_config(sc, shape)], np.array([0]))
    if rejected:
        return [f"{role} pool: {why}" for why in rejected]
    r = st.r
    weights = float(r.dense_weight_bytes[0] + r.expert_weight_bytes[0])
    if st.draft is not None and st.draft_row[0] >= 0:
        d = st.draft.take(np.array([st.draft_row[0]]))
        weights += float(d.dense_weight_bytes[0] + d.expert_weight_bytes[0])
    model = sc.model_spec()
    return PoolSettings(
        role=role, tp=shape.tp, pp=shape.pp, replicas=replicas,
        capacity_bytes=accelerators()[shape.gpu].memory_bytes,
        kv_budget_bytes=float(r.kv_budget_bytes[0]), weights_bytes=weights,
        reserve_bytes=activation_reserve_bytes(model, shape.tp),
        max_num_seqs=int(st.max_running[0]),
        max_model_len=context,
        max_num_batched_tokens=DEFAULT_MAX_BATCHED_TOKENS, speculative=shape.spec,
        ep=shape.ep, dp_attention=shape.dpa,
    )  # fmt: skip


def plan(scenario: Scenario, spec: DeploymentSpec, max_context: int | None = None) -> Plan:
    """The pools of ``spec`` for ``scenario`` with the settings its memory budget assumed, and
    the longest request ``context_tokens`` finds (``max_context``: the one stated).

    A deployment that cannot run (evaluate_spec's reasons: GPUs, TP, memory) is a Plan with
    ``reasons`` and no pools.
    """
    from advisor.search.focus import evaluate_spec, spec_shapes

    o = scenario.options
    base = dict(spec=spec, model=scenario.model_spec(), gpu=accelerators()[spec.gpu],
                gpus_per_node=scenario.hardware.gpus_per_node,
                draft_model=scenario_draft(scenario)[0] if spec.speculative else None,
                spec_tokens=o.spec_tokens)  # fmt: skip
    context, why = context_tokens(scenario, max_context)
    base["context_why"] = why
    focus = evaluate_spec(scenario, spec)
    if not focus.fits:
        return Plan(pools=(), reasons=tuple(focus.reasons), **base)
    pools, reasons = [], []
    # N+1: the spare replica of each pool is launched too (it serves, behind the same load
    # balancer; the capacity the search counted is the other replicas')
    spare = 1 if o.redundancy == "n+1" else 0
    for role, shape, dp in spec_shapes(spec):
        got = _pool(scenario, role, shape, dp + spare, context)
        if isinstance(got, list):
            reasons += got
        else:
            pools.append(got)
    fit = min((_longest_fitting(base["model"], spec.kv, p, context) for p in pools), default=0)
    if pools and not reasons and fit < context:
        if max_context is not None:  # stated: a result with its reason, not a server that fails
            reasons.append(
                f"one request of {context:,} tokens (--max-context) needs more KV cache than the "
                f"memory budget leaves per GPU; at most {fit:,} tokens fit: the server would "
                "refuse to start")  # fmt: skip
        else:
            pools = [replace(p, max_model_len=fit) for p in pools]
            base["context_why"] = (f"{why}, cut to the {fit:,} tokens one request's KV cache "
                                   "can take in the memory budget")  # fmt: skip
    return Plan(pools=tuple(pools) if not reasons else (), reasons=tuple(reasons), **base)


def _longest_fitting(model: ModelSpec, kv: str, p: PoolSettings, context: int) -> int:
    """The longest request whose KV cache fits the pool's KV budget per GPU (vLLM refuses to
    start when one request of max model length does not fit). Under attention DP a request
    lives whole on one rank (TP 1 for its KV)."""
    need = kv_bytes_per_sequence_per_gpu(model, kv, context, 1 if p.dp_attention else p.tp, p.pp)
    if need <= p.kv_budget_bytes:
        return context
    return int(context * p.kv_budget_bytes / need)  # KV grows at least linearly past a window

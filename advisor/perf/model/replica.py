"""Replicas as arrays: the per-GPU quantities of many deployments, for vectorised step times.

A *replica* is one copy of the model spread over TP x PP GPUs. ``build_replicas`` turns a list
of replica configurations (possibly of different models and accelerators) into a struct of
numpy arrays, so prefill and decode times of thousands of candidates are computed at once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace

import numpy as np

from advisor.catalog.specs import Accelerator, Interconnect, ModelSpec
from advisor.perf.model.overlay import Overlay, overlay_for
from advisor.perf.model.profile_range import Work
from advisor.perf.model.profiles import (
    attention_efficiency,
    collective_efficiency,
    engine_profile,
    family_efficiency,
    moe_efficiency,
    moe_expert_overhead_s,
    routing_draw_exponent,
)
from advisor.physics.collectives import achievable_fraction_for
from advisor.physics.dispatch import kernels_per_layer
from advisor.physics.memory import (
    DEFAULT_GPU_MEMORY_UTILIZATION,
    activation_reserve_bytes,
    expert_parallel_blocker,
    kv_bytes_per_token_split,
    linear_dtypes,
    linear_weight_bytes,
    moe_spread_blocker,
    weight_placement,
)
from advisor.physics.params import ParamBreakdown, param_breakdown
from advisor.physics.roofline import attention_width

#: Compute path per weight dtype: W16A16, fp8 W8A8, FP4 tensor cores (Blackwell, CDNA4: NVFP4
#: W4A4 at the FP4 rate; MXFP4 at the rate of ``TENSOR_RATE``), or weight-only (W8A16/W4A16) at
#: 16-bit peak. An fp8 or fp4 path on a GPU without those tensor cores runs weight-only: the
#: weights are dequantized to 16-bit in the GEMM (gpt-oss on H100/MI300X: vLLM's Marlin / Triton
#: MXFP4 MoE kernels).
COMPUTE_PATH = {
    "fp32": "16",
    "bf16": "16",
    "fp16": "16",
    "fp8": "fp8",
    "int8": "wo",
    "int4": "wo",
    "mxfp4": "fp4",
    "nvfp4": "fp4",
}
#: The tensor rate a path runs at on GPUs that have its tensor cores, where it is not the path's
#: own: gpt-oss's MXFP4 experts multiply MXFP8 activations on FP4-capable GPUs (W4A8 at the FP8
#: rate; TensorRT-LLM's GPT-OSS deployment guide, MoE backend support matrix).
TENSOR_RATE = {"mxfp4": "fp8"}


def tensor_rate(weights: str, gpu: Accelerator) -> str:
    """The dense peak a model's GEMMs run at: "fp4", "fp8", or "16" (16-bit, weight-only, or
    low-precision weights on a GPU without those tensor cores); which fitted efficiency applies.

    >>> from advisor.catalog import get_accelerator
    >>> b200, h100 = get_accelerator("b200"), get_accelerator("h100-sxm")
    >>> tensor_rate("nvfp4", b200), tensor_rate("mxfp4", b200), tensor_rate("nvfp4", h100)
    ('fp4', 'fp8', '16')
    >>> tensor_rate("fp8", h100), tensor_rate("int4", h100), tensor_rate("bf16", b200)
    ('fp8', '16', '16')
    """
    path = COMPUTE_PATH[weights]
    native = {"fp8": gpu.peak_flops_per_s.fp8, "fp4": gpu.peak_flops_per_s.fp4}
    if not native.get(path):
        return "16"
    return TENSOR_RATE.get(weights, path)


#: Engines whose decode graph runs each fp8/fp4 GEMM's activation quantization as a kernel of its
#: own (SGLang's model code calls sgl-kernel's per-token(-group) quantization before each GEMM and
#: captures the ops one by one). vLLM compiles the model (torch.compile fuses the quantization
#: into the norm or activation before the GEMM) and TensorRT-LLM ships fused norm-quantize
#: kernels, so their graphs count none; counting them there too made held-out batch-1 decode
#: worse (leave one source out, means 11.6% -> 13.2%; docs/accuracy.md, 2026-12-06).
SEPARATE_QUANT_KERNELS = frozenset({"sglang"})


def attention_path(model: ModelSpec, kv_dtype: str, gpu: Accelerator) -> str:
    """Dtype the attention kernels compute in: "fp8" with an fp8 KV cache on fp8 tensor cores,
    else "16" (the weights' dtype does not matter: activations stay 16-bit between GEMMs).

    FlashAttention-3 with an fp8 KV cache quantizes the queries too and runs Q.K^T and P.V in
    fp8 (vLLM docs, "Quantized KV Cache"; Shah et al. 2024, FlashAttention-3). MLA stays 16-bit:
    its prefill attends over the 16-bit up-projection of the latent (vLLM MLACommonImpl).

    >>> from advisor.catalog import get_accelerator, get_model
    >>> h100, a100 = get_accelerator("h100-sxm"), get_accelerator("a100-sxm-80gb")
    >>> attention_path(get_model("llama-3.1-8b"), "fp8", h100), attention_path(
    ...     get_model("llama-3.1-8b"), "fp16", h100), attention_path(get_model("llama-3.1-8b"),
    ...     "fp8", a100), attention_path(get_model("deepseek-v3"), "fp8", h100)
    ('fp8', '16', '16', '16')
    """
    if kv_dtype == "fp8" and gpu.peak_flops_per_s.fp8 and not model.is_mla:
        return "fp8"
    return "16"


@dataclass(frozen=True)
class ReplicaConfig:
    model: ModelSpec
    gpu: Accelerator
    tp: int = 1
    pp: int = 1
    weights: str = "fp16"
    kv: str = "fp16"
    engine: str = "generic"
    #: Link carrying TP all-reduces (None: the GPU's scale-up link, or inter_link across nodes).
    intra_link: Interconnect | None = None
    inter_link: Interconnect | None = None
    gpus_per_node: int = 8
    gpu_memory_utilization: float = DEFAULT_GPU_MEMORY_UTILIZATION
    int4_group_size: int = 128
    #: Expert parallelism for MoE layers: each of the TP GPUs holds num_experts / TP whole experts
    #: (instead of a 1/TP slice of every expert); two all-to-alls per MoE layer.
    ep: bool = False
    #: Attention data parallel over the TP group (MoE models): each GPU runs attention for 1/TP
    #: of the sequences with all heads and the whole attention weights; the routed experts stay
    #: split over the TP GPUs (or EP) on the gathered tokens, and what else is whole per GPU is
    #: the engine's (memory.attention_dp_extra_bytes: vLLM all but the routed experts; SGLang
    #: --attn-dp-size = --tp-size also the embedding; TensorRT-LLM enable_attention_dp).
    dp_attention: bool = False
    label: str = ""
    #: What the replica serves (lengths, load per replica), for a client profile's range
    #: (advisor/perf/model/replica.applied): a profile applies only where it is stated and inside.
    work: Work | None = None


def applied(cfg: ReplicaConfig) -> tuple[Overlay | None, str | None]:
    """The overlay a replica is built with, and why an active client profile for its
    accelerator and engine is not (None: it is, or there is none). A profile applies where its
    domain (advisor/perf/model/profile_range.Domain.problem) holds the replica's deployment and
    the workload it serves (``cfg.work``); every prediction (the estimate, the search's
    candidates, the pages' charts) builds its replicas here, so one deployment at one load gets
    one calibration wherever it is shown."""
    ov = overlay_for(cfg.gpu.id, cfg.engine)
    if ov is None or ov.domain is None:
        return ov, None
    why = ov.domain.problem(cfg.model.id, cfg.tp, cfg.pp, cfg.weights, cfg.kv, cfg.ep,
                            cfg.dp_attention, cfg.work)  # fmt: skip
    return (None, why) if why else (ov, None)


def profile_problem(cfg: ReplicaConfig) -> str | None:
    """Why the active client profile does not apply to this replica (``applied``), or None."""
    return applied(cfg)[1]


@dataclass(frozen=True)
class ReplicaArrays:
    """Per-candidate quantities, all numpy arrays of shape [n] (SI units, per GPU of a stage)."""

    tp: np.ndarray
    pp: np.ndarray
    layers_stage: np.ndarray  # layers on the busiest pipeline stage
    hidden: np.ndarray
    dense_weight_bytes: np.ndarray  # per GPU: everything but routed experts
    expert_weight_bytes: np.ndarray  # per GPU: all routed experts of the stage
    num_experts: np.ndarray  # 0 for dense models
    experts_per_tok: np.ndarray
    linear_active_params: np.ndarray  # per GPU: non-expert matmul params per token (excl. lm_head)
    expert_active_params: np.ndarray  # per GPU, TP-sliced: routed-expert params per token
    moe_layer_frac: np.ndarray  # MoE layers / layers
    ep: np.ndarray  # bool: expert parallelism over the TP group
    dp_attn: np.ndarray  # bool: attention data parallel over the TP group
    attn_active_params: np.ndarray  # per GPU under TP: attention projection params / TP
    a2a_bw: np.ndarray  # achievable per-GPU bandwidth for all-to-alls over the TP link
    head_params: np.ndarray  # per GPU: lm_head params (logits only for a sequence's last token)
    weight_elements: np.ndarray  # per GPU: quantized elements (for dequantization)
    #: per GPU: the routed experts' share of weight_elements (a step dequantizes only the
    #: experts it reads, as it reads only those)
    expert_weight_elements: np.ndarray
    attn_width: np.ndarray  # per GPU: decode attention_width / TP (MLA: the absorbed path)
    prefill_attn_width: np.ndarray  # per GPU: prefill attention_width / TP (MLA: uncompressed MHA)
    kv_full_per_token: np.ndarray  # per GPU: bytes/token of the full-attention layers
    kv_window_per_token: np.ndarray  # per GPU: bytes/token of the sliding-window layers
    window: np.ndarray  # sliding window tokens (inf if none)
    window_layer_frac: np.ndarray  # share of the layers that are windowed (attention FLOPs)
    kv_budget_bytes: np.ndarray  # per GPU, may be negative (does not fit)
    draft_kv_per_token: np.ndarray  # per GPU: a speculative draft's KV bytes/token (0: no draft)
    peak_flops: np.ndarray  # achievable: dense peak of the compute path x eta x engine eff
    peak_flops_16: np.ndarray  # achievable 16-bit (dequantization)
    attn_peak_flops: np.ndarray  # achievable peak of the attention kernels' dtype (attention_path)
    hbm_bw: np.ndarray  # achievable bytes/s
    weight_only: np.ndarray  # bool: W8A16 / W4A16
    act_bytes: np.ndarray
    tp_link_bw: np.ndarray  # per GPU one direction, effective for TP GPUs
    tp_link_latency: np.ndarray
    tp_link_nvls: np.ndarray  # bool
    tp_link_id: np.ndarray  # object array of ids (grouping for collectives)
    custom_allreduce: np.ndarray  # bool: the engine has one-shot/two-shot kernels
    pp_link_bw: np.ndarray
    pp_link_latency: np.ndarray
    step_overhead_s: np.ndarray
    layer_overhead_s: np.ndarray
    #: host time per kernel of an eager pass (a prefill), and the kernels of one layer
    kernel_dispatch_s: np.ndarray
    kernels_per_layer: np.ndarray
    #: kernels of one layer in a replayed decode graph (step.layer_overhead_s), activation
    #: quantizations only where the engine runs them apart (SEPARATE_QUANT_KERNELS)
    graph_kernels_per_layer: np.ndarray
    seq_overhead_s: np.ndarray
    request_overhead_s: np.ndarray
    max_num_seqs: np.ndarray
    attn_eff: np.ndarray  # attention kernels' fraction of the GEMM efficiency (calibrated)
    moe_eff: np.ndarray  # routed-expert (fused MoE) kernels' fraction of it (calibrated)
    #: a batch of n tokens routes like n^routing_exp independent tokens (calibrated)
    routing_exp: np.ndarray
    #: fixed time per routed expert a GPU holds, per MoE layer and pass (per accelerator family
    #: and expert precision; calibrated)
    moe_expert_overhead_s: np.ndarray
    # in-engine collectives' fraction of the nccl-tests data rate (not latency): calibrated where the GPUs' copy
    # kernels set the rate (NVLink, Infinity Fabric), 1 where the link does (PCIe, networks)
    comm_eff: np.ndarray
    gpus: np.ndarray  # TP x PP

    @property
    def n(self) -> int:
        return int(self.tp.shape[0])

    def take(self, idx: np.ndarray) -> ReplicaArrays:
        """The subset of candidates at ``idx``."""
        return ReplicaArrays(**{f.name: getattr(self, f.name)[idx] for f in fields(self)})

    def column(self) -> ReplicaArrays:
        """Every field as an [n, 1] column: a step over a [1, G] row of batches broadcasts to
        [n, G] (each replica's own figures computed once, not copied G times)."""
        return ReplicaArrays(**{f.name: getattr(self, f.name)[:, None] for f in fields(self)})


def repeat(r: ReplicaArrays, n: int) -> ReplicaArrays:
    """The first candidate of ``r`` repeated ``n`` times (so every argument can be an [n] array)."""
    return r.take(np.zeros(int(n), dtype=int))


_BREAKDOWNS: dict[str, ParamBreakdown] = {}


def _breakdown(model: ModelSpec) -> ParamBreakdown:
    # ModelSpec is not hashable (its sources dict); its JSON identifies it exactly.
    key = model.model_dump_json(exclude={"sources", "notes", "name"})
    if key not in _BREAKDOWNS:
        _BREAKDOWNS[key] = param_breakdown(model)
    return _BREAKDOWNS[key]


def tp_link_for(cfg: ReplicaConfig, catalog_links: dict[str, Interconnect]) -> Interconnect:
    """The link TP collectives cross: the node's scale-up link, or the inter-node link."""
    if cfg.tp > cfg.gpus_per_node or cfg.tp > cfg.gpu.scale_up_domain:
        if cfg.inter_link is not None:
            return cfg.inter_link
        return catalog_links["ib-ndr"]
    if cfg.intra_link is not None:
        return cfg.intra_link
    return catalog_links[cfg.gpu.scale_up_link]


def pp_link_for(cfg: ReplicaConfig, catalog_links: dict[str, Interconnect]) -> Interconnect:
    """The link between pipeline stages: inside a node if the replica fits in one."""
    if cfg.tp * cfg.pp > cfg.gpus_per_node:
        return cfg.inter_link or catalog_links["ib-ndr"]
    return cfg.intra_link or catalog_links[cfg.gpu.scale_up_link]


def low_precision_experts(model: ModelSpec, weights: str) -> bool:
    """The routed experts run fp8 or fp4 GEMMs (block- or micro-scaled weights), not 16-bit.

    Weight-only int8/int4 experts dequantize to 16-bit tiles, so they count as 16-bit.

    >>> from advisor.catalog import get_model
    >>> low_precision_experts(get_model("deepseek-v3"), "fp8"), low_precision_experts(get_model("mixtral-8x7b"), "bf16")
    (True, False)
    >>> low_precision_experts(get_model("gpt-oss-120b"), "mxfp4")  # MXFP4 experts, bf16 attention
    True
    """
    return COMPUTE_PATH.get(linear_dtypes(model, weights)[0], "16") in ("fp8", "fp4")


def _model_part(cfg: ReplicaConfig, memo: dict) -> tuple[dict[str, object], dict[str, object]]:
    """The row fields that depend on the model and its split alone (not on the GPU or links; on
    the engine only through what attention DP keeps whole per GPU), and the intermediate
    figures ``build_replicas`` combines with the GPU's: (fields, intermediates). ``memo``: what
    the splits of one ``build_replicas`` call share (the parameter breakdown, the KV bytes per
    token of a TP, the activation reserve)."""
    m = cfg.model
    b = _memo(memo, ("breakdown", id(m)), lambda: _breakdown(m))
    tp, pp = cfg.tp, cfg.pp
    layers = m.num_hidden_layers
    layers_stage = math.ceil(layers / pp)
    share = layers_stage / layers
    spreads = moe_spread_blocker(m, tp) is None
    dp_attn = cfg.dp_attention and spreads
    placement = weight_placement(
        m, cfg.weights, tp, pp, cfg.int4_group_size, b, dp_attn, cfg.engine
    )
    expert_bytes = linear_weight_bytes(m, cfg.weights, cfg.int4_group_size, b)[0] / tp * share
    dense_bytes = placement.per_gpu_bytes - expert_bytes
    head_params = m.vocab_size * m.hidden_size / tp  # lm_head matmul on the last stage
    linear_active = (b.linear_layers - b.moe_experts) / tp * share
    expert_active = b.moe_active_experts / tp * share
    w_layers = m.num_sliding_window_layers
    kv = _memo(memo, ("kv", id(m), cfg.kv, tp, dp_attn),
               lambda: kv_bytes_per_token_split(m, cfg.kv, tp, dp_attn))  # fmt: skip
    kv_full, kv_win = (x * share for x in kv)
    e_dtype, o_dtype = linear_dtypes(m, cfg.weights)
    fields_ = dict(
        tp=tp, pp=pp, layers_stage=layers_stage, hidden=m.hidden_size,
        dense_weight_bytes=dense_bytes, expert_weight_bytes=expert_bytes,
        num_experts=m.num_experts or 0, experts_per_tok=m.num_experts_per_tok or 0,
        linear_active_params=linear_active, head_params=head_params,
        expert_active_params=expert_active,
        moe_layer_frac=m.num_moe_layers / layers,
        ep=cfg.ep and expert_parallel_blocker(m, tp) is None,
        dp_attn=dp_attn, attn_active_params=b.attention / tp * share,
        attn_width=attention_width(m, "decode") / tp,
        prefill_attn_width=attention_width(m, "prefill") / tp, kv_full_per_token=kv_full, kv_window_per_token=kv_win,
        window=float(m.sliding_window) if w_layers else math.inf,
        window_layer_frac=w_layers / layers,
        draft_kv_per_token=0.0,
        act_bytes=4.0 if cfg.weights == "fp32" else 2.0,
        gpus=tp * pp,
    )  # fmt: skip
    return fields_, dict(
        per_gpu_bytes=placement.per_gpu_bytes,
        reserve=_memo(memo, ("reserve", id(m), tp), lambda: activation_reserve_bytes(m, tp)),
        dtypes=(e_dtype, o_dtype),
        quantized=b.moe_experts if e_dtype != o_dtype else b.linear_layers,
        experts=b.moe_experts,
        share=share,
        low_precision_experts=low_precision_experts(m, cfg.weights),
    )


def _hw_part(
    cfg: ReplicaConfig, eng, eff, ov: Overlay, dtypes: tuple[str, str]
) -> dict[str, object]:
    """The row fields set by the GPU, the engine, the weight and KV dtypes and a client
    overlay (not by the split): shared by every TP and PP of them."""
    m, g = cfg.model, cfg.gpu
    path = COMPUTE_PATH[cfg.weights]
    peak16 = g.peak_flops_per_s.bf16 or g.peak_flops_per_s.fp16
    native = {"fp8": g.peak_flops_per_s.fp8, "fp4": g.peak_flops_per_s.fp4}
    rate = tensor_rate(cfg.weights, g)
    if rate == "fp4":  # NVFP4 W4A4 on FP4 tensor cores
        peak = native["fp4"] * eff.eta_compute_fp4
    elif rate == "fp8":
        peak = native["fp8"] * eff.eta_compute_fp8
    else:  # 16-bit, weight-only, or fp8/fp4 weights on a GPU without such tensor cores
        peak = peak16 * eff.eta_compute_16
    weight_only = rate == "16" and path != "16"  # dequantized to 16-bit in the GEMM
    if attention_path(m, cfg.kv, g) == "fp8":
        attn_peak = g.peak_flops_per_s.fp8 * eff.eta_compute_fp8  # type: ignore[operator]
    else:
        attn_peak = peak16 * eff.eta_compute_16
    cf = ov.compute_factor
    return dict(
        peak_flops=peak * eng.efficiency * cf,
        peak_flops_16=peak16 * eff.eta_compute_16 * eng.efficiency * cf,
        attn_peak_flops=attn_peak * eng.efficiency * cf,
        hbm_bw=g.hbm_bandwidth_bytes_per_s * eff.eta_mem * eng.mem_efficiency * ov.mem_factor,
        weight_only=weight_only,
        custom_allreduce=eng.custom_allreduce,
        step_overhead_s=eng.step_overhead_s if ov.step_overhead_s is None else ov.step_overhead_s,
        layer_overhead_s=eng.layer_overhead_s,
        kernel_dispatch_s=eng.kernel_dispatch_s,
        seq_overhead_s=eng.seq_overhead_s,
        request_overhead_s=eng.request_overhead_s if ov.request_overhead_s is None else ov.request_overhead_s,
        max_num_seqs=eng.max_num_seqs,
        attn_eff=attention_efficiency(),
        routing_exp=routing_draw_exponent(),
        # GEMMs whose activations are quantized on the fly (their weights on native tensor cores)
        _act_quant=tuple(bool(native.get(COMPUTE_PATH.get(d, "16"))) for d in dtypes),
    )  # fmt: skip


def _link_part(tl: Interconnect, pl: Interconnect, tp: int) -> dict[str, object]:
    """The row fields of the links a replica's TP and PP traffic crosses."""
    bw = tl.effective_bandwidth_bytes_per_s(tp)
    return dict(
        tp_link_bw=bw, tp_link_latency=tl.latency_s,
        tp_link_nvls=tl.in_switch_reduction, tp_link_id=tl.id,
        a2a_bw=bw * achievable_fraction_for(tl),
        pp_link_bw=pl.effective_bandwidth_bytes_per_s(2), pp_link_latency=pl.latency_s,
        comm_eff=collective_efficiency(tl).value,
    )  # fmt: skip


def _memo(memo: dict, key: tuple, make):
    if key not in memo:
        memo[key] = make()
    return memo[key]


class _Parts:
    """Distinct values of one kind of row part, and each configuration's index into them."""

    def __init__(self) -> None:
        self.index: dict[tuple, int] = {}
        self.values: list = []
        self.rows: list[int] = []

    def add(self, key: tuple, make) -> object:
        k = self.index.get(key)
        if k is None:
            k = self.index[key] = len(self.values)
            self.values.append(make())
        self.rows.append(k)
        return self.values[k]

    def column(self, name: str, dtype) -> np.ndarray:
        """Field ``name`` of every configuration: its distinct values gathered by index."""
        values = [v[name] for v in self.values]
        return np.array(values, dtype=dtype)[np.array(self.rows, dtype=int)]


_BOOL_FIELDS = ("weight_only", "tp_link_nvls", "custom_allreduce", "ep", "dp_attn")


def _dtype(name: str):
    if name == "tp_link_id":
        return object
    return bool if name in _BOOL_FIELDS else float


_NO_OVERLAY = Overlay()


def _kernel_part(m: ModelSpec, tp: int, act_quant: tuple[bool, bool], separate: bool) -> dict:
    """Kernels of one layer: eagerly dispatched (every activation quantization its own kernel)
    and in the decode graph (those only where the engine runs them apart)."""
    eager = kernels_per_layer(m, tp, *act_quant)
    return {"kernels_per_layer": eager,
            "graph_kernels_per_layer": eager if separate else kernels_per_layer(m, tp)}  # fmt: skip


def build_replicas(configs: list[ReplicaConfig]) -> ReplicaArrays:
    """Struct-of-arrays for ``configs``.

    Hundreds of configurations span a few models, splits, GPUs, engines and links: each row
    part (the model's split, the GPU and engine with the dtypes, the links, the kernels, the
    MoE efficiency) is computed once per distinct key and its columns gathered by index; only
    the KV budget and the dequantized elements combine parts per row, as numpy columns (the
    same IEEE operations in the same order as per row). The catalog and calibration do not
    change within a call, and the configurations hold the objects keyed by identity for its
    length (the overlays are kept in the keys' values).
    """
    from advisor.catalog import interconnects

    links = interconnects()
    model, hw, link, kern, moe = _Parts(), _Parts(), _Parts(), _Parts(), _Parts()
    engines: dict[tuple, tuple] = {}
    shared: dict = {}
    gmu, mem, kv_free = [], [], []
    for cfg in configs:
        m, g, tp, pp = cfg.model, cfg.gpu, cfg.tp, cfg.pp
        # the engine: what attention DP keeps whole per GPU is the engine's (weight_placement)
        key = (id(m), cfg.weights, tp, pp, cfg.kv, cfg.dp_attention, cfg.ep, cfg.int4_group_size,
               cfg.engine)  # fmt: skip
        row, mp = model.add(key, lambda cfg=cfg: _model_part(cfg, shared))
        ek = (id(g), cfg.engine)
        if ek not in engines:
            engines[ek] = (engine_profile(cfg.engine), family_efficiency(g.family))
        eng, eff = engines[ek]
        # A client profile, where it holds this deployment and workload (``applied``).
        ov = applied(cfg)[0] or _NO_OVERLAY
        h = hw.add((id(g), cfg.engine, id(m), cfg.weights, cfg.kv, id(ov), mp["dtypes"]),
                   lambda cfg=cfg, eng=eng, eff=eff, ov=ov, d=mp["dtypes"]: dict(
                       _hw_part(cfg, eng, eff, ov, d), _ov=ov))  # fmt: skip
        tl, pl = tp_link_for(cfg, links), pp_link_for(cfg, links)
        link.add((id(tl), id(pl), tp), lambda tl=tl, pl=pl, tp=tp: _link_part(tl, pl, tp))
        sep = cfg.engine in SEPARATE_QUANT_KERNELS
        kern.add(
            (id(m), tp, h["_act_quant"], sep),
            lambda m=m, tp=tp, q=h["_act_quant"], sep=sep: _kernel_part(m, tp, q, sep),
        )
        lp = mp["low_precision_experts"]
        moe.add(
            (lp, g.family),
            lambda lp=lp, f=g.family: {
                "moe_eff": moe_efficiency(lp, f),
                "moe_expert_overhead_s": moe_expert_overhead_s(lp, f),
            },
        )
        gmu.append(cfg.gpu_memory_utilization)
        mem.append(g.memory_bytes)
        kv_free.append(eng.kv_fraction_of_free)
    # the parts of each model split that combine with the GPU's per row
    mrows = np.array(model.rows, dtype=int)

    def mcol(name: str, part: int = 1, dtype=float) -> np.ndarray:
        return np.array([v[part][name] for v in model.values], dtype=dtype)[mrows]

    per_gpu, reserve = mcol("per_gpu_bytes"), mcol("reserve")
    mem_a, gmu_a = np.array(mem, dtype=float), np.array(gmu, dtype=float)
    free = mem_a - per_gpu - reserve
    budget = np.where(
        np.array(kv_free, dtype=bool),
        np.where(free > 0, gmu_a * free, free),
        mem_a * gmu_a - per_gpu - reserve,
    )
    weight_only = hw.column("weight_only", bool)
    tp_a, share = mcol("tp", 0), mcol("share")
    quantized = np.where(weight_only, mcol("quantized") / tp_a * share, 0.0)
    experts = np.where(weight_only, mcol("experts") / tp_a * share, 0.0)
    computed = {"kv_budget_bytes": budget, "weight_elements": quantized,
                "expert_weight_elements": experts, "weight_only": weight_only}  # fmt: skip
    cols: dict[str, np.ndarray] = {}
    sources = {**{k: hw for k in hw.values[0]}, **{k: link for k in link.values[0]},
               "kernels_per_layer": kern, "graph_kernels_per_layer": kern, "moe_eff": moe,
               "moe_expert_overhead_s": moe} if configs else {}  # fmt: skip
    model_fields = model.values[0][0] if configs else {}
    for f in fields(ReplicaArrays):
        name = f.name
        if name in computed:
            cols[name] = computed[name]
        elif name in model_fields:
            cols[name] = mcol(name, 0, _dtype(name))
        elif configs:
            cols[name] = sources[name].column(name, _dtype(name))
        else:
            cols[name] = np.array([], dtype=_dtype(name))
    return ReplicaArrays(**cols)


def kv_bytes_per_sequence(r: ReplicaArrays, context_tokens: np.ndarray) -> np.ndarray:
    """KV bytes one sequence of ``context_tokens`` holds on a GPU of the busiest stage."""
    c = np.asarray(context_tokens, dtype=float)
    return r.kv_full_per_token * c + r.kv_window_per_token * np.minimum(c, r.window)


def kv_memory_per_sequence(r: ReplicaArrays, context_tokens: np.ndarray) -> np.ndarray:
    """KV memory one sequence takes on a GPU: the target's KV plus a speculative draft's."""
    c = np.asarray(context_tokens, dtype=float)
    return kv_bytes_per_sequence(r, c) + r.draft_kv_per_token * c


def with_draft(r: ReplicaArrays, draft: ReplicaArrays, rows: np.ndarray) -> ReplicaArrays:
    """The replicas ``r`` with a speculative draft (``draft.take(rows)``) on the same GPUs.

        budget' = budget - draft weights per GPU
        memory per sequence' = target KV + draft KV per token x context

    Every running sequence keeps its context in both models' caches. The draft runs on the
    target's workers and vLLM allocates its KV blocks from the same gpu_memory_utilization pool
    (vllm/v1/spec_decode/draft_model.py and eagle.py: the drafter's attention layers join the
    KV-cache config). Rows < 0 carry no draft. The draft's sliding windows, if any, are
    charged in full (conservative); its KV is not read by the target's decode step.
    """
    rows = np.asarray(rows)
    has = rows >= 0
    d = draft.take(np.maximum(rows, 0))
    weights = np.where(has, d.dense_weight_bytes + d.expert_weight_bytes, 0.0)
    kv = np.where(has, d.kv_full_per_token + d.kv_window_per_token, 0.0)
    return replace(
        r, kv_budget_bytes=r.kv_budget_bytes - weights, draft_kv_per_token=r.draft_kv_per_token + kv
    )


def max_running(r: ReplicaArrays, context_tokens: np.ndarray) -> np.ndarray:
    """Sequences whose KV fits at ``context_tokens`` each (paged, block waste ignored), >= 0.

    A sequence holds the target's KV and, with speculative decoding, the draft's
    (``kv_memory_per_sequence``).
    """
    per_seq = kv_memory_per_sequence(r, context_tokens)
    with np.errstate(divide="ignore", invalid="ignore"):
        n = np.floor(np.where(r.kv_budget_bytes > 0, r.kv_budget_bytes / per_seq, 0.0))
    return np.maximum(n, 0.0)

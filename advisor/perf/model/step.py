"""Step times of a replica: one decode iteration and one prefill, with their breakdown.

Vectorised over candidates (``ReplicaArrays``); every argument may be an array of shape [n] or
a scalar. The model (formulas.md "Roofline", "Collectives", "Pipeline parallelism"):

per GPU of a pipeline stage, one iteration over ``batch`` running sequences of mean context
``context`` plus ``prefill_tokens`` piggy-backed prompt tokens (chunked prefill, Sarathi-Serve):

    flops   = 2 x active_params x tokens + 4 x layers x width x batch x context
              (+ 2 x layers x width_prefill x prefill_tokens x prompt_len for the piggy-backed
              prompts; widths from physics.roofline.attention_width, MLA's differ per phase)
    bytes   = dense weights + experts touched x expert bytes + KV of every running sequence
    gpu     = max(flops / peak + dequant, bytes / bandwidth)        (roofline; W4A16 dequant
                                                                     overlaps the weight reads)
    comm    = 2 x layers x allreduce(tokens x hidden x 2 bytes, TP; k = collective_eff)
              (Megatron-LM: 2 per layer; its latencies as in nccl-tests, its bytes at k x the
              nccl-tests rate: collective_eff the in-engine fraction, fitted,
              profiles.collective_efficiency; physics.collectives.algorithm_time_s)
    stage   = gpu + comm
    step    = PP x stage + (PP - 1) x p2p + overhead(batch)          (a token crosses all stages)
    overhead(batch) = step_overhead + seq_overhead x batch + layer_overhead x layers (per pass)
    prefill = PP x stage + (PP - 1) x p2p + (chunks - 1) x max(stage, p2p)  (pipeline_time_s)

``peak`` and ``bandwidth`` are already the achievable values (datasheet x calibrated efficiency).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from advisor.catalog import interconnects
from advisor.perf.model.replica import ReplicaArrays, kv_bytes_per_sequence
from advisor.physics.dispatch import eager_pass_s
from advisor.physics.roofline import expected_experts_touched, expected_max_load

#: Weight-only dequantization: ops per weight per pass on the vector (non-tensor) units, and the
#: vector-to-tensor throughput ratio. A Marlin/Machete-style W4A16 kernel unpacks, converts and
#: scales each weight once per pass of 64 activation rows (Frantar et al. 2024, "MARLIN", arXiv
#: 2408.11743: near-ideal 4x at batch <= 16-32, falling towards the fp16 speed by batch 128).
DEQUANT_OPS_PER_WEIGHT = 4.0
DEQUANT_ROWS_PER_PASS = 64.0
VECTOR_TO_TENSOR_RATIO = 1.0 / 8.0  # H100: 134 TF fp16 vector vs 989 TF tensor (~1/7.4)


#: The additive components of a step, in the order the breakdowns list them.
COMPONENTS = ("compute", "memory", "dequant", "communication", "overhead", "bubble", "host")


@dataclass(frozen=True)
class StepTimes:
    """Times in seconds, arrays of shape [n]. ``total`` = sum of the additive components."""

    compute: np.ndarray
    memory: np.ndarray
    dequant: np.ndarray
    communication: np.ndarray
    overhead: np.ndarray
    bubble: np.ndarray
    #: an eager pass's wait for the host to dispatch its kernels beyond the GPU's own work
    #: (physics/dispatch.py); 0 for CUDA-graph decode steps
    host: np.ndarray
    total: np.ndarray
    # Diagnostics (not additive): the raw roofline terms before overlap, per stage.
    compute_raw: np.ndarray
    memory_raw: np.ndarray
    bytes_per_gpu: np.ndarray
    flops_per_gpu: np.ndarray

    def component_dict(self, i: int = 0) -> dict[str, float]:
        """The additive components of candidate ``i``, in ms."""
        return {k: float(np.asarray(getattr(self, k)).reshape(-1)[i]) * 1e3 for k in COMPONENTS}


#: Kernels of the reference layer ``layer_overhead_s`` is fitted for: a dense GQA layer at TP > 1
#: in 16 bits (2 norms + 5 attention + 2 all-reduces + 3 MLP, ``physics.dispatch.KERNELS``).
REFERENCE_LAYER_KERNELS = 12.0


def kernel_layer_overhead_s(r: ReplicaArrays) -> np.ndarray:
    """Fixed time of one layer's kernels in a replayed decode graph (s), per pass.

        t = layer_overhead x N_kernels / 12

    Source: ``layer_overhead_s`` below (the engine's fitted time for a 12-kernel layer,
    ``REFERENCE_LAYER_KERNELS``; N_kernels = ``graph_kernels_per_layer``).

    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> r = SimpleNamespace(layer_overhead_s=np.array([20e-6]),
    ...                     graph_kernels_per_layer=np.array([36.51]))
    >>> round(float(kernel_layer_overhead_s(r)[0]) * 1e6, 2)  # 20 us x 36.51 / 12
    60.85
    """
    return r.layer_overhead_s * r.graph_kernels_per_layer / REFERENCE_LAYER_KERNELS


def layer_overhead_s(r: ReplicaArrays, stage_passes: np.ndarray | float) -> np.ndarray:
    """Fixed time per transformer layer and pass, whatever the batch: kernel launch and ramp.

        t = (layer_overhead x N_kernels / 12
             + moe_layer_frac x experts per GPU x expert_overhead) x layers per stage x stage passes

    A decode step replays a CUDA graph of the layer's kernels; each still pays a few
    microseconds to launch and fill the GPU, so a layer costs a fixed time even when its
    weights stream in faster. This is why batch-1 decode of a 126-layer 405B model is not
    5.7x that of an 80-layer 70B model although its weights are (ROCm vLLM README rows: 22.5
    vs 7.6 ms per token on 8 MI300X). The time is per kernel, so a layer pays it for each of
    its ``graph_kernels_per_layer`` (``physics.dispatch.kernels_per_layer``;
    ``kernel_layer_overhead_s``): a DeepSeek layer (MLA, routed and shared experts: 27.6 kernels
    a layer on average, 36.5 with SGLang's separate fp8 activation quantizations) costs 2-3x a
    Llama layer (12); ``layer_overhead`` is the engine's time for a reference layer of 12
    (``REFERENCE_LAYER_KERNELS``). A routed-expert layer adds a fixed time
    per expert the GPU holds (all of them under TP, 1/TP under expert parallelism), per
    accelerator family and expert precision (``profiles.moe_expert_overhead_s``: the fused-MoE
    grid spans every expert's padded block). A token crosses every stage once
    (``stage_passes`` = PP); a prefill of ``chunks`` chunks makes chunks + PP - 1 stage passes.
    Source: NVIDIA CUDA C++ Best Practices Guide, "Kernel launch overhead" / CUDA Graphs
    (launch latency of microseconds per kernel); fitted per engine (``layer_overhead_s``) and
    per accelerator family and expert precision (``moe_expert_overhead_s``).

    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> r = SimpleNamespace(layer_overhead_s=np.array([20e-6]), layers_stage=np.array([80.0]),
    ...                     graph_kernels_per_layer=np.array([12.0]),
    ...                     moe_layer_frac=np.array([0.0]), num_experts=np.array([0.0]),
    ...                     ep=np.array([False]), tp=np.array([8.0]),
    ...                     moe_expert_overhead_s=np.array([0.0]))
    >>> round(float(layer_overhead_s(r, 1.0)[0]) * 1e3, 6)  # 80 reference layers x 20 us
    1.6
    >>> # DeepSeek-V3 under TP 8, 16-bit activations: 61 layers of 27.61 kernels at 20 us per 12,
    >>> # and 58 of them route over 256 experts at 0.9 us each:
    >>> # 61 x 20 x 27.61 / 12 us + 58 x 256 x 0.9 us = 2.81 + 13.36 = 16.17 ms
    >>> r = SimpleNamespace(layer_overhead_s=np.array([20e-6]), layers_stage=np.array([61.0]),
    ...                     graph_kernels_per_layer=np.array([27.61]),
    ...                     moe_layer_frac=np.array([58 / 61]), num_experts=np.array([256.0]),
    ...                     ep=np.array([False]), tp=np.array([8.0]),
    ...                     moe_expert_overhead_s=np.array([0.9e-6]))
    >>> round(float(layer_overhead_s(r, 1.0)[0]) * 1e3, 2)
    16.17
    """
    experts_per_gpu = r.num_experts / np.where(r.ep, r.tp, 1.0)
    per_layer = (
        kernel_layer_overhead_s(r) + r.moe_layer_frac * experts_per_gpu * r.moe_expert_overhead_s
    )
    return per_layer * r.layers_stage * np.asarray(stage_passes, dtype=float)


def attention_dp_imbalance(r: ReplicaArrays, sequences: np.ndarray) -> np.ndarray:
    """Busiest rank's attention work over the mean, under attention data parallelism (else 1).

        imbalance = ceil(n / TP) / (n / TP)

    Each of the TP ranks runs attention for whole sequences (or prompts); ``n`` of them spread
    as evenly as whole items allow, and the layer waits for the rank with the most. One
    sequence on 8 ranks puts all the attention work on one GPU: 8 x the even share. Source:
    SGLang DP attention (each DP rank schedules its own requests; the MoE layer synchronises
    the ranks every layer); integer load balancing (the busiest of TP bins holds ceil(n / TP)).

    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> r = SimpleNamespace(tp=np.array([8.0, 8.0, 8.0]), dp_attn=np.array([True, True, False]))
    >>> attention_dp_imbalance(r, np.array([1.0, 12.0, 1.0])).round(3).tolist()  # 8, 2/1.5, 1
    [8.0, 1.333, 1.0]
    """
    n = np.maximum(np.asarray(sequences, dtype=float), 1.0)
    return np.where(r.dp_attn, np.ceil(n / r.tp) / (n / r.tp), 1.0)


def allreduce_time_s(r: ReplicaArrays, message_bytes: np.ndarray) -> np.ndarray:
    """All-reduce time per candidate (0 for TP=1), grouped by (TP, link, engine kernels).

    Engines without custom all-reduce kernels (a plain PyTorch server) get NCCL's algorithms
    only; the others may also use the one-shot/two-shot kernels (physics.collectives).
    """
    from advisor.physics.collectives import allreduce_time_s as _allreduce
    from advisor.physics.collectives import available_algorithms

    # ``r`` may be a column of replicas (ReplicaArrays.column) against a row of batches: the
    # groups are found on the replicas, then the cells of the broadcast grid, flattened row by
    # row, are priced group by group
    shape = np.broadcast_shapes(r.tp.shape, np.shape(message_bytes))
    msg = np.broadcast_to(np.asarray(message_bytes, dtype=float), shape).reshape(-1)
    out = np.zeros(msg.size)
    links = interconnects()
    multi = r.tp > 1
    if not multi.any():
        return out.reshape(shape)
    # One collectives call per distinct (TP, link, kernels) group, found without a Python loop
    # over candidates or per-candidate strings (the search passes tens of thousands).
    names = sorted(set(r.tp_link_id[multi].tolist()))
    link_code = np.zeros(r.tp.shape, dtype=int)
    for c, name in enumerate(names):
        link_code[r.tp_link_id == name] = c
    keys = (r.tp.astype(int) * len(names) + link_code) * 2 + r.custom_allreduce.astype(int)
    keys = np.where(multi, keys, -1)
    cells = np.broadcast_to(keys, shape).reshape(-1)
    for key in sorted(set(keys[multi].tolist())):  # np.unique would import numpy.ma (30-100 ms)
        (tp, c), custom = divmod(key // 2, len(names)), bool(key % 2)
        idx = np.nonzero(cells == key)[0]
        link = links[names[c]]
        algs = available_algorithms("allreduce", tp, link)
        if not custom:
            algs = tuple(a for a in algs if a not in ("one_shot", "two_shot"))
        # the in-engine slowdown is the copy kernels' (they share the SMs with the GEMMs): it
        # scales the rate the bytes move at, not the fixed latencies (kernel_efficiency)
        eff = float(np.broadcast_to(r.comm_eff, r.tp.shape)[keys == key].flat[0])
        out[idx] = _allreduce(msg[idx], tp, link, algorithms=algs, kernel_efficiency=eff)
    return out.reshape(shape)


def tp_communication_s(r: ReplicaArrays, tokens: np.ndarray) -> np.ndarray:
    """Collectives of one stage for ``tokens`` tokens: per layer, the attention all-reduce plus
    either the MLP all-reduce (TP, Megatron-LM) or, in MoE layers under expert parallelism, the
    pair that brings each rank's tokens to the experts and their sums back (below).
    Each takes its nccl-tests latencies and moves its bytes at ``comm_eff`` x the nccl-tests rate
    (profiles.collective_efficiency): inside the engine the copy kernels share the GPU with the
    GEMMs. Dividing the whole time by ``comm_eff`` (until 2026-12-07) slowed the flag exchanges
    too, which no SM contention does: a decode step's 16 KiB all-reduce on 8 x H100 read 19.4 us
    against 11.5 us in the benchmark, and the fit answered with a milder slowdown of the prefill's
    megabytes (0.596, now 0.455).

    Under attention data parallelism attention needs no collective (each rank holds its
    sequences' heads whole). A TP-split MLP gathers every rank's tokens before and scatters the
    partial sums back after: an all-gather plus a reduce-scatter, together the volume and ring
    time of one all-reduce (Patarasuk and Yuan 2009: ring all-reduce = reduce-scatter +
    all-gather). Under EP the MoE layers run the same pair: every rank gathers all ranks'
    tokens, runs its own experts on those routed to them, and a reduce-scatter returns each
    rank its tokens' sums. That is what the engines do by default (TensorRT-LLM's fused MoE
    with attention DP: ``allgather([x, x_sf, token_selected_experts, ...])`` before the experts,
    ``reducescatter`` after; vLLM's and SGLang's DP-attention gathers likewise), so each token
    crosses to every other rank once, whatever its k experts: (EP - 1) / EP of all tokens per
    GPU each way (``collectives.moe_ep_bytes_per_token``). Counting k copies per token
    (GShard's per-expert buffers) made Qwen3-30B-A3B (8 experts per token) at EP 2 over PCIe
    send 4 times what it does (its RTX PRO 6000 rows held out at 0.48-0.72x), and sent 1 copy
    where an EP 8 all-gather sends 7 for k = 1.
    """
    from advisor.physics.collectives import all_to_all_time_s

    act = tokens * r.hidden * r.act_bytes
    ar = allreduce_time_s(r, act)
    attention = np.where(r.dp_attn, 0.0, ar)
    if not r.ep.any():
        return r.layers_stage * (attention + ar)
    # Each GPU owns 1/TP of the tokens and all-gathers the others': (TP - 1) / TP x act in,
    # the ring all-gather's time for an S = act buffer (and the reduce-scatter's back).
    a2a = np.zeros_like(ar)
    ep = r.ep
    engine_bw = r.a2a_bw * r.comm_eff  # the bytes at the engine's rate, the latency as measured
    for n in sorted(set(r.tp[ep].tolist())):  # np.unique would import numpy.ma (30-100 ms)
        sel = np.broadcast_to(ep & (r.tp == n), ar.shape)  # replica columns: their grid
        msg = np.broadcast_to(act, ar.shape)[sel]
        bw, latency = (np.broadcast_to(x, ar.shape)[sel] for x in (engine_bw, r.tp_link_latency))
        a2a[sel] = all_to_all_time_s(msg, int(n), bw, latency)
    moe = r.moe_layer_frac
    per_layer = attention + np.where(ep, moe * 2.0 * a2a + (1.0 - moe) * ar, ar)
    return r.layers_stage * per_layer


def p2p_time_s(r: ReplicaArrays, message_bytes: np.ndarray) -> np.ndarray:
    """Point-to-point send between adjacent pipeline stages: alpha + S / B (0 for PP=1)."""
    t = r.pp_link_latency + np.asarray(message_bytes, dtype=float) / r.pp_link_bw
    return np.where(r.pp > 1, t, 0.0)


def attention_flops(
    r: ReplicaArrays, query_tokens: np.ndarray, keys_per_query: np.ndarray, width: np.ndarray
) -> np.ndarray:
    """Attention FLOPs on a GPU of the busiest stage: 4 x layers x width x queries x keys.

    Per (query, key) pair and layer Q.K^T and P.V cost 2 x d_qk + 2 x d_v FLOPs per head, i.e.
    4 x ``width`` (physics.roofline.attention_width, already divided by TP). A decode token
    attends to its whole context; a causal prompt of T tokens has T (T + 1) / 2 pairs, i.e.
    T / 2 keys per query for large T. A sliding-window or chunked layer attends to at most W
    keys: keys = (1 - f) x keys + f x min(keys, W), f the windowed share of the layers.
    Source: formulas.md "Roofline"; Kaplan et al. 2020; Beltagy et al. 2020 (sliding window).

    >>> import numpy as np
    >>> from types import SimpleNamespace
    >>> r = SimpleNamespace(layers_stage=np.array([32.0]))  # Llama-2-7B: 32 layers, 32 x 128
    >>> float(attention_flops(r, 2048.0, 1024.0, np.array([4096.0]))[0]) / 1e12  # 2k prompt
    1.099511627776
    >>> w = SimpleNamespace(layers_stage=np.array([32.0]), window=np.array([128.0]),
    ...     window_layer_frac=np.array([0.5]))
    >>> float(attention_flops(w, 2048.0, 1024.0, np.array([4096.0]))[0]) / 1e12  # (1024+128)/2
    0.618475290624
    """
    keys = np.asarray(keys_per_query, dtype=float)
    window = getattr(r, "window", None)
    if window is not None:
        frac = r.window_layer_frac
        keys = keys * (1.0 - frac) + np.minimum(keys, window) * frac
    return 4.0 * r.layers_stage * width * query_tokens * keys


def pipeline_time_s(
    stage_s: np.ndarray, p2p_s: np.ndarray, chunks: np.ndarray, pp: np.ndarray
) -> np.ndarray:
    """Time for ``chunks`` equal chunks to cross ``pp`` stages joined by ``pp - 1`` links.

        T = pp x stage + (pp - 1) x p2p + (chunks - 1) x max(stage, p2p)

    The stages and the links form a line of 2 pp - 1 servers every chunk visits in order. Chunk
    j leaves stage s at (j + s + 1) x stage + s x p2p when the sends overlap the next chunk's
    compute (non-blocking send/recv, as Megatron-LM's and vLLM's pipelines use): the first chunk
    pays every stage and every transfer once, each later chunk adds one bottleneck-server time.
    So a chunk's activations cross each boundary once, but only pp - 1 transfers lie on the
    critical path, not chunks x (pp - 1). Source: makespan of identical jobs in a flow shop
    (sum of the server times + (jobs - 1) x the bottleneck; Pinedo, "Scheduling", 5th ed., ch.
    6); GPipe (Huang et al. 2019) bubble (pp - 1) stages; Narayanan et al. 2021 (SC21, Megatron-LM)
    sec. 2.2 for the overlapped point-to-point sends.

    >>> # 4 chunks of 10 ms over 4 stages, 1 ms links: 40 + 3 + 3 x 10 = 73 ms
    >>> round(float(pipeline_time_s(0.010, 0.001, 4, 4)) * 1e3, 6)
    73.0
    >>> # link-bound: 20 ms transfers: 40 + 60 + 3 x 20 = 160 ms
    >>> round(float(pipeline_time_s(0.010, 0.020, 4, 4)) * 1e3, 6)
    160.0
    """
    return pp * stage_s + (pp - 1.0) * p2p_s + (chunks - 1.0) * np.maximum(stage_s, p2p_s)


def _roofline_part(flops: np.ndarray, nbytes: np.ndarray, peak: np.ndarray, bw: np.ndarray):
    """(compute, memory) of one kernel group: the bound resource gets the time, the other 0."""
    c, m = flops / peak, nbytes / bw
    return np.where(m >= c, 0.0, c), np.where(m >= c, m, 0.0)


def _stage_gpu_time(
    r: ReplicaArrays,
    tokens: np.ndarray,
    decode_queries: np.ndarray,
    context: np.ndarray,
    prefill_attn_flops: np.ndarray,
    kv_read_bytes: np.ndarray,
    kv_write_bytes: np.ndarray,
    experts_tokens: np.ndarray,
    logit_rows: np.ndarray,
    attn_extra_tokens: np.ndarray | float = 0.0,
) -> tuple[np.ndarray, ...]:
    """GPU time of one stage as three kernel groups run one after another, each on its roofline.

    - GEMMs over every token of the iteration: max(2 x active params x tokens / peak + dequant,
      weight bytes / bandwidth) (W4A16 kernels dequantize while the weights stream in);
    - decode attention over the cached context: max(4 x layers x width x queries x context /
      peak, KV bytes / bandwidth), memory-bound in practice;
    - prefill attention of the prompt tokens: causal FLOPs / peak (compute-bound).
    Attention kernels reach ``attn_eff`` of the GEMM efficiency. They do not overlap the GEMMs
    (separate kernels in FlashAttention/FlashInfer-based engines), so the groups add.
    ``attn_extra_tokens``: tokens the busiest GPU runs through its attention projections beyond
    its even share (attention data parallelism; the callers scale its attention FLOPs and KV
    traffic by ``attention_dp_imbalance`` likewise).
    Returns (flops, bytes, compute, memory, dequant): the additive split of the stage time.
    """
    # Logits only for the sequences producing a token (decode batch, or one per prompt), not for
    # every prompt token: the lm_head multiplies ``logit_rows``, the layers every token.
    experts, k, n = np.maximum(r.num_experts, 1), r.experts_per_tok, r.tp
    touched_frac = np.where(
        r.num_experts > 0,
        expected_experts_touched(experts, k, experts_tokens, r.routing_exp) / experts,
        0.0,
    )
    # Expert parallelism: the step waits for the GPU with the most token assignments and the
    # most distinct experts to read (busiest-bin loads); TP slices every expert evenly.
    assign_mean = tokens * k / n
    busiest_assign = expected_max_load(assign_mean, assign_mean * (1 - 1 / n), n, tokens * k)
    per_gpu_experts = experts / n
    busiest_experts = expected_max_load(
        per_gpu_experts * touched_frac, per_gpu_experts * touched_frac * (1 - touched_frac),
        n, per_gpu_experts,
    )  # fmt: skip
    with np.errstate(divide="ignore", invalid="ignore"):
        flop_imbalance = np.where(r.ep & (assign_mean > 0), busiest_assign / assign_mean, 1.0)
        read_frac = np.where(r.ep, busiest_experts / per_gpu_experts, touched_frac)
    # Logits only for the sequences producing a token (decode batch, or one per prompt), not for
    # every prompt token: the lm_head multiplies ``logit_rows``, the layers every token.
    expert_flops = 2.0 * r.expert_active_params * tokens * flop_imbalance
    linear_flops = (
        2.0 * r.linear_active_params * tokens
        + 2.0 * r.attn_active_params * attn_extra_tokens
        + expert_flops
        + 2.0 * r.head_params * logit_rows
    )
    decode_attn_flops = attention_flops(r, decode_queries, context, r.attn_width)
    expert_bytes = r.expert_weight_bytes * read_frac
    weight_bytes = r.dense_weight_bytes + expert_bytes
    # Fused-MoE kernels reach moe_eff of the dense GEMM rate (profiles.moe_efficiency): their
    # FLOPs and bytes count 1 / moe_eff times.
    slow = 1.0 / r.moe_eff - 1.0
    # Passes over the iteration's rows, routed experts included: a grouped W4A16 GEMM passes
    # each expert once per 64 of *its* rows, so this over-counts MoE experts; counted per expert,
    # TensorRT-LLM's Hopper gpt-oss rows read 1.1-2.1x and the refit moved dense Hopper rows
    # (docs/accuracy.md, 2026-12-06 night): kept as the effective cost until that has a mechanism.
    passes = 1.0 + tokens / DEQUANT_ROWS_PER_PASS
    dequant_elements = r.weight_elements - r.expert_weight_elements * (1.0 - read_frac)
    dequant = np.where(
        r.weight_only,
        dequant_elements
        * DEQUANT_OPS_PER_WEIGHT
        * passes
        / (r.peak_flops_16 * VECTOR_TO_TENSOR_RATIO),
        0.0,
    )
    gemm_c = (linear_flops + expert_flops * slow) / r.peak_flops
    gemm_m = (weight_bytes + expert_bytes * slow) / r.hbm_bw
    gemm_mem_bound = gemm_m >= gemm_c + dequant
    compute = np.where(gemm_mem_bound, 0.0, gemm_c)
    memory = np.where(gemm_mem_bound, gemm_m, 0.0)
    dequant = np.where(gemm_mem_bound, 0.0, dequant)
    attn_peak, attn_bw = r.attn_peak_flops * r.attn_eff, r.hbm_bw * r.attn_eff
    dc, dm = _roofline_part(decode_attn_flops, kv_read_bytes, attn_peak, attn_bw)
    pc, pm = _roofline_part(prefill_attn_flops, kv_write_bytes, attn_peak, attn_bw)
    flops = linear_flops + decode_attn_flops + prefill_attn_flops
    nbytes = weight_bytes + kv_read_bytes + kv_write_bytes
    return flops, nbytes, compute + dc + pc, memory + dm + pm, dequant


def decode_step(
    r: ReplicaArrays,
    batch: np.ndarray,
    context_tokens: np.ndarray,
    prefill_tokens: np.ndarray | float = 0.0,
    prompt_tokens: np.ndarray | float = 0.0,
    query_tokens_per_seq: np.ndarray | float = 1.0,
) -> StepTimes:
    """One decode iteration for ``batch`` running sequences (all stages).

    With PP, the batch is split into min(PP, batch) micro-batches that keep the stages busy;
    each token still crosses every stage, so the time per output token is PP x stage time.
    ``prefill_tokens`` piggy-backed prompt tokens (chunked prefill) share the iteration.
    ``query_tokens_per_seq`` > 1 is a speculative verify step: each sequence runs k + 1 query
    tokens, each attending to the whole context on the decode path (4 x width x context FLOPs
    per layer, the sequence's KV read once for all of them) and each producing logits.
    """
    b = np.maximum(np.asarray(batch, dtype=float), 1.0)
    c = np.asarray(context_tokens, dtype=float)
    q = np.asarray(prefill_tokens, dtype=float)
    micro = np.minimum(r.pp, b)
    mb = b / micro  # sequences per micro-batch
    mq = q / micro
    queries = mb * np.asarray(query_tokens_per_seq, dtype=float)
    tokens = queries + mq
    prompt = np.asarray(prompt_tokens, dtype=float)
    # Attention data parallel: the busiest rank's share of the running sequences, and of the
    # piggy-backed prompts (a prompt, or a chunk of one, is prefilled whole on its own rank).
    imb_d = attention_dp_imbalance(r, mb)
    imb_p = attention_dp_imbalance(r, mq / np.maximum(prompt, 1.0))
    kv = kv_bytes_per_sequence(r, c) * mb * imb_d
    # Piggy-backed prompt tokens attend causally over their prompt (T / 2 keys each) through the
    # prefill path (MLA: uncompressed heads; vLLM runs every prefill token through it).
    extra = attention_flops(r, mq, prompt / 2.0, r.prefill_attn_width) * imb_p
    kv_write = kv_bytes_per_sequence(r, 1.0) * mq * imb_p
    flops, nbytes, cmp_, mem, dq = _stage_gpu_time(
        r, tokens, queries * imb_d, c, extra, kv, kv_write, tokens, logit_rows=queries,
        attn_extra_tokens=queries * (imb_d - 1.0) + mq * (imb_p - 1.0),
    )  # fmt: skip
    comm = tp_communication_s(r, tokens)
    p2p = p2p_time_s(r, tokens * r.hidden * r.act_bytes)
    overhead = r.step_overhead_s + r.seq_overhead_s * b + layer_overhead_s(r, r.pp)
    # A token crosses every stage: PP x stage time (each stage works on its micro-batch).
    pp = r.pp
    communication = pp * comm + (pp - 1) * p2p
    total = pipeline_time_s(cmp_ + mem + dq + comm, p2p, 1.0, pp) + overhead
    return StepTimes(
        compute=pp * cmp_, memory=pp * mem, dequant=pp * dq, communication=communication,
        overhead=overhead, bubble=np.zeros_like(total), host=np.zeros_like(total), total=total,
        compute_raw=flops / r.peak_flops, memory_raw=nbytes / r.hbm_bw, bytes_per_gpu=nbytes,
        flops_per_gpu=flops,
    )  # fmt: skip


def chunk_offset_attention_s(r: ReplicaArrays) -> np.ndarray:
    """GPU seconds per (query, key) pair a prompt chunk's attention to its prompt's earlier tokens
    adds to the chunk prefilled as a prompt of its own, per replica.

        t = PP x 4 x layers_stage x width x T x o / (attention peak x attention efficiency)

    A prompt split over iterations (chunked prefill) prefills T tokens at offset o: each of them
    attends causally to the o tokens before the chunk as well as to the chunk's own (T / 2 keys
    each, what :func:`prefill` of T tokens counts). The extra T x o pairs are compute-bound (the
    earlier chunks' KV is read once per query tile), on the prefill path's width; summed over
    the chunks they give the whole prompt's T^2 / 2 pairs again. Layers with a sliding window
    attend to at most W keys, a constant the chunk's own pass already bounds, so only the
    full-attention share counts. A chunk crosses the PP stages one after another (PP x stage).

    Source: Sarathi-Serve (Agrawal et al. 2024, OSDI) sec. 4 (chunked prefills attend to the KV
    of the earlier chunks); the pairs as :func:`attention_flops` counts them.

    Hand check: Llama-2-7B-like, 32 layers of width 4096 on one GPU at 100 TFLOP/s achieved
    attention: 4 x 32 x 4096 / 1e14 = 5.24e-9 s per pair; a 30,000-token prompt in chunks of
    8,192 tokens: the last chunk (5,424 tokens at offset 24,576) adds 5,424 x 24,576 pairs, 0.70 s.

    >>> from types import SimpleNamespace
    >>> r = SimpleNamespace(pp=np.array([1.0]), layers_stage=np.array([32.0]),
    ...     prefill_attn_width=np.array([4096.0]), attn_peak_flops=np.array([1e14]),
    ...     attn_eff=np.array([1.0]))
    >>> float(chunk_offset_attention_s(r)[0])
    5.24288e-09
    >>> round(float(chunk_offset_attention_s(r)[0]) * 5424 * 24576, 2)
    0.7
    """
    # one pair on every layer, then only the full-attention layers' share of it
    full = 1.0 - np.asarray(getattr(r, "window_layer_frac", 0.0), dtype=float)
    pairs = attention_flops(r, 1.0, 1.0, r.prefill_attn_width) * full
    return r.pp * pairs / (r.attn_peak_flops * r.attn_eff)


def prefill_busy_and_delay_s(
    prefill_total_s: np.ndarray, request_overhead_s: np.ndarray | float
) -> tuple[np.ndarray, np.ndarray]:
    """Split a prompt's prefill time into GPU busy time and the request's front-end delay.

        busy = prefill - request overhead,   delay = request overhead

    The request overhead (tokenisation, HTTP, admission) delays the first token but runs in the
    engine's API/tokenizer processes beside the GPU (vLLM's AsyncLLM front end, SGLang's
    TokenizerManager), so a queue of requests does not wait for it: it belongs in TTFT, not in
    the server's utilisation. Source: vLLM V1 architecture (blog 2025-01-27, "vLLM V1": the
    front-end process overlaps tokenisation with the engine core's GPU work); SGLang
    TokenizerManager / Scheduler process split (sglang/srt/managers).

    >>> busy, delay = prefill_busy_and_delay_s(np.array([0.060]), 0.010)
    >>> round(float(busy[0]), 9), round(float(delay[0]), 9)
    (0.05, 0.01)
    """
    total = np.asarray(prefill_total_s, dtype=float)
    delay = np.minimum(
        np.broadcast_to(np.asarray(request_overhead_s, dtype=float), total.shape), total
    )
    return total - delay, delay


#: Relative change of the prompt length the prefill's elasticity is measured over (x / 1.25).
ELASTICITY_STEP = 1.25


def prefill_length_elasticity(r: ReplicaArrays, prompt_tokens: np.ndarray) -> np.ndarray:
    """How a prompt's prefill busy time scales with its length at the mean prompt.

        e = ln(P(k L) / P(L / k)) / ln(k^2),   k = ELASTICITY_STEP,
        P = prefill total - request overhead (``prefill_busy_and_delay_s``)

    1 for a pass linear in the prompt (its GEMMs), near 0 where a length-independent part
    sets the time (the host dispatching an eager pass's kernels, per-step overheads), above 1
    where attention's quadratic term dominates. The queueing model spreads each request's
    prefill as ``P (L_i / L)^e`` (``physics.queueing.service.ServiceModel.prefill_elasticity``): a
    prefill that a host floor sets does not double for a prompt twice as long. Clipped to
    [0, 3]. Source: central difference of ln P in ln L (the log-log slope, a power-law fit
    through two points).

    Hand check: Llama-3.1-8B on one H100 issues 10 kernels a layer, 320 a pass; at 1 ms a
    kernel the host needs 0.32 s, far above the GPU's ~10 ms for 410-640 tokens, so both
    prompts take the same time and e = ln(1) / ln(1.5625) = 0.

    >>> import dataclasses
    >>> from advisor.catalog import get_accelerator, get_model
    >>> from advisor.perf.model.replica import ReplicaConfig, build_replicas
    >>> r = build_replicas([ReplicaConfig(model=get_model("llama-3.1-8b"),
    ...     gpu=get_accelerator("h100-sxm"), tp=1, weights="bf16", kv="bf16", engine="sglang")])
    >>> host = dataclasses.replace(r, kernel_dispatch_s=np.array([1e-3]))
    >>> round(float(prefill_length_elasticity(host, np.array([512.0]))[0]), 9)  # ln(1 +- ulp)
    0.0
    """
    isl = np.asarray(prompt_tokens, dtype=float)
    k = ELASTICITY_STEP
    hi, lo = prefill(r, isl * k).total, prefill(r, np.maximum(isl / k, 1.0)).total
    return _elasticity(r, isl, hi, lo)


def _elasticity(r: ReplicaArrays, isl: np.ndarray, hi_s: np.ndarray, lo_s: np.ndarray):
    """``prefill_length_elasticity`` from the prefills at isl x k (``hi_s``) and isl / k."""
    k = ELASTICITY_STEP
    hi, _ = prefill_busy_and_delay_s(hi_s, r.request_overhead_s)
    lo, _ = prefill_busy_and_delay_s(lo_s, r.request_overhead_s)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.log(hi / lo) / np.log(isl * k / np.maximum(isl / k, 1.0))
    return np.clip(np.where(np.isfinite(e), e, 1.0), 0.0, 3.0)


def prefill_with_elasticity(
    r: ReplicaArrays, prompt_tokens: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(``prefill(r, prompt_tokens).total``, ``prefill_length_elasticity(r, prompt_tokens)``):
    the three prompt lengths in one evaluation, each replica's [n, 1] column broadcast against
    its [n, 3] lengths (elementwise, so the same figures as three calls, in about half the time).
    """
    isl = np.asarray(prompt_tokens, dtype=float)
    k = ELASTICITY_STEP
    lengths = np.stack([isl, isl * k, np.maximum(isl / k, 1.0)], axis=1)
    at, hi, lo = prefill(r.column(), lengths).total.T.copy()
    return at, _elasticity(r, isl, hi, lo)


#: Prompt chunk size the pipeline streams through the stages (TensorRT-LLM/vLLM chunked
#: prefill default token budgets are 2048-8192; 2048 keeps pipeline fill short).
PIPELINE_CHUNK_TOKENS = 2048.0


def prefill(
    r: ReplicaArrays, prompt_tokens: np.ndarray, batch: np.ndarray | float = 1.0
) -> StepTimes:
    """Prefill ``batch`` prompts of ``prompt_tokens`` each, alone on the replica.

    With PP the prompt streams through the stages in chunks: (chunks + PP - 1) stage times, the
    PP - 1 being the pipeline bubble (GPipe: bubble fraction (p - 1) / (m + p - 1)), plus the
    PP - 1 transfers of the first chunk (``pipeline_time_s``).
    """
    t = np.maximum(np.asarray(prompt_tokens, dtype=float), 1.0)
    nb = np.asarray(batch, dtype=float)
    chunks = np.where(r.pp > 1, np.ceil(t * nb / PIPELINE_CHUNK_TOKENS), 1.0)
    tokens = t * nb / chunks
    # Causal attention over the prompt: T queries of T / 2 keys each (MLA: the prefill path).
    # Attention data parallel: each prompt is prefilled whole on one rank (the busiest holds
    # ceil(prompts / TP) of them); the experts still split every token.
    imb = attention_dp_imbalance(r, nb)
    attn = attention_flops(r, t * nb / chunks, t / 2.0, r.prefill_attn_width) * imb
    kv_write = kv_bytes_per_sequence(r, t) * nb / chunks * imb
    zero = np.zeros_like(tokens)
    flops, nbytes, cmp_, mem, dq = _stage_gpu_time(
        r, tokens, zero, zero, attn, zero, kv_write, tokens, logit_rows=nb / chunks,
        attn_extra_tokens=tokens * (imb - 1.0),
    )  # fmt: skip
    comm = tp_communication_s(r, tokens)
    p2p = p2p_time_s(r, tokens * r.hidden * r.act_bytes)
    stage = cmp_ + mem + dq + comm
    steps = chunks + r.pp - 1.0
    bubble = (r.pp - 1.0) * stage
    # The eager pass takes the GPU's work or the host's dispatch of its kernels, the longer.
    gpu = pipeline_time_s(stage, p2p, chunks, r.pp)
    kernels = r.kernels_per_layer * r.layers_stage * steps
    host_wait = eager_pass_s(gpu, kernels, r.kernel_dispatch_s) - gpu
    overhead = r.request_overhead_s + r.step_overhead_s + layer_overhead_s(r, steps)
    total = gpu + (overhead + host_wait)
    # p2p on the critical path: pp - 1 transfers, plus any link-bound stall of later chunks
    link_stall = (chunks - 1.0) * np.maximum(p2p - stage, 0.0)
    return StepTimes(
        compute=chunks * cmp_, memory=chunks * mem, dequant=chunks * dq,
        communication=chunks * comm + (r.pp - 1) * p2p + link_stall, overhead=overhead,
        bubble=bubble, host=host_wait, total=total, compute_raw=flops / r.peak_flops,
        memory_raw=nbytes / r.hbm_bw, bytes_per_gpu=nbytes * steps, flops_per_gpu=flops * chunks,
    )  # fmt: skip


#: Prompt lengths each prefill call of ``host_bound_prompt_tokens`` tries, and the bracket width
#: it stops at (the bisection it replaced stopped at 2^-40 of 131,072 tokens).
SEARCH_POINTS = 64
SEARCH_WIDTH_TOKENS = 1e-7


def host_bound_prompt_tokens(r: ReplicaArrays, max_tokens: float = 131_072.0) -> np.ndarray:
    """Longest prompt whose prefill the host's kernel dispatch still sets (0 where none does).

        L* = max { L : N_kernels x t_dispatch > T_gpu(L) }   (search on ``prefill(r, L).host``)

    Below L* the predicted prefill does not grow with the prompt (``eager_pass_s`` takes the
    host's time); above it the GPU's work sets it. ``max_tokens`` where the host still binds at
    that length. Source: ``physics.dispatch.eager_pass_s``; the GPU time grows with L, so a
    k-section (``SEARCH_POINTS`` lengths per prefill call, the bracket 1/(k+1) as wide each
    time) finds L* in a handful of calls instead of one call per halving.

    Hand check: Llama-3.1-8B on one H100 issues 10 kernels a layer, 320 a pass; at 1 ms a kernel
    the host needs 0.32 s. The GEMMs alone, 2 x 8.03e9 x L FLOP at the calibrated ~0.8 x 989
    TFLOP/s, take that long at L = 0.32 x 791e12 / 16.06e9 = 15,800 tokens; causal attention adds
    to the GPU's time, so the crossover comes somewhat earlier.

    >>> import dataclasses
    >>> from advisor.catalog import get_accelerator, get_model
    >>> from advisor.perf.model.replica import ReplicaConfig, build_replicas
    >>> r = build_replicas([ReplicaConfig(model=get_model("llama-3.1-8b"),
    ...     gpu=get_accelerator("h100-sxm"), tp=1, weights="bf16", kv="bf16", engine="sglang")])
    >>> n = float(host_bound_prompt_tokens(dataclasses.replace(r, kernel_dispatch_s=np.array([1e-3])))[0])
    >>> 10_000 < n < 15_800
    True
    >>> float(host_bound_prompt_tokens(dataclasses.replace(r, kernel_dispatch_s=np.array([0.0])))[0])
    0.0
    """
    lo, hi = np.ones(r.n), np.full(r.n, float(max_tokens))
    ends = prefill(r.take(np.repeat(np.arange(r.n), 2)), np.stack([lo, hi], axis=1).ravel())
    bound_at_one, bound_at_max = (ends.host > 0).reshape(r.n, 2).T
    if not bound_at_one.any():
        return np.zeros(r.n)
    k = SEARCH_POINTS
    tiled = r.take(np.repeat(np.arange(r.n), k))
    frac, rows = np.arange(1, k + 1) / (k + 1.0), np.arange(r.n)
    while np.max(hi - lo) > SEARCH_WIDTH_TOKENS:  # L* stays in [lo, hi): lo bound, hi not
        grid = lo[:, None] + (hi - lo)[:, None] * frac  # [n, k], increasing along each row
        bound = (prefill(tiled, grid.ravel()).host > 0).reshape(r.n, k)
        last = bound.sum(axis=1)  # bound points come first (the host wait falls with L)
        lo, hi = (np.where(last > 0, grid[rows, np.maximum(last - 1, 0)], lo),
                  np.where(last < k, grid[rows, np.minimum(last, k - 1)], hi))  # fmt: skip
    return np.where(bound_at_max, float(max_tokens), np.where(bound_at_one, np.floor(lo), 0.0))

"""Collective communication time (all-reduce, all-gather, reduce-scatter) on one link type.

Units: bytes, seconds, bytes/s one direction per GPU (SI inside; GB = 1e9 only at the edges).
``message_bytes`` is the per-GPU buffer S, as nccl-tests' "size" column: an all-reduce of S bytes
leaves every GPU with the S-byte sum; an all-gather's S is the gathered (output) buffer; a
reduce-scatter's S is the input buffer.

Model: the alpha-beta (latency-bandwidth) costs of Thakur, Rabenseifner and Gropp (2005), with
three corrections that matter in practice:

* links never reach the raw rate: bandwidth is ``achievable_fraction x raw``, with one fraction
  per link kind fitted to the nccl-tests rows of ``data/measurements.csv`` (:data:`CALIBRATION`);
* each algorithm has a fixed software latency (kernel launch, synchronisation) besides the
  per-step link latency: NCCL's own tuning model (``src/graph/tuning.cc``: ``baseLat`` Ring/LL
  6.6 us; NVLS 25 us);
* NCCL's ring runs one of three protocols, each with its own latencies and share of the
  bandwidth (:func:`nccl_ring_time_s`): LL (0.6 us per NVLink step, half the bandwidth) sets the
  latency-bound regime, 32 KiB-1 MiB on 8 GPUs, where one Simple-protocol alpha made a ring
  all-reduce 2-3 x too slow; Simple the bandwidth-bound one;
* the algorithm is the fastest available one (NCCL and RCCL tune per size; vLLM and TensorRT-LLM
  use their one-shot / two-shot kernels where those are faster).

A collective over N GPUs on one link type is "flat": every GPU talks over ``link``. For a
multi-node group pass the bottleneck (inter-node) link; the NVLink part only makes it faster.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from advisor.catalog.specs import Interconnect

Op = Literal["allreduce", "allgather", "reducescatter"]
OPS: tuple[str, ...] = ("allreduce", "allgather", "reducescatter")
Algorithm = Literal["ring", "tree", "nvls", "one_shot", "two_shot"]
#: Algorithms NCCL/RCCL choose between (tree only across nodes: within a node NCCL's tree is a chain).
NCCL_ALGORITHMS: tuple[str, ...] = ("ring", "tree", "nvls")
#: vLLM / TensorRT-LLM / SGLang custom all-reduce kernels (peer-to-peer loads over NVLink/xGMI).
CUSTOM_ALGORITHMS: tuple[str, ...] = ("one_shot", "two_shot")
ALGORITHMS: tuple[str, ...] = NCCL_ALGORITHMS + CUSTOM_ALGORITHMS

#: NCCL's base latency of a Ring/Tree collective with the LL protocol, s.
#: Source: NCCL src/graph/tuning.cc ``baseLat`` (Ring LL 6.6 us, Tree LL 6.8 us), NCCL 2.18-2.27.
NCCL_BASE_LATENCY_S = 6.6e-6

Protocol = Literal["LL", "LL128", "Simple"]
#: NCCL's three wire protocols. LL sends 8-byte lines of 4 data bytes and a 4-byte flag (no
#: fence, the lowest latency, half the bandwidth); LL128 128-byte lines of 120 data bytes (on
#: NVLink only); Simple plain chunks behind a fence (full bandwidth, the highest latency). NCCL
#: times every (algorithm, protocol) pair with its own model and runs the fastest, so a ring
#: all-reduce of 32 KiB on 8 GPUs runs LL, one of 1 GiB Simple.
#: Source: NCCL src/graph/tuning.cc (``ncclTopoTuneModel``, ``ncclTopoGetAlgoTime``), NCCL 2.19-2.28.
PROTOCOLS: tuple[str, ...] = ("LL", "LL128", "Simple")
#: Base latency of a ring collective per protocol, s. Source: NCCL src/graph/tuning.cc
#: ``baseLatencies`` Ring row (LL 6.6, LL128 14.0, Simple 8.4 us), NCCL 2.19-2.28 (master 5067397).
NCCL_RING_BASE_LATENCY_S = {"LL": 6.6e-6, "LL128": 14.0e-6, "Simple": 8.4e-6}
#: Per-step latency of a ring for the LL and LL128 protocols by link kind, s. Source: NCCL
#: src/graph/tuning.cc ``hwLatencies`` Ring row: NVLink LL 0.6 / LL128 1.9 us, PCI 1.0 / 2.5 us
#: (master 5067397). Simple uses the link's own ``latency_s`` (measured where a row exists).
#: Infinity Fabric: RCCL is NCCL's port and runs the same LL protocol over its peer links; it
#: is given NVLink's LL step (an assumption, no fit): 6.6 + 14 x 0.6 = 15.0 us for a small
#: all-reduce on 8 x MI300X, against 13.7-19.3 us measured with a process per GPU (rccl-tests
#: ``mpirun -np 8 ... -g 1``, hisohara/ai-scripts K0019-K0036). The 44-53 us of the one-process
#: sweeps (``-g 8``) that set the link's single alpha before are that harness's launches
#: (``harness_overhead_s``), which an engine, a process per GPU, does not pay.
NCCL_RING_STEP_LATENCY_S = {
    "nvlink": {"LL": 0.6e-6, "LL128": 1.9e-6},
    "pcie": {"LL": 1.0e-6, "LL128": 2.5e-6},
    "xgmi": {"LL": 0.6e-6},
}
#: Fraction of the Simple bus bandwidth each protocol carries: LL's lines are half flags
#: (``busBw * .5``), LL128's 120 of 128 bytes data (``busBw * 0.92``). Source: NCCL
#: src/graph/tuning.cc, "Various model refinements".
NCCL_PROTOCOL_BANDWIDTH_FRACTION = {"LL": 0.5, "LL128": 0.92, "Simple": 1.0}
#: LL's bus bandwidth is also capped per GPU generation (one node), bytes/s: Ampere 87.7,
#: Hopper 141, Blackwell 282 GB/s. Source: NCCL src/graph/tuning.cc ``llMaxBws`` (N1 column),
#: keyed here by the NVLink generation each GPU generation has.
NCCL_LL_MAX_BUSBW_BYTES_PER_S = {"nvlink3": 87.7e9, "nvlink4": 141e9, "nvlink5": 282e9}
#: NCCL's latency of an NVLS (NVLink SHARP) all-reduce, s.
#: Source: NCCL src/graph/tuning.cc ``hwLat[NVLINK][NVLS][Simple] = 25`` us (NCCL 2.19+).
NVLS_BASE_LATENCY_S = 25e-6

Number = float | np.ndarray


# --------------------------------------------------------------------------------------------
# Formulas (one formula, one function). Vectorised over message_bytes.
# --------------------------------------------------------------------------------------------


def _arr(message_bytes: Number) -> np.ndarray:
    return np.asarray(message_bytes, dtype=float)


def _ret(value: np.ndarray, like: Number) -> Number:
    return float(value) if np.ndim(like) == 0 else value


def _check_n(n_gpus: int) -> None:
    if int(n_gpus) != n_gpus or n_gpus < 1:
        raise ValueError(f"n_gpus={n_gpus!r} must be an integer >= 1")


def ring_allreduce_time_s(
    message_bytes: Number, n_gpus: int, bandwidth_bytes_per_s: float, latency_s: float
) -> Number:
    """Ring all-reduce (reduce-scatter then all-gather around a ring).

    T = 2(N-1) alpha + 2(N-1)/N x S / B; zero for N = 1.

    Source: Thakur, Rabenseifner and Gropp 2005, "Optimization of Collective Communication
    Operations in MPICH", IJHPCA 19(1), sec. 4.4; NCCL's ring (nccl-tests doc/PERFORMANCE.md).

    Hand check: 1 GB on 8 GPUs at 450 GB/s, alpha 1 us: 14 us + 1.75 x 1e9 / 450e9 = 3903 us.

    >>> round(ring_allreduce_time_s(1e9, 8, 450e9, 1e-6) * 1e6, 1)
    3902.9
    >>> ring_allreduce_time_s(1e9, 1, 450e9, 1e-6)
    0.0
    """
    _check_n(n_gpus)
    s = _arr(message_bytes)
    n = n_gpus
    t = 2 * (n - 1) * latency_s + 2 * (n - 1) / n * s / bandwidth_bytes_per_s
    return _ret(np.where(n > 1, t, 0.0), message_bytes)


def ring_allgather_time_s(
    message_bytes: Number, n_gpus: int, bandwidth_bytes_per_s: float, latency_s: float
) -> Number:
    """Ring all-gather of an S-byte output buffer (each GPU contributes S/N).

    T = (N-1) alpha + (N-1)/N x S / B; zero for N = 1.

    Source: Thakur, Rabenseifner and Gropp 2005, sec. 4.1 (ring algorithm).

    Hand check: 2 MiB on 8 GPUs at 450 GB/s, alpha 1 us: 7 us + 0.875 x 2097152 / 450e9 = 11.08 us.

    >>> round(ring_allgather_time_s(2 * 2**20, 8, 450e9, 1e-6) * 1e6, 2)
    11.08
    """
    _check_n(n_gpus)
    s = _arr(message_bytes)
    n = n_gpus
    t = (n - 1) * latency_s + (n - 1) / n * s / bandwidth_bytes_per_s
    return _ret(np.where(n > 1, t, 0.0), message_bytes)


def all_to_all_time_s(
    message_bytes: Number, n_gpus: int, bandwidth_bytes_per_s: float, latency_s: float
) -> Number:
    """All-to-all where each GPU holds S bytes and sends S/N to every other GPU (pairwise exchange).

    T = (N-1) alpha + (N-1)/N x S / B; zero for N = 1. Each GPU sends (N-1)/N of its buffer and
    receives as much; on a switch or a full mesh the N-1 exchanges share the GPU's bandwidth B.
    MoE expert parallelism runs two per MoE layer (dispatch tokens to their experts, combine the
    results back). Source: Thakur, Rabenseifner and Gropp 2005, sec. 4.4 (pairwise exchange);
    GShard (Lepikhin et al. 2020) for the two all-to-alls per MoE layer.

    Hand check: 1 MiB per GPU on 8 GPUs at 450 GB/s, alpha 2 us: 14 us + 0.875 x 1048576 / 450e9
    = 16.04 us.

    >>> round(float(all_to_all_time_s(2**20, 8, 450e9, 2e-6)) * 1e6, 2)
    16.04
    """
    # Same alpha-beta cost as the ring all-gather: N-1 latency steps, (N-1)/N of S on the wire.
    return ring_allgather_time_s(message_bytes, n_gpus, bandwidth_bytes_per_s, latency_s)


def moe_ep_bytes_per_token(hidden_size: int, ep: int, activation_bytes: float = 2.0) -> float:
    """Bytes one token puts on the links per MoE layer under expert parallelism of ``ep``.

        V = 2 x (EP - 1) x h x a

    Inference engines bring the tokens to the experts with an all-gather (every rank receives
    every other rank's tokens, h values of a bytes each) and return the sums with a
    reduce-scatter (each rank sends every other rank its partial sums for that rank's tokens):
    TensorRT-LLM's fused MoE under attention DP calls ``allgather([x, x_sf,
    token_selected_experts, token_final_scales])`` before the experts and ``reducescatter``
    after. So a token crosses to each other rank once each way, whatever its k experts
    (GShard's per-expert buffers would send k copies: 2 x k x h x a x (EP - 1) / EP).
    16-bit activations; TensorRT-LLM gathers fp8/fp4-quantized inputs, which would shrink the
    gather half.

    Hand checks: DeepSeek-V3/R1 at EP 8 (hidden 7168): 2 x 7 x 7168 x 2 = 200,704 bytes, the
    per-expert count too (k = 8 = EP); Qwen3-30B-A3B at EP 2 (hidden 2048, 8 experts per
    token): 2 x 1 x 2048 x 2 = 8,192 bytes, where 8 copies would be 32,768.

    >>> moe_ep_bytes_per_token(7168, 8), moe_ep_bytes_per_token(2048, 2)
    (200704.0, 8192.0)
    """
    return 2.0 * (ep - 1) * hidden_size * activation_bytes


def ring_reducescatter_time_s(
    message_bytes: Number, n_gpus: int, bandwidth_bytes_per_s: float, latency_s: float
) -> Number:
    """Ring reduce-scatter of an S-byte input buffer (each GPU keeps S/N of the sum).

    T = (N-1) alpha + (N-1)/N x S / B; zero for N = 1 (same cost as the ring all-gather).

    Source: Thakur, Rabenseifner and Gropp 2005, sec. 4.4 (first half of the ring all-reduce).

    >>> round(ring_reducescatter_time_s(2 * 2**20, 8, 450e9, 1e-6) * 1e6, 2)
    11.08
    """
    return ring_allgather_time_s(message_bytes, n_gpus, bandwidth_bytes_per_s, latency_s)


def tree_allreduce_time_s(
    message_bytes: Number, n_gpus: int, bandwidth_bytes_per_s: float, latency_s: float
) -> Number:
    """Pipelined double-binary-tree all-reduce (NCCL's inter-node tree).

    T = 2 ceil(log2 N) alpha + 2 S / B; zero for N = 1. Latency grows with log2 N instead of N;
    each GPU sends and receives about S per phase (reduce up, broadcast down), split over two
    complementary trees.

    Source: Sanders, Speck and Traeff 2009, "Two-tree algorithms for full bandwidth broadcast,
    reduction and scan", Parallel Computing 35(12); NCCL 2.4 blog "Massively Scale Your Deep
    Learning Training with NCCL 2.4" (double binary trees).

    Hand check: 1 MB on 64 GPUs at 50 GB/s, alpha 5 us: 2 x 6 x 5 us + 2e6 / 50e9 = 100 us.

    >>> round(tree_allreduce_time_s(1e6, 64, 50e9, 5e-6) * 1e6, 1)
    100.0
    """
    _check_n(n_gpus)
    s = _arr(message_bytes)
    t = 2 * math.ceil(math.log2(n_gpus)) * latency_s + 2 * s / bandwidth_bytes_per_s
    return _ret(np.where(n_gpus > 1, t, 0.0), message_bytes)


def nvls_allreduce_time_s(
    message_bytes: Number, n_gpus: int, bandwidth_bytes_per_s: float, latency_s: float
) -> Number:
    """NVLink SHARP (NVLS) all-reduce: the NVSwitch reduces and multicasts.

    T = 2 alpha + (N+1)/N x S / B; zero for N = 1.

    Each GPU owns S/N of the result: a multimem load-reduce pulls its shard's sum from the switch
    (the GPU sends its whole buffer, S, to the switch across all owners, and receives S/N), then a
    multimem store sends S/N that the switch copies to every GPU (receives S). Per direction a GPU
    moves S + S/N, against 2(N-1)/N x S for the ring; nccl-tests' busbw (ring convention) of NVLS
    is therefore 2(N-1)/(N+1) x B. The (N+1)/N dependence matches the H200 rows M1017/M1019/M1035
    (N = 5, 6, 8: busbw ratio 0.863 : 0.908 : 1 measured, 0.857 : 0.918 : 1 from this formula).

    Source: NVIDIA, "NVLink SHARP" (Hopper architecture whitepaper 2022; NCCL 2.17 release notes,
    multimem ld_reduce/st); per-direction counting as in Thakur et al. 2005.

    Hand check: 1 GB on 8 GPUs at 300 GB/s, alpha 1 us: 2 us + 1.125 x 1e9 / 300e9 = 3752 us.

    >>> round(nvls_allreduce_time_s(1e9, 8, 300e9, 1e-6) * 1e6, 1)
    3752.0
    """
    _check_n(n_gpus)
    s = _arr(message_bytes)
    n = n_gpus
    t = 2 * latency_s + (n + 1) / n * s / bandwidth_bytes_per_s
    return _ret(np.where(n > 1, t, 0.0), message_bytes)


def one_shot_allreduce_time_s(
    message_bytes: Number, n_gpus: int, bandwidth_bytes_per_s: float, latency_s: float
) -> Number:
    """One-shot all-reduce: every GPU reads all N-1 peers' whole buffers and reduces locally.

    T = alpha + (N-1) x S / B; zero for N = 1. One synchronisation step, but (N-1) x S bytes into
    every GPU: latency-optimal, bandwidth-poor, so it wins only for small messages.

    Source: vLLM ``csrc/custom_all_reduce.cuh`` (``cross_device_reduce_1stage``) and
    TensorRT-LLM ``customAllReduceKernels.cu`` (``ONESHOT``): each rank loads the registered
    buffers of all ranks over NVLink peer-to-peer and writes the full sum.

    Hand check: 16 KiB on 8 GPUs at 450 GB/s, alpha 1 us: 1 us + 7 x 16384 / 450e9 = 1.255 us.

    >>> round(one_shot_allreduce_time_s(16384, 8, 450e9, 1e-6) * 1e6, 3)
    1.255
    """
    _check_n(n_gpus)
    s = _arr(message_bytes)
    n = n_gpus
    t = latency_s + (n - 1) * s / bandwidth_bytes_per_s
    return _ret(np.where(n > 1, t, 0.0), message_bytes)


def two_shot_allreduce_time_s(
    message_bytes: Number, n_gpus: int, bandwidth_bytes_per_s: float, latency_s: float
) -> Number:
    """Two-shot all-reduce: direct-read reduce-scatter, then direct-read all-gather.

    T = 2 alpha + 2(N-1)/N x S / B; zero for N = 1. The ring's bytes in two steps instead of
    2(N-1).

    Source: vLLM ``csrc/custom_all_reduce.cuh`` (``cross_device_reduce_2stage``); TensorRT-LLM
    ``customAllReduceKernels.cu`` (``TWOSHOT``).

    Hand check: 1 MB on 8 GPUs at 450 GB/s, alpha 1 us: 2 us + 1.75e6 / 450e9 = 5.889 us.

    >>> round(two_shot_allreduce_time_s(1e6, 8, 450e9, 1e-6) * 1e6, 3)
    5.889
    """
    _check_n(n_gpus)
    s = _arr(message_bytes)
    n = n_gpus
    t = 2 * latency_s + 2 * (n - 1) / n * s / bandwidth_bytes_per_s
    return _ret(np.where(n > 1, t, 0.0), message_bytes)


def one_shot_allgather_time_s(
    message_bytes: Number, n_gpus: int, bandwidth_bytes_per_s: float, latency_s: float
) -> Number:
    """Direct (one-shot) all-gather or reduce-scatter: each GPU reads its N-1 peers' shards.

    T = alpha + (N-1)/N x S / B; zero for N = 1. Ring bytes in a single step (needs every peer
    reachable directly: NVSwitch or a full xGMI mesh).

    Source: the first/second stage of vLLM's ``cross_device_reduce_2stage``; NCCL's NVLS and
    "PAT" algorithms have the same byte count.

    >>> round(one_shot_allgather_time_s(2 * 2**20, 8, 450e9, 1e-6) * 1e6, 2)
    5.08
    """
    _check_n(n_gpus)
    s = _arr(message_bytes)
    n = n_gpus
    t = latency_s + (n - 1) / n * s / bandwidth_bytes_per_s
    return _ret(np.where(n > 1, t, 0.0), message_bytes)


def nccl_protocols(link: Interconnect) -> tuple[str, ...]:
    """NCCL's (and RCCL's) protocols on an intra-node link: LL and Simple, and LL128 on NVLink
    only.

    Empty for the networks, whose ring runs one protocol in this model (their alpha is already
    NCCL's network LL128 step). Infinity Fabric runs LL and Simple (RCCL's LL128 is off by
    default on MI300X).

    Source: NCCL src/graph/tuning.cc: LL128 is enabled by default only where the path is NVLink
    (``typeIntra <= PATH_NVB``), so not over PCIe.

    >>> from advisor.catalog import get_interconnect
    >>> nccl_protocols(get_interconnect("pcie4")), nccl_protocols(get_interconnect("xgmi"))
    (('LL', 'Simple'), ('LL', 'Simple'))
    """
    if link.scope != "intra_node" or link.kind not in NCCL_RING_STEP_LATENCY_S:
        return ()
    return PROTOCOLS if link.kind == "nvlink" else ("LL", "Simple")


def protocol_bandwidth_bytes_per_s(
    bandwidth_bytes_per_s: float, protocol: str, link_id: str = ""
) -> float:
    """Bus bandwidth one NCCL protocol carries: B_p = min(fraction_p x B, LL cap of the link).

    fraction: LL 0.5, LL128 0.92, Simple 1; the LL cap per NVLink generation
    (:data:`NCCL_LL_MAX_BUSBW_BYTES_PER_S`). Source: NCCL src/graph/tuning.cc ("Various model
    refinements", ``llMaxBws``).

    Hand check: H100 NVLink at 0.783 x 450 GB/s = 352.4 GB/s Simple: LL min(176.2, 141) = 141 GB/s.

    >>> round(protocol_bandwidth_bytes_per_s(352.35e9, "LL", "nvlink4") / 1e9, 1)
    141.0
    >>> round(protocol_bandwidth_bytes_per_s(14e9, "LL", "pcie4") / 1e9, 1)
    7.0
    """
    bw = NCCL_PROTOCOL_BANDWIDTH_FRACTION[protocol] * bandwidth_bytes_per_s
    if protocol == "LL":
        bw = min(bw, NCCL_LL_MAX_BUSBW_BYTES_PER_S.get(link_id, math.inf))
    return bw


_RING_FORMULAS = {
    "allreduce": ring_allreduce_time_s,
    "allgather": ring_allgather_time_s,
    "reducescatter": ring_reducescatter_time_s,
}


def nccl_ring_time_s(
    op: str,
    message_bytes: Number,
    n_gpus: int,
    link: Interconnect,
    bandwidth_bytes_per_s: float,
    kernel_efficiency: float = 1.0,
) -> Number:
    """NCCL's ring with its fastest protocol: min over p of base_p + ring(S, N, B_p, alpha_p).

    base_p: :data:`NCCL_RING_BASE_LATENCY_S`; alpha_p: :data:`NCCL_RING_STEP_LATENCY_S` for LL
    and LL128, the link's ``latency_s`` for Simple; B_p: :func:`protocol_bandwidth_bytes_per_s`
    of the Simple bandwidth B. Links without modelled protocols (:func:`nccl_protocols`) run one:
    6.6 us + ring(S, N, B, link alpha). Source: NCCL src/graph/tuning.cc, whose tuner picks the
    (algorithm, protocol) of least modelled time per call. ``kernel_efficiency`` scales each
    protocol's rate (B_p), not its latencies (:func:`algorithm_time_s`).

    Hand check, 32 KiB on 8 x H100 (B = 0.783 x 450 GB/s): LL 6.6 + 14 x 0.6 + 1.75 x 32768 /
    141e9 = 15.41 us; Simple 8.4 + 14 x 2.2 + 1.75 x 32768 / 352.35e9 = 39.36 us. 1 GiB: Simple,
    8.4 + 30.8 + 1.75 x 2^30 / 352.35e9 = 5372.1 us.

    >>> from advisor.catalog import get_interconnect
    >>> nvl = get_interconnect("nvlink4")
    >>> [round(float(nccl_ring_time_s("allreduce", s, 8, nvl, 352.35e9)) * 1e6, 2)
    ...  for s in (32768, 2**30)]
    [15.41, 5372.1]
    """
    ring = _RING_FORMULAS[op]
    protocols = nccl_protocols(link)
    if not protocols:
        return NCCL_BASE_LATENCY_S + ring(
            message_bytes, n_gpus, kernel_efficiency * bandwidth_bytes_per_s, link.latency_s
        )
    times = []
    for p in protocols:
        alpha = link.latency_s if p == "Simple" else NCCL_RING_STEP_LATENCY_S[link.kind][p]
        bw = kernel_efficiency * protocol_bandwidth_bytes_per_s(bandwidth_bytes_per_s, p, link.id)
        times.append(_arr(NCCL_RING_BASE_LATENCY_S[p] + ring(message_bytes, n_gpus, bw, alpha)))
    return _ret(np.minimum.reduce(times), message_bytes)


# --------------------------------------------------------------------------------------------
# nccl-tests conventions
# --------------------------------------------------------------------------------------------


def busbw_factor(op: str, n_gpus: int) -> float:
    """nccl-tests' bus-bandwidth factor: busbw = algbw x factor.

    All-reduce 2(N-1)/N; all-gather and reduce-scatter (N-1)/N; 0 for N = 1.

    Source: NVIDIA nccl-tests ``doc/PERFORMANCE.md`` ("Bus bandwidth").

    >>> busbw_factor("allreduce", 8), busbw_factor("allgather", 8)
    (1.75, 0.875)
    """
    _check_n(n_gpus)
    if op == "allreduce":
        return 2 * (n_gpus - 1) / n_gpus
    if op in ("allgather", "reducescatter"):
        return (n_gpus - 1) / n_gpus
    raise ValueError(f"op={op!r}; allowed: {', '.join(OPS)}")


def algbw_bytes_per_s(message_bytes: Number, time_s: Number) -> Number:
    """Algorithm bandwidth as nccl-tests prints it: algbw = S / t; 0 when t = 0 (one GPU:
    nothing crosses a link, so no bandwidth is used; never an infinite rate).

    Source: nccl-tests ``doc/PERFORMANCE.md`` ("Algorithm bandwidth").

    Hand check (row M0975): 65536 B in 46.8 us -> 1.400 GB/s.

    >>> round(algbw_bytes_per_s(65536, 46.8e-6) / 1e9, 3)
    1.4
    """
    s, t = _arr(message_bytes), _arr(time_s)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(t > 0, s / np.where(t > 0, t, 1.0), 0.0)
    return _ret(out, message_bytes if np.ndim(message_bytes) else time_s)


def busbw_bytes_per_s(algbw: Number, op: str, n_gpus: int) -> Number:
    """Bus bandwidth: busbw = algbw x busbw_factor(op, N) (0 for N = 1).

    Source: nccl-tests ``doc/PERFORMANCE.md``. Hand check (row M0975): algbw 1.400 GB/s x 1.75
    = 2.45 GB/s, the busbw nccl-tests printed.

    >>> round(busbw_bytes_per_s(65536 / 46.8e-6, "allreduce", 8) / 1e9, 2)
    2.45
    """
    f = busbw_factor(op, n_gpus)
    a = _arr(algbw)
    return _ret(np.where(f > 0, a * f, 0.0), algbw)


def time_from_busbw_s(message_bytes: Number, busbw: Number, op: str, n_gpus: int) -> Number:
    """Invert nccl-tests' busbw: t = S x factor / busbw.

    Source: nccl-tests ``doc/PERFORMANCE.md``. Hand check (row M0997): 128 KiB at busbw
    5.73 GB/s on 8 GPUs -> 131072 x 1.75 / 5.73e9 = 40.0 us (the row says ~40.1 us).

    >>> round(time_from_busbw_s(131072, 5.73e9, "allreduce", 8) * 1e6, 1)
    40.0
    """
    return _ret(_arr(message_bytes) * busbw_factor(op, n_gpus) / _arr(busbw), message_bytes)


# --------------------------------------------------------------------------------------------
# Calibration (fitted by advisor.perf.calibration.collective_fit.fit_calibration)
# --------------------------------------------------------------------------------------------

#: Fitted by ``advisor.perf.calibration.collective_fit.fit_calibration`` on the rows of
#: ``advisor.perf.validation.collectives.load_collective_rows()`` with the links of
#: data/interconnects.yaml (commit 69a40d7: nvlink3 300 GB/s 3.3 us, nvlink4 450 GB/s 2.2 us,
#: nvlink5 900 GB/s 2.2 us, xgmi 7 x 64 GB/s 2.7 us, pcie5 63 GB/s 5.7 us). Run ``python -m
#: advisor.perf.calibration.collective_fit`` to print a fresh fit and the validation table.
#: Rows that produced each value:
#:
#: * ``link_efficiency["nvlink"]``: median busbw / raw link bandwidth over the ring rows with
#:   S >= 1 GiB: A100 M0990 M0991 M0993 M0994 (NVLink3, 300 GB/s, no NVLS), H200 M1015 M1016
#:   M1018 M1022 M1036 (NVLink4, 450 GB/s), B200 M1025 M1027 M1030 M1034 (NVLink5, 900 GB/s);
#:   13 rows (ring by NCCL_NVLS_ENABLE=0 or below the notes' NVLS threshold), spread 0.748
#:   (B200) .. 0.816 (H200).
#: * ``link_efficiency["xgmi"]``: 32 RCCL rows with S >= 1 GiB: M1041, A0623-A0627, K0046-K0050
#:   and K0118-K0121 (8 x MI300X, 7 x 64 GB/s peer links), K0051-K0054 (8 x MI325X),
#:   A0655-A0667 and K0198 (8 x MI350X / MI355X, xgmi-mi350); one fraction for the link kind (MI300X,
#:   MI325X and MI35x pooled).
#: * ``link_efficiency["pcie"]``: M1049 (8 x RTX 5090 on PCIe 5 x16, 63 GB/s; the NCCL developer
#:   notes PCIe all-reduce is bounded by CPU/memory): 1 row, consumer GPU.
#: * ``link_efficiency["infiniband"/"ethernet"]``: no measurement row; the pooled median of all
#:   per-row ring fractions above, AMD rows included (not a fit to these links: an assumption).
#: * ``nvls_efficiency``: NVLS effective bandwidth / (nvlink fraction x raw), median over the
#:   rows with S >= 1 GiB whose notes say NVLS was used: H200 M1017 M1019 M1035 K0166-K0169,
#:   H100 M1039 M1040 K0142-K0145, B200 M1031 (14 rows; B200 is the low outlier, 0.76 vs
#:   0.87-0.88 for Hopper). Rows
#:   where NCCL chose for itself (M1010-M1014) are validated with the fastest-algorithm rule.
#: * ``custom_efficiency`` and ``custom_base_latency_s``: least-squares line through the six
#:   vLLM/SGLang custom all-reduce rows M1051 M1057 M1058 M1059 M1061 M1062 (8 x H100, eager mode
#:   without CUDA graphs, "data size" read as bf16 elements). The latency includes eager launch
#:   overhead, so it over-states a CUDA-graph serving step by a few us (conservative).
#: * ``harness_overhead_s``: per benchmark harness, the median of measured - modelled time over
#:   its rows with S <= 1 MiB, clipped at 0. nccl-tests / rccl-tests by launch mode
#:   (``validation.collectives.ONE_PROCESS_HARNESS``): a process per GPU, 0.8 us (K0019-K0036,
#:   18 rows, 8 x MI300X); one process (``-g 8``: one thread launches the eight GPUs' kernels
#:   in turn) with HIP, 34.7 us (A0596-A0613, A0628-A0645, K0055-K0072, K0098-K0108, K0191-K0195:
#:   8 x MI300X / MI350X / MI355X), with CUDA 0.02 us (K0122-K0132, K0146-K0156, 8 x H100 / H200 NVLS, and M0975,
#:   A100 64 KiB 46.8 us, which it leaves 65% low); torch.distributed M0997 M0998 M0999 M1000
#:   (4 rows; PyTorch call and timing overhead, 19 us: the 8 x H200 run takes 38-46 us from
#:   128 KiB to 1 MiB where NCCL's LL ring takes 17-28 us). Used only to compare with those
#:   rows, never added to a prediction (an engine runs a process per GPU). In-sample fits: the
#:   small-message rows they come from are not an independent check of them.
CALIBRATION: dict = {
    "link_efficiency": {
        "nvlink": 0.783,
        "pcie": 0.4444,
        "xgmi": 0.7056,
        "infiniband": 0.7122,
        "ethernet": 0.7122,
    },
    "nvls_efficiency": 0.868,
    "custom_efficiency": 0.3773,
    "custom_base_latency_s": 8.48e-06,
    "harness_overhead_s": {
        "nccl-tests": 8e-07,
        "nccl-tests -g (one process, CUDA)": 2e-08,
        "nccl-tests -g (one process, HIP)": 3.473e-05,
        "torch.distributed": 1.938e-05,
    },
}


@dataclass(frozen=True)
class CollectiveResult:
    """One collective's predicted time and its nccl-tests bandwidths (bytes/s, one direction)."""

    op: str
    algorithm: str
    n_gpus: int
    message_bytes: float
    time_s: float
    algbw_bytes_per_s: float
    busbw_bytes_per_s: float
    link_id: str


def achievable_fraction_for(link: Interconnect, calibration: Mapping | None = None) -> float:
    """The fitted fraction of raw bandwidth a ring collective reaches on this link kind."""
    cal = CALIBRATION if calibration is None else calibration
    return float(cal["link_efficiency"][link.kind])


def kernel_bound(link: Interconnect) -> bool:
    """Whether a collective's rate on ``link`` is set by the GPUs' copy kernels, not the link.

    True for NVLink and Infinity Fabric (hundreds of GB/s per GPU: NCCL needs 16-32 channels,
    one SM each, and the custom all-reduces tens of thread blocks to fill them); False for PCIe
    and the networks (tens of GB/s, which a few channels fill: NCCL gives a ring whose bandwidth
    is under PCIe's 256 threads instead of its maximum). Inside an engine the copy kernels run
    slower than in nccl-tests (``profiles.collective_efficiency``); that costs time only where
    they, not the link, set the rate.

    Source: NCCL src/graph/tuning.cc (``simpleDefaultThreads = (bwIntra x nChannels <= PCI_BW) ?
    256 : NCCL_SIMPLE_MAX_NTHREADS``).

    >>> from advisor.catalog import get_interconnect
    >>> kernel_bound(get_interconnect("nvlink4")), kernel_bound(get_interconnect("pcie4"))
    (True, False)
    """
    return link.kind in ("nvlink", "xgmi")


def _supports_p2p(link: Interconnect) -> bool:
    return link.scope == "intra_node" and link.kind in ("nvlink", "xgmi")


def available_algorithms(op: str, n_gpus: int, link: Interconnect) -> tuple[str, ...]:
    """Algorithms that exist for ``op`` on ``link`` (ring always; others need hardware support).

    >>> from advisor.catalog import get_interconnect
    >>> nvl = get_interconnect("nvlink4")  # 450 GB/s, 2.2 us per step, NVLS
    >>> available_algorithms("allreduce", 8, nvl)
    ('ring', 'nvls', 'one_shot', 'two_shot')
    """
    if op not in OPS:
        raise ValueError(f"op={op!r}; allowed: {', '.join(OPS)}")
    algs = ["ring"]
    if op == "allreduce":
        if link.topology == "network" and n_gpus > 2:
            algs.append("tree")
        if link.in_switch_reduction:
            algs.append("nvls")
        if _supports_p2p(link):
            algs += ["one_shot", "two_shot"]
    elif _supports_p2p(link):
        algs.append("one_shot")
    return tuple(algs)


def algorithm_time_s(
    op: str,
    algorithm: str,
    message_bytes: Number,
    n_gpus: int,
    link: Interconnect,
    *,
    achievable_fraction: float | None = None,
    calibration: Mapping | None = None,
    kernel_efficiency: float = 1.0,
) -> Number:
    """Time of one algorithm: software latency + the formula at the achievable bandwidth.

    T = base latency (NCCL tuning.cc, or fitted for custom kernels) + formula(S, N, k x f x B_eff,
    link.latency_s), with B_eff = ``link.effective_bandwidth_bytes_per_s(N)``, f the fitted
    fraction; NVLS uses f x nvls_efficiency, one/two-shot f x custom_efficiency. Zero for N = 1.

    k, ``kernel_efficiency``: 1 in a collectives benchmark; inside an engine the fraction of
    that speed its copy kernels reach while they share the GPU with the GEMMs
    (``perf.model.profiles.collective_efficiency``). It slows the bytes, not the latencies: a
    4-byte flag exchange costs the same whatever the copy rate, so a decode step's 16 KiB
    all-reduce (latency-bound) stays near its benchmark time and a prefill's 64 MiB one
    (bandwidth-bound) takes 1/k of it.
    """
    _check_n(n_gpus)
    cal = CALIBRATION if calibration is None else calibration
    if n_gpus == 1:
        return _ret(np.zeros_like(_arr(message_bytes)), message_bytes)
    f = achievable_fraction_for(link, cal) if achievable_fraction is None else achievable_fraction
    if not 0 < f <= 1:
        raise ValueError(f"achievable_fraction={f} must be in (0, 1]")
    if not 0 < kernel_efficiency <= 1:
        raise ValueError(f"kernel_efficiency={kernel_efficiency} must be in (0, 1]")
    ring_bw = f * link.effective_bandwidth_bytes_per_s(n_gpus)
    bw = kernel_efficiency * ring_bw
    alpha = link.latency_s
    nccl = NCCL_BASE_LATENCY_S
    custom_base = cal["custom_base_latency_s"]
    custom_bw = bw * cal["custom_efficiency"]
    table = {
        ("allreduce", "ring"): lambda: nccl_ring_time_s(
            "allreduce", message_bytes, n_gpus, link, ring_bw, kernel_efficiency
        ),
        ("allreduce", "tree"): lambda: (
            nccl + tree_allreduce_time_s(message_bytes, n_gpus, bw, alpha)
        ),
        ("allreduce", "nvls"): lambda: (
            NVLS_BASE_LATENCY_S
            + nvls_allreduce_time_s(message_bytes, n_gpus, bw * cal["nvls_efficiency"], alpha)
        ),
        ("allreduce", "one_shot"): lambda: (
            custom_base + one_shot_allreduce_time_s(message_bytes, n_gpus, custom_bw, alpha)
        ),
        ("allreduce", "two_shot"): lambda: (
            custom_base + two_shot_allreduce_time_s(message_bytes, n_gpus, custom_bw, alpha)
        ),
        ("allgather", "ring"): lambda: nccl_ring_time_s(
            "allgather", message_bytes, n_gpus, link, ring_bw, kernel_efficiency
        ),
        ("reducescatter", "ring"): lambda: nccl_ring_time_s(
            "reducescatter", message_bytes, n_gpus, link, ring_bw, kernel_efficiency
        ),
        ("allgather", "one_shot"): lambda: (
            custom_base + one_shot_allgather_time_s(message_bytes, n_gpus, custom_bw, alpha)
        ),
        ("reducescatter", "one_shot"): lambda: (
            custom_base + one_shot_allgather_time_s(message_bytes, n_gpus, custom_bw, alpha)
        ),
    }
    if (op, algorithm) not in table:
        raise ValueError(f"no {algorithm!r} algorithm for {op!r}")
    return table[(op, algorithm)]()


def _validate_inputs(message_bytes: Number, n_gpus: int) -> None:
    _check_n(n_gpus)
    s = _arr(message_bytes)
    if not np.all(np.isfinite(s)) or np.any(s < 0):
        raise ValueError("message_bytes must be finite and >= 0")


def collective_time_s(
    op: str,
    message_bytes: Number,
    n_gpus: int,
    link: Interconnect,
    *,
    achievable_fraction: float | None = None,
    algorithms: Sequence[str] | None = None,
    calibration: Mapping | None = None,
    kernel_efficiency: float = 1.0,
) -> Number:
    """Elementwise minimum over the available algorithms (vectorised over message_bytes);
    ``kernel_efficiency`` as in :func:`algorithm_time_s`."""
    _validate_inputs(message_bytes, n_gpus)
    algs = _choose_set(op, n_gpus, link, algorithms)
    times = [
        _arr(
            algorithm_time_s(
                op,
                a,
                message_bytes,
                n_gpus,
                link,
                achievable_fraction=achievable_fraction,
                calibration=calibration,
                kernel_efficiency=kernel_efficiency,
            )
        )  # fmt: skip
        for a in algs
    ]
    return _ret(np.minimum.reduce(times), message_bytes)


def allreduce_time_s(
    message_bytes: Number,
    n_gpus: int,
    link: Interconnect,
    *,
    achievable_fraction: float | None = None,
    algorithms: Sequence[str] | None = None,
    kernel_efficiency: float = 1.0,
) -> Number:
    """All-reduce time, min over algorithms, elementwise over a numpy array of message sizes
    (``kernel_efficiency``: an engine's copy-kernel slowdown, :func:`algorithm_time_s`).

    >>> from advisor.catalog import get_interconnect
    >>> nvl = get_interconnect("nvlink4")  # 450 GB/s, 2.2 us per step, NVLS
    >>> [round(float(t) * 1e6, 1) for t in allreduce_time_s(np.array([16384, 2**30]), 8, nvl)]
    [11.5, 3979.0]

    16 KiB (Llama-2-70B, one decode token): one-shot, 8.48 us fitted base + 2.2 us + 7 x 16384 /
    (0.3773 x 0.783 x 450e9) = 11.5 us. 1 GiB: NVLS, 25 us + 4.4 us + 1.125 x 2^30 / (0.868 x
    0.783 x 450e9) = 3979 us (row M1010, through PyTorch, measured 4053 us).

    Inside an engine whose copy kernels reach half their benchmark rate (k = 0.5) the bytes
    take twice as long and the latencies do not move: 16 KiB 8.48 + 2.2 + 7 x 16384 / (0.5 x
    0.3773 x 0.783 x 450e9) = 12.41 us (11.5 / 0.5 = 23.1 us if the whole time were slowed);
    64 MiB (NVLS) 29.4 + 2 x 246.9 = 523.1 us, nearly 1/k of its 276.3 us.

    >>> [round(float(t) * 1e6, 1) for t in allreduce_time_s(np.array([16384, 2**26]), 8, nvl,
    ...                                                      kernel_efficiency=0.5)]
    [12.4, 523.1]
    """
    return collective_time_s(
        "allreduce", message_bytes, n_gpus, link,
        achievable_fraction=achievable_fraction, algorithms=algorithms,
        kernel_efficiency=kernel_efficiency,
    )  # fmt: skip


def _choose_set(
    op: str, n_gpus: int, link: Interconnect, algorithms: Sequence[str] | None
) -> tuple[str, ...]:
    avail = available_algorithms(op, n_gpus, link)
    if algorithms is None:
        return avail
    bad = [a for a in algorithms if a not in ALGORITHMS]
    if bad:
        raise ValueError(f"unknown algorithms {bad}; allowed: {', '.join(ALGORITHMS)}")
    chosen = tuple(a for a in algorithms if a in avail)
    if not chosen:
        raise ValueError(
            f"none of {list(algorithms)} is available for {op} on {link.id!r} "
            f"(available: {', '.join(avail)})"
        )
    return chosen


def collective(
    op: str,
    message_bytes: float,
    n_gpus: int,
    link: Interconnect,
    *,
    achievable_fraction: float | None = None,
    algorithms: Sequence[str] | None = None,
    calibration: Mapping | None = None,
    kernel_efficiency: float = 1.0,
) -> CollectiveResult:
    """The fastest algorithm for one collective, with nccl-tests' algbw and busbw
    (``kernel_efficiency`` < 1: inside an engine, :func:`algorithm_time_s`)."""
    _validate_inputs(message_bytes, n_gpus)
    s = float(message_bytes)
    if n_gpus == 1:
        return CollectiveResult(op, "none", 1, s, 0.0, 0.0, 0.0, link.id)
    best_alg, best_t = "", math.inf
    for a in _choose_set(op, n_gpus, link, algorithms):
        t = float(
            algorithm_time_s(
                op, a, s, n_gpus, link,
                achievable_fraction=achievable_fraction, calibration=calibration,
                kernel_efficiency=kernel_efficiency,
            )
        )  # fmt: skip
        if t < best_t:
            best_alg, best_t = a, t
    alg = float(algbw_bytes_per_s(s, best_t))
    return CollectiveResult(
        op, best_alg, n_gpus, s, best_t, alg, float(busbw_bytes_per_s(alg, op, n_gpus)), link.id
    )


def allreduce(
    message_bytes: float, n_gpus: int, link: Interconnect, **kw: object
) -> CollectiveResult:
    """All-reduce: fastest algorithm, time and nccl-tests bandwidths.

    >>> from advisor.catalog import get_interconnect
    >>> nvl = get_interconnect("nvlink4")  # 450 GB/s, 2.2 us per step, NVLS
    >>> r = allreduce(16 * 2**30, 8, nvl)
    >>> r.algorithm, round(r.busbw_bytes_per_s / 1e9)
    ('nvls', 476)

    476 GB/s: 2(N-1)/(N+1) x 0.868 x 0.783 x 450 GB/s = 1.556 x 305.8 GB/s (the 26 us of latency
    is negligible at 16 GiB); rows M1035 (H200) and M1040 (H100) measured 480 and 476 GB/s.
    """
    return collective("allreduce", message_bytes, n_gpus, link, **kw)  # type: ignore[arg-type]


def allgather(
    message_bytes: float, n_gpus: int, link: Interconnect, **kw: object
) -> CollectiveResult:
    """All-gather (S = gathered buffer): fastest algorithm, time and nccl-tests bandwidths."""
    return collective("allgather", message_bytes, n_gpus, link, **kw)  # type: ignore[arg-type]


def reducescatter(
    message_bytes: float, n_gpus: int, link: Interconnect, **kw: object
) -> CollectiveResult:
    """Reduce-scatter (S = input buffer): fastest algorithm, time and nccl-tests bandwidths."""
    return collective("reducescatter", message_bytes, n_gpus, link, **kw)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------
# Tensor parallelism and the article's formula
# --------------------------------------------------------------------------------------------


def tp_allreduce_bytes(batch_tokens: int, hidden_size: int, activation_bytes: float) -> float:
    """Bytes of one tensor-parallel all-reduce: the layer's output activations.

    S = tokens x hidden x bytes per element; two such all-reduces per transformer layer (after
    attention and after the MLP).

    Source: Shoeybi et al. 2019, "Megatron-LM" (arXiv 1909.08053), sec. 3, Fig. 4 (g operators).

    Llama-2-70B (hidden 8192), one decode token, bf16: 16 KiB.

    >>> tp_allreduce_bytes(1, 8192, 2)
    16384.0
    """
    if batch_tokens < 0 or hidden_size < 1 or activation_bytes <= 0:
        raise ValueError(
            f"batch_tokens={batch_tokens} (>= 0), hidden_size={hidden_size} (>= 1), "
            f"activation_bytes={activation_bytes} (> 0)"
        )
    return float(batch_tokens) * hidden_size * activation_bytes


def article_allreduce_time_s(
    message_bytes: Number, n_gpus: int, alpha_s: float, bandwidth_bytes_per_s: float
) -> Number:
    """The reference article's all-reduce cost model (kept as the article's, not ours).

    T(N) = 2 alpha + 2 beta (d/N) log2 N, with beta = 1 / bandwidth (seconds per byte; the
    article gives beta as a bandwidth, which only makes sense read this way). Neither the ring
    (2(N-1)/N x d / B) nor a tree: it under-counts bytes for N > 2 and latency steps for N > 2.

    Source: data/article-claims.md ("All-reduce cost model").

    With d = 16 KiB (Llama-2-70B, one decode token) on the article's NVLink (1.2 us, 450 GB/s),
    N = 8: 2.4 us + 2 x 2048 x 3 / 450e9 = 2.427 us.

    >>> round(article_allreduce_time_s(16384, 8, 1.2e-6, 450e9) * 1e6, 3)
    2.427
    """
    _check_n(n_gpus)
    s = _arr(message_bytes)
    t = 2 * alpha_s + 2 * (s / n_gpus) * math.log2(n_gpus) / bandwidth_bytes_per_s
    return _ret(t, message_bytes)


def article_message_bytes_for(
    time_s: float, n_gpus: int, alpha_s: float, bandwidth_bytes_per_s: float
) -> float:
    """Solve the article's T(N) for d: d = (T - 2 alpha) x N x B / (2 log2 N).

    Source: algebra on data/article-claims.md's T(N). The article never states d.

    "15 us" (NVLink, alpha 1.2 us, 450 GB/s, N = 8, the N the article names): d = 12.6 us x 8
    x 450e9 / 6 = 7.56 MB. "380 us" (PCIe, alpha 5 us, 32 GB/s): the article gives no N for it;
    we assume N = 8, the same N as the NVLink figure it is set against: d = 375 us... = 15.79 MB.
    With N = 2 or 4 (N / log2 N = 2 for both) d = 11.84 MB. No N makes the two figures use the
    same d (d / (N / log2 N) >= 11.84 MB on PCIe, vs 7.56 MB on NVLink).

    >>> round(article_message_bytes_for(15e-6, 8, 1.2e-6, 450e9) / 1e6, 2)
    7.56
    >>> round(article_message_bytes_for(380e-6, 8, 5e-6, 32e9) / 1e6, 2)
    15.79
    >>> round(article_message_bytes_for(380e-6, 2, 5e-6, 32e9) / 1e6, 2)
    11.84
    """
    _check_n(n_gpus)
    if n_gpus == 1:
        raise ValueError("n_gpus=1: the article's T(1) = 2 alpha does not depend on d")
    if time_s < 2 * alpha_s:
        raise ValueError(f"time_s={time_s} is below the formula's floor 2 alpha = {2 * alpha_s}")
    return (time_s - 2 * alpha_s) * n_gpus * bandwidth_bytes_per_s / (2 * math.log2(n_gpus))

"""Efficiency constants: what fraction of datasheet peak a real serving stack reaches.

A small set of physically meaningful constants, fitted by ``python -m advisor calibrate`` to the
published measurements and stored in ``data/calibration.yaml``:

- per accelerator family: ``eta_mem`` (fraction of HBM bandwidth decode reaches),
  ``eta_compute_16`` and ``eta_compute_fp8`` (fraction of dense tensor peak large GEMMs reach),
  and ``eta_compute_fp4`` where NVFP4 rows on FP4 tensor cores pin it (else the fp8 value);
- per serving engine: ``step_overhead_s`` (fixed per iteration: scheduling, launches, sampling),
  ``seq_overhead_s`` (per running sequence per iteration), ``layer_overhead_s`` (per layer and
  pass: kernel launches, for a reference layer of 12 kernels; a layer pays it in proportion to
  its kernels, ``step.layer_overhead_s``), ``request_overhead_s`` (per request,
  on the first token: tokenisation, HTTP, admission), ``efficiency`` (a multiplier on the
  compute etas for the engine's GEMM/attention kernels) and ``mem_efficiency`` (the same on
  eta_mem, for its memory-bound decode kernels).

Families with no measurements fall back to priors with sources: eta_compute from the measured
"maximum achievable matmul FLOPS" (MAMF, S. Bekman, ml-engineering; data/reference/hardware.yaml)
divided by the spec, eta_mem from the fitted families' mean.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

from advisor.catalog.files import load_data_yaml, without_block
from advisor.catalog.loader import DATA_DIR, fabric_names
from advisor.catalog.specs import Interconnect
from advisor.physics.collectives import kernel_bound

CALIBRATION_PATH = DATA_DIR / "calibration.yaml"
#: Engine profile ids. ``vllm`` is the newest vLLM family (the V1 engine, default from vLLM 0.8.0
#: on: vLLM v0.8.0 release notes); ``vllm-v0`` the V0 engine of earlier releases, whose scheduler
#: and per-step CPU overheads differ (the V1 rewrite's motivation, vLLM blog 2025-01-27 "vLLM V1").
#: ``trtllm`` is TensorRT-LLM's PyTorch backend (the default from 1.0; TensorRT-LLM 1.0 release
#: notes), ``trtllm-trt`` the TensorRT-engine builds of the releases before.
ENGINES = ("generic", "trtllm", "trtllm-trt", "vllm", "vllm-v0", "sglang")
#: A profile without fitted constants of its own borrows these (and says so in its note).
FALLBACK = {"vllm-v0": "vllm", "sglang": "vllm", "trtllm-trt": "trtllm"}
#: First vLLM release whose default engine is V1.
VLLM_V1_FROM = (0, 8)


def engine_for_text(text: str) -> str:
    """Engine profile id for an engine as a benchmark names it (version family for vLLM).

    Unversioned, nightly or "latest" vLLM is the newest family, unless the row dates the run to
    2024 or earlier (before vLLM 0.8.0, March 2025).

    >>> [engine_for_text(t) for t in ("vLLM ~0.6", "vLLM v0.12.0", "vLLM (version not stated)")]
    ['vllm-v0', 'vllm', 'vllm']
    >>> engine_for_text("vLLM (ROCm; version not stated; Oct 2024)")
    'vllm-v0'
    >>> engine_for_text("TensorRT-LLM 0.17 (TRT engine)"), engine_for_text("SGLang 0.5.6")
    ('trtllm-trt', 'sglang')
    >>> engine_for_text("TensorRT-LLM 0.19 (trtllm-bench, PyTorch backend)")
    'trtllm'
    """
    import re

    t = text.lower()
    if "tensorrt-llm" in t or "trt-llm" in t or "trtllm" in t:
        m = re.search(r"(?:tensorrt|trt)-llm\D{0,5}?v?(\d+)\.(\d+)", t)
        if "pytorch" not in t and m and (int(m.group(1)), int(m.group(2))) < (1, 0):
            return "trtllm-trt"
        return "trtllm"
    if "sglang" in t:
        return "sglang"
    if "vllm" in t:
        m = re.search(r"vllm\D{0,30}?v?(\d+)\.(\d+)", t)
        if m and (int(m.group(1)), int(m.group(2))) < VLLM_V1_FROM:
            return "vllm-v0"
        year = re.search(r"\b(20\d\d)\b", t)
        if m is None and year and int(year.group(1)) <= 2024:  # undated version, 2024 run
            return "vllm-v0"
        return "vllm"
    return "generic"


#: Prior compute efficiency per family = measured MAMF / dense spec (data/reference/hardware.yaml,
#: measured_mamf_* rows from ml-engineering). fp8 priors likewise where measured.
PRIOR_ETA_COMPUTE_16 = {
    "ampere": 271.2 / 312,  # A100 MAMF bf16
    "hopper": 794.5 / 989,  # H100 MAMF bf16
    "blackwell": 1745.0 / 2250,  # B200 MAMF bf16
    "cdna3": 668.4 / 1307,  # MI300X MAMF bf16 (TunableOp on)
    "cdna4": 1565.0 / 2500,  # MI355X MAMF bf16
    "gaudi3": 1243.0 / 1835,  # Gaudi 3 MAMF bf16 vs 1,835 TF spec
    "ada": 0.70,  # no MAMF row; Ada between Ampere and Hopper GEMM efficiency (assumption)
    "cdna2": 0.60,  # no MAMF row; CDNA2 GEMMs assumed like CDNA3 + 10 points (assumption)
}
PRIOR_ETA_COMPUTE_FP8 = {
    "hopper": 1402.6 / 1979,  # H100 MAMF fp8
    "blackwell": 3432.5 / 4500,  # B200 MAMF fp8
}
#: Prior HBM efficiency where nothing is fitted: STREAM-like copies reach ~80-90% of HBM spec on
#: NVIDIA parts; AMD decode kernels have reached less (gpt-fast ROCm row M0818: 700 / 1638 GB/s).
PRIOR_ETA_MEM = {"cdna2": 0.5, "cdna3": 0.65, "cdna4": 0.65, "gaudi3": 0.65}
DEFAULT_ETA_MEM = 0.80


#: Time of a reference layer (12 kernels, ``step.REFERENCE_LAYER_KERNELS``) before calibration:
#: CUDA-graph replay still pays a few us per kernel (launch and ramp); also the centre of its
#: prior in the fit.
DEFAULT_LAYER_OVERHEAD_S = 20e-6


def prior_compute_etas(family: str) -> tuple[float, float]:
    """(eta_compute_16, eta_compute_fp8) priors: measured MAMF / spec, else 0.65 and 0.9 x that.

    >>> prior_compute_etas("gaudi3") == (1243.0 / 1835, 0.9 * 1243.0 / 1835)
    True
    """
    c16 = PRIOR_ETA_COMPUTE_16.get(family, 0.65)
    return c16, PRIOR_ETA_COMPUTE_FP8.get(family, c16 * 0.9)


@dataclass(frozen=True)
class FamilyEfficiency:
    eta_mem: float
    eta_compute_16: float
    eta_compute_fp8: float
    fitted: bool  # False = priors only
    #: Fraction of the dense FP4 peak NVFP4 GEMMs reach; the fp8 value where no fp4 row fits it.
    #: NVFP4 GEMMs carry a scale per 16 values and reach a lower fraction of their doubled peak
    #: than fp8 ones do of theirs.
    eta_compute_fp4: float


@dataclass(frozen=True)
class EngineProfile:
    name: str
    step_overhead_s: float
    seq_overhead_s: float
    request_overhead_s: float
    efficiency: float
    max_num_seqs: int
    fitted: bool
    mem_efficiency: float = 1.0
    #: Fixed time per transformer layer and pass (kernel launch and ramp; perf.model.step)
    layer_overhead_s: float = DEFAULT_LAYER_OVERHEAD_S
    #: Host time to dispatch one kernel of an eager pass (a prefill; physics.dispatch): the
    #: pass takes at least kernels x this. 0 before calibration (no floor).
    kernel_dispatch_s: float = 0.0
    #: One-shot/two-shot all-reduce kernels over NVLink/xGMI peer memory (TensorRT-LLM, vLLM and
    #: SGLang ship them); a plain PyTorch server only has NCCL's ring/tree/NVLS.
    custom_allreduce: bool = True
    #: How the memory fraction is read: vLLM's gpu_memory_utilization is a fraction of the whole
    #: GPU (weights and activations come out of it); TensorRT-LLM's kv_cache_free_gpu_mem_fraction
    #: is a fraction of what is left after weights and activation buffers (TensorRT-LLM docs,
    #: KvCacheConfig.free_gpu_memory_fraction).
    kv_fraction_of_free: bool = False
    note: str = ""
    #: Measurement rows that pinned the fitted constants, and how many of them were under load
    #: (fixed concurrency or a request rate): 0 for defaults and borrowed profiles.
    rows: int = 0
    #: ... with more than one sequence in flight (static batches > 1, offline, serving load)
    rows_batched: int = 0
    #: ... under serving load: fixed concurrency or a request rate (arrivals while running)
    rows_under_load: int = 0

    @property
    def calibrated_batched(self) -> bool:
        """Fitted to at least 3 rows with more than one sequence in flight (not only batch 1)."""
        return self.fitted and self.rows_batched >= 3

    @property
    def calibrated_under_load(self) -> bool:
        """Fitted to at least 3 rows under serving load (fixed concurrency or request rate)."""
        return self.fitted and self.rows_under_load >= 3


#: Defaults before calibration: conservative middle values (overheads of a few ms per step are
#: what vLLM and TensorRT-LLM report in their step-time logs at small batch).
_DEFAULT_ENGINE = {
    "generic": dict(step_overhead_s=2e-3, seq_overhead_s=2e-6, request_overhead_s=10e-3,
                    efficiency=1.0, max_num_seqs=512, custom_allreduce=False),
    "trtllm": dict(step_overhead_s=1e-3, seq_overhead_s=1e-6, request_overhead_s=8e-3,
                   efficiency=1.0, max_num_seqs=2048, kv_fraction_of_free=True),
    "trtllm-trt": dict(step_overhead_s=1e-3, seq_overhead_s=1e-6, request_overhead_s=8e-3,
                       efficiency=1.0, max_num_seqs=2048, kv_fraction_of_free=True),
    "vllm": dict(step_overhead_s=2e-3, seq_overhead_s=3e-6, request_overhead_s=10e-3,
                 efficiency=0.95, max_num_seqs=256),
    "vllm-v0": dict(step_overhead_s=3e-3, seq_overhead_s=5e-6, request_overhead_s=10e-3,
                    efficiency=0.95, max_num_seqs=256),
    "sglang": dict(step_overhead_s=1.5e-3, seq_overhead_s=2e-6, request_overhead_s=10e-3,
                   efficiency=0.97, max_num_seqs=1024),
}  # fmt: skip
#: Engines' default caps on running sequences: vLLM max_num_seqs 256 (EngineArgs), SGLang
#: max_running_requests (auto, ~1024 on 80 GB), TensorRT-LLM trtllm-bench max_batch_size up to
#: 2048 by its tuning heuristic.


_ACTIVE: dict | None = None


def set_active(doc: dict | None) -> None:
    """Use ``doc`` (the calibration.yaml structure) instead of the file; None = back to the file.

    Used by the fit, which evaluates the model under trial constants.
    """
    global _ACTIVE
    _ACTIVE = doc
    reload()


#: Top-level blocks of calibration.yaml no prediction reads: the fit's per-row residuals, 1,640
#: of its 1,778 lines (parsing them was 90% of the file's 25-90 ms on a fresh process's first
#: answer; ``advisor calibrate`` and ``advisor validate`` recompute them).
UNREAD_BLOCKS = ("residuals",)


@cache
def _calibration(path: Path = CALIBRATION_PATH) -> dict:
    """The calibration document, without its :data:`UNREAD_BLOCKS`."""
    if _ACTIVE is not None:
        return _ACTIVE
    if not path.exists():
        return {}
    text = path.read_text(encoding="utf-8")
    for key in UNREAD_BLOCKS:
        text = without_block(text, key)
    doc = load_data_yaml(text) or {}
    return doc if isinstance(doc, dict) else {}


def reload() -> None:
    """Forget the cached calibration (after ``calibrate`` wrote a new file)."""
    _calibration.cache_clear()
    family_efficiency.cache_clear()
    engine_profile.cache_clear()
    attention_efficiency.cache_clear()
    moe_efficiency.cache_clear()
    moe_expert_overhead_s.cache_clear()
    routing_draw_exponent.cache_clear()
    fabric_collective_efficiency.cache_clear()


@cache
def family_efficiency(family: str) -> FamilyEfficiency:
    fitted = (_calibration().get("families") or {}).get(family)
    prior_c16, prior_c8 = prior_compute_etas(family)
    if fitted:
        eta8 = float(fitted.get("eta_compute_fp8", prior_c8))
        return FamilyEfficiency(
            eta_mem=float(fitted.get("eta_mem", DEFAULT_ETA_MEM)),
            eta_compute_16=float(fitted.get("eta_compute_16", prior_c16)),
            eta_compute_fp8=eta8,
            fitted=True,
            eta_compute_fp4=float(fitted.get("eta_compute_fp4", eta8)),
        )
    fams = _calibration().get("families") or {}
    nv_mean = [float(v["eta_mem"]) for v in fams.values() if "eta_mem" in v]
    eta_mem = PRIOR_ETA_MEM.get(family, sum(nv_mean) / len(nv_mean) if nv_mean else DEFAULT_ETA_MEM)
    return FamilyEfficiency(eta_mem, prior_c16, prior_c8, fitted=False, eta_compute_fp4=prior_c8)


#: Attention kernels relative to dense GEMM/GEMV efficiency before calibration (FlashAttention-2
#: reaches 50-73% of A100 peak vs ~80-87% for large GEMMs: Dao 2023, arXiv 2307.08691).
DEFAULT_ATTENTION_EFFICIENCY = 0.75


#: Fused-MoE (grouped GEMM) kernels relative to dense GEMM/GEMV efficiency. They run many small,
#: unevenly filled matrices (per-expert token counts), so they can reach a lower fraction of peak
#: and bandwidth than one dense GEMM (Gale et al. 2023, MegaBlocks, MLSys: block-sparse MoE
#: kernels below dense cuBLAS throughput). Fitted when MoE rows exist; 1.0 (no penalty) before.
#: Fp8/fp4 experts get their own value per accelerator family (``moe_efficiency_lowp`` in the
#: family's section): their grouped GEMMs also load a scale per weight block (DeepSeek's
#: 128 x 128 FP8 blocks, MXFP4's 32-element groups), and how mature those kernels are differs
#: by vendor (DeepGEMM and CUTLASS on NVIDIA; Triton and AITER block-FP8 MoE on ROCm). One
#: shared value left Qwen3-235B BF16 on B200 20-30% too slow at 16 clients while SGLang's
#: DeepSeek FP8 on MI300X ran 2-3x slower than predicted; the fit puts the fp8/fp4 value near
#: the 16-bit one on NVIDIA families and well below it on CDNA3 (data/calibration.yaml).
DEFAULT_MOE_EFFICIENCY = 1.0


@cache
def moe_efficiency(low_precision: bool = False, family: str | None = None) -> float:
    """Fitted fraction of the dense GEMM efficiency the routed-expert kernels reach.

    ``low_precision``: experts in fp8 or fp4 (``replica.low_precision_experts``) on accelerator
    ``family``: that family's fitted value, else (no such rows on it) the 16-bit one.
    """
    g = _calibration().get("global") or {}
    fam = ((_calibration().get("families") or {}).get(family) or {}) if family else {}
    fitted = fam.get("moe_efficiency_lowp") if low_precision else None
    fitted = g.get("moe_efficiency") if fitted is None else fitted
    return float(fitted) if fitted is not None else DEFAULT_MOE_EFFICIENCY


#: How many independent routing draws a batch of n tokens is worth, as n^g
#: (``physics.roofline.expected_experts_touched``): 1 is the uniform, independent router of the
#: balls-into-bins count. With g = 1 the fit left every MoE decode row at 9-24 sequences 15%
#: slower than measured (median of 27 rows) between batch 1 at 0.93 and 25-70 at 1.02, while
#: dense rows stayed within 0-3% at every batch: the batch touched fewer distinct experts than
#: independent draws would. Fitted where MoE rows exist (data/calibration.yaml, ``global``),
#: with a narrow prior at 0.85 (``calibrate.ROUTING_PRIOR_CENTRE``: the rows alone barely pin it).
DEFAULT_ROUTING_DRAW_EXPONENT = 1.0


@cache
def routing_draw_exponent() -> float:
    """Fitted exponent g of a batch's effective routing draws n^g (1.0 before calibration)."""
    fitted = (_calibration().get("global") or {}).get("routing_draw_exponent")
    return float(fitted) if fitted is not None else DEFAULT_ROUTING_DRAW_EXPONENT


#: Fixed time per routed expert of a MoE layer, per pass, whatever the batch, on top of the
#: engine's per-layer overhead (``layer_overhead_s``). The fused-MoE kernels launch work over
#: every expert the GPU holds, whether a token picked it or not: the token sort pads each
#: expert's slot list to a block and the grouped GEMMs' grid spans those padded blocks
#: (SGLang/vLLM ``moe_align_block_size`` and ``fused_moe``: ceil((top_k x tokens + E x
#: (BLOCK_M - 1)) / BLOCK_M) row blocks), so at one token a layer costs time in proportion to
#: its experts, not to the weights it reads. How cheap an empty block is differs by vendor and
#: by the experts' precision (block-scaled fp8/fp4 kernels are other kernels: DeepGEMM and
#: CUTLASS on NVIDIA, Triton and AITER block-FP8 MoE on ROCm), so the value is fitted per
#: accelerator family, one for 16-bit and one for fp8/fp4 experts, where such MoE rows exist;
#: 0 before. The efficiencies ``moe_efficiency(_lowp)`` alone scaled the experts' bandwidth and
#: compute, so one value could not hold both ends: SGLang's DeepSeek-V3.1 and MiniMax-M2 FP8
#: (256 experts) on MI300X at one client ran 24 and 22 ms per token, 2.8x the prediction,
#: Kimi-K2 (384) 40 ms, while at 100 clients the same pages were within 3-15%. Fitted
#: (2026-12-04): MI300X fp8 0.92 us per expert, 16-bit ~0 (Llama-4 BF16 at one client within
#: 5-15%); B200 0.10-0.12 us; H100/H200 below 0.07 us.
#: A latency and a rate, the two numbers of any kernel (Hockney 1994, "The communication
#: challenge for MPP": t = t0 + n / r).
DEFAULT_MOE_EXPERT_OVERHEAD_S = 0.0


@cache
def moe_expert_overhead_s(low_precision: bool = False, family: str | None = None) -> float:
    """Fitted fixed time per routed expert of a MoE layer and pass on accelerator ``family``.

    ``low_precision``: experts in fp8 or fp4 (``moe_expert_overhead_lowp_s`` in the family's
    section), else 16-bit (``moe_expert_overhead_s``); 0 where the family has no fitted value.

    >>> moe_expert_overhead_s(True, "no-such-family")
    0.0
    """
    if not family:
        return DEFAULT_MOE_EXPERT_OVERHEAD_S
    fam = (_calibration().get("families") or {}).get(family) or {}
    key = "moe_expert_overhead_lowp_s" if low_precision else "moe_expert_overhead_s"
    return float(fam.get(key, DEFAULT_MOE_EXPERT_OVERHEAD_S))


#: Collectives inside a serving engine relative to the same collective in nccl-tests. The
#: isolated benchmark runs one collective back to back on idle GPUs; in an engine each
#: all-reduce waits for the slowest rank to finish its GEMM (skew), pays a kernel launch between
#: two GEMMs and shares the SMs and L2 with them, so it reaches a fraction of the benchmark's
#: bus bandwidth. 1.0 (the benchmark) before calibration; fitted on the engines' multi-GPU rows
#: as one shared value times a factor per scale-up fabric (the interconnect catalog's ``kind``:
#: NVLink, Infinity Fabric), since the kernels differ (NCCL and the engines' custom all-reduces
#: over NVSwitch; RCCL and AITER's over the MI300X's point-to-point mesh). The factor's prior
#: holds it near 1: fitted freely (prior centre 1.0, log width 0.5), Infinity Fabric's value
#: took in the slowness of the SGLang MI300X rows left when the ROCm vLLM source was held out,
#: and that fold's MI300X error went from 8.6% to 61% (issue 37, docs/accuracy.md).
#: It applies only where the GPUs' copy kernels set a collective's rate (NVLink, Infinity
#: Fabric: ``physics.collectives.kernel_bound``); over PCIe the link does, and a slower kernel
#: leaves the time unchanged. Applied to PCIe too (until 2026-12-03), the 0.65 fitted on NVLink
#: rows made a bandwidth-bound all-reduce over PCIe 1.54 x its benchmark time, and 8 x L40S
#: TP 4/8 offline throughput 0.67 x of measured (issue 37).
#: Source: NCCL documentation, "Performance" (nccl-tests measure isolated collectives); Rashidi
#: et al. 2021 (ISCA, "Enabling Compute-Communication Overlap in Distributed Deep Learning
#: Training Platforms") for the slowdown of collectives that share a GPU with compute kernels.
DEFAULT_COLLECTIVE_EFFICIENCY = 1.0


@dataclass(frozen=True)
class CollectiveEfficiency:
    """The in-engine collective efficiency a link uses, and where it comes from."""

    value: float
    #: The interconnect catalog's ``kind`` of the link (nvlink, xgmi, pcie, ...).
    fabric: str
    #: Fitted on rows over this fabric, or not applied (the link sets the rate): False when
    #: the fabric has no rows (the shared value) or nothing is fitted (nccl-tests speed).
    calibrated: bool
    note: str


def collective_efficiency(link: Interconnect) -> CollectiveEfficiency:
    """The fraction of its nccl-tests data rate a collective over ``link`` reaches in an engine
    (its latencies unchanged: ``physics.collectives.algorithm_time_s``).

    Kernel-bound fabrics (``physics.collectives.kernel_bound``) take their fitted value
    (``fabric_collective_efficiency``); one without rows takes the shared value and says so,
    or 1.0 if nothing is fitted. Other links take 1.0: the link, not the kernels, sets the rate.

    >>> from advisor.catalog import get_interconnect
    >>> collective_efficiency(get_interconnect("pcie5")).value
    1.0
    """
    if not kernel_bound(link):
        return CollectiveEfficiency(1.0, link.kind, True,
                                    "the link, not the GPUs' copy kernels, sets the rate")  # fmt: skip
    return fabric_collective_efficiency(link.kind)


@cache
def fabric_collective_efficiency(fabric: str) -> CollectiveEfficiency:
    """The fitted in-engine collective efficiency of kernel-bound ``fabric``.

        efficiency = shared x factor[fabric]

    ``shared`` (``global.collective_efficiency``) is fitted on every kernel-bound fabric's
    multi-GPU rows, ``factor`` (``fabrics.<kind>.collective_factor``) on that fabric's, with a
    prior at 1 (calibrate.PRIOR_WIDTH_LOG): a fabric departs from the shared value only as far
    as its rows insist. A fabric without a factor takes the shared value and is flagged.
    """
    shared = (_calibration().get("global") or {}).get("collective_efficiency")
    own = (_calibration().get("fabrics") or {}).get(fabric) or {}
    name = fabric_names().get(fabric, fabric)
    if shared is None:
        return CollectiveEfficiency(DEFAULT_COLLECTIVE_EFFICIENCY, fabric, False,
                                    f"not calibrated on {name}: nccl-tests speed assumed")  # fmt: skip
    if own.get("collective_factor") is None:
        return CollectiveEfficiency(float(shared), fabric, False,
                                    f"not calibrated on {name} (no rows): the value shared by "
                                    "the fabrics with rows")  # fmt: skip
    rows = own.get("rows")
    on = f"{rows} multi-GPU rows" if rows else "the multi-GPU rows"
    value = in_engine_collective_efficiency(float(shared), float(own["collective_factor"]))
    return CollectiveEfficiency(value, fabric, True, f"fitted on {on} over {name}")


def in_engine_collective_efficiency(shared: float, factor: float) -> float:
    """A fabric's in-engine collective efficiency: min(1, shared x factor).

    At most 1: beside the GEMMs the copy kernels run at most as fast as alone in nccl-tests.
    The fit's bounds (shared up to 1.2, factor up to 2) allow a product above 1, which the
    collectives refuse as a kernel efficiency; before 2026-12-07 a refit whose trial reached
    it ended ``advisor calibrate`` in an internal error.

    >>> in_engine_collective_efficiency(0.6, 1.1), in_engine_collective_efficiency(1.1, 1.05)
    (0.66, 1.0)
    """
    return min(1.0, shared * factor)


@cache
def attention_efficiency() -> float:
    fitted = (_calibration().get("global") or {}).get("attention_efficiency")
    return float(fitted) if fitted is not None else DEFAULT_ATTENTION_EFFICIENCY


def check_engine(engine: str) -> str:
    """``engine`` if it is a profile id, else ValueError naming the allowed ids."""
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r} is not a serving-engine profile; allowed: "
                         f"{', '.join(ENGINES)}")  # fmt: skip
    return engine


@cache
def engine_profile(engine: str) -> EngineProfile:
    """The engine's constants: fitted, else its fallback's fitted ones, else defaults."""
    check_engine(engine)
    base = dict(_DEFAULT_ENGINE[engine])
    engines = _calibration().get("engines") or {}
    fitted = engines.get(engine)
    own = bool(fitted) and not str(fitted.get("note", "")).startswith("no rows")
    if not fitted and FALLBACK.get(engine) in engines:
        donor = FALLBACK[engine]
        fitted = {**engines[donor], "note": f"no rows of its own: {donor}'s fitted constants"}
    if fitted:
        for k in (
            "step_overhead_s", "seq_overhead_s", "request_overhead_s", "efficiency",
            "mem_efficiency", "layer_overhead_s", "kernel_dispatch_s",
        ):  # fmt: skip
            if k in fitted:
                base[k] = float(fitted[k])
    note = (fitted or {}).get("note", "") if fitted else "defaults (not calibrated)"
    keys = ("rows", "rows_batched", "rows_under_load")
    counts = {k: int(fitted.get(k, 0)) for k in keys} if own else {}
    return EngineProfile(name=engine, fitted=own, note=note, **base, **counts)  # type: ignore[arg-type]

"""Efficiency constants: what fraction of datasheet peak a real serving stack reaches.

A small set of physically meaningful constants, fitted by ``python -m advisor calibrate`` to the
published measurements and stored in ``data/calibration.yaml``:

- per accelerator family: ``eta_mem`` (fraction of HBM bandwidth decode reaches),
  ``eta_compute_16`` and ``eta_compute_fp8`` (fraction of dense tensor peak large GEMMs reach);
- per serving engine: ``step_overhead_s`` (fixed per iteration: scheduling, launches, sampling),
  ``seq_overhead_s`` (per running sequence per iteration), ``request_overhead_s`` (per request,
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

import yaml

from advisor.catalog.loader import DATA_DIR

CALIBRATION_PATH = DATA_DIR / "calibration.yaml"
ENGINES = ("generic", "trtllm", "vllm", "sglang")

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


@dataclass(frozen=True)
class FamilyEfficiency:
    eta_mem: float
    eta_compute_16: float
    eta_compute_fp8: float
    fitted: bool  # False = priors only


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
    #: One-shot/two-shot all-reduce kernels over NVLink/xGMI peer memory (TensorRT-LLM, vLLM and
    #: SGLang ship them); a plain PyTorch server only has NCCL's ring/tree/NVLS.
    custom_allreduce: bool = True
    #: How the memory fraction is read: vLLM's gpu_memory_utilization is a fraction of the whole
    #: GPU (weights and activations come out of it); TensorRT-LLM's kv_cache_free_gpu_mem_fraction
    #: is a fraction of what is left after weights and activation buffers (TensorRT-LLM docs,
    #: KvCacheConfig.free_gpu_memory_fraction).
    kv_fraction_of_free: bool = False
    note: str = ""


#: Defaults before calibration: conservative middle values (overheads of a few ms per step are
#: what vLLM and TensorRT-LLM report in their step-time logs at small batch).
_DEFAULT_ENGINE = {
    "generic": dict(step_overhead_s=2e-3, seq_overhead_s=2e-6, request_overhead_s=10e-3,
                    efficiency=1.0, max_num_seqs=512, custom_allreduce=False),
    "trtllm": dict(step_overhead_s=1e-3, seq_overhead_s=1e-6, request_overhead_s=8e-3,
                   efficiency=1.0, max_num_seqs=2048, kv_fraction_of_free=True),
    "vllm": dict(step_overhead_s=2e-3, seq_overhead_s=3e-6, request_overhead_s=10e-3,
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


@cache
def _calibration(path: Path = CALIBRATION_PATH) -> dict:
    if _ACTIVE is not None:
        return _ACTIVE
    if not path.exists():
        return {}
    doc = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return doc if isinstance(doc, dict) else {}


def reload() -> None:
    """Forget the cached calibration (after ``calibrate`` wrote a new file)."""
    _calibration.cache_clear()
    family_efficiency.cache_clear()
    engine_profile.cache_clear()
    attention_efficiency.cache_clear()


@cache
def family_efficiency(family: str) -> FamilyEfficiency:
    fitted = (_calibration().get("families") or {}).get(family)
    prior_c16 = PRIOR_ETA_COMPUTE_16.get(family, 0.65)
    prior_c8 = PRIOR_ETA_COMPUTE_FP8.get(family, prior_c16 * 0.9)
    if fitted:
        return FamilyEfficiency(
            eta_mem=float(fitted.get("eta_mem", DEFAULT_ETA_MEM)),
            eta_compute_16=float(fitted.get("eta_compute_16", prior_c16)),
            eta_compute_fp8=float(fitted.get("eta_compute_fp8", prior_c8)),
            fitted=True,
        )
    fams = _calibration().get("families") or {}
    nv_mean = [float(v["eta_mem"]) for v in fams.values() if "eta_mem" in v]
    eta_mem = PRIOR_ETA_MEM.get(family, sum(nv_mean) / len(nv_mean) if nv_mean else DEFAULT_ETA_MEM)
    return FamilyEfficiency(eta_mem, prior_c16, prior_c8, fitted=False)


#: Attention kernels relative to dense GEMM/GEMV efficiency before calibration (FlashAttention-2
#: reaches 50-73% of A100 peak vs ~80-87% for large GEMMs: Dao 2023, arXiv 2307.08691).
DEFAULT_ATTENTION_EFFICIENCY = 0.75


@cache
def attention_efficiency() -> float:
    fitted = (_calibration().get("global") or {}).get("attention_efficiency")
    return float(fitted) if fitted is not None else DEFAULT_ATTENTION_EFFICIENCY


@cache
def engine_profile(engine: str) -> EngineProfile:
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}; allowed: {', '.join(ENGINES)}")
    base = dict(_DEFAULT_ENGINE[engine])
    fitted = (_calibration().get("engines") or {}).get(engine)
    if fitted:
        for k in (
            "step_overhead_s", "seq_overhead_s", "request_overhead_s", "efficiency",
            "mem_efficiency",
        ):  # fmt: skip
            if k in fitted:
                base[k] = float(fitted[k])
    note = (fitted or {}).get("note", "") if fitted else "defaults (not calibrated)"
    return EngineProfile(name=engine, fitted=bool(fitted), note=note, **base)  # type: ignore[arg-type]

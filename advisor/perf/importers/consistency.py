"""Checks a benchmark file must pass before any of its figures reach a fit.

Two kinds:

- the file against the stated deployment: the engine, model, accelerator and TP a file records
  (where it records them) must be the ones the user states with --engine / --model / --gpu / --tp;
- the file against itself: figures that measure one run must agree. Accounting identities
  (throughput = tokens / duration, requests / request rate = duration) hold to within
  ``TOL_IDENTITY``; latency decompositions and Little's law (mean requests in flight = request
  throughput x mean request latency) hold for means of products only approximately (lengths
  vary per request), to within ``TOL_LITTLE``.

Every refusal is one line naming the file (and line), the keys and both values.
"""

from __future__ import annotations

import math
import re

from advisor.perf.importers.common import BenchmarkFileError, Deployment

#: Relative tolerance of an accounting identity (the tools print rounded figures; 10% leaves
#: room for a warm-up request counted in one figure and not the other).
TOL_IDENTITY = 0.10
#: Relative tolerance of Little's law and of TTFT + TPOT x (output tokens - 1) = request latency
#: (both are products of means standing for means of products).
TOL_LITTLE = 0.25


def agree(where: str, what: str, a: float, b: float, tol: float, why: str) -> None:
    """Refuse unless ``a`` and ``b`` agree within ``tol`` (relative to the larger).

    >>> agree("f.json", "x vs y", 100.0, 104.0, 0.10, "")
    >>> agree("f.json", "'output_throughput' x 'duration' vs 'total_output_tokens'", 10.0, 20.0,
    ...       0.10, "units?")
    Traceback (most recent call last):
    ...
    advisor.perf.importers.common.BenchmarkFileError: f.json: 'output_throughput' x 'duration' vs 'total_output_tokens' disagree: 10 vs 20 (50% apart; tolerance 10%): units?
    """
    big = max(abs(a), abs(b))
    if big == 0 or not math.isfinite(big):
        return
    gap = abs(a - b) / big
    if gap > tol:
        raise BenchmarkFileError(
            f"{where}: {what} disagree: {a:.4g} vs {b:.4g} ({gap:.0%} apart; tolerance "
            f"{tol:.0%})" + (f": {why}" if why else "")
        )


#: Engine a benchmark client's ``backend`` value names (None: a generic HTTP client that says
#: nothing about the server).
_BACKEND_ENGINES = (
    (r"^sglang", "sglang"),
    (r"^vllm", "vllm"),
    (r"^(trt|tensorrt|trtllm)", "trtllm"),
    (r"^(lmdeploy|tgi|deepspeed|scalellm|mlc|llama\.?cpp)", "other"),
)


def engine_family(engine: str) -> str:
    """vllm-v0 -> vllm, trtllm-trt -> trtllm: the family a file's backend can name."""
    return {"vllm-v0": "vllm", "trtllm-trt": "trtllm"}.get(engine, engine)


def check_backend(where: str, key: str, value: object, dep: Deployment) -> None:
    """The engine a file's ``backend`` names must be the stated --engine (same family)."""
    if not isinstance(value, str):
        return
    v = value.strip().lower()
    named = next((eng for pat, eng in _BACKEND_ENGINES if re.match(pat, v)), None)
    if named is None:
        return
    if named != engine_family(dep.engine):
        raise BenchmarkFileError(
            f"{where}: field {key!r} is {value[:40]!r}: the file measured "
            f"{'another engine' if named == 'other' else named}, but --engine is {dep.engine}"
        )


def check_model(where: str, key: str, value: object, dep: Deployment) -> str | None:
    """The model a file names must be the stated --model; a note when it cannot be told."""
    from advisor.perf.validation.measurements import model_id_for

    if not isinstance(value, str) or not value.strip():
        return None
    found = model_id_for(value)
    if found is None:
        return f"{where}: field {key!r} is {value[:80]!r}, not a catalog model: taken as --model {dep.model}"
    if found != dep.model:
        raise BenchmarkFileError(
            f"{where}: field {key!r} is {value[:80]!r} ({found}), but --model is {dep.model}"
        )
    return None


def check_int(where: str, key: str, value: object, stated: int, flag: str) -> None:
    """A parallel degree the file records must be the stated one."""
    if value is None or isinstance(value, bool):
        return
    try:
        got = int(float(value))
    except (TypeError, ValueError):
        return
    if got != stated:
        raise BenchmarkFileError(f"{where}: field {key!r} is {got}, but {flag} is {stated}")


#: Accelerator names the tools print (nvidia-smi / rocm-smi / DCGM) -> catalog id (or id prefix).
_GPU_TOKENS = (
    (r"\bH100\b.*\bPCIe\b", "h100-pcie"),
    (r"\bH100\b.*\bNVL\b", "h100-nvl"),
    (r"\bH100\b", "h100-sxm"),  # "NVIDIA H100 80GB HBM3" is the SXM part
    (r"\bH200\b", "h200"),
    (r"\bH20\b", "h20"),
    (r"\bA100\b", "a100"),
    (r"\bGB200\b", "gb200"),
    (r"\bGB300\b", "gb300"),
    (r"\bB200\b", "b200"),
    (r"\bB300\b", "b300"),
    (r"\bL40S\b", "l40s"),
    (r"\bL4\b", "l4"),
    (r"\bRTX PRO 6000\b", "rtx-pro-6000"),
    (r"\bMI250X?\b", "mi250x"),
    (r"\bMI300X\b", "mi300x"),
    (r"\bMI325X\b", "mi325x"),
    (r"\bMI350X\b", "mi350x"),
    (r"\bMI355X\b", "mi355x"),
    (r"\bGaudi ?3\b", "gaudi3"),
)


def check_gpu(where: str, key: str, device: object, dep: Deployment) -> str | None:
    """A device name the file records ("NVIDIA H100 80GB HBM3") must be the stated --gpu; a
    device the catalog does not name is a note (the stated --gpu is taken).

    >>> check_gpu("f.txt", "the ranks' device", "NVIDIA H100 80GB HBM3",
    ...           Deployment("llama-3.1-8b", "h100-sxm"))
    >>> check_gpu("f.json", "field 'machine.name'", "NVIDIA H100 80GB HBM3",
    ...           Deployment("llama-3.1-8b", "mi300x"))
    Traceback (most recent call last):
    ...
    advisor.perf.importers.common.BenchmarkFileError: f.json: field 'machine.name' is 'NVIDIA H100 80GB HBM3', but --gpu is mi300x
    >>> check_gpu("f.json", "gpu_name", "NVIDIA RTX 6000 Ada Generation",
    ...           Deployment("llama-3.1-8b", "l40s"))
    "f.json: gpu_name is 'NVIDIA RTX 6000 Ada Generation', not an accelerator the catalog names: taken as --gpu l40s"
    """
    if not isinstance(device, str) or not device.strip():
        return None
    prefix = next((p for pat, p in _GPU_TOKENS if re.search(pat, device, re.I)), None)
    if prefix is None:
        return (f"{where}: {key} is {device[:60]!r}, not an accelerator the catalog names: taken "
                f"as --gpu {dep.gpu}")  # fmt: skip
    if not dep.gpu.startswith(prefix):
        raise BenchmarkFileError(f"{where}: {key} is {device[:60]!r}, but --gpu is {dep.gpu}")
    return None

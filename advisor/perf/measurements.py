"""Published measurements (data/measurements.csv) turned into cases the model can predict.

Each row becomes a ``Case`` (what was run, what was measured, in SI units) or is counted as
unrepresentable with the reason. Throughput conventions are read from the ``unit`` column:
"output tok/s (all GPUs)" and "output tok/s per GPU" are converted to the deployment total.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from functools import cache

from advisor.catalog import get_accelerator, get_model
from advisor.catalog.loader import DATA_DIR
from advisor.catalog.specs import Accelerator
from advisor.perf.replica import ReplicaConfig

MEASUREMENTS_PATH = DATA_DIR / "measurements.csv"

MODEL_IDS = {
    "Llama-2-7B": "llama-2-7b",
    "Llama-2-13B": "llama-2-13b",
    "Llama-2-70B": "llama-2-70b",
    "Llama-3.1-8B": "llama-3.1-8b",
    "Llama-3.1-70B": "llama-3.1-70b",
    "Llama-3-70B": "llama-3.1-70b",  # same architecture as 3.1 (context differs, unused here)
    "Llama-3.1-405B": "llama-3.1-405b",
    "Mixtral-8x7B": "mixtral-8x7b",
    "Mixtral-8x22B": "mixtral-8x22b",
    "Falcon-180B": "falcon-180b",
    "Llama-3.3-70B": "llama-3.3-70b",
    "DeepSeek-R1": "deepseek-r1",
    "Qwen3-235B-A22B": "qwen3-235b-a22b",
    "Qwen3-235B-A22B-Instruct-2507": "qwen3-235b-a22b",  # same config.json architecture
    "gpt-oss-120b": "gpt-oss-120b",
    "gpt-oss-20b": "gpt-oss-20b",
    "Kimi-K2-Instruct": "kimi-k2",
    "Llama-4-Scout-17B-16E-Instruct": "llama-4-scout",
    "Llama-4-Maverick-17B-128E-Instruct": "llama-4-maverick",
}
GPU_PREFIXES = (
    ("H100-SXM", "h100-sxm"),
    ("H200-SXM", "h200-sxm"),
    ("A100-SXM4-80GB", "a100-sxm-80gb"),
    ("B200", "b200"),
    ("L40S", "l40s"),
    ("MI300X", "mi300x"),
)
WEIGHTS = {
    "FP8": ("fp8", 128),
    "FP16": ("fp16", 128),
    "BF16": ("bf16", 128),
    "BF16 (presumed)": ("bf16", 128),
    "bf16": ("bf16", 128),
    "bf16 (presumed)": ("bf16", 128),
    "INT8 weight-only": ("int8", 128),
    "INT4 weight-only g32": ("int4", 32),
}
KV = {"FP8": "fp8", "FP16": "fp16", "BF16": "bf16"}


def engine_of(text: str) -> str:
    """Engine profile for a row: TensorRT-LLM, vLLM, SGLang, or generic (PyTorch, gpt-fast)."""
    t = text.lower()
    if "tensorrt-llm" in t:
        return "trtllm"
    if "vllm" in t:
        return "vllm"
    if "sglang" in t:
        return "sglang"
    return "generic"


@dataclass(frozen=True)
class Case:
    """One measurement the model can predict."""

    id: str
    kind: str  # decode_b1 | ttft_b1 | offline | static | load_ttft | load_itl | conc_tpot | conc_tput | itl_fit_intercept | itl_fit_slope
    family: str  # metric family for the validation table
    config: ReplicaConfig
    isl: float
    osl: float
    batch: float = 1.0  # static batch or fixed concurrency
    qps: float = 0.0  # measured request rate for load rows
    measured: float = 0.0  # SI: seconds, tokens/s, s per context token
    unit: str = ""
    gpus: int = 1
    source: str = ""
    row: dict = field(default_factory=dict, compare=False, hash=False, repr=False)


@dataclass(frozen=True)
class Skipped:
    id: str
    metric: str
    reason: str


def _num(text: str) -> float | None:
    m = re.match(r"^\s*~?\s*([0-9][0-9,]*\.?[0-9]*(?:e[-+]?\d+)?)", text or "")
    return float(m.group(1).replace(",", "")) if m else None


def _gcd_of_mi250x() -> Accelerator:
    """One of the two dies of an MI250X, as software sees it: half memory, bandwidth and FLOPs."""
    g = get_accelerator("mi250x")
    pf = g.peak_flops_per_s
    half = pf.model_copy(update={k: v / 2 for k, v in pf.model_dump().items() if v is not None})
    return g.model_copy(
        update={
            "id": "mi250x-gcd",
            "name": "AMD MI250X (one GCD)",
            "memory_bytes": g.memory_bytes // 2,
            "hbm_bandwidth_bytes_per_s": g.hbm_bandwidth_bytes_per_s / 2,
            "peak_flops_per_s": half,
        }
    )


def _gpu(text: str) -> Accelerator | None:
    if text.startswith("MI250X (one GCD)"):
        return _gcd_of_mi250x()
    for prefix, gid in GPU_PREFIXES:
        if text.startswith(prefix):
            return get_accelerator(gid)
    return None


@cache
def load_rows() -> list[dict]:
    with MEASUREMENTS_PATH.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


def _throughput_total(row: dict, gpus: int) -> float | None:
    value = float(row["value"])
    unit = row["unit"]
    if "per GPU" in unit:
        return value * gpus
    if unit.startswith("output tok/s"):
        return value
    return None


def parse_row(row: dict) -> Case | Skipped:
    """One CSV row -> Case, or Skipped with the reason it cannot be represented."""
    rid, metric = row["id"], row["metric"]
    if metric.startswith(("allreduce", "allgather", "reducescatter", "p2p")):
        return Skipped(rid, metric, "collective: validated by the collectives model")
    if metric.startswith("spec_decode"):
        return Skipped(
            rid, metric, "speculative decoding with no stated acceptance rate / catalog model"
        )
    model_id = MODEL_IDS.get(row["model"])
    if model_id is None:
        return Skipped(rid, metric, f"model {row['model']!r} is not in the catalog")
    gpu = _gpu(row["gpu"])
    if gpu is None:
        return Skipped(rid, metric, f"accelerator {row['gpu']!r} is not in the catalog")
    w = WEIGHTS.get(row["precision_weights"])
    if w is None:
        return Skipped(rid, metric, f"weights precision {row['precision_weights']!r} not modelled")
    weights, group = w
    kv = KV.get(row["precision_kv"], "fp16" if weights == "fp16" else "bf16")
    tp = int(_num(row["tp"]) or 1)
    pp = int(_num(row["pp"]) or 1)
    engine = engine_of(row["engine"])
    cfg = ReplicaConfig(
        model=get_model(model_id), gpu=gpu, tp=tp, pp=pp, weights=weights, kv=kv,
        engine=engine, int4_group_size=group,
        # TensorRT-LLM benchmarks give the KV cache 90-95% of free memory (notes).
        gpu_memory_utilization=0.95 if engine == "trtllm" else 0.90,
    )  # fmt: skip
    gpus = tp * pp
    bc = row["batch_or_concurrency"]
    isl, osl = _num(row["isl"]), _num(row["osl"])
    base = dict(id=rid, config=cfg, gpus=gpus, source=row["source"], unit=row["unit"], row=row)

    if metric in ("tpot_ms_fit_intercept", "tpot_ms_fit_slope_per_ctx_token"):
        kind = "itl_fit_intercept" if metric.endswith("intercept") else "itl_fit_slope"
        value = float(row["value"]) * 1e-3  # ms -> s (per context token for the slope)
        return Case(kind=kind, family="batch-1 decode", isl=0, osl=128, measured=value, **base)
    if isl is None:
        return Skipped(rid, metric, f"input length {row['isl']!r} is not a number")
    if metric == "decode_tok_s_single_stream":
        if "speculate" in bc:
            return Skipped(rid, metric, "speculative decoding with no stated acceptance rate")
        return Case(
            kind="decode_b1", family="batch-1 decode", isl=isl, osl=osl or 128,
            measured=float(row["value"]), **base,
        )  # fmt: skip
    if osl is None:
        return Skipped(rid, metric, f"output length {row['osl']!r} is not a number")
    if metric == "ttft_ms" and bc.startswith("batch 1"):
        return Case(
            kind="ttft_b1",
            family="TTFT",
            isl=isl,
            osl=osl,
            measured=float(row["value"]) * 1e-3,
            **base,
        )
    if bc.startswith("request rate"):
        m = re.search(r"measured (\d+(?:\.\d+)?) req/s", bc)
        if "QPS=INF" in bc or m is None:
            return Skipped(
                rid,
                metric,
                "burst of all requests at once (QPS=INF): transient, not a steady state",
            )
        qps = float(m.group(1))
        if metric == "ttft_ms":
            return Case(kind="load_ttft", family="TTFT/ITL under load", isl=isl, osl=osl, qps=qps,
                        measured=float(row["value"]) * 1e-3, **base)  # fmt: skip
        if metric in ("itl_ms", "tpot_ms"):
            return Case(kind="load_itl", family="TTFT/ITL under load", isl=isl, osl=osl, qps=qps,
                        measured=float(row["value"]) * 1e-3, **base)  # fmt: skip
    m = re.match(r"concurrency (\d+)", bc)
    if m:
        conc = float(m.group(1))
        if metric == "tpot_ms":
            return Case(kind="conc_tpot", family="TTFT/ITL under load", isl=isl, osl=osl, batch=conc,
                        measured=float(row["value"]) * 1e-3, **base)  # fmt: skip
        if metric == "throughput_tok_s_total":
            return Case(kind="conc_tput", family="offline throughput", isl=isl, osl=osl, batch=conc,
                        measured=float(row["value"]), **base)  # fmt: skip
    if metric.startswith("throughput_tok_s"):
        total = _throughput_total(row, gpus)
        if total is None:
            return Skipped(rid, metric, f"throughput unit {row['unit']!r} not understood")
        if bc.startswith("max"):
            return Case(
                kind="offline",
                family="offline throughput",
                isl=isl,
                osl=osl,
                measured=total,
                **base,
            )
        m = re.search(r"batch (\d+)", bc)
        if m:
            return Case(kind="static", family="offline throughput", isl=isl, osl=osl,
                        batch=float(m.group(1)), measured=total, **base)  # fmt: skip
    return Skipped(rid, metric, f"condition {bc!r} for {metric} not modelled")


@cache
def cases() -> tuple[list[Case], list[Skipped]]:
    got: list[Case] = []
    skipped: list[Skipped] = []
    for row in load_rows():
        r = parse_row(row)
        (got if isinstance(r, Case) else skipped).append(r)
    return got, skipped

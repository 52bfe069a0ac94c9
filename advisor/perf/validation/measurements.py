"""Published measurements (data/measurements*.csv) turned into cases the model can predict.

Each row becomes a ``Case`` (what was run, what was measured, in SI units) or is counted as
unrepresentable with the reason. Every file listed by ``catalog.loader.measurement_paths`` is
read, each row validated by ``catalog.measurement_row.MeasurementRow`` (docs/data.md), whose
typed fields this module reads:

- throughput: a deployment total or a per-GPU figure (``throughput_scope``) is converted to the
  deployment total; ``output_throughput_tok_s`` is the serving benchmark's output rate; a
  throughput whose token convention the source does not state is not used;
- latency metrics (ttft, tpot, itl, e2e; mean or median) are predicted (medians under Poisson
  load from the model's median); P95/P99 rows belong to the percentile check;
- load (``load_kind``): a static batch of N (or a single stream), a closed loop of N clients
  (each sends its next request when the last finishes), Poisson arrivals at the REQUESTED rate
  (the achieved rate is an output of the benchmark and never an input), offline (all requests
  queued at once);
- empty isl/osl: read from the notes' token totals ("500 prompts: 249831 input / 252162
  generated tokens"): the workload's mean lengths, a condition of the run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import cache

from advisor.catalog import get_accelerator, get_model, models
from advisor.catalog.loader import measurement_paths, measurement_records, measurement_rows
from advisor.catalog.measurement_row import COLLECTIVE_QUANTITIES, MeasurementRow
from advisor.catalog.specs import Accelerator
from advisor.perf.model.profiles import engine_for_text
from advisor.perf.model.replica import ReplicaConfig

__all__ = ["Case", "Skipped", "cases", "load_rows", "measurement_paths", "parse_row", "source_key"]

#: Published model name (lower case, organisation, "-Instruct"/"-Chat"/"-hf", precision and
#: release-date suffixes removed) -> catalog id, where the key is not itself a catalog id. Same
#: architecture under another name maps to it: Llama 3 70B is Llama 3.1 70B's layers (context
#: length differs, unused here); DeepSeek-V3-0324/V3.1 are DeepSeek-V3's network (same
#: config.json shapes, MLA + 256 experts); Llama 4's long names carry the expert count.
MODEL_IDS = {
    "llama-2-7b": "llama-2-7b",
    "llama-2-13b": "llama-2-13b",
    "llama-2-70b": "llama-2-70b",
    "llama-3-8b": "llama-3.1-8b",
    "llama-3.1-8b": "llama-3.1-8b",
    "llama-3-70b": "llama-3.1-70b",
    "llama-3.1-70b": "llama-3.1-70b",
    "llama-4-scout-17b-16e": "llama-4-scout",
    "llama-4-maverick-17b-128e": "llama-4-maverick",
    "qwen3-235b-a22b-thinking": "qwen3-235b-a22b",
    "llama-3.1-405b": "llama-3.1-405b",
    "llama-3.2-1b": "llama-3.2-1b",
    "llama-3.2-3b": "llama-3.2-3b",
    "mistral-7b": "mistral-7b",
    "mistral-7b-v0.1": "mistral-7b",
    "mistral-7b-v0.3": "mistral-7b",
    "mixtral-8x7b": "mixtral-8x7b",
    "mixtral-8x7b-v0.1": "mixtral-8x7b",
    "mixtral-8x22b": "mixtral-8x22b",
    "mixtral-8x22b-v0.1": "mixtral-8x22b",
    "qwen2.5-72b": "qwen2.5-72b",
    "gemma-2-27b": "gemma-2-27b",
    "falcon-180b": "falcon-180b",
    "deepseek-v3": "deepseek-v3",
    "deepseek-v3-0324": "deepseek-v3",
    "deepseek-v3.1": "deepseek-v3",
    # MiniMax-M2.1 and M2.5: the M2 architecture (SGLang's MiniMax-M2 page serves all three)
    "minimax-m2.1": "minimax-m2",
    "minimax-m2.5": "minimax-m2",
}
#: Names that look like a catalog model but are not its architecture.
MODEL_NOT_SAME = {
    "deepseek-v3.2": "DeepSeek sparse attention (DSA), not DeepSeek-V3's dense MLA",
    "deepseek-v3.2-exp": "DeepSeek sparse attention (DSA), not DeepSeek-V3's dense MLA",
}
#: GPU name (upper case, vendor prefix removed) -> catalog id; first match wins, so the more
#: specific patterns come first (H200 before H20, H100 NVL/PCIe before H100).
GPU_PATTERNS = (
    (r"^GB200", "gb200"),
    (r"^B200", "b200"),
    (r"^H200(?![- ]?NVL)", "h200-sxm"),
    (r"^H100[- ]?NVL", "h100-nvl"),
    (r"^H100[- ]?PCIE", "h100-pcie"),
    (r"^H100", "h100-sxm"),  # H100-SXM-80GB, H100-80GB-HBM3 (nvidia-smi's name for the SXM5)
    (r"^A100(?!.*(?:40GB|PCIE))", "a100-sxm-80gb"),
    # the catalog's part (the Server Edition), not the Workstation card
    (r"^RTX PRO 6000 BLACKWELL SERVER", "rtx-pro-6000"),
    (r"^L40S", "l40s"),
    (r"^L4\b", "l4"),
    (r"^MI250X", "mi250x"),
    (r"^MI300X", "mi300x"),
    (r"^MI325X", "mi325x"),
    (r"^MI350X", "mi350x"),
    (r"^MI355X", "mi355x"),
    (r"^GAUDI[- ]?3", "gaudi3"),
)
WEIGHTS = {
    "fp8": ("fp8", 128),
    "fp16": ("fp16", 128),
    "bf16": ("bf16", 128),
    "int8 weight-only": ("int8", 128),
    "int4 weight-only g32": ("int4", 32),
    "nvfp4": ("nvfp4", 16),
    "mxfp4": ("mxfp4", 32),
    "int4 weight-only": ("int4", 128),
    "int4": ("int4", 128),
    "awq": ("int4", 128),
    "gptq": ("int4", 128),
}
KV = {"fp8": "fp8", "fp16": "fp16", "bf16": "bf16", "fp8_e4m3": "fp8", "auto": ""}

#: What a row's load kind (``MeasurementRow.load_kind``) is called in the cases below.
_CONDITIONS = {"batch": "batch", "concurrency": "conc", "request_rate": "rate",
               "offline": "offline", "burst": "burst"}  # fmt: skip


@dataclass(frozen=True)
class Case:
    """One measurement the model can predict."""

    id: str
    #: decode_b1 | ttft_b1 | offline | static | load_ttft | load_itl | load_e2e | load_tput |
    #: conc_ttft | conc_tpot | conc_e2e | conc_tput | static_e2e | itl_fit_intercept | itl_fit_slope
    kind: str
    family: str  # metric family for the validation table
    config: ReplicaConfig
    isl: float
    osl: float
    batch: float = 1.0  # static batch or fixed concurrency (per replica)
    qps: float = 0.0  # REQUESTED request rate for load rows (per replica)
    measured: float = 0.0  # SI: seconds, tokens/s, s per context token
    unit: str = ""
    gpus: int = 1
    source: str = ""
    statistic: str = "mean"  # mean | median (what the row reports)
    replicas: int = 1  # data-parallel copies behind one endpoint (throughputs are their total)
    requests: int = 0  # requests in the benchmark run (0: not stated)
    #: prompt tokens one prefill iteration takes, where the server's flags state it (0: default)
    prefill_budget_tokens: int = 0
    row: dict = field(default_factory=dict, compare=False, hash=False, repr=False)


@dataclass(frozen=True)
class Skipped:
    id: str
    metric: str
    reason: str


def _num(text: str) -> float | None:
    m = re.match(r"^\s*~?\s*([0-9][0-9,]*\.?[0-9]*(?:e[-+]?\d+)?)", text or "")
    return float(m.group(1).replace(",", "")) if m else None


def source_key(source: str) -> str:
    """The publication a row comes from: repository + path (revision and section dropped).

    Leave-one-source-out groups rows by this key, so two revisions of one page are one source.

    >>> source_key("github:NVIDIA/TensorRT-LLM docs/perf.md @138f96d (v0.6.1)")
    'github:NVIDIA/TensorRT-LLM docs/perf.md'
    >>> source_key("https://github.com/sgl-project/sglang/pull/2904#issue-1")
    'github.com/sgl-project/sglang/pull/2904'
    >>> source_key("https://www.amd.com/zh-cn/developer/perf.html (snapshot of May 2025)")
    'amd.com/developer/perf.html'
    >>> source_key("arXiv:2406.16858 abstract (EAGLE-2)")
    'arXiv:2406.16858'
    """
    s = source.strip()
    m = re.match(r"(github:\S+\s+[^\s@(,;]+)", s)
    if m:
        return m.group(1)
    m = re.match(r"https?://(?:www\.)?([^\s#?,;()]+)", s)
    if m:  # one page in several languages (amd.com/en/..., amd.com/zh-cn/...) is one source
        return re.sub(r"^([^/]+)/[a-z]{2}(?:-[a-z]{2})?/", r"\1/", m.group(1).rstrip("/."))
    return re.split(r"[\s,;(]", s, maxsplit=1)[0]


def expert_parallel(notes: str, tp: int) -> bool | str:
    """Whether a row's server spreads the experts over its TP GPUs, or why it is not modelled.

    A stated size (``--ep 8``, ``--ep-size 8``, ``--expert-parallel-size 8``) of 1 is no expert
    parallelism and of TP is the layout the model describes (the experts split over the TP
    group). Any other size is an EP x TP hybrid (SGLang ``--tp 8 --ep 2``: two expert groups,
    each expert's weights split four ways), which it does not. A flag without a number
    (``--enable-expert-parallel``, ``--ep $EP_SIZE`` in a script) reads as EP over TP.

    >>> expert_parallel("sglang.launch_server --tp 8 --ep 8", 8), expert_parallel("--ep 1", 8)
    (True, False)
    >>> expert_parallel("vllm serve M --enable-expert-parallel", 4)
    True
    >>> expert_parallel("python -m sglang.launch_server --tp 8 --ep 2", 8)
    'expert parallel size 2 inside TP=8 (an EP x TP hybrid): not modelled, only EP = TP or none'
    """
    m = re.search(r"--(?:ep|ep-size|expert-parallel-size)[ =](\d+)\b", notes)
    if m:
        size = int(m.group(1))
        if size in (1, tp):  # 1 is no EP; TP > 1 is EP over the TP group
            return size > 1
        return (f"expert parallel size {size} inside TP={tp} (an EP x TP hybrid): not "
                "modelled, only EP = TP or none")  # fmt: skip
    return bool(re.search(r"--(ep|expert-parallel-size|enable-expert-parallel)\b", notes))


#: Last SGLang release whose --enable-dp-attention sets the DP size to the TP size by itself and
#: also caps CUDA graphs at batch 96 and turns the overlap scheduler off (server_args.py
#: __post_init__: "Data parallel size is adjusted to be the same as tensor parallel size ... The
#: CUDA graph max batch size is adjusted to 96 ... Overlap scheduler is disabled").
SGLANG_DP_EQUALS_TP_UNTIL = (0, 4, 1)


def attention_data_parallel(
    notes: str, tp: int, moe: bool, early_sglang: bool = False
) -> bool | str:
    """Whether a row's server runs attention data parallel over its TP GPUs, or why not modelled.

    SGLang ``--enable-dp-attention`` with ``--dp`` equal to ``--tp`` (each GPU one attention
    rank) and TensorRT-LLM ``enable_attention_dp`` (attention DP over all TP ranks, the "DEP"
    layouts with EP) are the layout the model describes, for MoE models on TP > 1 GPUs. SGLang
    with a smaller ``--dp`` runs attention TP inside each DP group, which it does not. SGLang up
    to ``SGLANG_DP_EQUALS_TP_UNTIL`` (``early_sglang``) ran DP attention with CUDA graphs only up
    to batch 96 and without its overlap scheduler: eager decode above that, which the engine
    profiles do not describe (as ``--disable-cuda-graph``).

    >>> attention_data_parallel("--tp 8 --dp 8 --enable-dp-attention", 8, True)
    True
    >>> attention_data_parallel("llm_options: enable_attention_dp true", 4, True)
    True
    >>> attention_data_parallel("--tp 8 --dp 4 --enable-dp-attention", 8, True)
    'DP attention over 4 groups inside TP=8 (attention TP within each group): not modelled, only DP = TP'
    >>> attention_data_parallel("--tp 8", 8, True), attention_data_parallel("enable_attention_dp", 8, False)
    (False, False)
    >>> attention_data_parallel("--tp 8 --enable-dp-attention", 8, True, early_sglang=True)[:41]
    'DP attention in SGLang <= 0.4.1 (DP = TP,'
    """
    if "--enable-dp-attention" in notes:
        if early_sglang:
            return ("DP attention in SGLang <= 0.4.1 (DP = TP, CUDA graphs only up to batch 96, "
                    "overlap scheduler off): eager decode above batch 96 is not in the engine "
                    "profiles")  # fmt: skip
        m = re.search(r"--(?:dp|dp-size|data-parallel-size)[ =](\d+)\b", notes)
        if m is None:
            return "DP attention with its --dp size not stated: not modelled"
        size = int(m.group(1))
        if size != tp:
            return (f"DP attention over {size} groups inside TP={tp} (attention TP within each "
                    "group): not modelled, only DP = TP")  # fmt: skip
        if not (moe and tp > 1):
            return "DP attention on a dense model or one GPU: not modelled"
        return True
    return bool("enable_attention_dp" in notes and moe and tp > 1)


def model_key(name: str) -> str:
    """Published model name -> lookup key (lower case, no organisation/instruct/precision tag).

    >>> model_key("meta-llama/Llama-3.3-70B-Instruct"), model_key("Meta-Llama-3.1-8B-Instruct-FP8")
    ('llama-3.3-70b', 'llama-3.1-8b')
    >>> model_key("deepseek-ai/DeepSeek-R1-0528"), model_key("Qwen3-235B-A22B-Instruct-2507")
    ('deepseek-r1', 'qwen3-235b-a22b')
    """
    k = name.strip().lower().rsplit("/", 1)[-1].replace(" ", "-")
    k = re.sub(r"^meta-(?=llama)", "", k)
    prev = None
    while prev != k:
        prev = k
        k = re.sub(
            r"-(instruct|chat|hf|base|it|fp8|fp8-dynamic|fp16|bf16|awq|gptq|nvfp4|mxfp4|"
            r"\d{4})$",
            "",
            k,
        )
    return k


def model_id_for(name: str) -> str | None:
    """Catalog id of a published model name (its key, or an alias in MODEL_IDS), or None."""
    key = model_key(name)
    return key if key in models() else MODEL_IDS.get(key)


#: Precision tags in published model names (checkpoint names) -> weights dtype, first match wins.
_WEIGHT_TAGS = (("nvfp4", "nvfp4"), ("mxfp4", "mxfp4"), ("fp8", "fp8"), ("awq", "int4"),
                ("gptq", "int4"))  # fmt: skip


def _model_weights_hint(name: str) -> str | None:
    n = name.lower()
    return next((dtype for tag, dtype in _WEIGHT_TAGS if tag in n), None)


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


def gpu_id(text: str) -> str | None:
    """Catalog id of a published GPU name, or None.

    >>> gpu_id("H100-80GB-HBM3"), gpu_id("H200"), gpu_id("H20"), gpu_id("AMD Instinct MI325X")
    ('h100-sxm', 'h200-sxm', None, 'mi325x')
    """
    t = re.sub(r"^(NVIDIA|AMD)\s+(INSTINCT\s+)?", "", text.strip().upper())
    for pat, gid in GPU_PATTERNS:
        if re.search(pat, t):
            return gid
    return None


def _gpu(text: str) -> Accelerator | None:
    if text.startswith("MI250X (one GCD)"):
        return _gcd_of_mi250x()
    gid = gpu_id(text)
    return get_accelerator(gid) if gid else None


@cache
def load_rows() -> list[dict]:
    """Every row of every measurement file (catalog.loader.measurement_paths)."""
    return list(measurement_rows())


def _throughput_total(rec: MeasurementRow, gpus: int) -> float:
    """The deployment's output tokens/s from a total or a per-GPU figure."""
    return rec.value * gpus if rec.throughput_scope == "per_gpu" else rec.value


def _precision(row: dict, model_id: str) -> tuple[str, int] | str:
    """(weights dtype, int4 group) or the reason the row's precision is not modelled."""
    raw = row["precision_weights"].strip()
    text = re.sub(r"\s*\(.*$", "", raw).strip().lower()  # "FP8 (native checkpoint)" -> "fp8"
    # a checkpoint published in one precision (ModelSpec.released_weights): the weights when
    # the row does not say
    native = get_model(model_id).released_weights or ""
    if not text:
        text = _model_weights_hint(row["model"]) or native or "bf16"
    if text == "fp4":  # "FP4" without the format: the checkpoint's own (gpt-oss: MXFP4)
        text = native if native.endswith("fp4") else "nvfp4"
    if text in ("float32", "fp32"):
        return "weights precision fp32 not modelled in serving"
    w = WEIGHTS.get(text)
    if w is None:
        return f"weights precision {raw!r} not modelled"
    return w


#: A random dataset whose lengths are drawn uniformly from int(ratio x L) to L, as the notes state it.
_RANGE_RATIO = re.compile(r"lengths uniform on \[int\(([0-9.]+) x L\), L\]")


def mean_random_length(nominal_tokens: float, range_ratio: float) -> float:
    """Mean length of a random dataset drawn uniformly from int(ratio x L) to L tokens.

    E[len] = (int(ratio x L) + L) / 2: each length is np.random.randint(int(L x ratio), L + 1),
    the integers of that range with equal probability.
    Source: InferenceX utils/bench_serving/benchmark_serving.py ``sample_uniform`` (its copy of
    vLLM's benchmark_serving.py; read at InferenceX 962bd4c, 1b4c27d and 843c625).

    >>> mean_random_length(1024, 0.8)  # (819 + 1024) / 2
    921.5
    >>> mean_random_length(8192, 0.8)  # (6553 + 8192) / 2
    7372.5
    """
    return (int(nominal_tokens * range_ratio) + nominal_tokens) / 2.0


def _lengths(row: dict) -> tuple[float | None, float | None]:
    """Input/output lengths: the columns (their means where the notes state the random range the
    run drew them from), else the mean of the notes' token totals.

    >>> _lengths({"isl": "", "osl": "", "notes": "10 prompts: 6101 input / 4210 generated"})
    (610.1, 421.0)
    >>> _lengths({"isl": "", "osl": "", "notes": "152612 input / 160347 output tokens over 300 "
    ...           "completed requests (mean 508.7 / 534.5)"})  # 152612 / 300, 160347 / 300
    (508.70666666666665, 534.49)
    """
    isl, osl = _num(row["isl"]), _num(row["osl"])
    notes = row.get("notes", "")
    if isl is not None and osl is not None:
        m = _RANGE_RATIO.search(notes)
        if m:
            ratio = float(m.group(1))
            return mean_random_length(isl, ratio), mean_random_length(osl, ratio)
        return isl, osl
    m = re.search(r"(\d+) prompts?:\s*(\d+) input / (\d+) generated", notes)
    if m:
        n, i, o = (float(g) for g in m.groups())
        return i / n, o / n
    # bench_serving's result JSON copied as totals over the completed requests
    m = re.search(r"(\d+) input / (\d+) output tokens over (\d+) (?:completed )?requests", notes)
    if m:
        i, o, n = (float(g) for g in m.groups())
        return i / n, o / n
    n = re.search(r"--num-prompts?\s+(\d+)", notes)
    m = re.search(r"(\d+) input / (\d+) generated", notes)
    if n and m:
        return float(m.group(1)) / float(n.group(1)), float(m.group(2)) / float(n.group(1))
    return isl, osl


def _requests(rec: MeasurementRow) -> int:
    """Requests in the run: the load text's (``MeasurementRow.requests``), else the notes'
    ("500 requests", "--num-prompts 200"); 0 when neither states it.

    >>> _requests(MeasurementRow.from_csv(dict(id="T0001", source="test", engine="vLLM 0.9.1",
    ...     model="m", gpu="g", num_gpus="1", tp="1", pp="1", precision_weights="",
    ...     precision_kv="", isl="1", osl="1", batch_or_concurrency="max concurrency 8",
    ...     metric="ttft_ms_mean", value="5", unit="ms", notes="Mean values over 500 requests")))
    500
    """
    if rec.requests:
        return rec.requests
    m = re.search(r"--num-prompts?\s+(\d+)|(\d+) (?:requests|prompts)\b", rec.notes)
    return int(m.group(1) or m.group(2)) if m else 0


def _prefill_budget(row: dict) -> int:
    """Prompt tokens per prefill iteration from the server flags in the notes (0: not stated).

    >>> _prefill_budget({"notes": "launch_server ... --chunked-prefill-size 32768 --max-prefill"})
    32768
    >>> _prefill_budget({"notes": "vllm serve --max-num-batched-tokens=16384"})
    16384
    """
    m = re.search(r"--chunked-prefill-size[= ](\d+)|--max-num-batched-tokens[= ](\d+)|"
                  r"max_num_tokens[= :]+(\d+)", row.get("notes", ""))  # fmt: skip
    return int(next(g for g in m.groups() if g)) if m else 0


_SPECULATIVE = re.compile(r"--speculative|speculative[-_ ]algorithm|\bMTP\b|\bEAGLE\b", re.I)


def parse_row(row: dict, rec: MeasurementRow | None = None) -> Case | Skipped:
    """One CSV row -> Case, or Skipped with the reason it cannot be represented.

    The row is read through its typed fields (``catalog.measurement_row.MeasurementRow``: the
    load kind and value, the metric's quantity, statistic and unit); a row outside their closed
    sets raises ValueError naming the field (the files' rows were all checked at load).
    ``rec``: the row's MeasurementRow when the caller has it (validated at load: validating
    every row again was a quarter of ``cases()``, issue 38).
    """
    rec = MeasurementRow.from_csv(row) if rec is None else rec
    rid, metric = rec.id, rec.metric
    if rec.quantity in COLLECTIVE_QUANTITIES:
        return Skipped(rid, metric, "collective: validated by the collectives model")
    if rec.quantity == "speculative_speedup":
        return Skipped(
            rid, metric, "speculative decoding with no stated acceptance rate / catalog model"
        )
    latency = rec.quantity in ("ttft", "tpot", "itl", "e2e")
    stat = rec.statistic
    if latency and stat in ("p95", "p99"):
        return Skipped(rid, metric, "percentile: checked by the percentile model, not the mean")
    key = model_key(row["model"])
    if key in MODEL_NOT_SAME:
        return Skipped(rid, metric, f"model {row['model']!r}: {MODEL_NOT_SAME[key]}")
    model_id = model_id_for(row["model"])
    if model_id is None:
        return Skipped(rid, metric, f"model {row['model']!r} is not in the catalog")
    gpu = _gpu(row["gpu"])
    if gpu is None:
        return Skipped(rid, metric, f"accelerator {row['gpu']!r} is not in the catalog")
    w = _precision(row, model_id)
    if isinstance(w, str):
        return Skipped(rid, metric, w)
    weights, group = w
    kv = KV.get(re.sub(r"\s*\(.*$", "", row["precision_kv"]).strip().lower(), "")
    kv = kv or ("fp16" if weights == "fp16" else "bf16")
    if _SPECULATIVE.search(f"{row['engine']} {row.get('notes', '')}") and metric != (
        "decode_tok_s_single_stream"
    ):
        return Skipped(rid, metric, "speculative decoding (EAGLE/MTP) in the server: not modelled")
    notes = row.get("notes", "")
    if re.search(r"--disable-cuda-graph|--enforce-eager", notes):
        return Skipped(rid, metric, "eager decode (CUDA graphs disabled): per-kernel launch "
                       "overheads are not in the engine profiles")  # fmt: skip
    tp = int(_num(row["tp"]) or 1)
    pp = int(_num(row["pp"]) or 1)
    gpus_total = int(_num(row.get("num_gpus", "")) or tp * pp)
    replicas = max(1, gpus_total // (tp * pp)) if gpus_total % (tp * pp) == 0 else 1
    if re.match(r"\s*ATOM\b", row["engine"]):
        return Skipped(rid, metric, "engine ATOM (AMD's serving engine, aiter kernels) has no "
                       "profile: the generic profile describes a plain PyTorch server")  # fmt: skip
    engine = engine_for_text(row["engine"])
    ep = expert_parallel(notes, tp)
    if isinstance(ep, str):
        return Skipped(rid, metric, ep)
    version = re.search(r"sglang\D{0,5}?v?(\d+)\.(\d+)\.(\d+)", row["engine"], re.I)
    early = bool(version) and tuple(map(int, version.groups())) <= SGLANG_DP_EQUALS_TP_UNTIL
    dp_attn = attention_data_parallel(notes, tp, get_model(model_id).is_moe, early)
    if isinstance(dp_attn, str):
        return Skipped(rid, metric, dp_attn)
    cfg = ReplicaConfig(
        model=get_model(model_id), gpu=gpu, tp=tp, pp=pp, weights=weights, kv=kv,
        engine=engine, int4_group_size=group, ep=ep, dp_attention=dp_attn,
        # TensorRT-LLM benchmarks give the KV cache 90-95% of free memory (notes).
        gpu_memory_utilization=0.95 if engine.startswith("trtllm") else 0.90,
    )  # fmt: skip
    gpus = tp * pp
    bc = rec.batch_or_concurrency
    isl, osl = _lengths(row)
    base = dict(
        id=rid, config=cfg, gpus=gpus * replicas, source=row["source"], unit=row["unit"],
        row=row, statistic="median" if stat == "median" else "mean", replicas=replicas,
        requests=_requests(rec), prefill_budget_tokens=_prefill_budget(row),
    )  # fmt: skip

    if metric in ("tpot_ms_fit_intercept", "tpot_ms_fit_slope_per_ctx_token"):
        kind = "itl_fit_intercept" if metric.endswith("intercept") else "itl_fit_slope"
        value = rec.value * 1e-3  # ms -> s (per context token for the slope)
        return Case(kind=kind, family="batch-1 decode", isl=0, osl=128, measured=value, **base)
    if isl is None:
        if not row["isl"].strip():
            return Skipped(rid, metric, "input length not stated (variable-length dataset, e.g. "
                           "ShareGPT, without token totals)")  # fmt: skip
        return Skipped(rid, metric, f"input length {row['isl']!r} is not a number")
    if metric == "decode_tok_s_single_stream":
        if rec.speculative_tokens:
            return Skipped(rid, metric, "speculative decoding with no stated acceptance rate")
        return Case(
            kind="decode_b1", family="batch-1 decode", isl=isl, osl=osl or 128,
            measured=rec.value, **base,
        )  # fmt: skip
    if osl is None:
        return Skipped(rid, metric, f"output length {row['osl']!r} is not a number")
    how = _CONDITIONS.get(rec.load_kind)
    if how is None:
        return Skipped(rid, metric, f"condition {bc!r} for {metric} not modelled")
    n = rec.load_value or 0.0
    if how == "burst":
        return Skipped(
            rid, metric, "burst of all requests at once (QPS=INF): transient, not a steady state"
        )
    what = rec.quantity if latency else None
    if what is None and rec.quantity not in ("output_throughput", "throughput"):
        return Skipped(rid, metric, f"metric {metric!r} not modelled")
    if what is None and rec.tokens_counted == "not stated":
        return Skipped(rid, metric, "throughput convention (output vs input+output) not stated")
    if what:
        value = rec.value * (1e-3 if rec.unit_symbol == "ms" else 1.0)
    else:
        value = _throughput_total(rec, gpus_total)
    if what == "itl" and stat == "median":
        return Skipped(rid, metric, "median inter-token latency: the median of all token gaps, "
                       "not a request's mean gap (TPOT, which the model predicts); under load "
                       "the two differ (E0190: median ITL 5.75 ms, median TPOT 11.0 ms)")  # fmt: skip
    if what == "itl":
        what = "tpot"  # mean ITL over a request = its TPOT (token-weighted)
    serving = "TTFT/ITL under load"
    if how == "batch" or (how == "conc" and n == 1):
        if n == 1 and what == "ttft":
            return Case(kind="ttft_b1", family="TTFT", isl=isl, osl=osl, measured=value, **base)
        if n == 1 and what == "tpot":
            return Case(kind="tpot_b1", family="batch-1 decode", isl=isl, osl=osl,
                        measured=value, **base)  # fmt: skip
    if how == "rate":
        per_replica = n / replicas
        kinds = {"ttft": "load_ttft", "tpot": "load_itl", "e2e": "load_e2e", None: "load_tput"}
        fam = "offline throughput" if what is None else serving
        return Case(kind=kinds[what], family=fam, isl=isl, osl=osl, qps=per_replica,
                    measured=value, **base)  # fmt: skip
    if how == "conc":
        per_replica = max(n / replicas, 1.0)
        kinds = {"ttft": "conc_ttft", "tpot": "conc_tpot", "e2e": "conc_e2e", None: "conc_tput"}
        fam = "offline throughput" if what is None else serving
        return Case(kind=kinds[what], family=fam, isl=isl, osl=osl, batch=per_replica,
                    measured=value, **base)  # fmt: skip
    if what is None and how == "offline":
        return Case(kind="offline", family="offline throughput", isl=isl, osl=osl,
                    measured=value, **base)  # fmt: skip
    if what is None and how == "batch":
        return Case(kind="static", family="offline throughput", isl=isl, osl=osl,
                    batch=n, measured=value, **base)  # fmt: skip
    if what == "e2e" and how == "batch":  # one static batch run to completion (vLLM latency)
        fam = "batch-1 decode" if n == 1 else "offline throughput"
        return Case(kind="static_e2e", family=fam, isl=isl, osl=osl, batch=n, measured=value,
                    **base)  # fmt: skip
    return Skipped(rid, metric, f"condition {bc!r} for {metric} not modelled")


@cache
def cases() -> tuple[list[Case], list[Skipped]]:
    got: list[Case] = []
    skipped: list[Skipped] = []
    for row, rec in zip(load_rows(), measurement_records(), strict=True):  # one load, in order
        r = parse_row(row, rec)
        (got if isinstance(r, Case) else skipped).append(r)
    return got, skipped

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


#: Most failed or cancelled requests a run may have (of all it sent) and still be read: they
#: leave the server early, so the run's figures describe a lighter load than it offered.
MAX_ERROR_FRACTION = 0.05


def check_failed(where: str, what: str, failed: float, sent: float) -> None:
    """Refuse a run in which more than ``MAX_ERROR_FRACTION`` of the ``sent`` requests failed
    (``what``: the field, or fields, that say how many).

    >>> check_failed("f.json", "field 'failed'", 5, 100)
    >>> check_failed("f.json", "field 'failed'", 200, 520)
    Traceback (most recent call last):
    ...
    advisor.perf.importers.common.BenchmarkFileError: f.json: field 'failed' is 200 of 520 requests (more than 5%); allowed at most 26: failed or cancelled requests free the server early; rerun without them
    """
    if sent > 0 and failed > MAX_ERROR_FRACTION * sent:
        raise BenchmarkFileError(
            f"{where}: {what} is {failed:g} of {sent:g} requests (more than "
            f"{MAX_ERROR_FRACTION:.0%}); allowed at most {math.floor(MAX_ERROR_FRACTION * sent):g}"
            ": failed or cancelled requests free the server early; rerun without them"
        )


#: A latency statistic of a serving summary (``median_ttft_ms``, ``p99_e2e_latency_ms``) and where
#: it lies in the distribution (min 0, median 50, pNN at NN, max 100; a mean has no rank).
_STAT_KEY = re.compile(r"(mean|min|median|max|p\d{1,2}(?:\.\d+)?)_(\w+?)_ms")


def _rank(stat: str) -> float:
    """Where a statistic other than the mean lies in the distribution: min 0, median 50, pNN NN."""
    named = {"min": 0.0, "median": 50.0, "max": 100.0}
    return named[stat] if stat in named else float(stat[1:])


def check_statistics(where: str, doc: dict) -> None:
    """Refuse a summary whose statistics of one latency contradict each other: percentiles in
    order (min <= median <= P90 <= P99 <= max) and the mean within [min, max], where the file
    gives them as numbers (the clients compute them from the same requests, with numpy's
    monotone percentile, and round them alike, so no tolerance is needed). The fit reads the
    mean or median; a P99 below it says the figures are not one run's.

    >>> check_statistics("f.json", {"median_ttft_ms": 58.1, "p99_ttft_ms": 121.4, "std_ttft_ms": 9})
    >>> check_statistics("f.json", {"median_ttft_ms": 500.0, "p99_ttft_ms": 100.0})
    Traceback (most recent call last):
    ...
    advisor.perf.importers.common.BenchmarkFileError: f.json: field 'median_ttft_ms' is 500 ms, above 'p99_ttft_ms' 100 ms of the same requests (allowed: at most 100 ms): figures of different runs, or edited?
    """
    by_metric: dict[str, dict[str, tuple[str, float]]] = {}
    for key, v in doc.items():
        m = _STAT_KEY.fullmatch(key) if isinstance(key, str) else None
        if m and isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v):
            by_metric.setdefault(m[2], {})[m[1]] = (key, float(v))
    for stats in by_metric.values():
        chain = [
            kv for _, kv in sorted((_rank(st), kv) for st, kv in stats.items() if st != "mean")
        ]
        pairs = list(zip(chain, chain[1:], strict=False))  # consecutive statistics
        if "mean" in stats:
            pairs += [(stats["min"], stats["mean"])] if "min" in stats else []
            pairs += [(stats["mean"], stats["max"])] if "max" in stats else []
        for (k_lo, lo), (k_hi, hi) in pairs:
            if lo > hi:
                raise BenchmarkFileError(
                    f"{where}: field {k_lo!r} is {lo:g} ms, above {k_hi!r} {hi:g} ms of the same "
                    f"requests (allowed: at most {hi:g} ms): figures of different runs, or edited?"
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
    """The model a file names must be the stated --model; a note when it cannot be told.

    A name the catalog does not list is still refused where the catalog can tell it is another
    model (``_other_model``); a fine-tune or a private name of the same family and size is a note.

    >>> dep = Deployment("llama-3.1-8b", "h100-sxm")
    >>> check_model("f.json", "model_id", "Qwen/Qwen2.5-7B-Instruct", dep)
    Traceback (most recent call last):
    ...
    advisor.perf.importers.common.BenchmarkFileError: f.json: field 'model_id' is 'Qwen/Qwen2.5-7B-Instruct' (a qwen model by its name), but --model is llama-3.1-8b (allowed: a llama model): runs of another model cannot calibrate it
    >>> check_model("f.json", "model_id", "acme/llama-3-8b-support-ft", dep)
    "f.json: field 'model_id' is 'acme/llama-3-8b-support-ft', not a catalog model: taken as --model llama-3.1-8b"
    """
    from advisor.perf.validation.measurements import MODEL_NOT_SAME, model_id_for, model_key

    if not isinstance(value, str) or not value.strip():
        return None
    found = model_id_for(value)
    if found is None:
        k = model_key(value)
        other = ((MODEL_NOT_SAME[k], f"a name of {dep.model}") if k in MODEL_NOT_SAME
                 else _other_model(k, dep.model))  # fmt: skip
        if other:
            raise BenchmarkFileError(
                f"{where}: field {key!r} is {value[:80]!r} ({other[0]}), but --model is "
                f"{dep.model} (allowed: {other[1]}): runs of another model cannot calibrate it"
            )
        return f"{where}: field {key!r} is {value[:80]!r}, not a catalog model: taken as --model {dep.model}"
    if found != dep.model:
        raise BenchmarkFileError(
            f"{where}: field {key!r} is {value[:80]!r} ({found}), but --model is {dep.model}"
        )
    return None


def _words(model_id: str, family: str) -> set[str]:
    """The words a catalog model is known by: its family's and its id's leading letters
    (llama-4-scout, family llama4: {"llama"}; kimi-k2, family deepseek_v3: {"kimi", "deepseek"})."""
    return {w for w in (re.match(r"[a-z]*", family)[0], re.match(r"[a-z]*", model_id)[0]) if w}


#: A size stated in a model name ("-70b", "-0.5b"), not an active or expert size ("a3b", "8x7b").
_SIZE = re.compile(r"(?:^|[-_.])(\d+(?:\.\d+)?)b(?=$|[-_.])")
#: A stated size this far (either way) from --model's published parameters is another model:
#: sizes in names are rounded (Llama-2-7B has 6.74e9, gpt-oss-20b 20.9e9), never by 1.5x.
SIZE_FACTOR = 1.5


def _other_model(key: str, stated: str) -> tuple[str, str] | None:
    """(what a model name the catalog does not list is, what --model allows) when the catalog
    can tell it is not the stated model, else None (``key``: the name's ``model_key``): it names
    catalog families and not --model's (Qwen2.5-7B against a llama; a DeepSeek-R1 distill into
    Llama names both and passes this), or, for a dense --model, one size that is not its
    published parameter count."""
    from advisor.catalog import models

    cat = models()
    own = cat.get(stated)
    if own is None:
        return None
    known = set().union(*(_words(i, m.family) for i, m in cat.items()))
    mine = _words(stated, own.family)
    named = set(re.findall(r"[a-z]+", key)) & known
    if named and not named & mine:
        return (f"a {'/'.join(sorted(named))} model by its name",
                f"a {'/'.join(sorted(mine))} model")  # fmt: skip
    sizes = {float(x) for x in _SIZE.findall(key)}
    params = own.published_params
    if len(sizes) == 1 and params and not own.is_moe:  # an MoE's name may give its active size
        size = sizes.pop() * 1e9
        if max(size / params, params / size) > SIZE_FACTOR:
            return (f"a {size / 1e9:g}B model by its name",
                    f"{params / 1e9:.3g}B parameters, within {SIZE_FACTOR:g}x")  # fmt: skip
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

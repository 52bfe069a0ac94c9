"""Online-serving benchmark summaries: ``vllm bench serve --save-result`` JSON and SGLang
``python -m sglang.bench_serving --output-file`` (JSON lines, one run per line).

Layouts:
- vLLM (vllm-project/vllm vllm/benchmarks/serve.py, ``benchmark`` result dict + ``main``):
  ``request_rate`` (a number or the string "inf"), ``max_concurrency`` (null when unlimited),
  ``duration`` s, ``completed``, ``total_input_tokens``, ``total_output_tokens``,
  ``request_throughput``, ``output_throughput`` tok/s, and ``mean_/median_/std_/p99_`` x
  ``ttft/tpot/itl/e2el`` ``_ms``;
- SGLang (sgl-project/sglang python/sglang/bench_serving.py, ``benchmark``): the same names except
  ``mean_e2e_latency_ms`` (not ``e2el``), ``request_rate`` may be Infinity.

Cases: with a finite request rate, the mean TTFT and mean TPOT under load at the measured request
throughput (completed / duration); with an unlimited rate and a concurrency cap, TPOT and output
throughput at that concurrency; with neither, output throughput as offline throughput (every
request sent at once).
"""

from __future__ import annotations

import math

from advisor.perf.importers.cases import lengths, make_case
from advisor.perf.importers.common import (
    MAX_DURATION_S,
    MAX_LATENCY_MS,
    MAX_REQUESTS,
    MAX_TOKENS_PER_REQUEST,
    MAX_TOKENS_PER_S,
    BenchmarkFileError,
    Deployment,
    field,
)
from advisor.perf.measurements import Case

VLLM = "vllm bench serve"
SGLANG = "sglang bench_serving"
_COMMON = {"duration", "completed", "total_input_tokens", "total_output_tokens", "mean_ttft_ms"}


def flavour(doc: object) -> str | None:
    """Which tool wrote this summary, or None."""
    if not isinstance(doc, dict) or not set(doc) >= _COMMON:
        return None
    if "mean_e2e_latency_ms" in doc:
        return SGLANG
    if "mean_e2el_ms" in doc or "mean_tpot_ms" in doc:
        return VLLM
    return None


def _rate(doc: dict, name: str) -> float:
    raw = doc.get("request_rate", "inf")
    if isinstance(raw, str) and raw.strip().lower() in ("inf", "infinity"):
        return math.inf
    return field(doc, "request_rate", name, 1e-6, 1e6, allow_inf=True)


def cases(doc: dict, name: str, dep: Deployment, line: int | None = None) -> list[Case]:
    where = f"{name} line {line}" if line is not None else name
    dur = field(doc, "duration", where, 1e-3, MAX_DURATION_S)
    done = field(doc, "completed", where, 1, MAX_REQUESTS)
    tin = field(doc, "total_input_tokens", where, 1, MAX_REQUESTS * MAX_TOKENS_PER_REQUEST)
    tout = field(doc, "total_output_tokens", where, 1, MAX_REQUESTS * MAX_TOKENS_PER_REQUEST)
    ttft = field(doc, "mean_ttft_ms", where, 1e-3, MAX_LATENCY_MS)
    tpot = field(doc, "mean_tpot_ms", where, 1e-4, MAX_LATENCY_MS)
    out_tput = field(doc, "output_throughput", where, 1e-6, MAX_TOKENS_PER_S)
    field(doc, "p99_ttft_ms", where, 1e-3, MAX_LATENCY_MS, required=False)
    rate = _rate(doc, where)
    conc = field(doc, "max_concurrency", where, 1, 1e6, required=False)
    isl, osl = lengths(dep, where, tin / done, tout / done)
    if abs(out_tput * dur / tout - 1) > 0.05:
        raise BenchmarkFileError(
            f"{where}: field 'output_throughput' ({out_tput:g} tok/s) disagrees with "
            f"total_output_tokens / duration ({tout / dur:g} tok/s)"
        )
    tag = f"line{line}:" if line is not None else ""
    mk = dict(isl=isl, osl=osl)
    fam = "TTFT/ITL under load"
    if math.isfinite(rate):
        qps = done / dur
        return [
            make_case(dep, name, f"{tag}ttft", "load_ttft", fam, measured=ttft * 1e-3,
                      unit="s", qps=qps, **mk),
            make_case(dep, name, f"{tag}tpot", "load_itl", fam, measured=tpot * 1e-3,
                      unit="s", qps=qps, **mk),
        ]  # fmt: skip
    if conc is not None:
        return [
            make_case(dep, name, f"{tag}tpot", "conc_tpot", fam, measured=tpot * 1e-3,
                      unit="s", batch=conc, **mk),
            make_case(dep, name, f"{tag}output_tok_s", "conc_tput", "offline throughput",
                      measured=out_tput, unit="output tok/s (all GPUs)", batch=conc, **mk),
        ]  # fmt: skip
    return [
        make_case(dep, name, f"{tag}output_tok_s", "offline", "offline throughput",
                  measured=out_tput, unit="output tok/s (all GPUs)", **mk)
    ]  # fmt: skip

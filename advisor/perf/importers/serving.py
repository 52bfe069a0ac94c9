"""Online-serving benchmark summaries: vLLM (``vllm bench serve --save-result``,
``benchmarks/benchmark_serving.py --save-result``) JSON and SGLang ``python -m
sglang.bench_serving --output-file`` JSON lines (one run per line).

Layouts, each told by its own keys:
- vLLM ``vllm bench serve`` (vllm-project/vllm vllm/benchmarks/serve.py, 2025-): ``endpoint_type``,
  ``model_id``, ``request_rate`` (a number or "inf"), ``max_concurrency`` (null when unlimited),
  ``duration`` s, ``completed``, ``total_input_tokens``, ``total_output_tokens``,
  ``request_throughput``, ``output_throughput`` tok/s, ``mean_/median_/std_/p99_`` x
  ``ttft/tpot/itl/e2el`` ``_ms``;
- vLLM ``benchmark_serving.py`` (benchmarks/benchmark_serving.py, 2024-2025): the same with
  ``backend`` for ``endpoint_type`` (and no ``e2el`` before late 2024);
- SGLang 2025 (sgl-project/sglang python/sglang/bench_serving.py): ``backend``,
  ``mean_e2e_latency_ms`` (not ``e2el``), ``mean_ttft_ms``, ``mean_tpot_ms``, ``request_rate`` may be
  Infinity;
- SGLang late 2024: ``median_ttft_ms``, ``median_itl_ms`` and ``mean_e2e_latency_ms`` only (no mean
  TTFT or TPOT).

Cases (the rate a run offered is its input, the rate it achieved an output: validate.py): TTFT
(mean, or median in the 2024 SGLang layout), TPOT (mean), request latency (mean) and output
throughput, each with the run's completed requests,
- at a finite request rate: under Poisson load at the requested rate (a run above capacity is
  predicted with its backlog);
- at an unlimited rate with a concurrency cap: in a closed loop at that concurrency;
- an unlimited rate with no cap: every prompt sent at once, a transient burst whose throughput
  is neither steady state nor offline throughput (the queue drains as it runs): left out, said so.

Checks before any case is made (:mod:`.consistency`): at most 5% of the requests sent failed
(``failed``, or ``num_prompts`` - ``completed``), and no more completed than sent; a whole
``max_concurrency``; each latency's statistics in order (median <= P99, mean <= max);
output_throughput x duration = total_output_tokens and completed / duration =
request_throughput (identities); a rate run cannot
last longer than its arrivals ((n + 4 sqrt n) / rate) plus three mean request latencies; at a
concurrency cap Little's law gives the mean requests in flight, request_throughput x mean request
latency, which must be at most the cap and at least half the cap (or of n when n < cap);
TTFT + TPOT x (output tokens - 1) = mean request latency.
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
    Read,
    field,
    need,
    slow_requests_note,
)
from advisor.perf.importers.consistency import (
    TOL_IDENTITY,
    TOL_LITTLE,
    agree,
    check_backend,
    check_failed,
    check_model,
    check_statistics,
)
from advisor.perf.importers.per_request import per_request

VLLM = "vllm bench serve"
VLLM_SCRIPT = "vllm benchmark_serving.py"
SGLANG = "sglang bench_serving"
SGLANG_2024 = "sglang bench_serving (late-2024 layout)"
#: Keys every layout has (a line without them is not a serving summary).
_COMMON = ("duration", "completed", "total_input_tokens", "total_output_tokens")
_NEEDS = {
    VLLM: (*_COMMON, "output_throughput", "mean_ttft_ms", "mean_tpot_ms", "mean_e2el_ms"),
    VLLM_SCRIPT: (*_COMMON, "output_throughput", "mean_ttft_ms", "mean_tpot_ms"),
    SGLANG: (*_COMMON, "output_throughput", "mean_ttft_ms", "mean_tpot_ms", "mean_e2e_latency_ms"),
    SGLANG_2024: (*_COMMON, "output_throughput", "median_ttft_ms", "mean_e2e_latency_ms"),
}
_LAYOUT_TEXT = {
    VLLM: "vllm bench serve --save-result (2025 layout)",
    VLLM_SCRIPT: "vLLM benchmark_serving.py --save-result (2024-2025 layout)",
    SGLANG: "SGLang bench_serving --output-file (2025 layout)",
    SGLANG_2024: "SGLang bench_serving --output-file (late-2024 layout)",
}


def flavour(doc: object) -> str | None:
    """Which tool and layout wrote this summary, or None (not a serving summary)."""
    if not isinstance(doc, dict) or sum(k in doc for k in _COMMON) < 2:
        return None
    if "mean_e2e_latency_ms" in doc or "total_output_tokens_retokenized" in doc:
        if "mean_ttft_ms" not in doc and "median_ttft_ms" in doc:
            return SGLANG_2024
        return SGLANG
    if "endpoint_type" in doc:
        return VLLM
    if "mean_e2el_ms" in doc or "mean_tpot_ms" in doc or "model_id" in doc:
        return VLLM_SCRIPT
    return None


def _rate(doc: dict, where: str) -> float:
    raw = doc.get("request_rate", "inf")
    if raw is None or isinstance(raw, str) and raw.strip().lower() in ("inf", "infinity"):
        return math.inf
    return field(doc, "request_rate", where, 1e-6, 1e6, allow_inf=True)


def _ms(doc: dict, key: str, where: str, required: bool = True) -> float | None:
    v = field(doc, key, where, 1e-4, MAX_LATENCY_MS, required=required)
    return None if v is None else v * 1e-3


def _one_client_slow_requests(doc: dict, where: str, ttft_s: float, conc, rate) -> str | None:
    """Why a one-client run's mean TTFT is not its service's, or None (``slow_requests_note``)."""
    if conc != 1 or math.isfinite(rate):
        return None
    return slow_requests_note(where, ttft_s, _ms(doc, "median_ttft_ms", where, required=False),
                              _ms(doc, "p99_ttft_ms", where, required=False))  # fmt: skip


def _check_requests(doc: dict, where: str, done: float) -> None:
    """The requests a run sent, where the file says (vLLM's ``num_prompts``; ``failed`` where the
    client writes it): no more completed than sent, and at most 5% failed (``check_failed``)."""
    sent = field(doc, "num_prompts", where, 1, MAX_REQUESTS, required=False)
    failed = field(doc, "failed", where, 0, MAX_REQUESTS, required=False)
    if sent is not None and done > sent:
        raise BenchmarkFileError(
            f"{where}: field 'completed' is {done:g}, more than 'num_prompts' {sent:g}: a run "
            f"cannot complete more requests than it sends (allowed: 1..{sent:g})"
        )
    if failed is not None:
        check_failed(where, "field 'failed'", failed, done + failed)
    if sent is not None:
        check_failed(where, "'num_prompts' - 'completed'", sent - done, sent)


def read(doc: dict, name: str, dep: Deployment, line: int | None = None) -> Read:
    fmt = flavour(doc)
    assert fmt is not None
    where = f"{name} line {line}" if line is not None else name
    need(doc, _NEEDS[fmt], where, _LAYOUT_TEXT[fmt])
    out = Read(layout=fmt)
    check_backend(where, "backend", doc.get("backend"), dep)
    for key in ("model_id", "model"):
        note = check_model(where, key, doc.get(key), dep)
        if note:
            out.notes.append(note)
            break
    dur = field(doc, "duration", where, 1e-3, MAX_DURATION_S)
    done = field(doc, "completed", where, 1, MAX_REQUESTS)
    tin = field(doc, "total_input_tokens", where, 1, MAX_REQUESTS * MAX_TOKENS_PER_REQUEST)
    tout = field(doc, "total_output_tokens", where, 1, MAX_REQUESTS * MAX_TOKENS_PER_REQUEST)
    out_tput = field(doc, "output_throughput", where, 1e-6, MAX_TOKENS_PER_S)
    req_tput = field(doc, "request_throughput", where, 1e-9, 1e7, required=False)
    rate = _rate(doc, where)
    conc = field(doc, "max_concurrency", where, 1, 1e6, required=False)
    if conc is not None and conc != int(conc):  # requests in flight: a whole number
        raise BenchmarkFileError(
            f"{where}: field 'max_concurrency' is {conc:g}; expected a whole number of requests "
            "in [1, 1e+06]"
        )
    _check_requests(doc, where, done)
    check_statistics(where, doc)
    median_ttft = fmt == SGLANG_2024
    ttft = _ms(doc, "median_ttft_ms" if median_ttft else "mean_ttft_ms", where)
    tpot = None if median_ttft else _ms(doc, "mean_tpot_ms", where)
    e2e_key = "mean_e2el_ms" if fmt in (VLLM, VLLM_SCRIPT) else "mean_e2e_latency_ms"
    e2e = _ms(doc, e2e_key, where, required=False)
    isl, osl = lengths(dep, where, tin / done, tout / done)

    agree(where, "'output_throughput' x 'duration' and 'total_output_tokens'", out_tput * dur,
          tout, TOL_IDENTITY, "throughput and duration in other units than tok/s and s?")  # fmt: skip
    if req_tput is not None:
        agree(where, "'request_throughput' and 'completed' / 'duration'", req_tput, done / dur,
              TOL_IDENTITY, "")  # fmt: skip
    if e2e is not None and tpot is not None:
        agree(where, f"'mean_ttft_ms' + 'mean_tpot_ms' x (output tokens - 1) and {e2e_key!r}",
              ttft + tpot * max(osl - 1, 0), e2e, TOL_LITTLE,
              "latencies in other units than ms?")  # fmt: skip
    if math.isfinite(rate) and e2e is not None:
        longest = (done + 4 * math.sqrt(done)) / rate + 3 * e2e
        if dur > longest:
            raise BenchmarkFileError(
                f"{where}: 'duration' {dur:.4g} s is longer than {done:.0f} requests arriving at "
                f"'request_rate' {rate:g}/s can take ((n + 4 sqrt n) / rate + 3 x {e2e_key} = "
                f"{longest:.4g} s): durations or latencies in other units?"
            )
    if not math.isfinite(rate) and conc is not None and e2e is not None:
        in_flight = done / dur * e2e  # Little's law: L = lambda W
        cap = min(conc, done)
        lo = 0.5 * done / math.ceil(done / conc)
        if not lo <= in_flight <= cap * (1 + TOL_LITTLE):
            raise BenchmarkFileError(
                f"{where}: Little's law gives {in_flight:.3g} requests in flight "
                f"('completed' / 'duration' x {e2e_key!r}), but 'max_concurrency' {conc:g} "
                f"with {done:.0f} requests allows {lo:.3g}..{cap:g}: durations or latencies in "
                "other units?"
            )

    detail, why_not = per_request(doc, where, done, tin, tout, dur)
    if why_not:
        out.notes.append(f"{where}: {why_not}")
    tag = f"line{line}:" if line is not None else ""
    if not math.isfinite(rate) and conc is None:
        out.left_out.append((
            f"{name}:{tag}run",
            f"a burst: {done:.0f} requests sent at once (request_rate inf, no max_concurrency); "
            "its figures mix the queue's start-up and drain and are not a steady state",
        ))  # fmt: skip
        return out
    how = "load" if math.isfinite(rate) else "conc"
    k_ttft, k_tpot, k_e2e, k_tput = _KINDS[how]
    mk = dict(isl=isl, osl=osl, requests=int(done), row=detail, **(dict(qps=rate) if how ==
              "load" else dict(batch=conc)))  # fmt: skip
    fam = "TTFT/ITL under load"
    slow = None if median_ttft else _one_client_slow_requests(doc, where, ttft, conc, rate)
    if slow:
        out.notes.append(slow)
        ttft, median_ttft = _ms(doc, "median_ttft_ms", where), True
        for what in ("e2e", "output_tok_s"):
            out.left_out.append((f"{name}:{tag}{what}", "carries the run's slow requests (above)"))
    out.cases.append(make_case(dep, name, f"{tag}ttft", k_ttft, fam, measured=ttft, unit="s",
                               statistic="median" if median_ttft else "mean", **mk))  # fmt: skip
    if tpot is not None:
        out.cases.append(make_case(dep, name, f"{tag}tpot", k_tpot, fam, measured=tpot,
                                   unit="s", **mk))  # fmt: skip
    else:
        out.left_out.append((f"{name}:{tag}itl", "the late-2024 SGLang layout has no mean TPOT; "
                             "its median ITL is the median of all token gaps, not a request's "
                             "TPOT"))  # fmt: skip
    if slow:
        return out
    if e2e is not None:
        out.cases.append(make_case(dep, name, f"{tag}e2e", k_e2e, fam, measured=e2e, unit="s",
                                   **mk))  # fmt: skip
    out.cases.append(make_case(dep, name, f"{tag}output_tok_s", k_tput, "offline throughput",
                               measured=out_tput, unit="output tok/s (all GPUs)", **mk))  # fmt: skip
    return out


#: Case kinds of a run at a request rate (Poisson load) and at a concurrency cap (closed loop):
#: TTFT, TPOT, request latency, output throughput (advisor/perf/validation/validate.py predict_cases).
_KINDS = {
    "load": ("load_ttft", "load_itl", "load_e2e", "load_tput"),
    "conc": ("conc_ttft", "conc_tpot", "conc_e2e", "conc_tput"),
}

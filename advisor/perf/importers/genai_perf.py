"""NVIDIA GenAI-Perf ``profile_export_genai_perf.json`` and AIPerf ``profile_export_aiperf.json``.

Layouts, each told by where its settings and metrics sit:
- GenAI-Perf 2024 (triton-inference-server/perf_analyzer genai-perf, JSON exporter): one object per
  metric at the top level (``time_to_first_token``, ``inter_token_latency``,
  ``output_token_throughput``, ``request_throughput``, ``request_latency``,
  ``input_sequence_length``, ``output_sequence_length``), each ``{"unit", "avg", "p50", ...}``, and
  ``input_config`` with the run's ``concurrency`` / ``request_rate`` and ``model``;
- GenAI-Perf 2025 (configuration-file releases): the load under
  ``input_config.perf_analyzer.stimulus`` (``concurrency`` or ``request_rate``);
- AIPerf 2025 (ai-dynamo/aiperf aiperf/exporters/json_exporter.py, ``JsonExportData``): the metric
  objects under ``records``, the run's settings under ``input_config.loadgen``;
- AIPerf 2026: the metric objects at the top level again, the settings still under
  ``input_config.loadgen`` (what tells it from GenAI-Perf).

Units are read from each metric's ``unit``: latencies ``s``/``sec``/``ms``/``us``/``ns``;
throughputs ``tokens/sec`` (``tokens/s``), ``tokens/ms``, ``requests/sec``, ``requests/ms``.

Cases: at a fixed concurrency, mean TTFT, mean inter-token latency (TPOT) and output token
throughput; at a request rate, mean TTFT and inter-token latency under Poisson load at the
requested rate.

Checks: no more than 5% of requests failed or cancelled (``error_request_count``); a closed-loop
run of no more requests than its concurrency is a burst (every request at once), left out and
said so; output_token_throughput = request_throughput x output_sequence_length (identity);
at a concurrency, Little's law (concurrency = request_throughput x request_latency) and
TTFT + ITL x (OSL - 1) = request_latency. Reasoning models: GenAI-Perf times TTFT to the first
token it receives as output, so a model that thinks first hides its reasoning tokens in TTFT and
leaves them out of OSL; a file with reasoning metrics, or whose TTFT is longer than the
``_MAX_TTFT_STEPS`` decode steps a prefill can take, is refused, since its OSL and throughput do not
count the tokens the server generated. AIPerf counts them (OSL = reasoning + visible tokens,
``reasoning_token_count`` beside it): accepted when OSL is at least the reasoning count.
AIPerf 0.1-0.2 tag TTFT ``ttft``; read as ``time_to_first_token``.
"""

from __future__ import annotations

from advisor.perf.importers.cases import lengths, make_case
from advisor.perf.importers.common import (
    MAX_LATENCY_MS,
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
    check_gpu,
    check_model,
)

GENAI_PERF = "GenAI-Perf profile export"
GENAI_PERF_2025 = "GenAI-Perf profile export (2025 layout)"
AIPERF = "AIPerf profile export"
AIPERF_2026 = "AIPerf profile export (2026 layout)"
_METRICS = {"time_to_first_token", "inter_token_latency", "output_token_throughput"}
_NEEDS = (*sorted(_METRICS), "request_throughput")
_TIME_UNITS = {"s": 1.0, "sec": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}
_RATE_UNITS = {"sec": 1.0, "s": 1.0, "second": 1.0, "ms": 1e3}
#: Longest plausible TTFT, in decode steps (ITLs), of a closed-loop run without hidden tokens:
#: a start-up wave of every concurrent prompt prefilled ahead of one (chunks of ~512 tokens per
#: step, conservatively) plus 64 steps of queueing.
_MAX_TTFT_STEPS = (64, 512)


def _loadgen(doc: dict) -> dict | None:
    cfg = doc.get("input_config")
    return (
        cfg.get("loadgen")
        if isinstance(cfg, dict) and isinstance(cfg.get("loadgen"), dict)
        else None
    )


def flavour(doc: object) -> str | None:
    if not isinstance(doc, dict):
        return None
    if isinstance(doc.get("records"), dict) and set(doc["records"]) & _METRICS:
        return AIPERF
    if not set(doc) & _METRICS:
        return None
    if _loadgen(doc) is not None:
        return AIPERF_2026
    cfg = doc.get("input_config")
    if isinstance(cfg, dict) and isinstance(cfg.get("perf_analyzer"), dict):
        return GENAI_PERF_2025
    return GENAI_PERF


def _scaled(
    metrics: dict, key: str, where: str, kind: str, lo: float, hi: float, stat: str = "avg",
    required: bool = True,
) -> float | None:  # fmt: skip
    """``metrics[key].<stat>`` in SI (s, or per second), from the metric's own ``unit``."""
    m = metrics.get(key)
    unit = m.get("unit") if isinstance(m, dict) else None
    if kind == "time":
        scale = _TIME_UNITS.get(unit) if isinstance(unit, str) else None
        allowed = ", ".join(_TIME_UNITS)
    else:
        per = unit.rsplit("/", 1)[-1] if isinstance(unit, str) and "/" in unit else None
        scale = _RATE_UNITS.get(per) if per else None
        allowed = f"{kind}/sec, {kind}/s, {kind}/ms"
    if scale is None:
        raise BenchmarkFileError(
            f"{where}: field '{key}.unit' is {str(unit)[:30]!r}; expected one of {allowed}"
        )
    v = field(metrics, f"{key}.{stat}", where, lo / scale, hi / scale, required=required)
    return None if v is None else v * scale


def _load(doc: dict, fmt: str) -> tuple[dict, str]:
    cfg = doc.get("input_config") if isinstance(doc.get("input_config"), dict) else {}
    if fmt in (AIPERF, AIPERF_2026):
        return _loadgen(doc) or {}, "input_config.loadgen"
    if fmt == GENAI_PERF_2025:
        stim = cfg.get("perf_analyzer", {}).get("stimulus")
        return (stim if isinstance(stim, dict) else {}), "input_config.perf_analyzer.stimulus"
    return cfg, "input_config"


def _telemetry_gpu(doc: dict) -> tuple[str, object]:
    """(key, name) of the first GPU AIPerf's telemetry recorded (``telemetry_data.endpoints.<host>
    .gpus.<gpu>.gpu_name``), or ("", None)."""
    eps = (
        doc.get("telemetry_data", {}).get("endpoints")
        if isinstance(doc.get("telemetry_data"), dict)
        else None
    )
    for host, ep in (eps or {}).items() if isinstance(eps, dict) else ():
        gpus = ep.get("gpus") if isinstance(ep, dict) else None
        for gid, g in (gpus or {}).items() if isinstance(gpus, dict) else ():
            if isinstance(g, dict) and "gpu_name" in g:
                return (
                    f"telemetry_data.endpoints.{str(host)[:40]}.gpus.{str(gid)[:20]}.gpu_name",
                    g["gpu_name"],
                )
    return "", None


def _models(doc: dict) -> object:
    cfg = doc.get("input_config") if isinstance(doc.get("input_config"), dict) else {}
    for node, key in ((cfg, "model"), (cfg, "model_names"), (cfg.get("endpoint"), "model_names")):
        got = node.get(key) if isinstance(node, dict) else None
        if isinstance(got, list) and got:
            return got[0]
        if isinstance(got, str):
            return got
    return None


#: AIPerf tags for the metrics GenAI-Perf names in full (AIPerf 0.1-0.2 wrote ``ttft``).
_ALIASES = {"ttft": "time_to_first_token", "itl": "inter_token_latency"}


def _aliased(metrics: dict) -> dict:
    out = dict(metrics)
    for short, full in _ALIASES.items():
        if full not in out and isinstance(out.get(short), dict):
            out[full] = out[short]
    return out


def _check_reasoning(metrics: dict, prefix: str, name: str) -> None:
    """A reasoning model's thinking tokens must be counted in OSL (AIPerf does: OSL = reasoning +
    visible tokens); a file that reports them apart from an OSL that leaves them out is refused."""
    key = next((k for k in ("reasoning_token_count", "reasoning_tokens") if isinstance(
        metrics.get(k), dict) and isinstance(metrics[k].get("avg"), int | float)), None)  # fmt: skip
    if key is None or metrics[key]["avg"] <= 0:
        return
    r = float(metrics[key]["avg"])
    osl = metrics.get("output_sequence_length")
    osl_avg = osl.get("avg") if isinstance(osl, dict) else None
    if not isinstance(osl_avg, int | float) or osl_avg < r * (1 - 0.05):
        raise BenchmarkFileError(
            f"{name}: field '{prefix}{key}' is {r:g} per request but "
            f"'{prefix}output_sequence_length' ({osl_avg}) does not count them: a reasoning "
            "model whose thinking tokens TTFT, OSL and throughput leave out; benchmark it with "
            "reasoning counted as output"
        )


def read(doc: dict, name: str, dep: Deployment) -> Read:
    fmt = flavour(doc)
    assert fmt is not None
    metrics = _aliased(doc["records"] if fmt == AIPERF else doc)
    prefix = "records." if fmt == AIPERF else ""
    need(metrics, _NEEDS, f"{name} ({prefix or 'top level'})", fmt)
    out = Read(layout=fmt)
    cfg = doc.get("input_config") if isinstance(doc.get("input_config"), dict) else {}
    check_backend(name, "input_config.backend", cfg.get("backend"), dep)
    gpu_key, gpu_name = _telemetry_gpu(doc)
    out.notes += [n for n in [check_gpu(name, f"field {gpu_key!r}", gpu_name, dep)] if n]
    note = check_model(name, "input_config model", _models(doc), dep)
    if note:
        out.notes.append(note)
    _check_reasoning(metrics, prefix, name)
    n_req = field(metrics, "request_count.avg", name, 1, 1e9, required=False)
    errors = field(metrics, "error_request_count.avg", name, 0, 1e9, required=False) or 0.0
    if n_req is not None:
        check_failed(name, f"field '{prefix}error_request_count'", errors, n_req + errors)
    load, cfg_name = _load(doc, fmt)
    conc = field(load, "concurrency", f"{name} ({cfg_name})", 1, 1e6, required=False)
    rate = field(load, "request_rate", f"{name} ({cfg_name})", 1e-6, 1e6, required=False)
    w = f"{name} ({prefix}"
    ttft = _scaled(metrics, "time_to_first_token", w + "time_to_first_token)", "time", 1e-7,
                   MAX_LATENCY_MS * 1e-3)  # fmt: skip
    itl = _scaled(metrics, "inter_token_latency", w + "inter_token_latency)", "time", 1e-7,
                  MAX_LATENCY_MS * 1e-3)  # fmt: skip
    tput = _scaled(metrics, "output_token_throughput", w + "output_token_throughput)", "tokens",
                   1e-6, MAX_TOKENS_PER_S)  # fmt: skip
    req_tput = _scaled(metrics, "request_throughput", w + "request_throughput)", "requests",
                       1e-9, 1e7)  # fmt: skip
    lat = None
    if isinstance(metrics.get("request_latency"), dict):
        lat = _scaled(metrics, "request_latency", w + "request_latency)", "time", 1e-7,
                      MAX_LATENCY_MS * 1e-3)  # fmt: skip
    isl = field(metrics, "input_sequence_length.avg", name, 1, MAX_TOKENS_PER_REQUEST,
                required=False)  # fmt: skip
    osl = field(metrics, "output_sequence_length.avg", name, 1, MAX_TOKENS_PER_REQUEST,
                required=False)  # fmt: skip
    isl, osl = lengths(dep, name, isl, osl)

    agree(name, f"'{prefix}output_token_throughput' and request_throughput x output_sequence_length",
          tput, req_tput * osl, TOL_IDENTITY, "units of the throughputs?")  # fmt: skip
    if lat is not None:
        agree(name, "time_to_first_token + inter_token_latency x (OSL - 1) and request_latency",
              ttft + itl * max(osl - 1, 0), lat, TOL_LITTLE, "units of the latencies?")  # fmt: skip
    if conc is not None and rate is None and lat is not None:
        agree(name, f"'{cfg_name}.concurrency' and request_throughput x request_latency "
              "(Little's law)", conc, req_tput * lat, TOL_LITTLE,
              "a run that never reached its concurrency, or units of the latencies?")  # fmt: skip
    if conc is not None and rate is None:
        steps = _MAX_TTFT_STEPS[0] + conc * isl / _MAX_TTFT_STEPS[1]
        if ttft > steps * itl:
            raise BenchmarkFileError(
                f"{name}: '{prefix}time_to_first_token' {ttft * 1e3:.4g} ms is {ttft / itl:.0f} "
                f"inter-token latencies, more than a prefill of {isl:.0f} tokens at concurrency "
                f"{conc:g} can take ({steps:.0f}): a reasoning model's hidden thinking tokens "
                "(not counted in OSL or throughput)? Benchmark with reasoning counted as output"
            )
    mk = dict(isl=isl, osl=osl, requests=int(n_req or 0))
    fam = "TTFT/ITL under load"
    sent = field(load, "request_count", f"{name} ({cfg_name})", 1, 1e9, required=False) or n_req
    if conc is not None and rate is None and sent is not None and sent <= conc:
        out.left_out.append((
            f"{name}:run",
            f"a burst: {sent:.0f} requests at concurrency {conc:g} are all sent at once; its "
            "figures are the queue's start-up and drain, not a steady state",
        ))  # fmt: skip
        return out
    if rate is not None and conc is None:
        out.cases += [
            make_case(dep, name, "ttft", "load_ttft", fam, measured=ttft, unit="s", qps=rate, **mk),
            make_case(dep, name, "itl", "load_itl", fam, measured=itl, unit="s", qps=rate, **mk),
        ]
        return out
    if conc is None:
        raise BenchmarkFileError(
            f"{name}: key '{cfg_name}.concurrency' (or request_rate) is missing (the file looks "
            f"like {fmt}): the load the run applied is unknown"
        )
    slow, statistic = None, "mean"
    if conc == 1:  # one client: its slow requests carry the mean (common.slow_requests_note)
        q = {stat: _scaled(metrics, "time_to_first_token", w + "time_to_first_token)", "time",
                           1e-7, MAX_LATENCY_MS * 1e-3, stat=stat, required=False)
             for stat in ("p50", "p99")}  # fmt: skip
        slow = slow_requests_note(name, ttft, q["p50"], q["p99"])
    if slow:
        out.notes.append(slow)
        out.left_out.append((f"{name}:output_tok_s", "carries the run's slow requests (above)"))
        ttft, statistic = q["p50"], "median"
    out.cases += [
        make_case(dep, name, "ttft", "conc_ttft", fam, measured=ttft, unit="s", batch=conc,
                  statistic=statistic, **mk),
        make_case(dep, name, "itl", "conc_tpot", fam, measured=itl, unit="s", batch=conc, **mk),
    ]  # fmt: skip
    if not slow:
        out.cases.append(make_case(dep, name, "output_tok_s", "conc_tput", "offline throughput",
                                   measured=tput, unit="output tok/s (all GPUs)", batch=conc,
                                   **mk))  # fmt: skip
    return out

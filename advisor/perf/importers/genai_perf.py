"""NVIDIA GenAI-Perf ``profile_export_genai_perf.json`` and AIPerf ``profile_export_aiperf.json``.

Layouts:
- GenAI-Perf (triton-inference-server/perf_analyzer genai-perf, JSON exporter): one object per
  metric at the top level (``time_to_first_token``, ``inter_token_latency``,
  ``output_token_throughput``, ``request_throughput``, ``input_sequence_length``,
  ``output_sequence_length``), each ``{"unit": ..., "avg": ..., "p50": ..., "p99": ...}``, and
  ``input_config`` with the run's ``concurrency`` / ``request_rate``;
- AIPerf (ai-dynamo/aiperf aiperf/exporters/json_exporter.py, ``JsonExportData``): the same
  metric objects under ``records`` (tags as above, display units), the run's settings under
  ``input_config.loadgen``.

Cases: at a fixed concurrency, mean inter-token latency (TPOT) and output token throughput; at a
request rate, mean TTFT and inter-token latency under load at the measured request throughput.
Latency units ``ms`` / ``us`` / ``ns`` / ``s`` are read from each metric's ``unit``.
"""

from __future__ import annotations

from advisor.perf.importers.cases import lengths, make_case
from advisor.perf.importers.common import (
    MAX_LATENCY_MS,
    MAX_TOKENS_PER_REQUEST,
    MAX_TOKENS_PER_S,
    BenchmarkFileError,
    Deployment,
    field,
)
from advisor.perf.measurements import Case

GENAI_PERF = "GenAI-Perf profile export"
AIPERF = "AIPerf profile export"
_METRICS = {"time_to_first_token", "inter_token_latency", "output_token_throughput"}
_TIME_UNITS = {"s": 1.0, "sec": 1.0, "ms": 1e-3, "us": 1e-6, "ns": 1e-9}


def flavour(doc: object) -> str | None:
    if not isinstance(doc, dict):
        return None
    if isinstance(doc.get("records"), dict) and set(doc["records"]) >= _METRICS:
        return AIPERF
    if set(doc) >= _METRICS:
        return GENAI_PERF
    return None


def _latency_s(metrics: dict, key: str, where: str) -> float:
    unit = (metrics.get(key) or {}).get("unit") if isinstance(metrics.get(key), dict) else None
    if unit not in _TIME_UNITS:
        raise BenchmarkFileError(
            f"{where}: field '{key}.unit' is {unit!r}; expected one of {', '.join(_TIME_UNITS)}"
        )
    scale = _TIME_UNITS[unit]
    return field(metrics, f"{key}.avg", where, 1e-7 / scale, MAX_LATENCY_MS * 1e-3 / scale) * scale


def cases(doc: dict, name: str, dep: Deployment) -> list[Case]:
    aiperf = flavour(doc) == AIPERF
    metrics = doc["records"] if aiperf else doc
    prefix = "records." if aiperf else ""
    where = name
    cfg = doc.get("input_config") if isinstance(doc.get("input_config"), dict) else {}
    load = cfg.get("loadgen", {}) if aiperf and isinstance(cfg.get("loadgen"), dict) else cfg
    cfg_name = "input_config.loadgen" if aiperf else "input_config"
    conc = field(load, "concurrency", f"{name} ({cfg_name})", 1, 1e6, required=False)
    rate = field(load, "request_rate", f"{name} ({cfg_name})", 1e-6, 1e6, required=False)
    ttft = _latency_s(metrics, "time_to_first_token", f"{where} ({prefix}time_to_first_token)")
    itl = _latency_s(metrics, "inter_token_latency", f"{where} ({prefix}inter_token_latency)")
    tput = field(metrics, "output_token_throughput.avg", name, 1e-6, MAX_TOKENS_PER_S)
    isl = field(
        metrics, "input_sequence_length.avg", name, 1, MAX_TOKENS_PER_REQUEST, required=False
    )
    osl = field(
        metrics, "output_sequence_length.avg", name, 1, MAX_TOKENS_PER_REQUEST, required=False
    )
    isl, osl = lengths(dep, name, isl, osl)
    mk = dict(isl=isl, osl=osl)
    fam = "TTFT/ITL under load"
    if rate is not None and conc is None:
        qps = field(metrics, "request_throughput.avg", name, 1e-6, 1e6)
        return [
            make_case(dep, name, "ttft", "load_ttft", fam, measured=ttft, unit="s", qps=qps, **mk),
            make_case(dep, name, "itl", "load_itl", fam, measured=itl, unit="s", qps=qps, **mk),
        ]
    if conc is None:
        raise BenchmarkFileError(
            f"{name}: field '{cfg_name}.concurrency' (or request_rate) is missing: "
            "the load the run applied is unknown"
        )
    return [
        make_case(dep, name, "itl", "conc_tpot", fam, measured=itl, unit="s", batch=conc, **mk),
        make_case(dep, name, "output_tok_s", "conc_tput", "offline throughput", measured=tput,
                  unit="output tok/s (all GPUs)", batch=conc, **mk),
    ]  # fmt: skip

"""``trtllm-bench throughput``: TensorRT-LLM offline throughput, as a JSON report or the console
report it prints.

Layouts:
- JSON (``--report_json FILE``; NVIDIA/TensorRT-LLM tensorrt_llm/bench/dataclasses/reporting.py,
  ``ReportUtility.get_statistics_dict``): ``engine`` (model, version, backend, dtype),
  ``world_info`` (``tp_size``, ``pp_size``, ...), ``request_info`` (``num_requests``,
  ``avg_input_length``, ``avg_output_length``), ``performance`` (``total_latency_ms``,
  ``system_output_throughput_tok_s``, ``request_throughput_req_s``, ...);
- console, 0.1x (docs/source/performance/perf-benchmarking.md, TensorRT-LLM 0.17): sections
  ``= ENGINE DETAILS`` (TensorRT engine) or ``= PyTorch backend``, ``= WORLD + RUNTIME
  INFORMATION`` (``TP Size:``, ``PP Size:``) and ``= PERFORMANCE OVERVIEW`` with ``Number of
  requests:``, ``Average Input/Output Length (tokens):``, ``Token Throughput (tokens/sec):`` (output
  tokens), ``Request Throughput (req/sec):``, ``Total Latency (ms):``;
- console, 1.x: ``= REQUEST DETAILS`` holds the request count and lengths, ``= PERFORMANCE
  OVERVIEW`` has ``Total Output Throughput (tokens/sec):``.

The file's model, GPU (``machine.name``), TP/PP and backend must match the stated deployment (``TRT`` / ``ENGINE DETAILS``:
trtllm-trt, the TensorRT-engine builds; ``Pytorch`` / ``PyTorch backend``: trtllm). Checks:
output throughput / request throughput = average output length, and requests / request throughput
= total latency (identities).
"""

from __future__ import annotations

import re

from advisor.perf.importers.cases import lengths, make_case
from advisor.perf.importers.common import (
    MAX_DURATION_S,
    MAX_REQUESTS,
    MAX_TOKENS_PER_REQUEST,
    MAX_TOKENS_PER_S,
    BenchmarkFileError,
    Deployment,
    Read,
    field,
    need,
)
from advisor.perf.importers.consistency import (
    TOL_IDENTITY,
    agree,
    check_gpu,
    check_int,
    check_model,
)

FORMAT = "trtllm-bench report"
CONSOLE = "trtllm-bench console report"
CONSOLE_1X = "trtllm-bench console report (1.x layout)"


def recognise(doc: object) -> bool:
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("performance"), dict)
        and "system_output_throughput_tok_s" in doc["performance"]
    )


_OVERVIEW = re.compile(r"^=+\s*\n=\s*PERFORMANCE OVERVIEW\s*$", re.M)


def recognise_console(text: str) -> bool:
    return bool(_OVERVIEW.search(text)) and "WORLD + RUNTIME INFORMATION" in text


#: ``engine.backend`` as the report writes it -> engine profile (advisor/perf/model/profiles.py).
BACKENDS = {"TRT": "trtllm-trt", "Pytorch": "trtllm", "_autodeploy": "trtllm"}


def _check_backend(name: str, key: str, backend: str | None, dep: Deployment) -> None:
    if backend is not None and BACKENDS.get(str(backend)) != dep.engine:
        want = BACKENDS.get(str(backend))
        raise BenchmarkFileError(
            f"{name}: field {key!r} is {str(backend)[:20]!r}"
            + (f": state --engine {want}" if want else f"; expected one of {', '.join(BACKENDS)}")
            + f" (the stated engine is {dep.engine})"
        )


def _case(dep: Deployment, name: str, isl: float, osl: float, tput: float):
    return make_case(dep, name, "output_tok_s", "offline", "offline throughput", isl=isl,
                     osl=osl, measured=tput, unit="output tok/s (all GPUs)")  # fmt: skip


def _checks(name: str, n: float, osl: float, tput: float, req: float | None, lat_s: float) -> None:
    if req is None:
        return
    agree(name, "output throughput / request throughput and the average output length",
          tput / req, osl, TOL_IDENTITY, "")  # fmt: skip
    agree(name, "requests / request throughput and the total latency", n / req, lat_s,
          TOL_IDENTITY, "")  # fmt: skip


def read(doc: dict, name: str, dep: Deployment) -> Read:
    out = Read(layout=FORMAT)
    eng = doc.get("engine") if isinstance(doc.get("engine"), dict) else {}
    _check_backend(name, "engine.backend", eng.get("backend"), dep)
    note = check_model(name, "engine.model", eng.get("model"), dep)
    if note:
        out.notes.append(note)
    machine = doc.get("machine") if isinstance(doc.get("machine"), dict) else {}
    out.notes += [
        n for n in [check_gpu(name, "field 'machine.name'", machine.get("name"), dep)] if n
    ]
    world = doc.get("world_info") if isinstance(doc.get("world_info"), dict) else {}
    check_int(name, "world_info.tp_size", world.get("tp_size"), dep.tp, "--tp")
    check_int(name, "world_info.pp_size", world.get("pp_size"), dep.pp, "--pp")
    need(doc.get("request_info") or {}, ("num_requests",), f"{name} (request_info)", FORMAT)
    keys = ("request_info.num_requests", "performance.system_output_throughput_tok_s",
            "performance.total_latency_ms", "performance.request_throughput_req_s",
            "request_info.avg_input_length", "request_info.avg_output_length")  # fmt: skip
    return _report(doc, keys, name, dep, out)


def _report(doc: dict, keys: tuple[str, ...], name: str, dep: Deployment, out: Read) -> Read:
    """The offline-throughput case of a report, from its keys for: requests, output tokens/s,
    total latency (ms), requests/s, average input and output lengths; checked first."""
    k_n, k_tput, k_lat, k_req, k_isl, k_osl = keys
    n = field(doc, k_n, name, 1, MAX_REQUESTS)
    tput = field(doc, k_tput, name, 1e-6, MAX_TOKENS_PER_S)
    lat_s = field(doc, k_lat, name, 1e-3, MAX_DURATION_S * 1e3) * 1e-3
    req = field(doc, k_req, name, 1e-9, 1e9, required=False)
    isl = field(doc, k_isl, name, 1, MAX_TOKENS_PER_REQUEST, required=False)
    osl = field(doc, k_osl, name, 1, MAX_TOKENS_PER_REQUEST, required=False)
    isl, osl = lengths(dep, name, isl, osl)
    _checks(name, n, osl, tput, req, lat_s)
    out.cases.append(_case(dep, name, isl, osl, tput))
    return out


_LINE = re.compile(r"^([A-Za-z][A-Za-z /()+.-]*?):\s+(\S.*?)\s*$")


def read_console(text: str, name: str, dep: Deployment) -> Read:
    """The console report: ``Key: value`` lines; the last report in the file is read."""
    start = [m.start() for m in re.finditer(r"^=\s*WORLD \+ RUNTIME INFORMATION", text, re.M)][-1]
    head = text[:start]
    block = text[max(head.rfind("= ENGINE DETAILS"), head.rfind("= PyTorch backend"),
                     head.rfind("= REQUEST DETAILS"), 0):]  # fmt: skip
    kv: dict[str, str] = {}
    for line in block.splitlines():
        m = _LINE.match(line.strip())
        if m and m.group(1) not in kv:
            kv[m.group(1)] = m.group(2)
    fmt = CONSOLE_1X if "Total Output Throughput (tokens/sec)" in kv else CONSOLE
    out = Read(layout=fmt)
    if "= PyTorch backend" in block:
        _check_backend(name, "'= PyTorch backend' section", "Pytorch", dep)
    elif "= ENGINE DETAILS" in block:
        _check_backend(name, "'= ENGINE DETAILS' section (a TensorRT engine)", "TRT", dep)
    note = check_model(name, "Model", kv.get("Model"), dep)
    if note:
        out.notes.append(note)
    check_int(name, "TP Size", kv.get("TP Size"), dep.tp, "--tp")
    check_int(name, "PP Size", kv.get("PP Size"), dep.pp, "--pp")
    tput_key = ("Total Output Throughput (tokens/sec)" if fmt == CONSOLE_1X
                else "Token Throughput (tokens/sec)")  # fmt: skip
    need(kv, ("Number of requests", tput_key, "Total Latency (ms)"), name, fmt)
    keys = ("Number of requests", tput_key, "Total Latency (ms)", "Request Throughput (req/sec)",
            "Average Input Length (tokens)", "Average Output Length (tokens)")  # fmt: skip
    return _report(kv, keys, name, dep, out)

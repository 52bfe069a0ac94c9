"""``trtllm-bench throughput --report_json FILE``: TensorRT-LLM offline throughput.

Layout (NVIDIA/TensorRT-LLM tensorrt_llm/bench/dataclasses/reporting.py,
``ReportUtility.get_statistics_dict``): ``engine`` (model, version, backend, dtype),
``world_info`` (``tp_size``, ``pp_size``, ``max_batch_size``, ...), ``request_info``
(``num_requests``, ``avg_input_length``, ``avg_output_length``), ``performance``
(``total_latency_ms``, ``system_output_throughput_tok_s``, ``request_throughput_req_s``, ...).
The file's TP/PP must match the stated deployment, and its ``engine.backend`` the stated engine
(``TRT``: trtllm-trt, the TensorRT-engine builds; ``Pytorch``: trtllm).
"""

from __future__ import annotations

from advisor.perf.importers.cases import lengths, make_case
from advisor.perf.importers.common import (
    MAX_DURATION_S,
    MAX_REQUESTS,
    MAX_TOKENS_PER_REQUEST,
    MAX_TOKENS_PER_S,
    BenchmarkFileError,
    Deployment,
    field,
)
from advisor.perf.measurements import Case

FORMAT = "trtllm-bench report"


def recognise(doc: object) -> bool:
    return (
        isinstance(doc, dict)
        and isinstance(doc.get("performance"), dict)
        and "system_output_throughput_tok_s" in doc["performance"]
    )


#: ``engine.backend`` as the report writes it -> engine profile (advisor/perf/profiles.py).
BACKENDS = {"TRT": "trtllm-trt", "Pytorch": "trtllm", "_autodeploy": "trtllm"}


def cases(doc: dict, name: str, dep: Deployment) -> list[Case]:
    backend = doc.get("engine", {}).get("backend") if isinstance(doc.get("engine"), dict) else None
    if backend is not None and BACKENDS.get(str(backend)) != dep.engine:
        want = BACKENDS.get(str(backend))
        raise BenchmarkFileError(
            f"{name}: field 'engine.backend' is {str(backend)[:20]!r}"
            + (f": state --engine {want}" if want else f"; expected one of {', '.join(BACKENDS)}")
            + f" (the stated engine is {dep.engine})"
        )
    for key, stated in (("world_info.tp_size", dep.tp), ("world_info.pp_size", dep.pp)):
        got = field(doc, key, name, 1, 1024, required=False)
        if got is not None and int(got) != stated:
            raise BenchmarkFileError(
                f"{name}: field {key!r} is {got:g} but the stated deployment has {stated}"
            )
    field(doc, "request_info.num_requests", name, 1, MAX_REQUESTS)
    field(doc, "performance.total_latency_ms", name, 1e-3, MAX_DURATION_S * 1e3)
    tput = field(doc, "performance.system_output_throughput_tok_s", name, 1e-6, MAX_TOKENS_PER_S)
    isl = field(
        doc, "request_info.avg_input_length", name, 1, MAX_TOKENS_PER_REQUEST, required=False
    )
    osl = field(
        doc, "request_info.avg_output_length", name, 1, MAX_TOKENS_PER_REQUEST, required=False
    )
    isl, osl = lengths(dep, name, isl, osl)
    return [
        make_case(dep, name, "output_tok_s", "offline", "offline throughput", isl=isl, osl=osl,
                  measured=tput, unit="output tok/s (all GPUs)")
    ]  # fmt: skip

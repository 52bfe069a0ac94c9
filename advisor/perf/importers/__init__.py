"""Importers for the benchmark files people already produce, each recognised by its content.

``load(path, deployment)`` reads one file and returns an :class:`Imported`: the format it was
recognised as, the serving measurements as calibration ``Case`` objects
(:mod:`advisor.perf.measurements`), the all-reduce rows for the collectives model, and the
file's SHA-256. One module per format:

- :mod:`.vllm_throughput`: ``vllm bench throughput --output-json``;
- :mod:`.serving`: ``vllm bench serve --save-result`` JSON and SGLang ``bench_serving`` JSONL;
- :mod:`.genai_perf`: NVIDIA GenAI-Perf and AIPerf profile exports;
- :mod:`.trtllm_bench`: ``trtllm-bench throughput --report_json``;
- :mod:`.nccl_tests`: nccl-tests ``all_reduce_perf`` standard output.

Anything missing, non-finite or implausible is refused with :class:`BenchmarkFileError` naming
the file and the field.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from advisor.perf.collective_fit import CollectiveRow
from advisor.perf.importers import genai_perf, nccl_tests, serving, trtllm_bench, vllm_throughput
from advisor.perf.importers.common import (
    BenchmarkFileError,
    Deployment,
    RawFile,
    from_bytes,
    parse_json,
    read_file,
)
from advisor.perf.measurements import Case

__all__ = ["BenchmarkFileError", "Deployment", "Imported", "load", "load_bytes", "parse"]

#: The most runs one JSON-lines file may hold (SGLang appends one line per run).
MAX_LINES = 1_000


@dataclass(frozen=True)
class Imported:
    name: str
    format: str
    sha256: str
    cases: list[Case] = field(default_factory=list)
    collectives: list[CollectiveRow] = field(default_factory=list)


def _json_lines(raw: RawFile) -> list[tuple[int, object]] | None:
    """Each non-empty line parsed, when the text is JSON lines (several documents)."""
    lines = [(i, s) for i, s in enumerate(raw.text.splitlines(), start=1) if s.strip()]
    first = lines[0][1].strip() if lines else ""
    if len(lines) < 2 or not (first.startswith("{") and first.endswith("}")):
        return None
    if len(lines) > MAX_LINES:
        raise BenchmarkFileError(f"{raw.name}: {len(lines):,} JSON lines; at most {MAX_LINES:,}")
    return [(i, parse_json(s, raw.name, f"line {i}")) for i, s in lines]


def parse(raw: RawFile, dep: Deployment) -> Imported:
    """Recognise the file's format by its content and import it."""
    digest = hashlib.sha256(raw.data).hexdigest()
    name = raw.name
    if not raw.text.strip():
        raise BenchmarkFileError(f"{name}: empty file")
    if nccl_tests.recognise(raw.text):
        rows = nccl_tests.rows(raw.text, name, dep)
        return Imported(name, nccl_tests.FORMAT, digest, collectives=rows)
    if not raw.text.lstrip().startswith(("{", "[")):
        raise BenchmarkFileError(f"{name}: not a recognised benchmark file ({_KNOWN})")
    lines = _json_lines(raw)
    if lines is not None:
        got: list[Case] = []
        fmt = None
        for i, doc in lines:
            fmt = serving.flavour(doc)
            if fmt is None:
                raise BenchmarkFileError(f"{name} line {i}: not a bench_serving result line")
            got += serving.cases(doc, name, dep, line=i)
        return Imported(name, str(fmt), digest, cases=got)
    doc = parse_json(raw.text, name)
    if vllm_throughput.recognise(doc):
        return Imported(name, vllm_throughput.FORMAT, digest, vllm_throughput.cases(doc, name, dep))
    if trtllm_bench.recognise(doc):
        return Imported(name, trtllm_bench.FORMAT, digest, trtllm_bench.cases(doc, name, dep))
    fmt = serving.flavour(doc)
    if fmt is not None:
        return Imported(name, fmt, digest, serving.cases(doc, name, dep))
    fmt = genai_perf.flavour(doc)
    if fmt is not None:
        return Imported(name, fmt, digest, genai_perf.cases(doc, name, dep))
    raise BenchmarkFileError(f"{name}: not a recognised benchmark file ({_KNOWN})")


_KNOWN = (
    "expected vllm bench throughput/serve JSON, SGLang bench_serving JSONL, GenAI-Perf/AIPerf "
    "profile export, trtllm-bench report JSON or nccl-tests all_reduce_perf output"
)


def load(path: str | Path, dep: Deployment, name: str | None = None) -> Imported:
    """Read and import one benchmark file from disk."""
    return parse(read_file(path, name), dep)


def load_bytes(data: bytes, name: str, dep: Deployment) -> Imported:
    """Import an uploaded file's bytes."""
    return parse(from_bytes(data, name), dep)

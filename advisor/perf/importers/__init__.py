"""Importers for the benchmark files people already produce, each recognised by its content.

``load(path, deployment)`` reads one file and returns an :class:`Imported`: the format it was
recognised as, the serving measurements as calibration ``Case`` objects
(:mod:`advisor.perf.validation.measurements`), the all-reduce rows for the collectives model, and the
file's SHA-256. One module per format:

- :mod:`.vllm_throughput`: ``vllm bench throughput --output-json``;
- :mod:`.serving`: ``vllm bench serve --save-result`` JSON and SGLang ``bench_serving`` JSONL;
- :mod:`.genai_perf`: NVIDIA GenAI-Perf and AIPerf profile exports;
- :mod:`.trtllm_bench`: ``trtllm-bench throughput`` JSON report and console report;
- :mod:`.nccl_tests`: nccl-tests ``all_reduce_perf`` standard output.

Anything missing, non-finite or implausible is refused with :class:`BenchmarkFileError` naming
the file and the field.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

from advisor.perf.importers import genai_perf, nccl_tests, serving, trtllm_bench, vllm_throughput
from advisor.perf.importers.common import (
    BenchmarkFileError,
    Deployment,
    RawFile,
    Read,
    from_bytes,
    parse_json,
    read_file,
)
from advisor.perf.validation.collectives import CollectiveRow
from advisor.perf.validation.measurements import Case

__all__ = ["BenchmarkFileError", "Deployment", "Imported", "load", "load_bytes", "parse"]

#: The most runs one JSON-lines file may hold (SGLang appends one line per run).
MAX_LINES = 1_000


@dataclass(frozen=True)
class Imported:
    name: str
    format: str  # the tool and layout the file was recognised as
    sha256: str
    cases: list[Case] = field(default_factory=list)
    collectives: list[CollectiveRow] = field(default_factory=list)
    #: (point id, why): runs the file holds that are not fitted (a burst, a median ITL, ...)
    left_out: list[tuple[str, str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _json_lines(raw: RawFile) -> list[tuple[int, object]] | None:
    """Each non-empty line parsed, when the text is JSON lines (several documents)."""
    lines = [(i, s) for i, s in enumerate(raw.text.splitlines(), start=1) if s.strip()]
    first = lines[0][1].strip() if lines else ""
    if len(lines) < 2 or not (first.startswith("{") and first.endswith("}")):
        return None
    if len(lines) > MAX_LINES:
        raise BenchmarkFileError(f"{raw.name}: {len(lines):,} JSON lines; at most {MAX_LINES:,}")
    return [(i, parse_json(s, raw.name, f"line {i}")) for i, s in lines]


def _imported(raw: RawFile, digest: str, got: Read) -> Imported:
    return Imported(raw.name, got.layout, digest, got.cases, got.collectives, got.left_out,
                    got.notes)  # fmt: skip


def parse(raw: RawFile, dep: Deployment) -> Imported:
    """Recognise the file's tool and layout by its own markers and import it."""
    digest = hashlib.sha256(raw.data).hexdigest()
    name = raw.name
    if not raw.text.strip():
        raise BenchmarkFileError(f"{name}: empty file")
    if nccl_tests.recognise(raw.text):
        return _imported(raw, digest, nccl_tests.read(raw.text, name, dep))
    if trtllm_bench.recognise_console(raw.text):
        return _imported(raw, digest, trtllm_bench.read_console(raw.text, name, dep))
    if not raw.text.lstrip().startswith(("{", "[")):
        raise BenchmarkFileError(f"{name}: not a recognised benchmark file ({_KNOWN})")
    lines = _json_lines(raw)
    if lines is not None:
        total = Read(layout="")
        for i, doc in lines:
            if serving.flavour(doc) is None:
                keys = ", ".join(sorted(doc)[:6]) if isinstance(doc, dict) else type(doc).__name__
                raise BenchmarkFileError(
                    f"{name} line {i}: not a bench_serving result line (keys: {keys[:120]}); "
                    f"expected {', '.join(repr(k) for k in serving._COMMON)}"
                )
            got = serving.read(doc, name, dep, line=i)
            if total.layout and got.layout != total.layout:
                raise BenchmarkFileError(
                    f"{name} line {i}: a {got.layout} line after {total.layout} lines"
                )
            total.layout = got.layout
            total.cases += got.cases
            total.left_out += got.left_out
            total.notes += [n for n in got.notes if n not in total.notes]
        return _imported(raw, digest, total)
    doc = parse_json(raw.text, name)
    if vllm_throughput.recognise(doc):
        return _imported(raw, digest, vllm_throughput.read(doc, name, dep))
    if trtllm_bench.recognise(doc):
        return _imported(raw, digest, trtllm_bench.read(doc, name, dep))
    if serving.flavour(doc) is not None:
        return _imported(raw, digest, serving.read(doc, name, dep))
    if genai_perf.flavour(doc) is not None:
        return _imported(raw, digest, genai_perf.read(doc, name, dep))
    raise BenchmarkFileError(f"{name}: not a recognised benchmark file ({_KNOWN})")


_KNOWN = (
    "expected vllm bench throughput/serve or benchmark_serving.py JSON, SGLang bench_serving "
    "JSONL, GenAI-Perf/AIPerf profile export, trtllm-bench report (JSON or console) or "
    "nccl-tests all_reduce_perf output"
)


def load(path: str | Path, dep: Deployment, name: str | None = None) -> Imported:
    """Read and import one benchmark file from disk."""
    return parse(read_file(path, name), dep)


def load_bytes(data: bytes, name: str, dep: Deployment) -> Imported:
    """Import an uploaded file's bytes."""
    return parse(from_bytes(data, name), dep)

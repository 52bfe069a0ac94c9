"""What every benchmark-file importer shares: the stated deployment, bounded reading, checked fields.

A benchmark file rarely says everything the model needs (which accelerator, which weights
precision); the user states the deployment, the file supplies the measurements. Every field read
from a file is checked (present, a finite number, within a plausible range) and a refusal names the
file and the field.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from dataclasses import field as dc_field
from pathlib import Path
from typing import Any

from advisor.catalog.files import (
    MAX_JSON_DEPTH,
    FileReadError,
    NumberTooLongError,
    loads_json,
    no_duplicate_keys,
    read_bounded,
    scan_json_depth,
)
from advisor.catalog.quoting import echo

#: Largest benchmark file read: a `vllm bench serve --save-result` file with per-request lists
#: (ttfts, itls, generated texts) for 10,000 prompts is a few MB; 32 MB leaves room.
MAX_FILE_BYTES = 32 * 2**20


class BenchmarkFileError(ValueError):
    """A benchmark file that cannot be used; the message names the file and the field."""


@dataclass(frozen=True)
class Deployment:
    """What the user states about the run the file came from (catalog ids, like the CLI flags)."""

    model: str
    gpu: str
    tp: int = 1
    pp: int = 1
    weights: str = "bf16"
    kv: str = "bf16"
    engine: str = "vllm"
    #: the MoE layout the runs used over the TP GPUs: whole experts per GPU (EP = TP), attention
    #: data parallel (each GPU the attention of its own sequences)
    ep: bool = False
    dp_attention: bool = False
    isl: float | None = None  # input tokens per request, when the file does not say
    osl: float | None = None  # output tokens per request, when the file does not say
    inter_link: str | None = None  # interconnect between hosts, for multi-host nccl-tests files


@dataclass
class Read:
    """What one importer made of a file: its layout (tool and version), the measurements, the
    points left out (id, why) and notes the user should see."""

    layout: str
    cases: list = dc_field(default_factory=list)
    collectives: list = dc_field(default_factory=list)
    left_out: list[tuple[str, str]] = dc_field(default_factory=list)
    notes: list[str] = dc_field(default_factory=list)


def need(doc: dict, keys: tuple[str, ...], where: str, layout: str) -> None:
    """Refuse a file of a recognised tool that lacks a key its layout needs, naming the key and
    the layout (tool and version) it looks like.

    >>> need({"a": 1}, ("a", "mean_tpot_ms"), "f.jsonl line 1", "SGLang bench_serving (2025)")
    Traceback (most recent call last):
    ...
    advisor.perf.importers.common.BenchmarkFileError: f.jsonl line 1: key 'mean_tpot_ms' is missing (the file looks like SGLang bench_serving (2025))
    """
    missing = [k for k in keys if k not in doc or doc[k] is None]
    if missing:
        more = f" (and {', '.join(repr(k) for k in missing[1:])})" if len(missing) > 1 else ""
        raise BenchmarkFileError(
            f"{where}: key {missing[0]!r} is missing{more} (the file looks like {layout})"
        )


@dataclass(frozen=True)
class RawFile:
    """A benchmark file's name (for messages), its bytes and its text."""

    name: str
    data: bytes
    text: str


def read_file(path: str | Path, name: str | None = None) -> RawFile:
    """A regular file of at most MAX_FILE_BYTES, decoded as UTF-8; refusals name the file."""
    shown = name or Path(path).name
    try:
        data = read_bounded(path, MAX_FILE_BYTES)
    except FileReadError as exc:
        raise BenchmarkFileError(f"{shown}: {exc}") from None
    return from_bytes(data, shown)


def from_bytes(data: bytes, name: str) -> RawFile:
    """An uploaded file's bytes (the app), checked like a file read from disk."""
    if len(data) > MAX_FILE_BYTES:
        raise BenchmarkFileError(f"{name}: larger than the {MAX_FILE_BYTES:,}-byte limit")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise BenchmarkFileError(f"{name}: not UTF-8 text (byte {exc.start})") from None
    if "\x00" in text:
        raise BenchmarkFileError(f"{name}: not a text file (NUL byte)")
    return RawFile(name=name, data=data, text=text)


def _constant(value: str) -> float:
    # json accepts NaN / Infinity by default; only Infinity is meaningful (a request rate of inf).
    if value == "NaN":
        return math.nan
    return math.inf if value == "Infinity" else -math.inf


def parse_json(text: str, name: str, where: str = "") -> Any:
    """One JSON document, nested at most MAX_JSON_DEPTH levels, no key given twice."""
    at = f" ({where})" if where else ""
    deep, _ = scan_json_depth(text)
    if deep is not None:
        raise BenchmarkFileError(f"{name}{at}: JSON nested deeper than {MAX_JSON_DEPTH} levels")

    def dup(key: str) -> Exception:
        return BenchmarkFileError(f"{name}{at}: key {echo(key)} given twice")

    try:
        return loads_json(
            text,
            object_pairs_hook=no_duplicate_keys(dup),
            parse_constant=_constant,
        )
    except json.JSONDecodeError as exc:
        raise BenchmarkFileError(
            f"{name}{at}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            "a truncated file?"
        ) from None
    except NumberTooLongError as exc:
        raise BenchmarkFileError(f"{name}{at}: {exc}") from None


def field(
    doc: Any,
    path: str,
    name: str,
    lo: float,
    hi: float,
    *,
    allow_inf: bool = False,
    required: bool = True,
) -> float | None:
    """The number at dotted ``path`` in ``doc``, checked finite and within [lo, hi].

    >>> field({"a": {"b": 2}}, "a.b", "f.json", 0, 10)
    2.0
    >>> field({"a": float("nan")}, "a", "f.json", 0, 10)
    Traceback (most recent call last):
    ...
    advisor.perf.importers.common.BenchmarkFileError: f.json: field 'a' is nan; expected a finite number in [0, 10]
    """
    node = doc
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node or node[part] is None:
            if not required:
                return None
            raise BenchmarkFileError(f"{name}: field {path!r} is missing")
        node = node[part]
    if isinstance(node, bool) or not isinstance(node, int | float | str):
        raise BenchmarkFileError(f"{name}: field {path!r} is {type(node).__name__}, not a number")
    try:
        value = float(node)
    except (ValueError, OverflowError):
        raise BenchmarkFileError(
            f"{name}: field {path!r} is {str(node)[:40]!r}, not a number"
        ) from None
    if allow_inf and value == math.inf:
        return value
    if not math.isfinite(value) or not lo <= value <= hi:
        raise BenchmarkFileError(
            f"{name}: field {path!r} is {value:g}; expected a finite number in [{lo:g}, {hi:g}]"
        )
    return value


#: Plausibility ranges shared by the importers (SI after the file's own unit is applied).
MAX_TOKENS_PER_REQUEST = 2_000_000
MAX_REQUESTS = 100_000_000
MAX_DURATION_S = 30 * 86_400
MAX_TOKENS_PER_S = 1e9
MAX_LATENCY_MS = 3.6e6


#: One client's mean TTFT this far above its median is carried by a few slow requests: with one
#: client nothing queues and no start-up wave forms, and prompt lengths drawn uniformly give a
#: mean near the median (a prefill grows with its prompt). Published one-client runs: sgl-cookbook
#: Qwen3-235B-A22B on 8 B200, 10 prompts, mean 96.3 ms / median 65.2 ms / P99 359.7 ms (one
#: ~380 ms request among nine at ~65 ms) and 91.0 / 65.0 ms; the same page's 8k-token run
#: 159.9 / 147.4 ms (1.08x, its P99 one request 0.19 s above the rest).
SLOW_REQUEST_MEAN_OVER_MEDIAN = 1.25


def slow_requests_note(
    where: str, mean_s: float, median_s: float | None, p99_s: float | None = None
) -> str | None:
    """The note of a one-client run whose mean TTFT its slow requests carry, or None: the
    importers then fit its median TTFT and leave out what carries them too
    (perf/validation/short_runs.py).

    >>> slow_requests_note("f.json", 0.09627, 0.06522, 0.35971)[:57]
    'f.json: one client, mean TTFT 96.3 ms is 1.48x its median'
    >>> slow_requests_note("f.json", 0.070, 0.06522) is None
    True
    """
    if median_s is None or mean_s <= SLOW_REQUEST_MEAN_OVER_MEDIAN * median_s:
        return None
    tail = f", P99 {p99_s * 1e3:,.1f} ms" if p99_s is not None else ""
    return (
        f"{where}: one client, mean TTFT {mean_s * 1e3:,.1f} ms is {mean_s / median_s:.2f}x its "
        f"median {median_s * 1e3:,.1f} ms{tail}: with one client nothing queues, so a few slow "
        "requests (a first one that compiles kernels, say) carry the mean; the fit takes the "
        "median TTFT and leaves out what carries them too (mean request latency, throughput)"
    )

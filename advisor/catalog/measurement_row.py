"""One row of data/measurements*.csv as a strict, frozen pydantic model (docs/data.md).

The 17 columns stay as published (the ``engine``, ``batch_or_concurrency``, ``unit`` and
``notes`` texts quote the source); what the model reads from them is typed here, from closed
sets derived from every row of the files, and checked at load (``loader.measurement_rows``):

- ``engine_name`` / ``engine_version``: the serving engine or collective library the row ran
  (``ENGINES``) and its stated release ("0.5.6.post1", "2.27.7"; None when not stated);
- ``load_kind`` / ``load_value``: how the load was applied (``LOAD_KINDS``): a static batch of N,
  a closed loop of N clients, Poisson arrivals at the REQUESTED rate (the achieved rate is an
  output of the run, ``achieved_rate_per_s``), all requests at once (offline), a burst at
  infinite rate, a collective's message size in bytes;
- ``metric`` (``METRICS``) read as ``quantity``, ``statistic`` and ``unit`` (``UNITS``, SI
  symbols), which must agree with the ``unit`` column; throughputs say whether they are the
  deployment's total or per GPU (``throughput_scope``) and whether the source stated the
  output-only convention (``tokens_counted``).

A row outside these sets is a catalog error naming the file, the row id, the field and the value:
a new kind of row extends a set here, on purpose, rather than being read by accident.
"""

from __future__ import annotations

import math
import re
from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

#: The CSV header, in order.
COLUMNS = ("id", "source", "engine", "model", "gpu", "num_gpus", "tp", "pp", "precision_weights",
           "precision_kv", "isl", "osl", "batch_or_concurrency", "metric", "value", "unit",
           "notes")  # fmt: skip

Engine = Literal["tensorrt-llm", "vllm", "sglang", "atom", "gpt-fast", "nccl", "rccl",
                 "torch.distributed", "nvbandwidth", "eagle", "medusa"]  # fmt: skip
ENGINES: tuple[str, ...] = get_args(Engine)
#: How an ``engine`` text starts -> the engine (case-insensitive; the first that matches).
_ENGINE_PREFIXES = (("tensorrt-llm", "tensorrt-llm"), ("vllm", "vllm"), ("sglang", "sglang"),
                    ("atom", "atom"), ("gpt-fast", "gpt-fast"), ("nccl", "nccl"),
                    ("rccl", "rccl"), ("torch.distributed", "torch.distributed"),
                    ("nvbandwidth", "nvbandwidth"), ("eagle", "eagle"), ("medusa", "medusa"))  # fmt: skip
_VERSION = re.compile(r"^\S+\s+v?(\d+(?:\.\d+){1,3}(?:\.post\d+|rc\d+)?)\b")

LoadKind = Literal["batch", "concurrency", "request_rate", "offline", "burst", "message_size",
                   "unstated"]  # fmt: skip
LOAD_KINDS: tuple[str, ...] = get_args(LoadKind)

Metric = Literal[
    "ttft_ms", "ttft_ms_mean", "ttft_ms_median", "ttft_ms_p99", "ttft_s_median",
    "tpot_ms", "tpot_ms_mean", "tpot_ms_median", "tpot_ms_p99",
    "tpot_ms_fit_intercept", "tpot_ms_fit_slope_per_ctx_token",
    "itl_ms", "itl_ms_mean", "itl_ms_median", "itl_ms_p95", "itl_ms_p99", "itl_s_median",
    "e2e_ms_mean", "e2e_ms_median", "e2e_ms_p99", "e2e_s_mean", "e2e_s_p99",
    "decode_tok_s_single_stream", "output_throughput_tok_s", "throughput_tok_s_total",
    "throughput_tok_s_per_gpu",
    "allreduce_latency_us", "allgather_latency_us", "reducescatter_latency_us",
    "allreduce_busbw_gbps", "p2p_bw_unidir_gbps", "p2p_bw_bidir_gbps",
    "spec_decode_speedup", "spec_decode_slowdown",
]  # fmt: skip
METRICS: tuple[str, ...] = get_args(Metric)

Quantity = Literal["ttft", "tpot", "itl", "e2e", "tpot_fit_intercept", "tpot_fit_slope",
                   "decode_throughput", "output_throughput", "throughput", "allreduce",
                   "allgather", "reducescatter", "allreduce_busbw", "p2p_bandwidth",
                   "speculative_speedup"]  # fmt: skip
COLLECTIVE_QUANTITIES = ("allreduce", "allgather", "reducescatter", "allreduce_busbw",
                         "p2p_bandwidth")  # fmt: skip
Statistic = Literal["mean", "median", "p95", "p99", "unstated"]
Unit = Literal["ms", "s", "us", "GB/s", "tok/s", "ms per context token", "x"]
UNITS: tuple[str, ...] = get_args(Unit)
#: Unit symbols of metric names -> the unit.
_NAME_UNITS = {"ms": "ms", "s": "s", "us": "us", "gbps": "GB/s", "tok_s": "tok/s"}
_LATENCY = re.compile(r"^(ttft|tpot|itl|e2e)_(ms|s)(?:_(mean|median|p95|p99))?$")
_OTHER_METRICS: dict[str, tuple[str, str, str]] = {
    "tpot_ms_fit_intercept": ("tpot_fit_intercept", "ms", "mean"),
    "tpot_ms_fit_slope_per_ctx_token": ("tpot_fit_slope", "ms per context token", "mean"),
    "decode_tok_s_single_stream": ("decode_throughput", "tok/s", "mean"),
    "output_throughput_tok_s": ("output_throughput", "tok/s", "mean"),
    "throughput_tok_s_total": ("throughput", "tok/s", "mean"),
    "throughput_tok_s_per_gpu": ("throughput", "tok/s", "mean"),
    "allreduce_latency_us": ("allreduce", "us", "unstated"),
    "allgather_latency_us": ("allgather", "us", "unstated"),
    "reducescatter_latency_us": ("reducescatter", "us", "unstated"),
    "allreduce_busbw_gbps": ("allreduce_busbw", "GB/s", "unstated"),
    "p2p_bw_unidir_gbps": ("p2p_bandwidth", "GB/s", "unstated"),
    "p2p_bw_bidir_gbps": ("p2p_bandwidth", "GB/s", "unstated"),
    "spec_decode_speedup": ("speculative_speedup", "x", "unstated"),
    "spec_decode_slowdown": ("speculative_speedup", "x", "unstated"),
}

_SIZE_UNITS = {"": 1, "b": 1, "kib": 2**10, "mib": 2**20, "gib": 2**30, "kb": 1e3, "mb": 1e6,
               "gb": 1e9}  # fmt: skip
_SIZE = r"(\d+(?:\.\d+)?)\s*(KiB|MiB|GiB|KB|MB|GB|B)?\b"


def message_bytes(text: str) -> float | None:
    """Message size of a collective row: 'message 65536 B', 'message 128KiB', '1-8 GiB',
    'data size 512'; None when the text states none.

    A range gives its upper end (busbw rows quote the saturated value of a sweep). 'data size N'
    (SGLang/vLLM custom all-reduce benchmark) is N bf16 elements = 2N bytes.

    >>> message_bytes("message 128KiB"), message_bytes("1-8 GiB"), message_bytes("data size 512")
    (131072, 8589934592, 1024)
    """
    t = text.strip()
    m = re.match(r"data size (\d+)$", t)
    if m:
        return int(m.group(1)) * 2
    m = re.search(r"(\d+(?:\.\d+)?)\s*(KiB|MiB|GiB)?\s*-\s*" + _SIZE, t)
    if m:
        num, unit = m.group(3), m.group(4) or m.group(2) or ""
    else:
        m = re.search(r"message\s+" + _SIZE, t)
        if not m:
            return None
        num, unit = m.group(1), m.group(2) or ""
    value = float(num) * _SIZE_UNITS[unit.lower()]
    return int(value) if value == int(value) else value


def read_load(text: str) -> tuple[str, float | None]:
    """(load kind, value) of a ``batch_or_concurrency`` text.

    >>> read_load("max concurrency 100"), read_load("request rate QPS=10 (vllm bench default)")
    (('concurrency', 100.0), ('request_rate', 10.0))
    >>> read_load("request rate QPS=32 (measured 16 req/s)"), read_load("batch 1")
    (('request_rate', 32.0), ('batch', 1.0))
    >>> read_load("max (offline; infinite rate)"), read_load("request rate QPS=INF (measured 16 req/s)")
    (('offline', None), ('burst', None))
    >>> read_load("message 128KiB"), read_load("high QPS")
    (('message_size', 131072.0), ('unstated', None))
    """
    t = text.strip().lower()
    if t.startswith("max (") or t == "max":
        return "offline", None
    m = re.search(r"(?:max[- ]?)?concurrency\s*=?\s*(\d+)", t)
    if m:
        return "concurrency", float(m.group(1))
    m = re.search(r"(?:qps|request rate)\s*=?\s*(inf|[0-9.]+)", t)
    if m:
        return ("burst", None) if m.group(1) == "inf" else ("request_rate", float(m.group(1)))
    m = re.match(r"(?:static )?batch (\d+)", t)
    if m:
        return "batch", float(m.group(1))
    size = message_bytes(text)
    if size is not None:
        return "message_size", float(size)
    return "unstated", None


def achieved_rate_per_s(text: str) -> float | None:
    """The request rate a run achieved, where its load text states it (an output of the run,
    never an input: a load row is predicted at the requested rate).

    >>> achieved_rate_per_s("request rate QPS=32 (measured 16 req/s)")
    16.0
    """
    m = re.search(r"\(measured ([0-9.]+) req/s\)", text)
    return float(m.group(1)) if m else None


def read_metric(metric: str) -> tuple[str, str, str]:
    """(quantity, unit, statistic) of a metric name (one of ``METRICS``).

    >>> read_metric("ttft_ms_median"), read_metric("e2e_s_mean"), read_metric("itl_ms")
    (('ttft', 'ms', 'median'), ('e2e', 's', 'mean'), ('itl', 'ms', 'mean'))
    """
    m = _LATENCY.match(metric)
    if m:
        return m.group(1), _NAME_UNITS[m.group(2)], m.group(3) or "mean"
    return _OTHER_METRICS[metric]


def read_engine(text: str) -> tuple[str | None, str | None]:
    """(engine, stated version) of an ``engine`` text; (None, None) when no engine is known.

    >>> read_engine("SGLang 0.5.6.post1"), read_engine("vLLM v0.12.0 (vllm/vllm-openai image)")
    (('sglang', '0.5.6.post1'), ('vllm', '0.12.0'))
    >>> read_engine("TensorRT-LLM (version not stated; trtllm-bench)"), read_engine("NCCL 2.27.7 x")
    (('tensorrt-llm', None), ('nccl', '2.27.7'))
    """
    t = text.strip().lower()
    name = next((e for prefix, e in _ENGINE_PREFIXES if t.startswith(prefix)), None)
    m = _VERSION.match(text.strip())
    return name, (m.group(1) if m and name else None)


def _number(text: str, field: str) -> int | None:
    t = text.strip()
    if not t:
        return None
    if not t.isdigit():
        raise ValueError(f"{field} {text!r} is not a whole number")
    return int(t)


class MeasurementRow(BaseModel):
    """One published figure with its conditions; the typed readings of its free-text columns."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    id: str = Field(pattern=r"^[A-Z]\d{4}$")
    source: str = Field(min_length=3)
    engine: str = Field(min_length=2)
    model: str  # empty for a collective (no model runs)
    gpu: str = Field(min_length=1)
    num_gpus: int | None = Field(default=None, ge=1, le=1024)
    tp: int | None = Field(default=None, ge=1, le=64)
    pp: int | None = Field(default=None, ge=1, le=64)
    precision_weights: str
    precision_kv: str
    isl: str
    osl: str
    batch_or_concurrency: str
    metric: Metric
    value: float = Field(gt=0)
    #: The upper end where the source gives a range (``value`` is then the lower end).
    value_high: float | None = Field(default=None, gt=0)
    unit: str = Field(min_length=1)
    notes: str

    engine_name: Engine
    engine_version: str | None
    load_kind: LoadKind
    load_value: float | None = Field(default=None, gt=0)
    #: Requests the run sent (the load text's "N requests" / "N prompts"; None: not stated there).
    requests: int | None = Field(default=None, ge=1)
    #: The rate the run achieved, where the load text states it ("(measured 16 req/s)").
    achieved_rate_per_s: float | None = Field(default=None, gt=0)
    #: Draft tokens per step of speculative decoding in the load text ("speculate_k=4").
    speculative_tokens: int | None = Field(default=None, ge=1)
    quantity: Quantity
    statistic: Statistic
    unit_symbol: Unit
    throughput_scope: Literal["deployment", "per_gpu"] | None = None
    #: Output tokens only, or not stated (input + output possible): throughputs only.
    tokens_counted: Literal["output", "not stated"] | None = None

    @model_validator(mode="after")
    def _consistent(self) -> MeasurementRow:
        if not math.isfinite(self.value) or not math.isfinite(self.value_high or 0.0):
            raise ValueError(f"value {self.value!r} is not a finite number")
        if not self.model and self.quantity not in COLLECTIVE_QUANTITIES:
            raise ValueError(f"model: empty for a {self.metric} row (only collectives have none)")
        if self.value_high is not None and self.value_high < self.value:
            raise ValueError(f"value range {self.value!r}-{self.value_high!r} is reversed")
        if not self.unit.startswith(self.unit_symbol) and not (
            self.unit_symbol == "tok/s" and self.unit.startswith("output tok/s")
        ):
            raise ValueError(f"unit {self.unit!r} disagrees with metric {self.metric!r} "
                             f"(in {self.unit_symbol})")  # fmt: skip
        if (self.load_kind in ("batch", "concurrency", "request_rate", "message_size")
                and self.load_value is None):  # fmt: skip
            raise ValueError(f"batch_or_concurrency {self.batch_or_concurrency!r}: "
                             f"{self.load_kind} without its value")  # fmt: skip
        return self

    @classmethod
    def from_csv(cls, row: dict[str, str]) -> MeasurementRow:
        """Validate one ``csv.DictReader`` row; ValueError (a pydantic ValidationError) names the
        field and the value."""
        missing = [c for c in COLUMNS if c not in row]
        extra = [c for c in row if c not in COLUMNS]
        if missing or extra:
            raise ValueError(f"columns: missing {missing}, unexpected {extra} "
                             f"(the header is {','.join(COLUMNS)})")  # fmt: skip
        name, version = read_engine(row["engine"])
        kind, load = read_load(row["batch_or_concurrency"])
        bc = row["batch_or_concurrency"]
        requests = re.search(r"--num-prompts?\s+(\d+)|(\d+) (?:requests|prompts)\b", bc)
        spec = re.search(r"speculate_k=(\d+)", bc)
        metric = row["metric"]
        quantity, symbol, statistic = (read_metric(metric) if metric in METRICS
                                       else ("ttft", "ms", "mean"))  # fmt: skip
        unit = row["unit"]
        throughput = symbol == "tok/s" and quantity != "decode_throughput"
        span = re.fullmatch(r"\s*([0-9.]+)\s*-\s*([0-9.]+)\s*", row["value"])  # "3.05-4.26"
        try:
            value, value_high = ((float(span.group(1)), float(span.group(2))) if span
                                 else (float(row["value"]), None))  # fmt: skip
        except ValueError:
            raise ValueError(f"value {row['value']!r} is not a number or a range a-b") from None
        return cls(
            **{c: row[c] for c in COLUMNS if c not in ("num_gpus", "tp", "pp", "value")},
            num_gpus=_number(row["num_gpus"], "num_gpus"), tp=_number(row["tp"], "tp"),
            pp=_number(row["pp"], "pp"), value=value, value_high=value_high,
            engine_name=name or row["engine"], engine_version=version,
            load_kind=kind, load_value=load,
            requests=int(next(g for g in requests.groups() if g)) if requests else None,
            achieved_rate_per_s=achieved_rate_per_s(bc),
            speculative_tokens=int(spec.group(1)) if spec else None,
            quantity=quantity, statistic=statistic, unit_symbol=symbol,
            throughput_scope=("per_gpu" if "per GPU" in unit else "deployment") if throughput
            else None,
            tokens_counted=("not stated" if "not stated" in unit else "output") if throughput
            else None,
        )  # fmt: skip


def validation_message(exc: ValidationError | ValueError) -> str:
    """A pydantic error as "field 'value': why" (first problem), for the loader's messages."""
    if not isinstance(exc, ValidationError):
        return str(exc)
    err = exc.errors()[0]
    where = ".".join(str(p) for p in err["loc"]) or "row"
    value = err.get("input")
    shown = "" if isinstance(value, dict) else f" {value!r}"
    return f"{where}{shown}: {err['msg']}"

"""What the report prints about a deployment (:class:`Deployment`), read from the search's
``Deployment`` or its JSON dict, and the readers every section uses (``pick``, ``num``,
``fmt``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from advisor.catalog import accelerators
from advisor.search.deployment_spec import layout_text


def pick(obj: Any, *names: str, default: Any = None) -> Any:
    """The first attribute or key of ``obj`` among ``names`` that is not None."""
    for name in names:
        value = obj.get(name) if isinstance(obj, dict) else getattr(obj, name, None)
        if value is not None:
            return value
    return default


def num(x: Any) -> float | None:
    try:
        v = float(x)
    except (TypeError, ValueError):
        return None
    return v if v == v and abs(v) != float("inf") else None


def fmt(x: Any, spec: str = ".1f", unit: str = "") -> str:
    v = num(x)
    if v is None:
        return "n/a"
    return f"{v:{spec}}{(' ' + unit) if unit else ''}"


@dataclass
class Deployment:
    """The facts the report prints about one deployment (from ``search.recommend.Deployment``)."""

    description: str
    gpu: str = "?"
    gpu_name: str = "?"
    gpus: int | None = None
    tp: int = 1
    pp: int = 1
    dp: int = 1
    #: expert-parallel and attention-data-parallel degrees over the TP GPUs (1: not used)
    ep: int = 1
    attention_dp: int = 1
    weights: str = "?"
    kv: str = "?"
    speculative: bool = False
    disaggregated: bool = False
    prefill_pool: dict | None = None
    decode_pool: dict | None = None
    ttft_ms: float | None = None
    tpot_ms: float | None = None
    e2e_ms: float | None = None
    throughput_tok_s: float | None = None
    usd_per_mtok: float | None = None
    usd_per_hour: float | None = None
    running: float | None = None
    headroom: float | None = None
    meets_sla: bool | None = None
    #: False when the offered load makes its queue grow without bound (no percentiles exist).
    stable: bool = True
    unstable_reason: str | None = None
    #: The search's intervals of the SLA percentiles (search/sla.percentile_intervals), or None.
    intervals: dict | None = None
    spare_gpus: int = 0  # of the N+1 spare replica(s), included in gpus
    #: Why it is "at risk" (search/sla.risk_lines; the last line: the measurement), else [].
    at_risk: tuple[str, ...] = ()

    def range_ms(self, label: str, benchmark: bool = False) -> tuple[float, float] | None:
        """[low, high] of the predicted percentile of "TTFT", "TPOT" or "E2E", if known: its
        steady-service range (the verdict's), or with ``benchmark`` its benchmark-run range."""
        iv = self.intervals or {}
        got = ((iv.get("benchmark") or {}) if benchmark else iv).get(f"{label.lower()}_ms")
        if not isinstance(got, list | tuple) or len(got) != 2:
            return None
        lo, hi = num(got[0]), num(got[1])
        return None if lo is None or hi is None else (lo, hi)

    def range_text(self, label: str, point_ms: float | None = None) -> str:
        """ " (80% range 12.1-15.3 ms)" or ""; with the estimate, a range that excludes it says
        which way the model errs there (" (80% range 27.7-33.8 ms; the model runs high here)")."""
        from advisor.perf.model.intervals import range_note

        r = self.range_ms(label)
        conf = num((self.intervals or {}).get("confidence"))
        if r is None or conf is None:
            return ""
        note = range_note(point_ms, r[0], r[1]) if point_ms is not None else ""
        # the benchmark-run range of the same percentile (``estimate`` prints it), named apart
        b = self.range_ms(label, benchmark=True)
        bench = ""
        if b is not None:
            pct = (self.intervals or {}).get("percentile")
            bench = f"; a benchmark run's published P{pct}: {b[0]:,.1f}-{b[1]:,.1f} ms"
        return f" ({conf:.0%} steady range {r[0]:,.1f}-{r[1]:,.1f} ms{note}{bench})"

    def verdict(self, label: str, got: float, target: float) -> str:
        """ "met" / "AT RISK" / "MISSED": by the upper end of the range when there is one, and
        "AT RISK" when the prediction is within the target and the range's upper end is not
        (search/sla.py)."""
        r = self.range_ms(label)
        if (r[1] if r else got) <= target:
            return "met"
        return "AT RISK" if got <= target else "MISSED"

    def sentence(self) -> str:
        spec = "with speculative decoding" if self.speculative else "no speculative decoding"
        n = self.gpus if self.gpus is not None else self.tp * self.pp * self.dp
        if self.disaggregated:
            pre, dec = self.prefill_pool or {}, self.decode_pool or {}
            shape = (
                f"disaggregated: prefill pool {pre.get('dp', '?')} × TP={pre.get('tp', '?')} + "
                f"decode pool {dec.get('dp', '?')} × TP={dec.get('tp', '?')}, PP=1"
            )
            batching = "continuous batching in the decode pool, prompts in the prefill pool"
        else:
            layout = layout_text(self.tp, self.ep > 1, self.attention_dp > 1)
            layout = f"({layout})" if "," in layout else layout
            shape = f"{self.dp} replica{'s' if self.dp != 1 else ''} (DP={self.dp}) of {layout} × PP={self.pp}"
            batching = "continuous batching"
        if self.spare_gpus:
            shape += f" + an N+1 spare replica ({self.spare_gpus} GPU{'s' if self.spare_gpus != 1 else ''})"
        return (
            f"{n} × {self.gpu_name}, {shape}, weights {self.weights}, KV cache {self.kv}, "
            f"{spec}, {batching}"
        )

    def short(self) -> str:
        return self.description

    def key(self) -> tuple:
        return (self.description,)


def deployment(obj: Any, percentile: int = 99) -> Deployment:
    """Read a ``search.recommend.Deployment`` (or a dict with its fields)."""
    gpu = str(pick(obj, "gpu", default="?"))
    gpus = accelerators()
    kind = str(pick(obj, "kind", default="aggregated"))

    def pct(name: str) -> float | None:
        p = pick(obj, name)
        if isinstance(p, dict):
            return num(p.get(f"p{percentile}"))
        return num(getattr(p, f"p{percentile}", p))

    meets = pick(obj, "meets_sla")
    return Deployment(
        description=str(pick(obj, "description", default=gpu)),
        gpu=gpu,
        gpu_name=gpus[gpu].name if gpu in gpus else gpu,
        gpus=pick(obj, "gpus"),
        tp=int(pick(obj, "tp", default=1)),
        pp=int(pick(obj, "pp", default=1)),
        dp=int(pick(obj, "dp", default=1)),
        ep=int(pick(obj, "ep", default=1) or 1),
        attention_dp=int(pick(obj, "attention_dp", default=1) or 1),
        weights=str(pick(obj, "weights", default="?")),
        kv=str(pick(obj, "kv", default="?")),
        speculative=bool(pick(obj, "speculative", default=False)),
        disaggregated=kind == "disaggregated",
        prefill_pool=pick(obj, "prefill_pool"),
        decode_pool=pick(obj, "decode_pool"),
        ttft_ms=pct("ttft_ms"),
        tpot_ms=pct("tpot_ms"),
        e2e_ms=pct("e2e_ms"),
        throughput_tok_s=num(pick(obj, "throughput_tok_s")),
        usd_per_mtok=num(pick(obj, "usd_per_million_tokens")),
        usd_per_hour=num(pick(obj, "usd_per_hour")),
        running=num(pick(obj, "running_batch")),
        headroom=num(pick(obj, "headroom")),
        meets_sla=None if meets is None else bool(meets),
        stable=bool(pick(obj, "stable", default=True)),
        unstable_reason=pick(obj, "unstable_reason"),
        intervals=iv if isinstance(iv := pick(obj, "intervals"), dict) else None,
        spare_gpus=int(pick(obj, "spare_gpus", default=0) or 0),
        at_risk=tuple(str(x) for x in (pick(obj, "at_risk", default=()) or ())),
    )

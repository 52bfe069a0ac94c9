"""The tail of a short benchmark run: which requests its P99 reads, and how far the published
short runs' slowest request stood above their median.

The benchmark clients (``vllm bench serve``, ``sglang.bench_serving``) compute a percentile
with ``numpy.percentile``'s default linear interpolation over the run's requests. A "P99 TTFT"
of a run of 10 prompts is then 0.09 x its 9th-slowest + 0.91 x its slowest request: one slow
request sets it, whatever the distribution. The published runs show such a request: the
sgl-cookbook Qwen3-235B-A22B run on 8 B200 (10 prompts, one client) reports median 65.2 ms,
mean 96.3 ms and P99 359.7 ms, which one request of ~380 ms among nine of ~65 ms reproduces
(mean (9 x 65 + 380) / 10 = 96.5 ms, P99 0.91 x 380 + 0.09 x 65 = 352 ms). The excess varies
from a millisecond to 48 s between runs of one engine and accelerator (sgl-cookbook MI300X
runs of one client: 38-48 s on three of them, a few ms on others), so no service time predicts
it; the forecast of such a run says so and shows the published excesses instead.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from advisor.perf.validation.run_length import (
    is_short_run,
    slowest_requests_read,
)


@dataclass(frozen=True)
class ShortRunTail:
    """One published one-client run whose P99 TTFT reads its two slowest requests."""

    source: str
    engine: str
    accelerator_family: str
    model: str
    requests: int
    median_ttft_s: float
    p99_ttft_s: float

    @property
    def excess_s(self) -> float:
        """P99 - median TTFT: what the run's slowest request added above a typical one."""
        return self.p99_ttft_s - self.median_ttft_s


@lru_cache(maxsize=1)
def published_short_runs() -> tuple[ShortRunTail, ...]:
    """Every shipped one-client run with a median and a P99 TTFT whose P99 reads at most
    ``SHORT_RUN_REQUESTS_READ`` requests, from the measurement files (rows of one run: same
    source, deployment, lengths and prompts). One client: nothing queues and no start-up wave
    forms (the replay has both), so P99 - median is the slowest request's own extra, beside
    the prompt-length spread (a prefill of L against one of L / 2: tens of ms)."""
    from advisor.perf.validation.measurements import source_key
    from advisor.perf.validation.percentiles import _deployment, percentile_cases

    runs: dict[tuple, dict[float, object]] = {}
    for pc in percentile_cases()[0]:
        c = pc.case
        if pc.metric != "ttft" or not pc.closed_loop or pc.quantile not in (0.5, 0.99):
            continue
        if c.batch != 1:
            continue
        if not (c.requests and math.isfinite(c.requests)):
            continue
        key = (source_key(pc.source), _deployment(c), c.isl, c.osl, c.batch, c.requests)
        runs.setdefault(key, {})[pc.quantile] = pc
    out = []
    for qs in runs.values():
        if 0.5 not in qs or 0.99 not in qs:
            continue
        lo, hi = qs[0.5], qs[0.99]
        n = int(hi.case.requests)
        if not is_short_run(n):
            continue
        g = hi.case.config
        out.append(
            ShortRunTail(
                source=source_key(hi.source), engine=g.engine, accelerator_family=g.gpu.family,
                model=g.model.id, requests=n,
                median_ttft_s=lo.measured_s, p99_ttft_s=hi.measured_s,
            )
        )  # fmt: skip
    return tuple(sorted(out, key=lambda t: (t.engine, t.accelerator_family, -t.excess_s)))


def excess_summary(engine: str | None = None, family: str | None = None) -> dict | None:
    """The published short runs' P99 - median TTFT (s) of an engine and accelerator family
    (either None: any): runs, median and largest excess, and the run with the largest; None
    when no such run is shipped."""
    sel = [
        t for t in published_short_runs()
        if (engine is None or t.engine == engine)
        and (family is None or t.accelerator_family == family)
    ]  # fmt: skip
    if not sel:
        return None
    ex = np.array([t.excess_s for t in sel])
    top = sel[int(np.argmax(ex))]
    return {
        "runs": len(sel), "median_excess_s": float(np.median(ex)),
        "max_excess_s": float(ex.max()), "max_run": top,
    }  # fmt: skip


def short_run_note(prompts: int, engine: str, family: str) -> str | None:
    """The forecast's note for a run whose P99 reads at most two requests, with the published
    excesses of the same engine and accelerator family (else of the engine, else of all
    runs); None for a longer run."""
    if not is_short_run(prompts):
        return None
    k = slowest_requests_read(prompts, 0.99)
    scope, s = f"{engine} on {family.upper()}", excess_summary(engine, family)
    if s is None:
        scope, s = (
            f"none of {engine} on {family.upper()}; {engine} elsewhere",
            excess_summary(engine),
        )
    if s is None:
        scope, s = f"none of {engine}; other engines", excess_summary()
    text = (
        f"the P99 of {prompts:,} prompts reads its {k} slowest requests: one slow request "
        "(one that compiles kernels, say) sets it, and the replay has no such request"
    )
    if s is None:
        return text
    return (
        f"{text}; published one-client runs this short ({scope}, {s['runs']}) had P99 TTFT "
        f"above their "
        f"median by {s['median_excess_s']:.2f} s (median), up to {s['max_excess_s']:.1f} s "
        f"({s['max_run'].model}, {s['max_run'].requests} prompts); warm the server up before "
        "the timed run"
    )

"""The per-request lists of a detailed serving result: each request's lengths (and send time).

``vllm bench serve --save-detailed`` (and ``benchmark_serving.py --save-detailed``) keeps
``input_lens``, ``output_lens`` (and from 2025 ``start_times``) in its result JSON, one entry per
request in the order they were sent (the client gathers its request tasks in creation order); SGLang
``bench_serving --output-details`` keeps ``input_lens`` and ``output_lens`` likewise. A failed
request has output length 0, and the totals count only the successful ones. Source:
vllm-project/vllm vllm/benchmarks/serve.py (``calculate_metrics``: ``actual_output_lens`` 0 for a
failed request; ``result_json.pop`` of these fields without ``--save-detailed``);
sgl-project/sglang python/sglang/bench_serving.py (``--output-details``).

With them a closed-loop run is replayed on the client's very lengths (``bench_run.replayable``),
so its mean TTFT carries the run's own start-up wave; with send times, a request-rate run too.
Checked against the file's own totals before use: a list that does not add up to them is refused,
naming the field.
"""

from __future__ import annotations

import math

from advisor.perf.importers.common import MAX_REQUESTS, MAX_TOKENS_PER_REQUEST, BenchmarkFileError


def _lengths(doc: dict, key: str, where: str) -> list[int]:
    v = doc[key]
    if not isinstance(v, list) or not v or len(v) > MAX_REQUESTS:
        raise BenchmarkFileError(
            f"{where}: {key!r} must be a list of 1..{MAX_REQUESTS:,} token counts (one per request)"
        )
    out = []
    for i, x in enumerate(v):
        ok = isinstance(x, int | float) and not isinstance(x, bool) and math.isfinite(x)
        if not ok or x != int(x) or not 0 <= x <= MAX_TOKENS_PER_REQUEST:
            raise BenchmarkFileError(
                f"{where}: {key}[{i}] = {str(x)[:40]!r}: need a whole number of tokens in "
                f"0..{MAX_TOKENS_PER_REQUEST:,}"
            )
        out.append(int(x))
    return out


def per_request(
    doc: dict, where: str, completed: float, total_in: float, total_out: float, duration_s: float
) -> tuple[dict | None, str | None]:
    """({"input_lens", "output_lens"[, "start_s"]} in send order, None) from a detailed result,
    or (None, why they are not used) when the file has none or a request failed; a list that
    contradicts the file's totals is a BenchmarkFileError naming it.

    >>> doc = {"input_lens": [100, 120], "output_lens": [10, 30]}
    >>> per_request(doc, "f.json", 2, 220, 40, 5.0)
    ({'input_lens': (100, 120), 'output_lens': (10, 30)}, None)
    >>> per_request({**doc, "output_lens": [10, 31]}, "f.json", 2, 220, 40, 5.0)[0]
    Traceback (most recent call last):
    ...
    advisor.perf.importers.common.BenchmarkFileError: f.json: 'output_lens' add up to 41 tokens, 'total_output_tokens' says 40: the lists are not this run's
    """
    has_in, has_out = doc.get("input_lens") is not None, doc.get("output_lens") is not None
    if not (has_in or has_out):
        return None, None
    if has_in != has_out:
        given, missing = ("input_lens", "output_lens") if has_in else ("output_lens", "input_lens")
        raise BenchmarkFileError(
            f"{where}: {given!r} without {missing!r}: a detailed result has both"
        )
    lens_in, lens_out = _lengths(doc, "input_lens", where), _lengths(doc, "output_lens", where)
    if len(lens_in) != len(lens_out):
        raise BenchmarkFileError(f"{where}: 'input_lens' has {len(lens_in)} entries, 'output_lens' "
                                 f"{len(lens_out)}: one per request in each")  # fmt: skip
    ok = [o > 0 for o in lens_out]
    for key, got, want in (("output_lens", sum(lens_out), total_out),
                           ("input_lens", sum(i for i, k in zip(lens_in, ok, strict=True) if k), total_in)):  # fmt: skip
        if got != round(want):
            raise BenchmarkFileError(
                f"{where}: {key!r} add up to {got:,} tokens, "
                f"'total_{key.removesuffix('_lens')}_tokens' says "
                f"{round(want):,}: the lists are not this run's"
            )
    if sum(ok) != round(completed):
        raise BenchmarkFileError(f"{where}: {sum(ok)} requests in 'output_lens' have tokens, "
                                 f"'completed' says {round(completed)}")  # fmt: skip
    if not all(ok):
        return None, (f"{len(ok) - sum(ok)} of {len(ok)} requests failed (output length 0): "
                      "the run is not replayed on its lengths")  # fmt: skip
    out = {"input_lens": tuple(lens_in), "output_lens": tuple(lens_out)}
    starts = doc.get("start_times")
    if starts is not None:
        out["start_s"] = _send_offsets(starts, len(lens_in), where, duration_s)
    return out, None


def _send_offsets(starts: object, n: int, where: str, duration_s: float) -> tuple[float, ...]:
    """Each request's send time after the first's (s), checked: one per request, finite, within
    the run."""
    if not isinstance(starts, list) or len(starts) != n:
        raise BenchmarkFileError(f"{where}: 'start_times' must list one time per request ({n})")
    if not all(isinstance(t, int | float) and not isinstance(t, bool) and math.isfinite(t)
               for t in starts):  # fmt: skip
        raise BenchmarkFileError(f"{where}: 'start_times' must be finite numbers (seconds)")
    t0 = min(starts)
    off = tuple(float(t) - t0 for t in starts)
    if max(off) > duration_s * 1.01 + 1.0:
        raise BenchmarkFileError(f"{where}: 'start_times' span {max(off):.4g} s, longer than the "
                                 f"run's 'duration' {duration_s:.4g} s: not this run's times")  # fmt: skip
    return off

"""The replayed closed-loop benchmark runs against what the runs printed.

For every row the validation replays (advisor/perf/validation/bench_run.py: closed-loop TTFT
rows of a stated request count and random dataset; TTFT, TPOT and E2E rows of SGLang runs whose
sent lengths its seed reproduces; request-rate rows of SGLang runs whose send times it
reproduces too), prints the row's measured statistic, the replay's and the
steady state's, and, where the row's notes quote the run's "Benchmark duration (s)", the
replay's duration against it: the duration is an output of the run that the model never fitted,
so it tells whether the replay's rounds take as long as the run's did.

    .venv/bin/python bench/replay.py
"""

from __future__ import annotations

import re
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.perf.validation.bench_run import (  # noqa: E402
    REPLAYED_METRIC,
    replay_runs,
    replayable,
    run_value,
)
from advisor.perf.validation.measurements import cases  # noqa: E402
from advisor.perf.validation.validate import predict_cases  # noqa: E402

_DURATION = re.compile(
    r"(?:[Bb]enchmark duration(?: \(s\))?'?:?\s*'?|\"duration\": )([0-9]+(?:\.[0-9]+)?)"
)


def main() -> None:
    items = [c for c in cases()[0] if replayable(c)]
    t0 = time.perf_counter()
    runs = replay_runs(items)
    elapsed = time.perf_counter() - t0
    steady = predict_cases(items, replay=False)
    print(f"{len(items)} replayed rows ({elapsed:.2f} s to replay them)")
    print(f"{'row':6} {'metric':6} {'stat':6} {'clients':>7} {'requests':>8} {'measured s':>10} "
          f"{'replay x':>8} {'steady x':>8} {'duration x':>10}")  # fmt: skip
    ratios, dur_ratios = [], []
    for c, run, st in zip(items, runs, steady, strict=True):
        metric = REPLAYED_METRIC[c.kind]
        rep = run_value(c, run)
        m = _DURATION.search(c.row.get("notes", "") or "")
        dur = f"{run.duration_s / float(m.group(1)):10.2f}" if m else f"{'-':>10}"
        if m:
            dur_ratios.append(run.duration_s / float(m.group(1)))
        ratios.append(rep / c.measured)
        print(f"{c.id:6} {metric:6} {c.statistic:6} {int(c.batch):7d} {c.requests:8d} {c.measured:10.3f} "
              f"{rep / c.measured:8.2f} {st / c.measured:8.2f} {dur}")  # fmt: skip
    print(
        f"median replay / measured {statistics.median(ratios):.2f}; "
        f"median |error| {statistics.median(abs(r - 1) for r in ratios) * 100:.1f}%"
    )
    if dur_ratios:
        print(
            f"duration, replay / printed: median {statistics.median(dur_ratios):.2f} over "
            f"{len(dur_ratios)} rows ({min(dur_ratios):.2f}-{max(dur_ratios):.2f})"
        )


if __name__ == "__main__":
    main()

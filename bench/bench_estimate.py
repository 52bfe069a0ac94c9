"""Time the performance model over every measurement row; prints evaluations per second."""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.perf.validation.measurements import cases  # noqa: E402
from advisor.perf.validation.validate import predict_cases  # noqa: E402


def main() -> None:
    items, _ = cases()
    predict_cases(items)  # warm caches
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        predict_cases(items)
        best = min(best, time.perf_counter() - t0)
    print(f"estimate over {len(items)} measurement rows: best {best * 1e3:.1f} ms "
          f"= {len(items) / best:,.0f} evaluations/s (one core, best of 5)")  # fmt: skip


if __name__ == "__main__":
    main()

"""The percentile model against published median / P90 / P99 serving rows.

Prints, for every representable percentile row of data/measurements*.csv, the measured and
predicted value at the row's load (max concurrency N: closed loop of N clients; request rate R:
Poisson at the requested R), then the error per percentile and load level, per metric, and the
tail shape P99 / P50 predicted against measured. Rows predicted unstable count with an infinite
error. See advisor/perf/validation/percentiles.py for the conventions.

    .venv/bin/python bench/percentiles.py [--rows] [--steady]

``--steady``: every row from the queueing model (what ``estimate`` prints for a steady service),
none from the replay of its benchmark run: the ITL tail is then the Poisson mixture of prefill
stalls, not the replayed run's gaps.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.perf.validation.percentiles import percentile_report, render_percentiles  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", action="store_true", help="print every predicted row")
    ap.add_argument("--steady", action="store_true",
                    help="the queueing model's percentiles only, no replayed run")  # fmt: skip
    args = ap.parse_args()
    t0 = time.perf_counter()
    rep = percentile_report(steady=args.steady)
    elapsed = time.perf_counter() - t0
    if args.rows:
        print(f"{'id':<7} {'metric':<5} {'pct':<4} {'gpu':<9} {'load':<15} {'isl':>6} {'osl':>6} "
              f"{'level':<7} {'rho':>5} {'measured ms':>12} {'predicted ms':>13} {'error':>8}")  # fmt: skip
        for r in rep["rows"]:
            print(
                f"{r['id']:<7} {r['metric']:<5} {r['percentile']:<4} {r['gpu']:<9} "
                f"{r['load']:<15} {r['isl']:>6.0f} {r['osl']:>6.0f} {r['level']:<7} "
                f"{r['utilisation']:>5.2f} {r['measured_ms']:>12.1f} {r['predicted_ms']:>13.1f} "
                f"{r['error_pct']:>+7.0f}%"
            )
        print("tail shape (P99 / P50):")
        for t in rep["tail_ratio_rows"]:
            print(
                f"  {t['ids']:<12} {t['metric']:<5} {t['gpu']:<9} {t['load']:<7} {t['level']:<7} "
                f"measured {t['measured_ratio']:6.2f}  predicted {t['predicted_ratio']:6.2f}  "
                f"{t['error'] * 100:+6.0f}%"
            )
    print("\n".join(render_percentiles(rep)))
    print(f"time: {elapsed:.1f} s")


if __name__ == "__main__":
    main()

"""Do the ranges of ``advisor collective`` hold? Coverage of the published all-reduce rows.

Each held-out all-reduce row of data/crossval.yaml (measured / predicted time, the prediction
from a collectives fit without its source) is scored against the range
``perf.validation.collective_ranges.collective_range`` builds for it from the *other* sources'
rows only (as for a measurement nobody here has seen): inside or not, at each confidence. Prints
the coverage overall, per link kind and per size band, and the median range width.

    .venv/bin/python bench/collective_ranges.py [--confidence 0.8 0.5 0.9]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.catalog import get_interconnect  # noqa: E402
from advisor.perf.validation.collective_ranges import collective_range, held_out_rows  # noqa: E402

#: A link of each kind the rows hold (collective_range reads only its kind).
LINK_OF_KIND = {"nvlink": "nvlink4", "xgmi": "xgmi", "pcie": "pcie5"}
BANDS = ((0, 2**16, "< 64 KiB"), (2**16, 2**23, "64 KiB - 8 MiB"), (2**23, 2**30, "8 MiB - 1 GiB"),
         (2**30, float("inf"), ">= 1 GiB"))  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--confidence", type=float, nargs="+", default=[0.8, 0.5, 0.9])
    args = ap.parse_args()
    rows = held_out_rows()
    print(f"{len(rows)} held-out all-reduce rows; each scored by a range from other sources' rows")
    for c in args.confidence:
        hits: dict[str, list[bool]] = {}
        widths = []
        for r in rows:
            others = tuple(o for o in rows if o.source != r.source)
            span = collective_range(get_interconnect(LINK_OF_KIND[r.link_kind]), r.message_bytes,
                                    1.0, c, others, custom=r.custom)  # fmt: skip
            inside = span is not None and span.low_ratio <= r.time_ratio <= span.high_ratio
            band = next(name for lo, hi, name in BANDS if lo <= r.message_bytes < hi)
            for key in ("all", f"link {r.link_kind}", f"size {band}"):
                hits.setdefault(key, []).append(inside)
            if span is not None:
                widths.append(span.high_ratio / span.low_ratio)
        print(f"\n{c:.0%} ranges: median width (high / low) {statistics.median(widths):.2f}")
        for key, v in hits.items():
            print(f"  {key:<24} {len(v):>4} rows  inside {sum(v) / len(v):6.1%}")


if __name__ == "__main__":
    main()

"""Benchmark: the full recommendation search for 8 nodes x 8 GPUs with all options.

Prints candidates evaluated, elapsed ms (measured inside recommend) and candidates/s.
Never asserts on speed.
"""

from __future__ import annotations

import time

from advisor.scenario import Hardware, Options, Scenario
from advisor.search.recommend import recommend


def main() -> None:
    sc = Scenario(
        model="llama-3.1-70b",
        hardware=Hardware(gpus=["h100-sxm", "a100-sxm-80gb", "mi300x"], gpus_per_node=8, nodes=8),
        options=Options(speculative=True, disaggregated=True),
    )
    recommend(sc)  # warm caches (catalog loading, imports)
    for _ in range(3):
        t0 = time.perf_counter()
        r = recommend(sc)
        wall = (time.perf_counter() - t0) * 1e3
        rej = sum(r.rejected.values())
        print(
            f"8x8 GPUs, 3 accelerators, 4 weight x 2 KV dtypes, speculative, disaggregated: "
            f"{r.candidates_evaluated:,} candidates evaluated (+{rej:,} rejected for memory) in "
            f"{r.elapsed_ms:.0f} ms (wall {wall:.0f} ms) = "
            f"{r.candidates_evaluated / (r.elapsed_ms / 1e3):,.0f} candidates/s"
        )


if __name__ == "__main__":
    main()

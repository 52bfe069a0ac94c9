"""Benchmark: the full recommendation search for 8 nodes x 8 GPUs with all options.

Prints, per run, candidates evaluated, elapsed ms (measured inside recommend) and candidates/s;
then the best and the median of the runs and the median exclusive time per search phase
(advisor/search/timing.py), and the process CPU time (less sensitive to other load than wall
time). The machine may be shared: compare best and median, not one run.
Never asserts on speed.

    python bench/bench_search.py [RUNS] [MODEL]

MODEL defaults to llama-3.1-70b (dense); an MoE model (qwen3-235b-a22b, deepseek-r1) also
searches expert parallelism and attention data parallelism (issue 33), a larger space per GPU
count: compare its candidates/s with the dense model's.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.scenario import Hardware, Options, Scenario  # noqa: E402
from advisor.search.recommend import recommend  # noqa: E402
from advisor.search.timing import PHASES  # noqa: E402


def main(runs: int = 5, model: str = "llama-3.1-70b") -> None:
    sc = Scenario(
        model=model,
        hardware=Hardware(gpus=["h100-sxm", "a100-sxm-80gb", "mi300x"], gpus_per_node=8, nodes=8),
        options=Options(speculative=True, disaggregated=True),
    )
    recommend(sc)  # warm caches (catalog loading, imports)
    elapsed, cpu, phases = [], [], []
    for _ in range(runs):
        t0, c0 = time.perf_counter(), time.process_time()
        r = recommend(sc)
        wall = (time.perf_counter() - t0) * 1e3
        cpu.append((time.process_time() - c0) * 1e3)
        elapsed.append(r.elapsed_ms)
        phases.append(r.phase_ms)
        rej = sum(r.rejected.values())
        print(
            f"{model}, 8x8 GPUs, 3 accelerators, 4 weight x 2 KV dtypes, speculative, disaggregated: "
            f"{r.candidates_evaluated:,} candidates evaluated (+{rej:,} rejected for memory) in "
            f"{r.elapsed_ms:.0f} ms (wall {wall:.0f} ms, CPU {cpu[-1]:.0f} ms) = "
            f"{r.candidates_evaluated / (r.elapsed_ms / 1e3):,.0f} candidates/s"
        )
    best, med = min(elapsed), statistics.median(elapsed)
    n = r.candidates_evaluated
    print(
        f"best of {runs}: {best:.0f} ms ({n / best * 1e3:,.0f} candidates/s); "
        f"median {med:.0f} ms ({n / med * 1e3:,.0f} candidates/s); "
        f"CPU time best {min(cpu):.0f} ms, median {statistics.median(cpu):.0f} ms"
    )
    names = [*PHASES, "other"]
    split = ", ".join(f"{k} {statistics.median(p.get(k, 0.0) for p in phases):.1f}" for k in names)
    print(f"median per phase (ms, exclusive): {split}")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 5, *sys.argv[2:3])

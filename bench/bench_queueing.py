"""Time the vectorised queueing approximation (advisor.physics.queueing.model.latency_under_load).

Prints candidates per second for 10k, 50k and 100k random candidates per policy (best of 5
runs, one core). Never asserts on speed. Run: .venv/bin/python bench/bench_queueing.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

# run as a script from anywhere (`make bench`): the project root, not bench/, holds advisor
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.physics.queueing.model import latency_under_load  # noqa: E402
from advisor.physics.queueing.service import ServiceModel  # noqa: E402


def _candidates(n: int, seed: int = 0) -> tuple[ServiceModel, np.ndarray]:
    rng = np.random.default_rng(seed)
    sm = ServiceModel(
        decode_step_base_s=rng.uniform(0.003, 0.03, n),
        decode_step_per_seq_s=rng.uniform(0.0, 0.001, n),
        prefill_s=rng.uniform(0.005, 0.3, n),
        max_running=rng.integers(1, 512, n).astype(float),
        compute_per_seq_s=rng.uniform(0.0, 0.0005, n),
    )
    return sm, rng.uniform(0.1, 30.0, n)


def main() -> None:
    print(f"{'policy':<11} {'candidates':>10} {'best ms':>9} {'candidates/s':>14}")
    for policy in ("continuous", "chunked", "static"):
        for n in (10_000, 50_000, 100_000):
            sm, lam = _candidates(n)
            best = float("inf")
            for _ in range(5):
                t0 = time.perf_counter()
                latency_under_load(sm, lam, 256, isl_tokens=1024, policy=policy)
                best = min(best, time.perf_counter() - t0)
            print(f"{policy:<11} {n:>10,} {best * 1e3:>9.1f} {n / best:>14,.0f}")


if __name__ == "__main__":
    main()

"""The Pareto frontier against its definition (a point is kept when no other point is at least as
good on both axes and better on one; of identical points, the first), on grids with many ties,
as the search's price per token and throughput per GPU have (a few dozen values over tens of
thousands of candidates)."""

from __future__ import annotations

import numpy as np

from advisor.search.pareto import pareto_min_min


def _by_definition(x: np.ndarray, y: np.ndarray) -> list[int]:
    ok = [i for i in range(x.size) if np.isfinite(x[i]) and np.isfinite(y[i])]
    kept = []
    for i in ok:
        dominated = any(x[j] <= x[i] and y[j] <= y[i] and (x[j] < x[i] or y[j] < y[i]) for j in ok)
        earlier_twin = any(j < i and x[j] == x[i] and y[j] == y[i] for j in ok)
        if not dominated and not earlier_twin:
            kept.append(i)
    return sorted(kept, key=lambda i: (x[i], i))


def test_frontier_is_the_non_dominated_points_sorted_by_x():
    rng = np.random.default_rng(7)
    for trial in range(400):
        n = int(rng.integers(0, 40))
        x = rng.integers(0, 5, n).astype(float)
        y = rng.integers(0, 5, n).astype(float)
        if trial % 3 == 0:
            x[rng.random(n) < 0.15] = np.inf
            y[rng.random(n) < 0.15] = np.nan
        got = pareto_min_min(x, y).tolist()
        assert got == _by_definition(x, y), (x.tolist(), y.tolist(), got)


def test_no_finite_point_no_frontier():
    assert pareto_min_min(np.array([np.inf, 1.0]), np.array([1.0, np.nan])).tolist() == []

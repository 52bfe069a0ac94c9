"""The search's shortcuts (issue 38's speed work) against the plain computations they replace.

Each shortcut must give the same rows and the same floats as what it replaced, bit for bit:
the reference here is the straightforward computation (a full sort, an O(n^2) dominance
check, a meshgrid, a binary search), run on random inputs with ties, inf and NaN.
"""

from __future__ import annotations

import numpy as np

from advisor.physics.queueing.distributions import gamma_quantile
from advisor.physics.queueing.service import PiecewiseLinearStep
from advisor.physics.queueing.tails import _zero_inflated_quantiles
from advisor.search.disaggregated import _pairs_within_groups
from advisor.search.pareto import pareto_min_min
from advisor.search.ranking import lexsort_first

RNG = np.random.default_rng(38)


def _keys(n: int) -> tuple[np.ndarray, ...]:
    """Lexsort keys with many ties (few distinct values), some NaN, an integer key."""
    a = RNG.integers(0, 4, n).astype(float)
    b = RNG.integers(0, 3, n).astype(float)
    b[RNG.random(n) < 0.1] = np.nan
    return a, b, RNG.integers(0, 3, n)


def test_lexsort_first_is_the_first_row_of_the_full_sort():
    for _ in range(2000):
        keys = _keys(int(RNG.integers(1, 30)))
        assert lexsort_first(keys) == int(np.lexsort(keys)[0])


def _frontier_by_definition(x: np.ndarray, y: np.ndarray) -> list[int]:
    """Points no other point dominates (<= both, < one), the first of identical ones, by x."""
    keep = []
    for i in range(x.size):
        if not (np.isfinite(x[i]) and np.isfinite(y[i])):
            continue
        dominated = any(
            np.isfinite(x[j]) and np.isfinite(y[j]) and x[j] <= x[i] and y[j] <= y[i]
            and (x[j] < x[i] or y[j] < y[i] or j < i)
            for j in range(x.size) if j != i
        )  # fmt: skip
        if not dominated:
            keep.append(i)
    return sorted(keep, key=lambda i: (x[i], i))


def test_pareto_frontier_matches_the_dominance_definition():
    for _ in range(1500):
        n = int(RNG.integers(0, 25))
        x = RNG.integers(0, 6, n).astype(float)
        y = RNG.integers(0, 6, n).astype(float)
        x[RNG.random(n) < 0.1] = np.inf
        y[RNG.random(n) < 0.05] = np.nan
        assert pareto_min_min(x, y).tolist() == _frontier_by_definition(x, y)


def test_disaggregated_pairs_in_the_order_of_a_full_meshgrid():
    for _ in range(500):
        gid = RNG.integers(0, int(RNG.integers(1, 6)), int(RNG.integers(1, 40)))
        a, b = _pairs_within_groups(gid)
        x, y = np.meshgrid(np.arange(gid.size), np.arange(gid.size), indexing="ij")
        x, y = x.ravel(), y.ravel()
        same = gid[x] == gid[y]  # every pair of one group, prefill pool major
        assert a.tolist() == x[same].tolist() and b.tolist() == y[same].tolist()


def test_step_segment_on_the_power_of_two_grid_is_the_binary_search():
    grid = 2.0 ** np.arange(13)
    f = PiecewiseLinearStep(grid, np.cumsum(RNG.random((5, 13)), axis=1))
    b = np.concatenate([RNG.random(400) * 10_000 + 1.0, grid, grid * (1 + 1e-16), [1e12, np.inf,
                        np.nan]])  # fmt: skip
    want = np.clip(np.searchsorted(grid, b, side="right") - 1, 0, grid.size - 2)
    assert f.segment(b).tolist() == want.tolist()


def test_zero_inflated_quantiles_equal_the_gamma_over_every_row():
    for _ in range(200):
        n = 50
        mean, var = RNG.random(n) * 0.1, RNG.random(n) * 1e-3
        p_zero = RNG.random(n)
        p_zero[:5] = 1.0
        qs = (0.5, 0.9, 0.99)
        for q, got in zip(qs, _zero_inflated_quantiles(mean, var, p_zero, qs), strict=True):
            # the removed one-quantile form: the gamma evaluated on every row, 0 at the atom
            p_pos = np.clip(1.0 - p_zero, 1e-12, 1.0)
            m_pos = mean / p_pos
            v_pos = np.maximum((var + mean**2) / p_pos - m_pos**2, 0.0)
            q_pos = np.clip((q - (1.0 - p_pos)) / p_pos, 1e-12, 1.0 - 1e-12)
            want = np.where(q <= 1.0 - p_pos, 0.0, gamma_quantile(m_pos, v_pos, q_pos))
            assert np.array_equal(got, want)

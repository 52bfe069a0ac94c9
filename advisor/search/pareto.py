"""Pareto frontiers over evaluated candidates."""

from __future__ import annotations

import numpy as np


def pareto_min_min(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Indices of the points not dominated when minimising both x and y, sorted by x.

    A point is kept when no other point has x <= and y <= with one strictly smaller.

    >>> pareto_min_min(np.array([1.0, 2.0, 3.0, 2.0]), np.array([5.0, 3.0, 4.0, 6.0])).tolist()
    [0, 1]
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    finite = np.nonzero(np.isfinite(x) & np.isfinite(y))[0]
    if finite.size == 0:
        return finite
    order = finite[np.lexsort((y[finite], x[finite]))]
    ys = y[order]
    best_before = np.minimum.accumulate(np.concatenate(([np.inf], ys[:-1])))
    return order[ys < best_before]

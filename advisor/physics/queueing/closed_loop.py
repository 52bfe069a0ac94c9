"""Closed-loop load: N users, each thinking Z seconds between an answer and the next request.

The interactive response-time law (Denning & Buzen 1978; Lazowska, Zahorjan, Graham & Sevcik,
"Quantitative System Performance", 1984, ch. 3, section 3.3) links the throughput X, the number
of users N, the think time Z and the mean response time R of the system::

    X = N / (Z + R)

R itself grows with X (queueing), so the load a deployment sees is the fixed point of
X = N / (Z + R(X)), solved per candidate by ``advisor.perf.model.closed_loop.closed_loop_rate``. Z = 0 is the back-to-back
load of a benchmark client (Little's law on the requests in flight).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike


def interactive_throughput_per_s(
    users: ArrayLike, think_time_s: ArrayLike, response_time_s: ArrayLike
) -> np.ndarray:
    """Throughput of N users with think time Z and mean response time R: X = N / (Z + R).

    Source: interactive response-time law (Lazowska et al. 1984, ch. 3, R = N / X - Z).

    >>> float(interactive_throughput_per_s(200, 15.0, 5.0))  # 200 / 20 s (hand)
    10.0
    """
    return np.asarray(users, float) / (
        np.asarray(think_time_s, float) + np.asarray(response_time_s, float)
    )

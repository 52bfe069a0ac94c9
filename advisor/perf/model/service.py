"""The queueing model's view of replicas: the decode step against the running batch, the prefill,
the KV cap.

``estimate`` (under a request rate or a closed loop), the sweeps, the percentile check, the
validation and the recommendation's spot checks all hand :func:`service_for` to
:func:`advisor.physics.queueing.latency_under_load`, so they queue the same server.
"""

from __future__ import annotations

import numpy as np

from advisor.perf.model.replica import ReplicaArrays, max_running
from advisor.perf.model.step import (
    decode_step,
    prefill,
    prefill_busy_and_delay_s,
    prefill_length_elasticity,
)

#: Decode batches at which the queueing model's step time is tabulated (power-of-2 grid, as the
#: recommendation search's: advisor/search/evaluate.GRID); linear in between.
STEP_GRID = 2.0 ** np.arange(0, 13)


def service_for(r: ReplicaArrays, isl: np.ndarray, osl: np.ndarray):
    """The queueing model's view of replicas: step(b) at the mean context, prefill, KV cap.

    step(b) is tabulated on STEP_GRID and interpolated linearly (PiecewiseLinearStep), so the
    running-batch fixed point is solved exactly per segment instead of by bisection.
    """
    from advisor.physics.queueing import PiecewiseLinearStep, ServiceModel

    isl = np.asarray(isl, dtype=float)
    osl = np.asarray(osl, dtype=float)
    ctx = isl + osl / 2.0
    cap = np.maximum(np.minimum(max_running(r, isl + osl), r.max_num_seqs), 1.0)
    busy, delay = prefill_busy_and_delay_s(prefill(r, isl).total, r.request_overhead_s)
    g = STEP_GRID.size
    tiled = r.take(np.repeat(np.arange(r.n), g))
    tab = decode_step(tiled, np.tile(STEP_GRID, r.n), np.repeat(ctx, g)).total.reshape(r.n, g)
    return ServiceModel(
        decode_step_base_s=0.0,
        decode_step_per_seq_s=0.0,
        prefill_s=busy,
        max_running=cap,
        decode_step_fn=PiecewiseLinearStep(STEP_GRID, tab),
        request_delay_s=delay,
        prefill_elasticity=prefill_length_elasticity(r, isl),
    )

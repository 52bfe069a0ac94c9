"""The queueing model's view of replicas: the decode step against the running batch, the prefill,
the KV cap.

``estimate`` (under a request rate or a closed loop), the sweeps, the percentile check, the
validation and the recommendation's spot checks all hand :func:`service_for` to
:func:`advisor.physics.queueing.model.latency_under_load`, and the recommendation search builds its
candidates' with :func:`tabulated_service` too, so they queue the same server.
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
    isl = np.asarray(isl, dtype=float)
    osl = np.asarray(osl, dtype=float)
    ctx = isl + osl / 2.0
    cap = np.maximum(np.minimum(max_running(r, isl + osl), r.max_num_seqs), 1.0)
    g = STEP_GRID.size
    tiled = r.take(np.repeat(np.arange(r.n), g))
    tab = decode_step(tiled, np.tile(STEP_GRID, r.n), np.repeat(ctx, g)).total.reshape(r.n, g)
    return tabulated_service(tab, prefill(r, isl).total, r.request_overhead_s, cap,
                             prefill_length_elasticity(r, isl))  # fmt: skip


def tabulated_service(
    step_tab_s: np.ndarray,
    prefill_s: np.ndarray,
    request_overhead_s: np.ndarray | float,
    max_running: np.ndarray,
    elasticity: np.ndarray | float = 1.0,
):
    """The queueing ServiceModel of rows whose decode step is tabulated on STEP_GRID
    (``step_tab_s`` [n, G], linear in between): the one constructor of ``service_for`` and the
    recommendation search (search/evaluate.service), so both queue the same server.

    ``prefill_s`` is a prompt's prefill alone, the engine's per-request overhead included; that
    overhead (tokenisation, HTTP, admission) delays the first token but runs beside the GPU, so
    the server is busy for ``prefill_s - request_overhead_s`` only
    (``step.prefill_busy_and_delay_s``). ``elasticity``: how the prefill scales with the
    prompt's length (``step.prefill_length_elasticity``).
    """
    busy, delay = prefill_busy_and_delay_s(prefill_s, request_overhead_s)
    return split_service(step_tab_s, busy, delay, max_running, elasticity)


def split_service(step_tab_s, busy_s, delay_s, max_running, elasticity):
    """``tabulated_service`` with the prefill already split into the server's busy time and the
    request's delay beside it (a subset of another such ServiceModel's rows)."""
    from advisor.physics.queueing.service import PiecewiseLinearStep, ServiceModel

    return ServiceModel(
        decode_step_base_s=0.0,
        decode_step_per_seq_s=0.0,
        prefill_s=busy_s,
        max_running=max_running,
        decode_step_fn=PiecewiseLinearStep(STEP_GRID, step_tab_s),
        request_delay_s=delay_s,
        prefill_elasticity=elasticity,
    )

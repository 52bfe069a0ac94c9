"""Closed loop (advisor/perf/model/closed_loop.py): N clients with no think time.

Expected values come from Little's law (throughput x mean E2E = clients), not from the solver.
"""

from __future__ import annotations

import numpy as np
import pytest

from advisor.perf.model.closed_loop import closed_loop_load
from advisor.physics.queueing.service import ServiceModel


def test_closed_loop_throughput_obeys_littles_law_per_candidate():
    # Two candidates with their own clients (4 and 32) and lengths: the throughput X makes
    # X x mean E2E = clients, to the solver's 1e-4 tolerance in log X.
    sm = ServiceModel(np.array([0.01, 0.02]), np.array([1e-4, 2e-4]), np.array([0.05, 0.1]), 256)

    def subset(_sm, rows):
        return ServiceModel(
            sm.decode_step_base_s[rows], sm.decode_step_per_seq_s[rows], sm.prefill_s[rows],
            sm.max_running[rows],
        )  # fmt: skip

    users = np.array([4.0, 32.0])
    kw = {"isl_tokens": np.array([512.0, 2048.0]), "isl_cv": 0.5}
    res, x = closed_loop_load(sm, users, np.array([128.0, 64.0]), kw, subset=subset)
    assert x * res.e2e.mean_s == pytest.approx(users, rel=2e-3)


def test_many_candidates_need_a_subset():
    sm = ServiceModel(np.array([0.01, 0.02]), 1e-4, 0.05, 256)
    with pytest.raises(ValueError, match="subset"):
        closed_loop_load(sm, 4.0, 128.0, {"isl_tokens": 512.0})

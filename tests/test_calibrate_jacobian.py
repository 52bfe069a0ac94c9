"""The fit's grouped Jacobian against the dense one it replaces.

``calibrate.fit`` differences together the constants no row shares (``dependence``,
``column_groups``). If ``dependence`` ever missed a constant a row reads, the grouped Jacobian
would silently mix two columns; the dense forward-difference Jacobian of scipy
(``approx_derivative``, one evaluation per constant) is the reference it must equal.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.optimize._numdiff import approx_derivative

from advisor.perf.calibration import calibrate
from advisor.perf.validation.measurements import cases


@pytest.fixture(scope="module")
def problem():
    items, _ = cases()
    # Every 7th row: every engine and family with rows, plus families and engines with too few
    # rows for constants of their own (they borrow: the cross-dependencies under test).
    prob = calibrate.problem(items[::7])
    return prob.items, prob.params, prob.residuals, prob.bounds, prob


def _points(prob):
    rng = np.random.default_rng(12)
    lo, hi = prob.bounds
    return [prob.start(), lo + (hi - lo) * rng.uniform(0.1, 0.9, size=len(lo))]


def test_the_grouped_jacobian_equals_the_dense_one_at_the_start_and_elsewhere(problem):
    sample, params, fun, bounds, prob = problem
    structure = prob.dependence()
    for x in _points(prob):
        f0 = fun(x)
        dense = approx_derivative(
            fun, x, method="2-point", rel_step=calibrate.DIFF_STEP, f0=f0, bounds=bounds
        )
        missed = np.argwhere((dense != 0) & ~structure)
        assert not missed.size, [(sample[i].id, params[j]) for i, j in missed[:5]]
        grouped = calibrate.grouped_jacobian(fun, x, f0, structure, bounds, calibrate.DIFF_STEP)
        np.testing.assert_allclose(grouped, dense, rtol=1e-9, atol=1e-12)


def test_the_grouping_saves_most_evaluations_and_each_row_reads_its_own_constants(problem):
    sample, params, _, _, prob = problem
    structure = prob.dependence()
    groups = calibrate.column_groups(structure)
    # a row reads 3 global + up to 3 family + up to 7 engine constants: 13 groups at least
    assert len(groups) <= len(params) / 2, (len(groups), len(params))
    assert sorted(j for g in groups for j in g) == list(range(len(params)))
    for g in groups:  # no two columns of a group share a row
        assert structure[:, g].sum(axis=1).max() <= 1
    hopper_vllm = next(
        i for i, c in enumerate(sample)
        if c.config.gpu.family == "hopper" and c.config.engine == "vllm"
    )  # fmt: skip
    read = {params[j] for j in np.flatnonzero(structure[hopper_vllm])}
    assert ("families", "hopper", "eta_mem") in read and ("engines", "vllm", "efficiency") in read
    assert not any(k == "cdna3" or k == "sglang" for _, k, _ in read)

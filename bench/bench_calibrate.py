"""How much the grouped Jacobian saves the calibration fit (and the cross-validation's folds).

Times one finite-difference Jacobian of the fit's residuals over every representable row, at the
constants' initial values, two ways: scipy's dense differencing (one evaluation per constant)
and ``calibrate.grouped_jacobian`` (one per group of constants no row shares). Prints the
constants, the groups, the seconds of each and their ratio, and the largest difference between
the two Jacobians (0: the grouping only skips evaluations, it changes no derivative). Compare
the ratio across machines, not the seconds.

    .venv/bin/python bench/bench_calibrate.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.perf.calibration import calibrate  # noqa: E402
from advisor.perf.validation.measurements import cases  # noqa: E402


def main() -> None:
    from scipy.optimize._numdiff import approx_derivative

    items, _ = cases()
    prob = calibrate.problem(items)
    fun, bounds, x0 = prob.residuals, prob.bounds, prob.start()
    structure = prob.dependence()
    groups = calibrate.column_groups(structure)
    params = prob.params
    f0 = fun(x0)
    t0 = time.perf_counter()
    dense = approx_derivative(
        fun, x0, method="2-point", rel_step=calibrate.DIFF_STEP, f0=f0, bounds=bounds
    )
    t_dense = time.perf_counter() - t0
    t0 = time.perf_counter()
    grouped = calibrate.grouped_jacobian(fun, x0, f0, structure, bounds, calibrate.DIFF_STEP)
    t_grouped = time.perf_counter() - t0
    print(f"{len(items)} rows, {len(params)} constants, {len(groups)} groups")
    print(f"dense Jacobian:   {len(params):3d} evaluations, {t_dense:6.1f} s")
    print(f"grouped Jacobian: {len(groups):3d} evaluations, {t_grouped:6.1f} s")
    print(f"ratio dense / grouped: {t_dense / t_grouped:.1f}x")
    print(f"largest |dense - grouped|: {float(np.abs(dense - grouped).max()):.3g}")


if __name__ == "__main__":
    main()

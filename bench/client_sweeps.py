"""Client calibration on three points of a published sweep: does it predict the rest better?

For every sweep in data/measurements.csv (same source, accelerator, engine, model, TP/PP, dtypes
and case kind; at least 5 rows), a client profile (advisor/perf/calibration/client_profile.py) is fitted on
the sweep's first, middle and last rows (sorted by batch, request rate, input and output length;
three runs, the fewest the held-out acceptance judges) and the other rows are predicted with and
without it, as a user of the profile sees them: with it inside its range, the shipped
calibration outside (``predict_within``). A refused profile is counted. Prints each sweep's median absolute error before
(shipped calibration) and after, and the count of sweeps that improve.

Caveat: the shipped calibration was itself fitted on these rows (it is in sample here), so this
is a hard test for the two-point profile. Run: ``.venv/bin/python bench/client_sweeps.py``.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

# run as a script from anywhere (`make bench`): the project root, not bench/, holds advisor
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.perf.calibration.client_profile import (  # noqa: E402
    _predict,
    fit_profile,
    predict_within,
)
from advisor.perf.importers import Deployment, Imported  # noqa: E402
from advisor.perf.validation.measurements import cases  # noqa: E402


def main() -> None:
    items, _ = cases()
    groups = defaultdict(list)
    for c in items:
        k = (c.source, c.config.gpu.id, c.config.engine, c.config.model.id, c.config.tp,
             c.config.pp, c.config.weights, c.config.kv, c.kind)  # fmt: skip
        groups[k].append(c)
    rows, refused = [], []
    for k, cs in groups.items():
        if len(cs) < 5 or k[1] == "mi250x-gcd":  # one GCD is not a catalog accelerator
            continue
        cs = sorted(cs, key=lambda c: (c.batch, c.qps, c.isl, c.osl))
        mid = len(cs) // 2
        train, test = [cs[0], cs[mid], cs[-1]], cs[1:mid] + cs[mid + 1 : -1]
        dep = Deployment(k[3], k[1], k[4], k[5], k[6], k[7], k[2])
        from advisor.perf.calibration.client_profile import ProfileDoc, ProfileRefused

        meas = np.array([c.measured for c in test])
        before = np.median(np.abs(_predict(test, dep.gpu, dep.engine, None) / meas - 1)) * 100
        try:
            fit = fit_profile(
                [Imported("sweep", "measurements.csv", "0" * 64, cases=train)], dep, "s"
            )
        except ProfileRefused as exc:
            refused.append(before)  # no profile: the rest keeps the shipped calibration's error
            print(f"{train[0].id}+{train[-1].id} {k[1]} {k[2]} {k[3]}: refused: {exc}")
            continue

        pred, outside = predict_within(test, ProfileDoc.model_validate(fit.doc))
        after = np.median(np.abs(pred / meas - 1)) * 100
        rows.append((before, after))
        print(f"{train[0].id}+{train[-1].id} {k[1]} {k[2]} {k[3]} TP{k[4]} {k[6]} {k[8]}: "
              f"{len(test)} held out ({sum(w is not None for w in outside)} outside its range), "
              f"median error {before:.1f}% -> {after:.1f}% "
              f"(fitted {', '.join(fit.doc['fitted'])})")  # fmt: skip
    print(f"{len(refused)} three-point profiles refused (nothing written)")
    if rows:
        b = np.array(rows)
        print(f"written: {int((b[:, 1] < b[:, 0]).sum())} of {len(rows)} sweeps improve; median "
              f"of the medians {np.median(b[:, 0]):.1f}% before, {np.median(b[:, 1]):.1f}% after")  # fmt: skip
    every = [*rows, *((r, r) for r in refused)]
    if every:
        e = np.array(every)
        print(f"all {len(every)} sweeps (a refused profile leaves the shipped calibration): "
              f"median of the medians {np.median(e[:, 0]):.1f}% before, "
              f"{np.median(e[:, 1]):.1f}% after; worse on {int((e[:, 1] > e[:, 0]).sum())}")  # fmt: skip


if __name__ == "__main__":
    main()

"""How much of a published mean TTFT is the benchmark's start? Mean and P99 read side by side.

A closed-loop benchmark (``--max-concurrency n``, R requests) releases its first n requests at
once. The model predicts that first wave's queueing (``predict.first_wave_ttfts_s``) but not a
one-off start-up cost c on it (kernels compiled or tuned for the first batched shapes, memory
pools growing). If such a cost explains the misses, the mean and the P99 of the same run imply
the same c:

    from the mean:  c_mean = (measured mean - predicted mean) x R / n
    from the P99:   c_p99  = measured P99 - predicted P99

(the predicted P99 is ``percentiles.predict_percentiles``': where the first wave holds more than
1% of the run's requests, a first-wave TTFT, which the cost shifts by c).
A steady-state error instead would move the mean by the same fraction as the median and leave
c_mean and c_p99 unrelated. Prints one line per run with a published mean and P99 TTFT and a
stated request count, the two estimates, the run's median error where published, and a summary.
Predictions use data/calibration.yaml (in sample: this reads the shape of the misses, not the
model's out-of-sample error, which bench/crossval.py gives).

    .venv/bin/python bench/startup.py
"""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.perf.validation.measurements import cases, load_rows  # noqa: E402
from advisor.perf.validation.percentiles import percentile_cases, predict_percentiles  # noqa: E402
from advisor.perf.validation.validate import predict_cases  # noqa: E402

#: Columns that identify one benchmark run (its rows differ only in metric and value).
RUN_COLUMNS = ("source", "engine", "model", "gpu", "tp", "pp", "precision_weights", "isl", "osl",
               "batch_or_concurrency")  # fmt: skip


def _run(row: dict) -> tuple:
    return tuple(row[k] for k in RUN_COLUMNS)


def main() -> None:
    rows = {r["id"]: r for r in load_rows()}
    all_cases, _ = cases()
    means = [c for c in all_cases
             if c.kind == "conc_ttft" and c.statistic == "mean" and c.requests > c.batch]  # fmt: skip
    medians = {_run(rows[c.id]): c for c in all_cases
               if c.kind == "conc_ttft" and c.statistic == "median"}  # fmt: skip
    p99 = defaultdict(list)
    tails = [pc for pc in percentile_cases()[0] if pc.metric == "ttft" and pc.quantile == 0.99]
    for pp in predict_percentiles(tails):
        p99[_run(rows[pp.pc.id])].append(pp)
    pred = predict_cases(means)
    med_pred = dict(zip(medians, predict_cases(list(medians.values())), strict=True))
    print(f"{'id':<6} {'engine':<7} {'gpu':<9} {'model':<16} {'n':>4} {'R':>5} {'mean ms':>8} "
          f"{'pred':>6} {'c_mean s':>9} {'c_p99 s':>8} {'median err':>10}")  # fmt: skip
    out = []  # (wave share n / R, c_mean, c_p99, mean error, median error or None)
    for c, p in zip(means, pred, strict=True):
        run = _run(rows[c.id])
        if not p99.get(run):
            continue
        c_mean = (c.measured - p) * c.requests / c.batch
        c_p99 = p99[run][0].pc.measured_s - p99[run][0].predicted_s
        med = medians.get(run)
        med_err = med_pred[run] / med.measured - 1 if med is not None else None
        out.append((c.batch / c.requests, c_mean, c_p99, p / c.measured - 1, med_err))
        print(f"{c.id:<6} {c.config.engine:<7} {c.config.gpu.id:<9} {c.config.model.id[:16]:<16} "
              f"{c.batch:>4.0f} {c.requests:>5d} {c.measured * 1e3:>8.0f} {p * 1e3:>6.0f} "
              f"{c_mean:>9.2f} {c_p99:>8.2f} "
              + (f"{100 * med_err:>+9.0f}%" if med_err is not None else f"{'-':>10}"))  # fmt: skip
    if not out:
        print("no run publishes both a mean and a P99 TTFT with its request count")
        return
    print()
    for label, keep in (("first wave <= 20% of the run", lambda w: w <= 0.2),
                        ("first wave > 20% of the run (it holds the median too)", lambda w: w > 0.2)):  # fmt: skip
        sel = [o for o in out if keep(o[0])]
        if not sel:
            continue
        cm, cp = np.array([o[1] for o in sel]), np.array([o[2] for o in sel])
        both = (cm > 0) & (cp > 0)
        factor = np.exp(np.abs(np.log(cm[both] / cp[both])))
        med = [o[4] for o in sel if o[4] is not None]
        print(f"{label}: {len(sel)} runs; mean TTFT error median "
              f"{100 * np.median([o[3] for o in sel]):+.0f}%"
              + (f"; their published medians {100 * np.median(med):+.0f}% ({len(med)} runs)"
                 if med else "; no median published")
              + f"; start-up cost per first-wave request from the mean {np.median(cm):.2f} s, "
              f"from the P99 {np.median(cp):.2f} s (medians); the two within a factor 1.5 in "
              f"{(factor < 1.5).sum()} of {both.sum()} runs where both are positive")  # fmt: skip


if __name__ == "__main__":
    main()

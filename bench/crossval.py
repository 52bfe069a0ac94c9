"""Leave-one-group-out cross-validation of the calibration: how well does the model predict
measurements it was not fitted on? Refits without each group (GPU, model family, engine), then
prints the held-out median/p90 absolute error per metric family. Takes a few minutes.

    .venv/bin/python bench/crossval.py [--max-evals 30] [--write]

--write stores the table in data/crossval.yaml, which the app's Trust page shows as the
out-of-sample error.
"""

from __future__ import annotations

import argparse
import datetime
import sys
from collections import defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.perf import profiles  # noqa: E402
from advisor.perf.calibrate import fit  # noqa: E402
from advisor.perf.measurements import cases  # noqa: E402
from advisor.perf.validate import predict_cases  # noqa: E402

GROUPS = {
    "gpu": lambda c: c.config.gpu.id,
    "model": lambda c: c.config.model.id.rsplit("-", 1)[0],
    "engine": lambda c: c.config.engine,
}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--max-evals", type=int, default=30)
    ap.add_argument("--write", action="store_true", help="write data/crossval.yaml")
    args = ap.parse_args()
    items, _ = cases()
    table: dict[str, dict] = {}
    for name, key in GROUPS.items():
        values = sorted({key(c) for c in items})
        held: dict[str, list[float]] = defaultdict(list)
        for v in values:
            train = [c for c in items if key(c) != v]
            test = [c for c in items if key(c) == v]
            if not test or len(train) < 20:
                continue
            doc = fit(train, max_nfev=args.max_evals)
            profiles.set_active(doc)
            try:
                pred = predict_cases(test)
            finally:
                profiles.set_active(None)
            for c, p in zip(test, pred, strict=True):
                if np.isfinite(p):
                    held[c.family].append(abs(p / c.measured - 1) * 100)
            print(f"  held out {name}={v}: {len(test)} rows", flush=True)
        print(f"leave-one-{name}-out (held-out rows only):")
        table[name] = {}
        for fam, errs in sorted(held.items()):
            med, p90 = float(np.median(errs)), float(np.percentile(errs, 90))
            table[name][fam] = {"rows": len(errs), "median_ape_pct": round(med, 1),
                                "p90_ape_pct": round(p90, 1)}  # fmt: skip
            print(f"  {fam:<22} {len(errs):>4} rows  median {med:5.1f}%  p90 {p90:5.1f}%")
    if args.write:
        import yaml

        from advisor.catalog.loader import DATA_DIR

        doc = {
            "generated_by": f"bench/crossval.py --max-evals {args.max_evals} --write",
            "generated_on": datetime.date.today().isoformat(),
            "meaning": "refit the constants without one group (GPU, model family, engine), "
            "predict that group's rows: absolute % error on rows the fit never saw",
            "held_out": table,
        }
        (DATA_DIR / "crossval.yaml").write_text(
            yaml.safe_dump(doc, sort_keys=False), encoding="utf-8"
        )
        print("wrote data/crossval.yaml")


if __name__ == "__main__":
    main()

"""``advisor validate``: predictions against every usable published measurement."""

from __future__ import annotations

import argparse

import numpy as np

from advisor.cli import add_json_flag
from advisor.perf.validation.percentiles import percentile_report, render_percentiles
from advisor.perf.validation.validate import validation_report


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("validate", help="error of the predictions against published measurements")
    p.add_argument("--rows", action="store_true", help="include every row in the output")
    add_json_flag(p)
    return p


def run(args: argparse.Namespace) -> dict:
    rep = validation_report()
    from advisor.search.validation import queueing_validation

    rep["queueing_by_load"] = _by_load(queueing_validation())
    rep["percentiles"] = percentile_report()
    if not args.rows and not args.json:
        rep.pop("rows")
        rep["percentiles"].pop("rows")
        rep["percentiles"].pop("tail_ratio_rows")
    return rep


def _by_load(rows: list[dict]) -> dict[str, dict]:
    """Median and p90 |error| of TTFT and ITL per load level (utilisation low/medium/high)."""
    out: dict[str, dict] = {}
    for level in ("low", "medium", "high"):
        for kind in ("load_ttft", "load_itl"):
            errs = np.array(
                [abs(x["error"]) * 100 for x in rows if x["load_level"] == level and x["kind"] == kind
                 and np.isfinite(x["error"])]
            )  # fmt: skip
            if errs.size:
                out[f"{kind.removeprefix('load_')} {level}"] = {
                    "rows": int(errs.size),
                    "median_ape_pct": float(np.median(errs)),
                    "p90_ape_pct": float(np.percentile(errs, 90)),
                }
    return out


def _table(families: dict) -> list[str]:
    lines = [f"  {'family':<22} {'rows':>5} {'median |err|':>13} {'p90 |err|':>10} {'failures':>9}"]
    for fam, s in families.items():
        if not s.get("rows"):
            lines.append(f"  {fam:<22} {0:>5}")
            continue
        lines.append(
            f"  {fam:<22} {s['rows']:>5} {s['median_ape_pct']:>12.1f}% {s['p90_ape_pct']:>9.1f}% "
            f"{s.get('failures', 0):>9}"
        )
    return lines


def render(r: dict) -> str:
    lines = []
    oos = r.get("out_of_sample")
    if oos:
        lines.append(f"OUT OF SAMPLE (data/crossval.yaml, {oos['generated_on']}): rows the fit "
                     "never saw")  # fmt: skip
        for scheme, fams in oos["schemes"].items():
            lines.append(f" leave one {scheme} out:")
            lines += _table(fams)
    else:
        lines.append("out of sample: data/crossval.yaml missing (run python -m advisor crossval)")
    lines.append("IN SAMPLE (the constants were fitted to these rows):")
    lines += _table(r["families"])
    if r.get("failures"):
        lines.append(f"failures (each counted as a 100% error): {len(r['failures'])}")
        lines += [f"  {f['id']} {f['kind']} {f['gpu']} {f['model']}: {f['reason']}"
                  for f in r["failures"]]  # fmt: skip
    lines.append(
        f"rows: {r['rows_total']} total, {r['rows_used']} used, {r['rows_skipped']} not representable:"
    )
    lines += [f"  {n:>3}  {reason}" for reason, n in r["skipped_reasons"].items()]
    lines.append("queueing model by load level (utilisation <0.3 low, <0.7 medium, else high):")
    for name, st in r.get("queueing_by_load", {}).items():
        lines.append(
            f"  {name:<12} {st['rows']:>4} rows  median |err| {st['median_ape_pct']:5.1f}%  "
            f"p90 {st['p90_ape_pct']:5.1f}%"
        )
    if "percentiles" in r:
        lines += render_percentiles(r["percentiles"])
    return "\n".join(lines)

"""``advisor validate``: predictions against every usable published measurement."""

from __future__ import annotations

import argparse

from advisor.cli import add_json_flag
from advisor.perf.validate import validation_report


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("validate", help="error of the predictions against published measurements")
    p.add_argument("--rows", action="store_true", help="include every row in the output")
    add_json_flag(p)
    return p


def run(args: argparse.Namespace) -> dict:
    rep = validation_report()
    try:
        from advisor.search import queueing_validation  # type: ignore[attr-defined]

        rep["queueing_by_load"] = queueing_validation()
    except ImportError:
        pass
    if not args.rows and not args.json:
        rep.pop("rows")
    return rep


def render(r: dict) -> str:
    lines = [f"{'family':<22} {'rows':>5} {'median |err|':>13} {'p90 |err|':>10} {'bias':>8}"]
    for fam, s in r["families"].items():
        if not s.get("rows"):
            lines.append(f"{fam:<22} {0:>5}")
            continue
        lines.append(
            f"{fam:<22} {s['rows']:>5} {s['median_ape_pct']:>12.1f}% {s['p90_ape_pct']:>9.1f}% "
            f"{s['bias_pct']:>+7.1f}%"
        )
    lines.append(
        f"rows: {r['rows_total']} total, {r['rows_used']} used, {r['rows_skipped']} not representable:"
    )
    lines += [f"  {n:>3}  {reason}" for reason, n in r["skipped_reasons"].items()]
    for row in r.get("queueing_by_load", []) or []:
        lines.append(f"  load {row}")
    return "\n".join(lines)

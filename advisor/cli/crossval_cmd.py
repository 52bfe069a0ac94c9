"""``advisor crossval``: regenerate the out-of-sample error files (data/crossval.yaml,
data/crossval_ranges.json, data/crossval_percentiles.yaml) by refitting the constants without
one group of rows at a time (``advisor.perf.calibration.crossval``). Progress goes to stderr; the result
(the held-out tables and the files written) to stdout."""

from __future__ import annotations

import argparse
import os
import sys

from advisor.catalog.quoting import inert
from advisor.cli import CliInputError, add_json_flag, int_in, shown
from advisor.perf.calibration.crossval import DEFAULT_SCHEMES, SCHEMES

#: Folds fitted side by side at most (each worker holds the rows and a fit's Jacobian).
MAX_JOBS = 64


def schemes_list(text: str) -> list[str]:
    """argparse type: a comma-separated list of distinct schemes.

    >>> schemes_list("source, engine")
    ['source', 'engine']
    """
    picked = [s.strip().lower() for s in text.split(",")]
    allowed = ", ".join(SCHEMES)
    bad = [s for s in picked if s not in SCHEMES]
    if bad or not picked:
        raise argparse.ArgumentTypeError(
            f"unknown scheme {shown(bad[0] if bad else text)} (allowed: {allowed})"
        )
    if len(set(picked)) != len(picked):
        raise argparse.ArgumentTypeError(f"{shown(text)} names a scheme twice (allowed: {allowed})")
    return picked


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "crossval",
        help="regenerate data/crossval.yaml and the ranges table: leave-one-group-out refits",
    )
    p.add_argument("--max-evals", type=int_in(1, 10_000), default=None,
                   help="cap on each fold's evaluations; it stops on convergence (default 300)")  # fmt: skip
    p.add_argument("--jobs", type=int_in(1, MAX_JOBS), default=None,
                   help="folds fitted side by side in worker processes (default: the CPUs)")  # fmt: skip
    p.add_argument("--schemes", type=schemes_list, default=None,
                   help=f"comma-separated groupings to leave out, source among them (allowed: "
                   f"{', '.join(SCHEMES)}; default: {','.join(DEFAULT_SCHEMES)})")  # fmt: skip
    p.add_argument("--all", action="store_true", help="every scheme (gpu and model family too)")
    p.add_argument("--percentiles", action="store_true",
                   help="also predict the published percentile rows in the source folds and "
                   "write data/crossval_percentiles.yaml")  # fmt: skip
    p.add_argument("--warm", action="store_true",
                   help="start each fold from the full fit (a quicker check): only with "
                   "--percentiles --schemes source, and data/crossval.yaml is left as it is")  # fmt: skip
    p.add_argument("--ranges", action="store_true",
                   help="only rewrite data/crossval_ranges.json from the existing files (no refit)")  # fmt: skip
    add_json_flag(p)
    return p


def _check(args: argparse.Namespace) -> list[str]:
    """The schemes to run, or CliInputError naming the flag that cannot go with the others."""
    if args.ranges:
        given = [f"--{n.replace('_', '-')}" for n in ("max_evals", "jobs", "schemes")
                 if getattr(args, n) is not None]  # fmt: skip
        given += [f"--{n}" for n in ("all", "percentiles", "warm") if getattr(args, n)]
        if given:
            raise CliInputError(f"{given[0]}: --ranges refits nothing; give it alone")
        return []
    if args.all and args.schemes is not None:
        raise CliInputError("--all: give --all or --schemes, not both")
    schemes = list(SCHEMES) if args.all else (args.schemes or list(DEFAULT_SCHEMES))
    if "source" not in schemes:
        raise CliInputError(
            f"--schemes {shown(','.join(schemes))}: the files hold the leave-one-source-out "
            "rows, so source must be among them"
        )
    if args.warm and not (args.percentiles and schemes == ["source"]):
        raise CliInputError(
            "--warm: only with --percentiles --schemes source (data/crossval.yaml keeps folds "
            "refitted from the constants' initial values)"
        )
    return schemes


def _progress(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def run(args: argparse.Namespace) -> dict:
    from advisor.perf.calibration import crossval

    schemes = _check(args)
    if args.ranges:
        rows = crossval.write_ranges()
        return {"wrote": {"data/crossval_ranges.json": rows}}
    jobs = args.jobs or min(os.cpu_count() or 1, MAX_JOBS)
    max_evals = 300 if args.max_evals is None else args.max_evals
    r = crossval.regenerate(
        schemes, max_evals, jobs, percentiles=args.percentiles, warm=args.warm, log=_progress
    )
    return {
        "generated_by": r["generated_by"],
        "wrote": r["wrote"],
        "seconds": {**r["seconds"], "total": round(r["total_s"], 1)},
        "held_out": r["tables"],
    }


def render(r: dict) -> str:
    from advisor.perf.calibration.crossval import table_lines

    lines = []
    for name, t in r.get("held_out", {}).items():
        lines += table_lines(name, t)
    if "seconds" in r:
        lines.append(f"total {r['seconds']['total']:.0f} s ({r['generated_by']})")
    lines += [f"wrote {inert(path)} ({n} rows)" for path, n in r["wrote"].items()]
    return "\n".join(lines)

"""``advisor calibrate``: fit the efficiency constants and write data/calibration.yaml."""

from __future__ import annotations

import argparse
from pathlib import Path

from advisor.catalog.files import FileWriteError
from advisor.cli import CliInputError, add_json_flag, calibrate_client, int_in, shown
from advisor.cli.common import writable_out_path
from advisor.perf.calibration.calibrate import fit, write


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser(
        "calibrate",
        help="fit efficiency constants to data/measurements*.csv, or (--from) a client profile",
    )
    p.add_argument("--max-evals", type=int_in(1, 10_000), default=50, help="fit iterations budget")
    p.add_argument("--out", default=None, help="output YAML (default data/calibration.yaml)")
    calibrate_client.add_args(p)
    add_json_flag(p)
    return p


def _check_out(value: str | None) -> Path | None:
    """The output path, checked before the (slow) fit: a writable file in an existing folder."""
    if value is None:
        return None
    return writable_out_path(value, "calibration.yaml")


def run(args: argparse.Namespace) -> dict:
    if args.from_files:
        return calibrate_client.run(args)
    for flag in ("model", "gpu", "engine", "isl", "osl", "name"):
        if getattr(args, flag) is not None:
            raise CliInputError(f"--{flag} only applies with --from (a client profile)")
    path = _check_out(args.out)
    doc = fit(max_nfev=args.max_evals)
    try:
        out = write(doc, path)
    except FileWriteError as exc:
        raise CliInputError(f"--out {shown(str(path))}: {exc}") from None
    return {
        k: out[k]
        for k in ("global", "families", "engines", "fabrics", "fit_summary", "rows_skipped")
    }


def render(r: dict) -> str | None:
    if "summary" in r and "points" in r:
        return calibrate_client.render(r)
    from advisor.cli import _default_render

    return _default_render(r)

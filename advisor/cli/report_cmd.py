"""``advisor report``: the PDF recommendation summary (advisor.report.pdf.build_report).

Takes ``--scenario FILE.json`` or the same flags as ``recommend`` (its parser is reused), plus
``--out FILE.pdf`` and the free-text ``--client`` / ``--consultant`` (sanitised and truncated to
200 characters in the PDF).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from advisor.catalog.quoting import inert
from advisor.cli import CliInputError, one_line, recommend_cmd
from advisor.cli.common import writable_out_path, write_out
from advisor.cli.profile_opt import describe


class _Renamed:
    """Lets recommend_cmd.add_parser build its flags on a parser named 'report'."""

    def __init__(self, sub: argparse._SubParsersAction) -> None:
        self._sub = sub

    def add_parser(self, _name: str, **kwargs) -> argparse.ArgumentParser:
        kwargs["help"] = "PDF recommendation summary (same flags as recommend, plus --out)"
        return self._sub.add_parser("report", **kwargs)


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = recommend_cmd.add_parser(_Renamed(sub))
    p.add_argument("--out", help="PDF file to write (required)")
    p.add_argument("--client", default="", help="client / engagement name (max 200 characters)")
    p.add_argument("--consultant", default="", help="consultant name (max 200 characters)")
    p.add_argument("--title", default=None,
                   help="the scenario's name on the cover and every page (max 200 characters; "
                   "default: a --scenario file's name, else model, GPUs, load and lengths)")  # fmt: skip
    p.add_argument("--no-sensitivities", action="store_true", help="skip the perturbed re-runs")
    return p


def _check_out(value: str | None) -> Path:
    if not value:
        raise CliInputError("--out is required (the PDF file to write, e.g. --out report.pdf)")
    return writable_out_path(value, "report.pdf")


def _titled(scenario, title: str | None):
    """The scenario named ``title`` (checked as any scenario name: printable, 200 characters)."""
    if title is None:
        return scenario
    if not title.strip():
        raise CliInputError("--title: empty (give the report's title, 1 to 200 characters)")
    from pydantic import ValidationError

    from advisor.scenario import Scenario, format_validation_error

    try:
        return Scenario.model_validate({**scenario.model_dump(), "name": title})
    except ValidationError as exc:
        raise CliInputError(
            "--title: " + format_validation_error(exc).removeprefix("name: ")
        ) from None


def run(args: argparse.Namespace) -> dict:
    from advisor.report import images

    out = _check_out(args.out)
    scenario = _titled(recommend_cmd.scenario_from_args(args), args.title)
    profile = recommend_cmd.scenario_profile(args, scenario)
    # the browser starts while the PDF module loads and the search runs (issue 38: it was
    # started at the first chart, 3-10 s of waiting in a 15-30 s report)
    images.prestart()
    from advisor.report import fonts
    from advisor.report.pdf import build_report, last_build_info
    from advisor.search.recommend import recommend_within

    rec, fallback = recommend_within(scenario)
    block = None if profile is None else describe(profile)
    if block is not None and fallback:
        block = {**block, "applied": False, "fallback": fallback}
    pdf = build_report(
        scenario, client=args.client, consultant=args.consultant, recommendation=rec,
        sensitivities=not args.no_sensitivities, client_profile=block,
    )  # fmt: skip
    write_out(out, pdf)
    from advisor.report.text import dropped_note

    for flag, value in (("--client", args.client), ("--consultant", args.consultant)):
        note = dropped_note(flag, value)
        if note:  # the PDF drops them, as the app's PDF does (and says)
            print(one_line(f"advisor report: warning: {note}"), file=sys.stderr)
    info = last_build_info()
    ok, why = images.charts_status()
    missing = list(dict.fromkeys([*info.get("unprintable", []),
                                  *fonts.unprintable(f"{args.client} {args.consultant}")]))  # fmt: skip
    if missing:  # the PDF is written; say which characters it cannot show, and why
        print(
            one_line(
                f"advisor report: warning: the PDF cannot show {fonts.describe(missing)}: no "
                f"installed font has them (Debian: apt-get install {fonts.FALLBACK_PACKAGES})"
            ),
            file=sys.stderr,
        )
    return {
        "out": str(out),
        "bytes": len(pdf),
        "pages": info.get("pages"),
        "images": info.get("images"),
        "missing_charts": info.get("missing_charts", []),
        "unprintable": missing,
        "charts": "available" if ok else why,
        "recommended": rec.best.description if rec.best is not None else None,
        "client_profile": block,
    }


def render(r: dict) -> str:
    lines = [
        f"wrote {inert(r['out'])} ({r['bytes']:,} bytes, {r['pages']} pages, {r['images']} charts)"
    ]
    lines.append(f"recommended: {r['recommended'] or 'none (no deployment meets the SLA)'}")
    for title, why in r["missing_charts"]:
        lines.append(f"missing chart: {title}: {why}")
    return "\n".join(lines)

"""Wall time of the command line in fresh processes (issue 38: CLI ``recommend`` <= 1 s wall).

Prints the median over ``--runs`` fresh interpreters of:
- ``parser``: importing the CLI and building the parser for ``recommend`` (what every run pays
  before any work: the subcommand modules it imports);
- ``recommend``: ``python -m advisor recommend`` with the default scenario, start to exit
  (target 1 s);
- ``report``: ``python -m advisor report`` of the default scenario (median over ``--report-runs``),
  with the CPU seconds it and its browser used (the browser's start, 3-10 s on this machine, is
  most of a fresh report's wall time; the load average is printed beside it).

On a shared machine the absolute figures move with the load: compare a change by running this
on both trees (``--tree``: they take turns, run by run) and reading the ratio.

    python bench/bench_cli.py [--runs 5] [--tree /path/to/other/checkout]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PARSER = "from advisor.cli import build_parser; build_parser(['recommend'])"
PARSER_OLD = "from advisor.cli import build_parser; build_parser()"


#: Issue 38's targets, printed beside each figure (None: no target, only where the time goes).
TARGETS_S = {"parser": None, "recommend": 1.0, "report": None}


def _cpu_children() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _wall(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """Wall and CPU seconds of one run (CPU: the process and every descendant it reaped)."""
    c0, t0 = _cpu_children(), time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - t0, _cpu_children() - c0


def cases(tree: Path, pdf: Path) -> dict[str, list[str]]:
    py = sys.executable
    lazy = (
        "argv" in (tree / "advisor/cli/__init__.py").read_text().split("def build_parser")[1][:80]
    )
    return {
        "parser": [py, "-c", PARSER if lazy else PARSER_OLD],
        "recommend": [py, "-m", "advisor", "recommend"],
        "report": [py, "-m", "advisor", "report", "--out", str(pdf)],
    }


def measure(trees: dict[str, Path], runs: int, report_runs: int) -> dict[str, dict]:
    """Median (wall, CPU) per tree and case; the trees take turns run by run, so a change in
    the machine's load falls on both alike."""
    pdf = Path(tempfile.mkdtemp(prefix="ia-bench-cli-")) / "report.pdf"
    got: dict[str, dict[str, list]] = {name: {} for name in trees}
    for case in TARGETS_S:
        for _ in range(report_runs if case == "report" else runs):
            for name, tree in trees.items():
                got[name].setdefault(case, []).append(_wall(cases(tree, pdf)[case], tree))
    return {name: {k: (statistics.median(g[0] for g in v), statistics.median(g[1] for g in v))
                   for k, v in r.items()} for name, r in got.items()}  # fmt: skip


def _fmt(k: str, wall: float, cpu: float) -> str:
    target = TARGETS_S[k]
    return f"{k} {wall:.2f} s (CPU {cpu:.2f} s" + (f"; target {target:g} s)" if target else ")")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--report-runs", type=int, default=2, help="runs of report (0: skip it)")
    ap.add_argument("--tree", type=Path, default=None, help="another checkout to compare with")
    a = ap.parse_args()
    trees = {"this tree": ROOT, **({"other tree": a.tree} if a.tree else {})}
    print(f"load average before: {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    results = measure(trees, a.runs, a.report_runs)
    for name, r in results.items():
        print(f"{name:>10}: " + ", ".join(_fmt(k, *v) for k, v in r.items()))
    if a.tree:
        this, other = results["this tree"], results["other tree"]
        print("     ratio: " + ", ".join(f"{k} {this[k][0] / other[k][0]:.2f}x" for k in this))
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

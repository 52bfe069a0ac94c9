"""Wall time of the command line in fresh processes (issue 38: CLI ``recommend`` <= 1 s wall).

Prints the median over ``--runs`` fresh interpreters of:
- ``parser``: importing the CLI and building the parser for ``recommend`` (what every run pays
  before any work: the subcommand modules it imports);
- ``recommend``: ``python -m advisor recommend`` with the default scenario, start to exit.

On a shared machine the absolute figures move with the load: compare a change by running this
on both trees one after the other (``--tree``) and reading the ratio.

    python bench/bench_cli.py [--runs 5] [--tree /path/to/other/checkout]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PARSER = "from advisor.cli import build_parser; build_parser(['recommend'])"
PARSER_OLD = "from advisor.cli import build_parser; build_parser()"


def _wall(cmd: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, capture_output=True)
    return time.perf_counter() - t0


def measure(tree: Path, runs: int) -> dict[str, float]:
    py = sys.executable
    lazy = (
        "argv" in (tree / "advisor/cli/__init__.py").read_text().split("def build_parser")[1][:80]
    )
    cases = {
        "parser": [py, "-c", PARSER if lazy else PARSER_OLD],
        "recommend": [py, "-m", "advisor", "recommend"],
    }
    return {k: statistics.median(_wall(c, tree) for _ in range(runs)) for k, c in cases.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--tree", type=Path, default=None, help="another checkout to compare with")
    a = ap.parse_args()
    trees = [("this tree", ROOT)] + ([("other tree", a.tree)] if a.tree else [])
    results = {name: measure(path, a.runs) for name, path in trees}
    for name, r in results.items():
        print(f"{name:>10}: " + ", ".join(f"{k} {v:.2f} s" for k, v in r.items()))
    if a.tree:
        this, other = results["this tree"], results["other tree"]
        print("     ratio: " + ", ".join(f"{k} {this[k] / other[k]:.2f}x" for k in this))


if __name__ == "__main__":
    main()

"""Fuzz the CLI: N seeded hostile invocations of every subcommand, then print the figures.

    .venv/bin/python bench/fuzz_cli.py [--per-command 2500] [--seed 1] [--budget-s 60]
                                       [--subprocess 50]

Each invocation calls ``advisor.cli.main(argv)`` in-process (timed; over ``--budget-s`` counts as
a hang) and is checked against the contract in tests/cli_fuzz.py: exit 0 with output (strict JSON
with --json) or exit 2 with one stderr line naming a flag. A sample also runs as real
subprocesses under ``timeout`` (including non-UTF-8 argv bytes). Prints invocations per
subcommand, the exit-code histogram, median/p99/max seconds per call, the slowest calls and every
contract violation. Then it times ``recommend`` on huge in-range hardware (the generator keeps
hardware small so the long run stays bounded). Never asserts on speed.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

from cli_fuzz import FLAGS, Tally, check, generate, run_one, write_inputs  # noqa: E402

from advisor.cli import SUBCOMMANDS  # noqa: E402


def _subprocess_sample(rng: random.Random, tmp: Path, n: int, timeout_s: int) -> Tally:
    tally = Tally()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    subs = list(SUBCOMMANDS)
    for i in range(n):
        sub = subs[i % len(subs)]
        argv = [a.replace("\n", " ") for a in generate(rng, sub, tmp)]
        args: list[str | bytes] = [*argv]
        if i % 5 == 0:  # raw bytes that are not UTF-8 in a value
            args.append(rng.choice(["--model", "--out", "--client", "--gpu"]))
            args.append(b"\xff\xfe" + os.fsencode(str(tmp / "x.pdf")))
        t0 = time.perf_counter()
        try:
            p = subprocess.run(
                [sys.executable, "-m", "advisor", *args], capture_output=True, env=env,
                timeout=timeout_s, cwd=ROOT,
            )  # fmt: skip
            code: int | str = p.returncode
            out = p.stdout.decode("utf-8", "replace")
            err = p.stderr.decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            code, out, err = "timeout", "", ""
        dt = time.perf_counter() - t0
        from cli_fuzz import Outcome

        shown = [a if isinstance(a, str) else repr(a) for a in args]
        o = Outcome(shown, code, dt, out, err)
        spec = FLAGS[sub]
        o.problem = check(shown, code, out, err, spec["values"] + spec["switches"])
        tally.add(o)
    return tally


def _print(title: str, t: Tally) -> None:
    times = sorted(t.times)
    print(f"\n== {title}: {len(times):,} invocations")
    for sub, n in sorted(t.per_sub.items()):
        print(f"  {sub:<11} {n:>6,}  ({t.seconds_per_sub.get(sub, 0.0):6.1f} s in total)")
    print("  exit codes: " + ", ".join(f"{c}: {n:,}" for c, n in sorted(t.codes.items())))
    if times:
        p99 = times[min(len(times) - 1, int(0.99 * len(times)))]
        print(
            f"  seconds per call: median {statistics.median(times):.4f}, p99 {p99:.3f}, "
            f"max {times[-1]:.2f}"
        )
    for dt, argv in t.slowest[:3]:
        print(f"  slow: {dt:.2f} s  {' '.join(argv)[:150]}")
    tracebacks = sum(1 for o in t.problems if "raised" in str(o.code) or "Traceback" in o.stderr)
    hangs = sum(1 for o in t.problems if "took" in (o.problem or "") or o.code == "timeout")
    print(f"  contract violations: {len(t.problems)} (tracebacks {tracebacks}, hangs {hangs})")
    for o in t.problems[:30]:
        print(f"  ! {o.problem}: code={o.code!r} argv={o.argv!r:.200} err={o.stderr[:200]!r}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--per-command", type=int, default=2500)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--budget-s", type=float, default=60.0)
    ap.add_argument("--subprocess", type=int, default=50)
    ap.add_argument("--huge", action="store_true", help="also time recommend on huge hardware")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        write_inputs(tmp)
        os.chdir(tmp)  # anything written by a relative --out lands here
        tally = Tally()
        t0 = time.perf_counter()
        for sub in SUBCOMMANDS:
            for _ in range(a.per_command):
                tally.add(run_one(generate(rng, sub, tmp), a.budget_s))
        _print(f"in-process fuzz, seed {a.seed} ({time.perf_counter() - t0:.0f} s)", tally)
        if a.subprocess:
            _print(
                "subprocess sample under timeout", _subprocess_sample(rng, tmp, a.subprocess, 120)
            )
        if a.huge:
            print("\n== recommend on huge in-range hardware")
            for argv in (
                ["recommend", "--nodes", "1024", "--gpus-per-node", "10", "--json"],
                ["recommend", "--nodes", "157", "--gpus-per-node", "64", "--json"],
                ["recommend", "--nodes", "1024", "--gpus-per-node", "72", "--json"],
            ):
                o = run_one(argv, 1e9)
                print(f"  {o.seconds:7.1f} s exit {o.code} {' '.join(argv)}  {o.problem or ''}")


if __name__ == "__main__":
    main()

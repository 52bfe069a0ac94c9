"""CLI fuzz: 2,400 seeded hostile invocations (300 per subcommand) keep the bad-input contract.

Contract (docs/CONVENTIONS.md "Bad input", checked by tests/cli_fuzz.py ``check``): exit 0 with
output (one strict-JSON object with --json), or exit 2 with exactly one stderr line naming a flag;
never exit 1, an exception or a call over the hang budget. The long run with the figures is
bench/fuzz_cli.py; this one is bounded (fixed seed, fixed count) so it stays well under 90 s.
"""

from __future__ import annotations

import os
import random
import subprocess
import sys
from pathlib import Path

import cli_fuzz
import pytest
from cli_fuzz import FLAGS, Tally, check, generate, run_one, write_inputs

from advisor.cli import SUBCOMMANDS

ROOT = Path(__file__).resolve().parents[1]
PER_COMMAND = 300
#: A call longer than this is a hang (a real hang never returns; this catches runaway searches).
HANG_BUDGET_S = 60.0


@pytest.fixture()
def fuzz_dir(tmp_path, monkeypatch):
    # fewer live validate/report runs than the bench (0.5 s / 3 s each); bad input is the target
    # (validate: "--row" no longer passes as an abbreviation of --rows, so more live draws)
    monkeypatch.setattr(cli_fuzz, "P_LIVE_VALIDATE", 0.04)
    monkeypatch.setattr(cli_fuzz, "P_LIVE_REPORT", 0.01)
    write_inputs(tmp_path)
    monkeypatch.chdir(tmp_path)  # a relative --out lands in tmp_path
    return tmp_path


def test_every_subcommand_has_a_fuzz_table():
    assert set(FLAGS) == set(SUBCOMMANDS)


@pytest.mark.parametrize("sub", list(SUBCOMMANDS))
def test_fuzz_subcommand_keeps_the_contract(sub, fuzz_dir):
    rng = random.Random(f"fuzz-{sub}")
    tally = Tally()
    for _ in range(PER_COMMAND):
        tally.add(run_one(generate(rng, sub, fuzz_dir), HANG_BUDGET_S))
    print(f"{sub}: {tally.codes} max {max(tally.times):.2f} s")
    assert tally.per_sub[sub] == PER_COMMAND
    problems = [f"{o.problem}: {o.argv!r:.300} -> {o.stderr[:300]!r}" for o in tally.problems]
    assert problems == []
    # the generator reaches both outcomes (a generator that only made bad input proves little)
    if sub not in ("calibrate", "crossval"):  # never a real fit (tests/cli_fuzz.py generate)
        assert tally.codes.get("0", 0) > 0, tally.codes
    assert tally.codes.get("2", 0) > 0, tally.codes


def test_check_rejects_contract_violations():
    """The checker itself: each known-bad outcome is caught (so a pass means something)."""
    flags = ["--tp"]
    assert check(["memory", "--json"], 0, '{"a": NaN}\n', "", flags)  # NaN is not strict JSON
    assert check(["memory", "--json"], 0, "[1]\n", "", flags)  # not an object
    assert check(["memory"], 0, "", "", flags)  # no output
    assert check(["memory"], 2, "", "line1\nline2\n", flags)  # two lines
    assert check(["memory"], 2, "", "advisor memory: error: bad\n", flags)  # no flag named
    assert check(["memory"], 1, "", "advisor memory: internal error: X\n", flags)
    assert check(["memory"], 2, "", "advisor memory: error: argument --tp: 0\n", flags) is None
    assert check(["memory"], 0, "name \x1b]0;x\x07\n", "", flags)  # an escape reached the terminal
    assert check(["deploy"], 0, "# for evil\ntouch PWNED\n", "", flags)  # a name became a command
    assert check(["memory"], 0, "a\tb\nc\n", "", flags) is None


def test_issue_36_families_are_drawn(fuzz_dir):
    """The hostile profiles, scenarios and values of issue 36 are reached by the generator."""
    rng = random.Random("fuzz-families")
    argvs = [" ".join(generate(rng, sub, fuzz_dir)) for sub in ("estimate", "recommend", "deploy")
             for _ in range(1000)]  # fmt: skip
    for name in cli_fuzz.PROFILES + cli_fuzz.SCENARIOS[1:]:
        assert any(name in a for a in argvs), name
    assert any("9" * 5000 in a for a in argvs) and any("\x1b" in a for a in argvs)


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["estimate", "--input", "/dev/zero"], "--input"),  # never-ending device: was OOM
        (["recommend", "--scenario", "/dev/zero"], "--scenario"),
        (["estimate", "--input", "/"], "--input"),  # a directory: was exit 1
        (["calibrate", "--out", "/", "--max-evals", "1"], "--out"),  # was exit 1 after the fit
        (["calibrate", "--out", "/nonexistent/c.yaml", "--max-evals", "1"], "--out"),
        (["memory", "--model", "x" * 5000, "--gpu", "h100-sxm"], "--model"),  # was ENAMETOOLONG
        (["recommend", "--gpu", "h100-sxm,h100-sxm"], "--gpu"),  # named no flag
        (["memory", "--model", "a\nb.json", "--gpu", "h100-sxm"], "--model"),  # two lines
        (["memory", "--model", "l", "--gpu", "h100-sxm", "--tp", "1\n2"], "--tp"),
        (["recommend", "--scenario", ""], "--scenario"),  # was silently ignored
        (["memory", "--model", "l", "--gpu", "h100-sxm", "--block-size=--"], "--block-size"),
        (["recommend", "--gpu=--"], "--gpu"),  # Python 3.11 passed [] past the type: exit 1
    ],
)
def test_fixed_findings_exit_2_naming_the_flag(argv, flag, fuzz_dir):
    o = run_one(argv, HANG_BUDGET_S)
    assert o.code == 2 and o.problem is None, (o.code, o.problem, o.stderr)
    assert flag in o.stderr and len(o.stderr) < 1100


def test_subprocess_sample_under_timeout(fuzz_dir):
    """A real process per call (argv bytes that are not UTF-8 included) under a hard timeout."""
    rng = random.Random("fuzz-subprocess")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    bad = 0
    subs = ["memory", "estimate", "collective", "recommend", "report", "validate"]
    for i in range(6):
        argv: list[str | bytes] = [
            a.replace("\n", " ") for a in generate(rng, subs[i % 6], fuzz_dir)
        ]
        if i % 3 == 0:
            argv += ["--model", b"\xff\xfe.json"]
        if i == 1:  # a non-UTF-8 --out name reaches the (cheap) error path
            argv = ["report", "--out", os.fsdecode(b"\xff/x.pdf"), "--isl", "1"]
        p = subprocess.run(
            [sys.executable, "-m", "advisor", *argv], capture_output=True, env=env,
            timeout=120, cwd=fuzz_dir,
        )  # fmt: skip
        shown = [a if isinstance(a, str) else "bytes" for a in argv]
        spec = FLAGS[shown[0]]
        problem = check(
            shown, p.returncode, p.stdout.decode("utf-8", "replace"),
            p.stderr.decode("utf-8", "replace"), spec["values"] + spec["switches"],
        )  # fmt: skip
        if problem:
            bad += 1
            print(problem, argv, p.stderr[-500:])
    assert bad == 0

"""Seeded generator of hostile ``python -m advisor`` invocations and the checker of their outcome.

Shared by tests/test_fuzz_cli.py (a fixed count in the suite) and bench/fuzz_cli.py (a long run
that prints the figures). The contract checked for every invocation (docs/CONVENTIONS.md "Bad
input"): exit 0 with output (one strict-JSON object with ``--json``), or exit 2 with exactly one
line on stderr that names a flag; never another exit code, an exception or a hang.

Each argv starts from a valid invocation (required flags present) and is then mutated: flags
dropped, values swapped for hostile ones (wrong types, negatives, zeros, NaN/inf, huge values,
unknown ids, unicode, empty and very long strings), flags repeated, conflicting flags added,
unknown flags and stray words inserted. ``cheap=True`` keeps the accepted values of the hardware
size flags small so a valid ``recommend``/``report`` stays fast (huge in-range hardware is timed
separately); expensive subcommands (calibrate, report, validate) are mostly driven with bad input.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import random
import time
from dataclasses import dataclass, field
from pathlib import Path

from advisor.catalog import accelerators
from advisor.cli import SUBCOMMANDS, main

MODELS = ["llama-3.1-8b", "llama-3.1-70b", "mixtral-8x7b", "llama-3.2-1b", "deepseek-v3"]
GPUS = ["h100-sxm", "mi300x", "a100-sxm-80gb", "l40s"]
LINKS = ["nvlink4", "ib-ndr", "pcie5", "xgmi"]

#: Values that are wrong for most flags; several are right for some (that is the point).
HOSTILE = [
    "", " ", "-1", "0", "-0", "1", "nan", "NaN", "inf", "-inf", "Infinity", "1e30", "-1e30",
    "1e309", "10000", "100000", "1e6", "1.5", "0.5", "abc", "None", "null", "true", "0x10",
    "1_000", "１２", "٣", "\u202e8", "🚀", "h100-sxm", "llama-3.1-8b", "max", "MAX", "x" * 5000,
    "a\nb", "--", "-", "../../etc/passwd", "/dev/null", "/dev/zero", "/tmp", "x.json",
    "9" * 400, "1e-300", "-1e-300", "4097", "1025", "73", "2000001", "200001", "1e7", "1e13",
    "fp16", "int3", "fp8,int4", ",", "h100-sxm,h100-sxm", "H100-SXM", " h100-sxm ", "\t",
    "\u200b", "base\u200b", "ｈ100-sxm",
    # issue 36: huge integers, exponent tokens, terminal escapes and YAML line breaks
    "9" * 5000, "1e14", "1e6", "\x1b]0;pwned\x07", "\x1b[2J", "a\rb", "a\u2028b", "\x85",
]  # fmt: skip

#: Client profiles written by :func:`write_inputs` (issue 36): one valid, the rest hostile.
PROFILES = ["profile-valid.yaml", "profile-alias.yaml", "profile-laughs.yaml",
            "profile-deep.yaml", "profile-bigint.yaml", "profile-escape-name.yaml",
            "profile-edited.yaml", "profile-huge.yaml"]  # fmt: skip
#: Scenarios written by :func:`write_inputs`: an imported config whose name would be a shell line
#: in launch.sh and escapes on the terminal; huge integers; a 50,000-character key.
SCENARIOS = ["scenario.json", "scenario-name-inject.json", "scenario-bigint.json",
             "scenario-long-key.json", "scenario-1e14.json"]  # fmt: skip


def _num(rng: random.Random, lo: float, hi: float) -> str:
    return rng.choice([str(lo), str(hi), str(rng.randint(int(lo), int(max(lo, min(hi, 64)))))])


def _valid(rng: random.Random, sub: str, flag: str, tmp: Path, cheap: bool) -> str:
    """An accepted value for ``flag`` of ``sub``."""
    r = rng
    small_hw = {"--nodes": ["1", "2"], "--gpus-per-node": ["1", "2", "4", "8"]}
    table = {
        "--model": lambda: r.choice(MODELS),
        "--gpu": lambda: r.choice(GPUS if sub not in ("recommend", "report", "deploy") else
                                  GPUS + ["h100-sxm,mi300x"]),
        "--tp": lambda: r.choice(["1", "2", "4", "8", "16", "1024"]),
        "--pp": lambda: r.choice(["1", "2", "4", "80", "1024"]),
        "--dp": lambda: r.choice(["1", "2", "100000"]),
        "--weights": lambda: r.choice(["fp16", "fp8", "int4", "bf16"] if sub in ("memory", "estimate")
                                      else ["fp16", "fp8,int4", "int8"]),
        "--kv": lambda: r.choice(["fp16", "fp8"] if sub in ("memory", "estimate") else ["fp16", "fp8,fp16"]),
        "--context": lambda: r.choice(["1", "4096", "131072", "131073", "10000000"]),
        "--block-size": lambda: r.choice(["16", "32", "64"]),
        "--gpu-memory-utilization": lambda: r.choice(["0.05", "0.9", "1"]),
        "--max-model-len": lambda: r.choice(["1", "8192", "10000000"]),
        "--op": lambda: r.choice(["allreduce", "allgather", "reducescatter", "ALLREDUCE"]),
        "--n": lambda: r.choice(["1", "2", "8", "9", "64", "4096"]),
        "--bytes": lambda: r.choice(["1", "1e6", "1e12", "4096"]),
        "--link": lambda: r.choice(LINKS),
        "--inter-link": lambda: r.choice(["ib-ndr", "roce-400g"]),
        "--intra": lambda: r.choice(["nvlink4", "pcie5"]),
        "--inter": lambda: r.choice(["ib-ndr"]),
        "--isl": lambda: r.choice(["1", "128", "1024", "32768"]),
        "--osl": lambda: r.choice(["1", "16", "256"]),
        "--concurrency": lambda: r.choice(["1", "8", "max", "1000000"]),
        "--qps": lambda: r.choice(["1e-300" if sub == "estimate" else "0.001", "0.5", "2", "1000"]),
        "--engine": lambda: r.choice(["vllm", "trtllm", "sglang"] + ([] if sub == "deploy"
                                                                    else ["generic"])),
        "--spec-draft": lambda: "llama-3.2-1b",
        "--spec-tokens": lambda: r.choice(["1", "4", "16"]),
        "--spec-acceptance": lambda: r.choice(["0", "0.5", "1"]),
        "--ttft-p99-ms": lambda: r.choice(["0.001", "500", "3.6e6"]),
        "--tpot-p99-ms": lambda: r.choice(["0.001", "50", "6e4"]),
        "--e2e-p99-ms": lambda: r.choice(["1", "30000"]),
        "--percentile": lambda: r.choice(["50", "90", "95", "99"]),
        "--rank-by": lambda: r.choice(["cost", "gpus"]),
        "--gpus-per-node": lambda: r.choice(small_hw["--gpus-per-node"] if cheap else ["1", "8", "72"]),
        "--nodes": lambda: r.choice(small_hw["--nodes"] if cheap else ["1", "2", "16"]),
        "--out": lambda: (str(tmp) if sub == "deploy"
                          else str(tmp / r.choice(["r.pdf", "cal.yaml", "é ü.pdf"]))),
        "--deployment": lambda: r.choice(["h100-sxm.tp4.pp1.dp2.fp8.fp8",
                                          "h100-sxm.tp2.pp1.dp1.ptp1.pdp1.fp8.fp8",
                                          "mi300x.tp1.pp1.dp1.fp16.fp8"]),
        "--format": lambda: r.choice(["command", "compose", "k8s"]),
        "--engine-version": lambda: r.choice(["0.34.0", "0.5.23", "1.1.0"]),
        "--max-context": lambda: r.choice(["4096", "131072"]),
        "--client": lambda: r.choice(["", "ACME", "<b>x</b>", "ü" * 300]),
        "--consultant": lambda: r.choice(["", "Z"]),
        "--max-evals": lambda: "1",
        "--jobs": lambda: r.choice(["1", "2", "64"]),
        "--schemes": lambda: r.choice(["source", "source,engine", "SOURCE, gpu", "model,source"]),
        "--scenario": lambda: str(tmp / "scenario.json"),
        "--profile": lambda: str(tmp / "profile-valid.yaml"),
        "--input": lambda: str(tmp / "input.jsonl"),
    }  # fmt: skip
    return table[flag]() if flag in table else "1"


#: Value-taking flags per subcommand; ``required`` are always in the valid base.
FLAGS: dict[str, dict[str, list[str]]] = {
    "catalog": {"values": [], "switches": ["--json"], "required": []},
    "validate": {"values": [], "switches": ["--json", "--rows"], "required": []},
    "calibrate": {"values": ["--max-evals", "--out"], "switches": ["--json"], "required": []},
    "memory": {
        "values": ["--model", "--gpu", "--tp", "--pp", "--weights", "--kv", "--context",
                   "--block-size", "--gpu-memory-utilization", "--max-model-len"],
        "switches": ["--json"], "required": ["--model", "--gpu"],
    },
    "collective": {
        "values": ["--op", "--gpu", "--n", "--bytes", "--link"],
        "switches": ["--json"], "required": ["--gpu", "--n", "--bytes"],
    },
    "estimate": {
        "values": ["--model", "--gpu", "--tp", "--pp", "--dp", "--weights", "--kv", "--isl",
                   "--osl", "--concurrency", "--qps", "--link", "--inter-link", "--gpus-per-node",
                   "--engine", "--spec-draft", "--spec-tokens", "--spec-acceptance", "--input",
                   "--profile"],
        "switches": ["--json", "--ep"], "required": ["--model", "--gpu", "--isl", "--osl"],
    },
    "recommend": {
        "values": ["--model", "--gpu", "--gpus-per-node", "--nodes", "--intra", "--inter",
                   "--isl", "--osl", "--qps", "--ttft-p99-ms", "--tpot-p99-ms", "--e2e-p99-ms",
                   "--percentile", "--weights", "--kv", "--engine", "--spec-draft",
                   "--spec-acceptance", "--rank-by", "--scenario", "--profile"],
        "switches": ["--json", "--no-disaggregated"], "required": [],
    },
}  # fmt: skip
FLAGS["report"] = {
    "values": FLAGS["recommend"]["values"] + ["--out", "--client", "--consultant"],
    "switches": ["--json", "--no-disaggregated", "--no-sensitivities"],
    "required": ["--out"],
}
FLAGS["deploy"] = {
    "values": FLAGS["recommend"]["values"]
    + ["--deployment", "--format", "--out", "--engine-version", "--max-context"],
    "switches": ["--json", "--no-disaggregated"],
    "required": [],
}
#: crossval refits for half an hour and writes data/: driven with bad input only (see generate)
FLAGS["crossval"] = {
    "values": ["--max-evals", "--jobs", "--schemes"],
    "switches": ["--json", "--all", "--percentiles", "--warm", "--ranges"],
    "required": [],
}
assert set(FLAGS) == set(SUBCOMMANDS), "a subcommand has no fuzz table"

#: Chance that an invocation is left exactly valid (the rest get 1-4 mutations).
P_VALID = {"calibrate": 0.0, "crossval": 0.0, "report": 0.3, "validate": 0.01, "recommend": 0.15}
#: Chance that a report invocation is not forced to fail on a final ``--isl 0`` (a PDF takes s).
P_LIVE_REPORT = 0.03
#: Likewise for validate (its valid argvs are the 4 combinations of --rows and --json).
P_LIVE_VALIDATE = 0.05


def _profile_doc(name: str = "fuzz") -> dict:
    """A small, valid client profile (llama-3.1-8b on h100-sxm with vllm), not yet sealed."""
    held = "fewer points (1) than constants: not identifiable"
    return {
        "schema": "inference-architect/client-profile/1", "name": name, "created": "2026-12-03",
        "deployment": dict(model="llama-3.1-8b", gpu="h100-sxm", gpu_family="hopper", tp=1, pp=1,
                           weights="bf16", kv="bf16", engine="vllm"),
        "files": [dict(name="serve.json", format="vllm bench serve", sha256="0" * 64, points=1)],
        "constants": dict(mem_factor=1.0, compute_factor=1.0, step_overhead_s=0.002,
                          request_overhead_s=None),
        "fitted": ["step_overhead_s"],
        "held": {"mem_factor": held, "compute_factor": held, "request_overhead_s": held},
        "points": [dict(id="serve.json:tpot", kind="conc_tpot", measured=0.0141, unit="s",
                        before_pct=-12.0, after_pct=0.1, flagged="")],
        "summary": dict(points=1, median_ape_before_pct=12.0, median_ape_after_pct=0.1,
                        max_ape_after_pct=0.1),
        "collectives": None,
        "range": [dict(mode="concurrency", isl=[1024.0, 1024.0], osl=[256.0, 256.0],
                       load=[32.0, 32.0])],
        "holdout": dict(runs=[dict(run="serve.json", points=1, shipped_pct=12.0, held_out_pct=0.1,
                                   change_pp=-11.9, verdict="better")],
                        required_ratio=0.5, tolerance_pp=2.0, verdict="accepted (fuzz fixture)"),
    }  # fmt: skip


def hostile_profiles() -> dict[str, str]:
    """Client-profile texts by file name (PROFILES): one valid (signed here), the rest hostile.
    Shared with the app fuzzer (bench/fuzz_app.py uploads them on the Calibrate page)."""
    from advisor.perf.calibration.client_profile import _digest, dump, seal

    valid = dump(seal(_profile_doc()))
    laughs, prev = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n', "a"
    for n in "bcdefghi":
        laughs += f"{n}: &{n} [" + ",".join([f"*{prev}"] * 9) + "]\n"
        prev = n
    edited = seal(_profile_doc())
    edited["constants"]["mem_factor"] = 2.0
    edited["digest"] = _digest(edited)  # the attack: the unkeyed digest recomputed
    texts = {
        "profile-valid.yaml": valid,
        "profile-alias.yaml": "x: &x [*x, *x]\n",
        "profile-laughs.yaml": laughs,
        "profile-deep.yaml": "[" * 20_000 + "]" * 20_000,
        "profile-bigint.yaml": valid.replace("tp: 1\n", "tp: " + "9" * 5000 + "\n"),
        "profile-escape-name.yaml": dump(seal(_profile_doc("a\x1b]0;pwned\x07\nCLIENT PROFILE x"))),
        "profile-edited.yaml": dump(edited),
        "profile-huge.yaml": "# " + "x" * (4 * 2**20) + "\n" + valid,
    }
    return {name: texts[name] for name in PROFILES}


def hostile_client_files() -> dict[str, bytes]:
    """Benchmark files whose fields cannot describe one run (issue 36: exit 1 / a pydantic dump)."""
    fix = Path(__file__).parent / "fixtures" / "client" / "vllm_bench_serve.json"
    text = fix.read_text()
    doc = json.loads(text)
    return {
        "serve-conc-1e6.json": json.dumps({**doc, "max_concurrency": 1e6}).encode(),
        "serve-tokens-1e14.json": json.dumps({**doc, "total_input_tokens": 1e14}).encode(),
        "serve-bigint.json": text.replace(
            '"max_concurrency": 32', '"max_concurrency": ' + "9" * 5000
        ).encode(),  # fmt: skip
        "serve\x1b]0;pwned\x07\nname.json": text.encode(),
    }


def hostile_scenarios() -> dict[str, str]:
    """Scenario texts by file name (SCENARIOS); shared with the app fuzzer."""
    cfg = json.loads((Path(__file__).parent / "fixtures" / "hf" / "llama-3.1-8b.json").read_text())
    cfg["_name_or_path"] = "evil\ntouch PWNED\x1b]0;pwned\x07\u2028b: 1"
    base = {"schema_version": 1, "model": "llama-3.1-8b",
            "hardware": {"gpus": ["h100-sxm"], "gpus_per_node": 2}}  # fmt: skip
    texts = {
        "scenario.json": json.dumps(base),
        "scenario-name-inject.json": json.dumps(
            {**base, "model": "custom-llama", "model_config_json": cfg}
        ),
        "scenario-bigint.json": json.dumps(base)[:-1] + ', "rank_by": ' + "9" * 5000 + "}",
        "scenario-long-key.json": json.dumps({**base, "k" * 50_000: 1}),
        "scenario-1e14.json": json.dumps({**base, "workload": {"isl_tokens": 1e14}}),
    }
    return texts


def write_inputs(tmp: Path) -> None:
    """The files the valid base refers to (scenario JSON, estimate JSONL, client profiles) and
    their hostile variants."""
    for name, text in {**hostile_scenarios(), **hostile_profiles()}.items():
        (tmp / name).write_text(text)
    lines = [
        {"model": "llama-3.1-8b", "gpu": "h100-sxm", "isl": 128, "osl": 16},
        {"model": "nope", "gpu": "h100-sxm", "isl": 1, "osl": 1},
        {"model": "llama-3.1-8b", "gpu": "h100-sxm", "isl": -1, "osl": "x"},
        [1, 2],
        {"model": "llama-3.1-8b", "gpu": "h100-sxm", "isl": 1, "osl": 1, "tp": 1e30},
        {"model": "llama-3.1-8b", "gpu": "h100-sxm", "isl": 1e14, "osl": 1},
        {"model": "llama-3.1-8b", "gpu": "h100-sxm", "isl": 8, "osl": 8, "concurrency": 1e6},
        {"model": "llama-3.1-8b", "gpu": "h100-sxm", "isl": 8, "osl": 8, "k" * 50_000: 1},
        {"model": "llama\x1b]0;pwned\x07\n", "gpu": "h100-sxm", "isl": 8, "osl": 8},
    ]
    for name, doc in (("nvlink_on_amd", {"hardware": {"gpus": ["mi300x"], "intra_link": "nvlink5"}}),
                      ("invisible_name", {"name": "base\u200b"})):  # fmt: skip
        (tmp / f"{name}.json").write_text(json.dumps({"schema_version": 1, **doc}))
    if not (tmp / "pipe").exists():  # an --out FIFO hung report/calibrate forever (issue 16)
        os.mkfifo(tmp / "pipe")
    (tmp / "input.jsonl").write_text(
        "\n".join(json.dumps(x) for x in lines)
        + "\n{trunc\nNaN\n"
        + "[" * 100_000
        + "\n"
        + '{"model": "llama-3.1-8b", "gpu": "h100-sxm", "osl": 8, "isl": '
        + "9" * 5000
        + "}\n"
    )


def generate(rng: random.Random, sub: str, tmp: Path, *, cheap: bool = True) -> list[str]:
    """One argv for ``sub``: a valid base, then 0-4 mutations."""
    spec = FLAGS[sub]
    opts: list[list[str]] = [[f, _valid(rng, sub, f, tmp, cheap)] for f in spec["required"]]
    for f in spec["values"]:
        if f not in spec["required"] and f not in ("--scenario", "--input") and rng.random() < 0.2:
            opts.append([f, _valid(rng, sub, f, tmp, cheap)])
    for s in spec["switches"]:
        if rng.random() < {"--json": 0.7, "--no-sensitivities": 0.8}.get(s, 0.2):
            opts.append([s])
    if sub == "calibrate" and rng.random() < 0.002:  # a real (cheap) fit, rarely
        return ["calibrate", "--max-evals", "1", "--out", str(tmp / "cal.yaml"), "--json"]
    if rng.random() >= P_VALID.get(sub, 0.35) or not opts:
        for _ in range(rng.randint(1, 4)):
            _mutate(rng, sub, opts, spec, tmp)

    rng.shuffle(opts)
    argv = [sub] + [tok for o in opts for tok in o]
    if sub in ("calibrate", "crossval"):  # whatever the mutations did, never a real fit
        argv += ["--max-evals", "0"]
    if sub == "report" and rng.random() >= P_LIVE_REPORT:  # keep report cheap: bad --isl last
        argv += ["--isl", "0"]
    if sub == "validate" and rng.random() >= P_LIVE_VALIDATE:  # 4 valid argvs, 0.5 s each
        argv.append(rng.choice(["--row", "--rows=", "--all", "stray", "--json=1", "-x", "é"]))
    if rng.random() < 0.03:  # a flag with its value missing at the end
        argv.append(rng.choice(spec["values"] or ["--json"]))
    return argv


def _hostile(rng: random.Random, flag: str, tmp: Path) -> str:
    """A hostile value; output paths stay inside ``tmp`` (a valid run writes there, nowhere else)."""
    if flag == "--out":
        return rng.choice([
            str(tmp), str(tmp / "missing" / "x.pdf"), "", " ", str(tmp / "a\nb.pdf"),
            str(tmp / ("x" * 300 + ".pdf")), str(tmp / "ü🚀.pdf"), "/nonexistent/x.pdf",
            str(tmp / "pipe"), "/dev/null",
        ])  # fmt: skip
    if flag == "--profile" and rng.random() < 0.7:
        return str(tmp / rng.choice(PROFILES))
    if flag == "--scenario" and rng.random() < 0.5:
        return str(tmp / rng.choice(SCENARIOS))
    return rng.choice(HOSTILE)


def _mutate(rng: random.Random, sub: str, opts: list[list[str]], spec: dict, tmp: Path) -> None:
    kind = rng.random()
    all_flags = spec["values"]
    if kind < 0.45 and all_flags:  # a hostile value for a flag (replacing or adding)
        f = rng.choice(all_flags)
        value = _hostile(rng, f, tmp)
        for o in opts:
            if o[0] == f:
                o[1:] = [value]
                return
        opts.append([f, value])
    elif kind < 0.55 and opts:  # drop a flag (maybe a required one)
        opts.pop(rng.randrange(len(opts)))
    elif kind < 0.65 and all_flags:  # repeat a flag with another valid value
        f = rng.choice(all_flags)
        opts.append([f, _valid(rng, sub, f, tmp, True)])
    elif kind < 0.72:  # unknown flag / stray word / abbreviation / = form
        opts.append([rng.choice(["--foo", "--js", "-x", "stray", "--tp=3", "--json=1",
                                 "--mod", "--s", "—json", "--JSON", "-1"])])  # fmt: skip
    elif kind < 0.80 and all_flags:  # a hostile value through --flag=value
        f = rng.choice(all_flags)
        opts.append([f"{f}={_hostile(rng, f, tmp)}"])
    elif kind < 0.88:  # conflicting / cross-field combinations
        pairs = {
            "estimate": [["--concurrency", "4"], ["--qps", "2"], ["--spec-draft", "llama-3.2-1b"],
                         ["--concurrency", "max"], ["--pp", "1024"], ["--tp", "1024"],
                         ["--model", "x.json"], ["--input", str(tmp / "input.jsonl")],
                         ["--spec-draft", "nope"], ["--link", "xgmi"],
                         # cross-field impossibilities (issue 36): a link of the wrong scope or
                         # vendor, clients spread unevenly or fewer than replicas
                         ["--link", "ib-ndr"], ["--inter-link", "nvlink4"],
                         ["--gpu", "mi300x", "--link", "nvlink5"], ["--dp", "3", "--concurrency", "8"],
                         ["--dp", "4", "--concurrency", "1"]],
            "memory": [["--pp", "1000"], ["--tp", "1024"], ["--context", "10000000"],
                       ["--max-model-len", "1"], ["--gpu-memory-utilization", "0.05"],
                       ["--context", "4096", "--max-model-len", "16"],
                       ["--model", "llama-3.1-405b", "--tp", "1"]],
            "collective": [["--n", "4096"], ["--link", "xgmi"], ["--n", "9"], ["--gpu", "mi300x"],
                           ["--gpu", "mi300x", "--link", "nvlink4"], ["--n", "1"]],
            "recommend": [["--scenario", str(tmp / "scenario.json")], ["--spec-draft", "nope"],
                          ["--scenario", str(tmp / "nvlink_on_amd.json")],
                          ["--scenario", str(tmp / "invisible_name.json")],
                          ["--gpu", "h100-sxm,h100-sxm"], ["--tpot-p99-ms", "0.001"],
                          ["--qps", "1e6"], ["--isl", "2000000"], ["--spec-acceptance", "0"],
                          ["--spec-acceptance", "1"], ["--scenario", "/dev/null"],
                          ["--scenario", "/dev/zero"], ["--scenario", str(tmp)],
                          ["--scenario", str(tmp / rng.choice(SCENARIOS))],
                          ["--profile", str(tmp / rng.choice(PROFILES))],
                          ["--gpu", ",".join(sorted(accelerators())[:17])]],
        }  # fmt: skip
        pairs["estimate"] += [["--profile", str(tmp / rng.choice(PROFILES))]]
        pairs["report"] = pairs["recommend"] + [["--out", str(tmp)], ["--out", "/nonexistent/x.pdf"],
                                               ["--out", ""]]  # fmt: skip
        pairs["deploy"] = pairs["recommend"] + [
            ["--out", str(tmp / "scenario.json")], ["--engine", "generic"],
            ["--deployment", "h100-sxm.tp4.pp1.dp2.fp9.fp8"], ["--format", "yaml"],
            ["--engine-version", "0.4.0"], ["--max-context", "0"], ["--max-context", "x"]]  # fmt: skip
        pairs["calibrate"] = [
            ["--out", str(tmp)],
            ["--out", "/nonexistent/x.yaml"],
            ["--max-evals", rng.choice(["-1", "x", "", "1e30", "nan", "10001"])],
        ]
        pairs["crossval"] = [
            ["--schemes", rng.choice(["engine", "source,source", "", ",", "sources"])],
            ["--all", "--schemes", "source"], ["--warm"], ["--ranges", "--jobs", "1"],
            ["--jobs", rng.choice(["0", "65", "-1", "x"])],
        ]  # fmt: skip
        choices = pairs.get(sub)
        if choices:
            opts.append(list(rng.choice(choices)))
        else:
            opts.append([rng.choice(["--rows", "--all", "x", "--rows=1", "--json=true", "-r"])])
    elif opts:  # a valid flag with a value from another flag's table
        f = rng.choice(all_flags or ["--json"])
        g = rng.choice(list(FLAGS["estimate"]["values"]))
        opts.append([f, _valid(rng, sub, g, tmp, True)] if f != "--json" else [f])


@dataclass
class Outcome:
    argv: list[str]
    code: int | str
    seconds: float
    stdout: str
    stderr: str
    problem: str | None = None


@dataclass
class Tally:
    per_sub: dict[str, int] = field(default_factory=dict)
    seconds_per_sub: dict[str, float] = field(default_factory=dict)
    codes: dict[str, int] = field(default_factory=dict)
    times: list[float] = field(default_factory=list)
    slowest: list[tuple[float, list[str]]] = field(default_factory=list)
    problems: list[Outcome] = field(default_factory=list)

    def add(self, o: Outcome) -> None:
        sub = o.argv[0] if o.argv else "(none)"
        self.per_sub[sub] = self.per_sub.get(sub, 0) + 1
        self.seconds_per_sub[sub] = self.seconds_per_sub.get(sub, 0.0) + o.seconds
        self.codes[str(o.code)] = self.codes.get(str(o.code), 0) + 1
        self.times.append(o.seconds)
        self.slowest = sorted([*self.slowest, (o.seconds, o.argv)], key=lambda t: -t[0])[:5]
        if o.problem:
            self.problems.append(o)


def _strict_json(text: str) -> object:
    def bad(name: str) -> object:
        raise ValueError(f"non-standard constant {name}")

    return json.loads(text, parse_constant=bad)


def check(argv: list[str], code: object, out: str, err: str, flags: list[str]) -> str | None:
    """None if the outcome keeps the contract, else what is wrong."""
    raw = next((c for c in out + err if not c.isprintable() and c not in "\n\t"), None)
    if raw is not None:  # an escape sequence or line break from a file reached the terminal
        return f"raw control character {raw!r} printed"
    if any(line.startswith("touch PWNED") for line in out.splitlines()):
        return "a file's text printed as a shell line (launch.sh injection)"
    if code == 0:
        if not out.strip():
            return "exit 0 without output"
        if "--json" in argv and "--json" in _parsed_switches(argv):
            lines = out.strip().splitlines()
            if len(lines) != 1:
                return f"--json printed {len(lines)} lines"
            try:
                obj = _strict_json(lines[0])
            except ValueError as exc:
                return f"--json output is not strict JSON: {exc}"
            if not isinstance(obj, dict):
                return "--json output is not an object"
        if "Traceback" in err or "Traceback" in out:
            return "traceback"
        return None
    if code == 2:
        if out:
            return "exit 2 with stdout"
        if not err.endswith("\n") or err.count("\n") != 1:
            return f"exit 2 with {err.count(chr(10))} stderr lines"
        if not err.startswith("advisor"):
            return "exit 2 message does not start with the program name"
        if not (any(f in err for f in flags) or "unrecognized arguments" in err
                or "argument" in err):  # fmt: skip
            return "exit 2 message names no flag"
        return None
    return f"exit code {code!r}"


def _parsed_switches(argv: list[str]) -> list[str]:
    return [a for a in argv if a == "--json"]


def run_one(argv: list[str], budget_s: float) -> Outcome:
    """``advisor.cli.main(argv)`` in-process, capturing streams; a hang is a call over budget."""
    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code: int | str = main(argv)
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else f"SystemExit({exc.code!r})"
    except BaseException as exc:  # noqa: BLE001 - that is the finding
        code = f"raised {type(exc).__name__}: {exc}"
    dt = time.perf_counter() - t0
    o = Outcome(argv, code, dt, out.getvalue(), err.getvalue())
    sub = argv[0] if argv else ""
    flags = FLAGS.get(sub, {"values": [], "switches": []})
    o.problem = check(argv, code, o.stdout, o.stderr, flags["values"] + flags["switches"])
    if o.problem is None and dt > budget_s:
        o.problem = f"took {dt:.1f} s (budget {budget_s:.0f} s)"
    return o

"""``advisor calibrate --from FILE ...``: fit a client profile to the client's own benchmark files.

The deployment the files came from is stated with --model --gpu --tp --pp --weights --kv --engine
(and --isl --osl when a file lacks them); the profile is written to --out and the error on the
files' measurements is printed before (shipped calibration) and after the fit.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from advisor.catalog import KV_DTYPES, WEIGHT_DTYPES, UnknownIdError, get_model, models
from advisor.catalog.quoting import inert
from advisor.cli import CliInputError, choice_of, int_in, shown
from advisor.cli.common import resolve_gpu, writable_out_path, write_out
from advisor.perf.model.profiles import ENGINES

MAX_FILES = 50


def add_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("client profile (with --from)")
    g.add_argument(
        "--from", dest="from_files", action="append", default=None, metavar="FILE",
        help="a benchmark result file (vllm bench, SGLang bench_serving, GenAI-Perf/AIPerf, "
        "trtllm-bench, nccl-tests); repeat for several",
    )  # fmt: skip
    g.add_argument("--model", default=None, help="catalog model id the files measured")
    g.add_argument("--gpu", default=None, help="accelerator id the files measured")
    g.add_argument("--tp", type=int_in(1, 1024), default=1)
    g.add_argument("--pp", type=int_in(1, 1024), default=1)
    g.add_argument("--weights", type=choice_of(WEIGHT_DTYPES, "weights dtype"), default="bf16")
    g.add_argument("--kv", type=choice_of(KV_DTYPES, "KV dtype"), default="bf16")
    g.add_argument("--engine", type=choice_of(ENGINES, "engine"), default=None)
    g.add_argument("--isl", type=int_in(1, 2_000_000), default=None, help="input tokens/request")
    g.add_argument("--osl", type=int_in(1, 2_000_000), default=None, help="output tokens/request")
    g.add_argument(
        "--inter-link", dest="inter_link", default=None,
        help="interconnect between hosts, for nccl-tests files whose ranks span hosts "
        "(default ib-ndr, said so)",
    )  # fmt: skip
    g.add_argument(
        "--ep",
        action="store_true",
        help="the runs used expert parallelism over the TP GPUs (MoE models; EP = TP)",
    )
    g.add_argument(
        "--dp-attention",
        dest="dp_attention",
        action="store_true",
        help="the runs used attention data parallel over the TP GPUs (MoE models)",
    )
    g.add_argument("--name", default=None, help="profile name (default: the --out file's stem)")


def run(args: argparse.Namespace) -> dict:
    from advisor.catalog import interconnects
    from advisor.perf.calibration.client_profile import (
        ProfileDoc,
        ProfileRefused,
        deployment_problem,
        dump,
        fit_profile,
    )
    from advisor.perf.importers import BenchmarkFileError, Deployment, load

    files = args.from_files
    if len(files) > MAX_FILES:
        raise CliInputError(f"--from given {len(files)} times; at most {MAX_FILES}")
    for flag in ("model", "gpu", "engine", "out"):
        if getattr(args, flag) is None:
            raise CliInputError(
                f"--{flag} is required with --from (the deployment the files measured)"
            )
    if args.model not in models():
        raise CliInputError(
            f"--model: unknown model {shown(args.model)} (allowed: {', '.join(sorted(models()))})"
        )
    gpu = resolve_gpu(args.gpu)
    if args.pp > get_model(args.model).num_hidden_layers:
        raise CliInputError(f"--pp {args.pp} exceeds the model's layers")
    out = writable_out_path(args.out, "profile.yaml")
    name = (args.name or Path(args.out).stem).strip()
    if not name or len(name) > 120 or not name.isprintable():
        raise CliInputError(f"--name {shown(name)}: 1..120 printable characters")
    inter = [k for k, v in interconnects().items() if v.mismatch(gpu, "inter_node") is None]
    if args.inter_link is not None and args.inter_link not in inter:
        raise CliInputError(
            f"--inter-link: {shown(args.inter_link)} is not an inter-node interconnect for "
            f"{gpu.id} (allowed: {', '.join(sorted(inter))})"
        )
    dep = Deployment(
        model=args.model, gpu=gpu.id, tp=args.tp, pp=args.pp, weights=args.weights, kv=args.kv,
        engine=args.engine, isl=args.isl, osl=args.osl, inter_link=args.inter_link,
        ep=bool(args.ep), dp_attention=bool(args.dp_attention),
    )  # fmt: skip
    why = deployment_problem(dep)
    if why:  # before reading the files: no fit can describe a deployment that never ran
        raise CliInputError(f"--model --gpu --tp --pp --weights --ep --dp-attention: {why}")
    imported = []
    for f in files:
        try:
            imported.append(load(f, dep))
        except (BenchmarkFileError, UnknownIdError) as exc:
            raise CliInputError(f"--from {shown(f)}: {exc}") from None
    try:
        fit = fit_profile(imported, dep, name)
    except ProfileRefused as exc:
        raise CliInputError(f"--from: {exc}") from None
    write_out(out, dump(fit.doc).encode("utf-8"))
    doc = fit.doc
    return {
        "out": str(out),
        "name": doc["name"],
        "digest": doc["digest"][:12],
        "deployment": doc["deployment"],
        "files": doc["files"],
        "fitted": doc["fitted"],
        "held": doc["held"],
        "constants": doc["constants"],
        "summary": doc["summary"],
        "points": doc["points"],
        "collectives": doc["collectives"],
        "holdout": doc["holdout"],
        "range": ProfileDoc.model_validate(doc).domain().text(),
        "notes": list(fit.notes),
    }


def _pct(v: float | None) -> str:
    return "n/a (a prediction failed)" if v is None else f"{v:.1f}%"


def _constant(key: str, v: float) -> str:
    """A fitted constant for the terminal: overheads in ms (0 when below a nanosecond).

    >>> _constant("step_overhead_s", 2.9e-17), _constant("mem_factor", 1.00426)
    ('step_overhead_s = 0 ms', 'mem_factor = 1.004')
    """
    if key.endswith("_s"):
        return f"{key} = {v * 1e3 if v >= 1e-9 else 0:.4g} ms"
    return f"{key} = {v:.4g}"


def render(r: dict) -> str:
    s = r["summary"]
    lines = [
        f"wrote client profile {r['name']!r} to {inert(r['out'])} (digest {r['digest']})",
        f"deployment: {r['deployment']['model']} on {r['deployment']['gpu']} TP={r['deployment']['tp']} "
        f"PP={r['deployment']['pp']} {r['deployment']['weights']}/{r['deployment']['kv']} "
        f"{r['deployment']['engine']}",
        *(
            f"file: {inert(f['name'])} ({f['format']}, {f['points']} points, sha256 {f['sha256'][:12]})"
            for f in r["files"]
        ),
        "fitted: " + (", ".join(_constant(k, r["constants"][k]) for k in r["fitted"]) or "nothing"),
        *(f"held at the shipped calibration: {k} ({why})" for k, why in r["held"].items()),
        f"out of sample (each run predicted by the profile fitted to the others): median error "
        f"{_pct(s.get('loo_median_ape_pct'))}, shipped calibration {_pct(s['median_ape_before_pct'])}",
        f"in sample on these {s['points']} measurements: median {_pct(s['median_ape_before_pct'])} "
        f"before, {_pct(s['median_ape_after_pct'])} after (largest after: "
        f"{_pct(s['max_ape_after_pct'])})",
    ]
    h = r.get("holdout")
    if h:
        lines.append(f"verdict, judged on runs held out: {h['verdict']}")
        lines += [
            inert(f"  held out {x['run']}: {_pct(x['shipped_pct'])} shipped, "
                  f"{_pct(x['held_out_pct'])} with the profile fitted without it "
                  f"({'n/a' if x['change_pp'] is None else format(x['change_pp'], '+.1f')} pp, "
                  f"{x['verdict']})")
            for x in h["runs"]
        ]  # fmt: skip
    if r.get("range"):
        lines.append(inert(f"applies over {r['range']}; elsewhere the shipped calibration"))
    for p in r["points"]:
        b = "n/a" if p["before_pct"] is None else f"{p['before_pct']:+.1f}%"
        a = "n/a" if p["after_pct"] is None else f"{p['after_pct']:+.1f}%"
        lo = "" if p.get("loo_pct") is None else f", left out {p['loo_pct']:+.1f}%"
        flag = f"  FLAGGED, not fitted: {p['flagged']}" if p["flagged"] else ""
        lines.append(inert(f"  {p['id']} ({p['kind']}): before {b}, after {a}{lo}{flag}"))
    if r["collectives"]:
        c = r["collectives"]
        lines.append(
            inert(
                f"all-reduce: {c['rows']} rows, median error {_pct(c['median_ape_pct'])} ({c['note']})"
            )
        )
    lines += [inert(f"note: {n}") for n in r.get("notes", [])]
    return "\n".join(lines)

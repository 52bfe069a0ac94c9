"""``advisor recommend``: the SLA-driven deployment search (advisor.search.recommend)."""

from __future__ import annotations

import argparse

from pydantic import ValidationError

from advisor.catalog import KV_DTYPES, WEIGHT_DTYPES, accelerators, interconnects, models
from advisor.cli import CliInputError, add_json_flag, choice_of, float_in, int_in, shown
from advisor.cli.common import read_input_file
from advisor.cli.profile_opt import (
    add_profile_flag,
    apply_to_recommendation,
    load_profile,
    profile_line,
    render_line,
)
from advisor.cli.profile_opt import check as check_profile
from advisor.perf.model.intervals import WIDE_FACTOR, narrowing_advice, range_note
from advisor.perf.model.profiles import ENGINES
from advisor.scenario import (
    CAPEX_RANGE_USD,
    DEFAULT_ENGINE,
    E2E_RANGE_MS,
    ISL_CV_HELP,
    ISL_CV_MAX,
    OSL_CV_HELP,
    OSL_CV_MAX,
    RANKING_TEXT,
    RATE_RANGE_PER_S,
    THINK_TIME_DEFAULT_S,
    TPOT_RANGE_MS,
    TTFT_DEFAULT_MS,
    TTFT_RANGE_MS,
)


def _list_of(allowed, what, most: int = 16):
    def parse(text: str) -> list[str]:
        out = [v.strip().lower() for v in text.split(",") if v.strip()]
        if len(out) > most:  # the scenario's limit (Hardware.gpus), said against the flag
            raise argparse.ArgumentTypeError(f"{len(out)} {what}s listed; at most {most}")
        bad = [v for v in out if v not in allowed]
        if not out or bad:
            raise argparse.ArgumentTypeError(
                f"unknown {what} {shown(bad[0] if bad else text)} (allowed: {', '.join(allowed)})"
            )
        twice = sorted({v for v in out if out.count(v) > 1})
        if twice:
            raise argparse.ArgumentTypeError(f"{what} {twice[0]!r} is listed twice")
        return out

    return parse


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("recommend", help="search deployments that meet a latency SLA")
    p.add_argument(
        "--scenario",
        help="scenario JSON file (other flags are then ignored, but "
        "--on-prem, --max-capex-usd and --redundancy apply on top)",
    )
    p.add_argument("--model", default="llama-3.1-70b", help="catalog model id")
    p.add_argument(
        "--gpu",
        type=_list_of(sorted(accelerators()), "accelerator"),
        default=["h100-sxm"],
        help="accelerator id(s), comma-separated",
    )
    p.add_argument("--gpus-per-node", type=int_in(1, 72), default=8)
    p.add_argument("--nodes", type=int_in(1, 1024), default=1)
    p.add_argument("--intra", type=choice_of(sorted(interconnects()), "link"), default=None)
    p.add_argument("--inter", type=choice_of(sorted(interconnects()), "link"), default="ib-ndr")
    p.add_argument("--isl", type=int_in(1, 2_000_000), default=1024, help="input tokens")
    p.add_argument("--osl", type=int_in(1, 200_000), default=256, help="output tokens")
    p.add_argument("--isl-cv", type=float_in(0, ISL_CV_MAX), default=0.0,
                   help=f"{ISL_CV_HELP} Default 0.")  # fmt: skip
    p.add_argument("--osl-cv", type=float_in(0, OSL_CV_MAX), default=0.0,
                   help=f"{OSL_CV_HELP} Default 0.".replace("%", "%%"))  # argparse formats %  # fmt: skip
    p.add_argument(
        "--qps",
        type=float_in(*RATE_RANGE_PER_S),
        default=None,
        help="requests/s (default 2 unless --users is given)",
    )
    p.add_argument(
        "--users",
        type=int_in(1, 1_000_000),
        default=None,
        help="concurrent users over the whole deployment (all its DP replicas), instead of "
        "--qps (closed loop)",
    )
    p.add_argument(
        "--think-time-s",
        type=float_in(0, 3600),
        default=THINK_TIME_DEFAULT_S,
        help="seconds each user reads an answer before the next request (0..3600, "
        "default 15: NVIDIA AIPerf docs, a chatbot user reads a response in ~15 s)",
    )
    p.add_argument("--ttft-p99-ms", type=float_in(*TTFT_RANGE_MS), default=None,
                   help="with no target given: TTFT <= 2000 ms (the MLPerf Llama 2 70B server "
                   "bound) and TPOT <= 50 ms")  # fmt: skip
    p.add_argument("--tpot-p99-ms", type=float_in(*TPOT_RANGE_MS), default=None)
    p.add_argument("--e2e-p99-ms", type=float_in(*E2E_RANGE_MS), default=None)
    p.add_argument(
        "--percentile",
        type=choice_of(["50", "90", "95", "99"], "percentile"),
        default="99",
        help="percentile the --*-p99-ms targets apply to",
    )
    p.add_argument(
        "--confidence",
        type=float_in(0.5, 0.99),
        default=0.8,
        help="a target is met when the upper end of the predicted percentile's range at this "
        "confidence is within it (0.5..0.99, default 0.8)",
    )
    p.add_argument(
        "--weights",
        type=_list_of(list(WEIGHT_DTYPES), "weight dtype"),
        default=None,
        help="weight dtypes to search (default: a model released quantized in its released "
        "precision only, e.g. gpt-oss in mxfp4, DeepSeek in fp8; else fp16, fp8, int8, int4); a "
        "list given here is searched as given (re-quantizing is an explicit choice)",
    )
    p.add_argument("--kv", type=_list_of(list(KV_DTYPES), "KV dtype"), default=["fp16", "fp8"])
    p.add_argument(
        "--engine",
        type=choice_of(ENGINES, "engine"),
        default=DEFAULT_ENGINE,
    )
    p.add_argument(
        "--spec-draft", default=None,
        help="draft model id with the target's tokenizer, or mtp (the model's own head); "
        "enables speculation. A model with its own MTP head (DeepSeek-V3/R1, GLM-4.5) is "
        "searched with it by default",
    )  # fmt: skip
    p.add_argument("--no-speculative", action="store_true",
                   help="do not search speculative decoding (not even a model's own MTP head)")  # fmt: skip
    p.add_argument("--spec-tokens", type=int_in(1, 16), default=None,
                   help="draft tokens per step (default: the MTP layers of an own head, else 4)")  # fmt: skip
    p.add_argument("--spec-acceptance", type=float_in(0, 1), default=None,
                   help="per drafted token (default: the pair's published figure, "
                   "data/spec_acceptance.yaml, else 0.7)")  # fmt: skip
    p.add_argument("--no-disaggregated", action="store_true", help="skip prefill/decode pools")
    add_profile_flag(p)
    p.add_argument("--rank-by", type=choice_of(["cost", "gpus"], "ranking"), default="cost",
                   help=f"cost: {RANKING_TEXT['cost']}; gpus: {RANKING_TEXT['gpus']}")  # fmt: skip
    add_cost_flags(p)
    p.add_argument(
        "--deployment",
        type=_deployment,
        default=None,
        help="also evaluate this deployment for the scenario, e.g. h100-sxm.tp4.pp1.dp2.fp8.fp8 "
        "(accelerator.tpN.ppN.dpN[.epN][.dpaN][.ptpN.pdpN[.pepN][.pdpaN]].weights.kv[.spec]; "
        "ptp/pdp: a prefill pool; ep/dpa = TP: MoE expert parallel, attention data parallel)",
    )
    add_json_flag(p)
    return p  # fmt: skip


def add_cost_flags(p: argparse.ArgumentParser) -> None:
    """--on-prem, --max-capex-usd, --redundancy: the client's constraints on what is bought."""
    p.add_argument("--on-prem", action="store_true", default=None,
                   help="the data must stay on-prem: bought GPUs only, no rental prices shown; "
                   "cost is purchase + power + hosting")  # fmt: skip
    p.add_argument("--max-capex-usd", type=float_in(*CAPEX_RANGE_USD), default=None,
                   help="budget cap on the purchase (whole servers), USD; deployments above it "
                   "are listed with the reason, not recommended")  # fmt: skip
    p.add_argument("--redundancy", type=choice_of(["none", "n+1"], "redundancy"), default=None,
                   help="n+1: add a spare replica (bought, not counted in the capacity) so one "
                   "failure keeps the SLA (default none)")  # fmt: skip


def apply_cost_flags(args: argparse.Namespace, sc):  # noqa: ANN001, ANN201
    """The scenario with the flags of ``add_cost_flags`` that were given put in."""
    cost, options = {}, {}
    if getattr(args, "on_prem", None):
        cost |= {"on_prem": True, "mode": "purchase"}
    if getattr(args, "max_capex_usd", None) is not None:
        cost["max_capex_usd"] = args.max_capex_usd
    if getattr(args, "redundancy", None) is not None:
        options["redundancy"] = args.redundancy
    if not cost and not options:
        return sc
    from advisor.scenario import Scenario

    doc = sc.model_dump()
    doc["cost"] |= cost
    doc["options"] |= options
    return Scenario.model_validate(doc)


def _deployment(text: str):
    from advisor.search.deployment_spec import DeploymentSpecError, parse_spec

    try:
        return parse_spec(text)
    except DeploymentSpecError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def scenario_from_args(args: argparse.Namespace):
    """The scenario of ``--scenario`` or the flags, with --on-prem, --max-capex-usd and
    --redundancy put in (recommend, report and deploy)."""
    return apply_cost_flags(args, _scenario_from_flags(args))


def _scenario_from_flags(args: argparse.Namespace):
    from advisor.scenario import (
        MAX_SCENARIO_BYTES,
        SLA,
        Hardware,
        Options,
        Scenario,
        ScenarioError,
        Workload,
        format_validation_error,
        load_scenario,
    )

    if args.scenario is not None:
        data = read_input_file(args.scenario, "--scenario", MAX_SCENARIO_BYTES)
        try:
            return load_scenario(data)
        except ScenarioError as exc:
            raise CliInputError(f"--scenario {args.scenario!r}: {exc}") from None
    if args.model not in models():
        raise CliInputError(
            f"--model: unknown model {args.model!r} (allowed: {', '.join(sorted(models()))})"
        )
    spec = _speculation(args, models()[args.model])
    from advisor.catalog import accelerators
    from advisor.cli.common import check_context, check_link

    check_context(models()[args.model], args.isl + args.osl, f"--isl {args.isl} + --osl {args.osl}")
    gpus = [accelerators()[g] for g in args.gpu if g in accelerators()]
    for flag, value, scope in (("--intra", args.intra, "intra_node"),
                               ("--inter", args.inter, "inter_node")):  # fmt: skip
        if value is not None:
            check_link(value, gpus, scope, flag)
    targets = (args.ttft_p99_ms, args.tpot_p99_ms, args.e2e_p99_ms)
    try:
        s = Scenario(
            model=args.model,
            hardware=Hardware(gpus=args.gpu, gpus_per_node=args.gpus_per_node, nodes=args.nodes,
                              intra_link=args.intra, inter_link=args.inter),
            workload=Workload(isl_tokens=args.isl, osl_tokens=args.osl, isl_cv=args.isl_cv,
                              osl_cv=args.osl_cv,
                              arrival_rate_per_s=_rate(args), concurrent_users=args.users,
                              think_time_s=args.think_time_s),
            sla=SLA(percentile=int(args.percentile),
                    ttft_ms=targets[0] if any(v is not None for v in targets) else TTFT_DEFAULT_MS,
                    tpot_ms=targets[1] if any(v is not None for v in targets) else 50.0,
                    e2e_ms=targets[2], confidence=args.confidence),
            options=Options(**({"weight_dtypes": args.weights, "released_weights": False}
                               if args.weights is not None else {}),
                            kv_dtypes=args.kv, engine=args.engine,
                            **spec,
                            disaggregated=not args.no_disaggregated),
            rank_by=args.rank_by,
        )  # fmt: skip
    except ValidationError as exc:
        raise CliInputError(_with_flags(format_validation_error(exc))) from None
    from advisor.search.comparison import title

    # named for what it is about (it was "cli", which a client's PDF printed as its title)
    return s.model_copy(update={"name": title(s)})


#: Scenario field -> the flag that sets it, so a message from the scenario's checks names the
#: flag the user typed (it said "gpus: List should have at most 16 items").
_FLAG_OF = {
    "gpus": "--gpu", "gpus_per_node": "--gpus-per-node", "nodes": "--nodes",
    "intra_link": "--intra", "inter_link": "--inter", "isl_tokens": "--isl",
    "osl_tokens": "--osl", "isl_cv": "--isl-cv", "osl_cv": "--osl-cv", "arrival_rate_per_s": "--qps", "concurrent_users": "--users",
    "think_time_s": "--think-time-s", "percentile": "--percentile", "ttft_ms": "--ttft-p99-ms",
    "tpot_ms": "--tpot-p99-ms", "e2e_ms": "--e2e-p99-ms", "confidence": "--confidence",
    "weight_dtypes": "--weights", "kv_dtypes": "--kv", "engine": "--engine",
    "draft_model": "--spec-draft", "spec_acceptance": "--spec-acceptance", "rank_by": "--rank-by",
}  # fmt: skip


def _with_flags(message: str) -> str:
    """``field.path: ...`` problems of format_validation_error with the field's flag in front."""
    parts = []
    for problem in message.split("; "):
        head = problem.split(":", 1)[0].split(".")[-1]
        parts.append(f"{_FLAG_OF[head]} ({problem}" + ")" if head in _FLAG_OF else problem)
    return "; ".join(parts)


def _speculation(args: argparse.Namespace, model) -> dict:
    """Options of speculative decoding from the flags: a chosen draft (refused with the reason
    when it has another tokenizer), or the model's own MTP head by default; k and the
    acceptance rate default to the head's layers and the pair's published figure."""
    from advisor.catalog.drafts import (
        MTP,
        default_spec_tokens,
        has_own_head,
        tokenizer_problem,
    )
    from advisor.catalog.spec_acceptance import default_acceptance

    draft = args.spec_draft
    if draft is not None and args.no_speculative:
        raise CliInputError(f"--spec-draft {draft} and --no-speculative: give one of them")
    if draft == MTP and not has_own_head(model):
        raise CliInputError(f"--spec-draft mtp: {model.id} has no MTP head of its own")
    if draft not in (None, MTP):
        if draft not in models():
            raise CliInputError(f"--spec-draft: unknown model {shown(draft)} (allowed: {MTP}, "
                                f"{', '.join(sorted(models()))})")  # fmt: skip
        why = tokenizer_problem(model, models()[draft])
        if why:
            raise CliInputError(f"--spec-draft {draft}: {why}")
    if draft is None and has_own_head(model) and not args.no_speculative:
        draft = MTP
    k = args.spec_tokens or default_spec_tokens(model.id, draft)
    a = args.spec_acceptance
    if a is None:
        a = default_acceptance(model.id, draft).acceptance
    return {"speculative": draft is not None, "draft_model": draft, "spec_tokens": k,
            "spec_acceptance": a}  # fmt: skip


def _rate(args: argparse.Namespace) -> float | None:
    if args.users is not None and args.qps is not None:
        raise CliInputError(f"--qps {args.qps:g} and --users {args.users}: give one load, not both")
    return None if args.users is not None else (args.qps if args.qps is not None else 2.0)


def run(args: argparse.Namespace) -> dict:
    from advisor.catalog.quality import quality_for
    from advisor.search.budget import budget
    from advisor.search.recommend import recommend_within

    sc = scenario_from_args(args)
    profile = scenario_profile(args, sc)
    rec, fallback = recommend_within(sc)
    out = rec.model_dump(mode="json")
    out["budget"] = None if rec.best is None else budget(sc, rec.best).model_dump(mode="json")
    out["quality"] = (
        None if rec.best is None else quality_for(sc.model, rec.best.weights, rec.best.kv)
    )
    if getattr(args, "deployment", None) is not None:
        from advisor.search.focus import evaluate_spec

        out["focus"] = evaluate_spec(sc, args.deployment).model_dump(mode="json")
    return apply_to_recommendation(out, profile, fallback) if profile is not None else out


def scenario_profile(args: argparse.Namespace, sc):  # noqa: ANN001, ANN201
    """--profile, checked against the scenario's accelerators and engine, made active."""
    profile = load_profile(getattr(args, "profile", None))
    if profile is not None:
        check_profile(profile, sc.hardware.gpus, sc.options.engine)
    return profile


def budget_lines(bg: dict) -> list[str]:
    """The budget (advisor/search/budget.py) as text lines."""
    from advisor.search.budget import Budget, plural, purchase_text, spare_text

    b = Budget.model_construct(**bg)
    spare = f" ({spare_text(b)})" if spare_text(b) else ""
    # "x", not "×": a Latin-1 terminal gets the same bytes as everyone else
    buy = (
        f"purchase {purchase_text(b).replace('×', 'x')}; " if bg["purchase_usd"] is not None else ""
    )
    per_user = (
        f"; ${bg['usd_per_user_month']:,.2f} per user per month"
        if bg["usd_per_user_month"] is not None
        else ""
    )
    parts = ", ".join(f"{x['item']} ${x['usd_per_month']:,.0f}" for x in bg["lines"])
    return [
        f"budget: {plural(bg['gpus'], 'GPU')} in {plural(bg['servers'], 'server')}{spare}; {buy}"
        f"${bg['monthly_usd']:,.0f} per month ({parts}){per_user}; "
        f"${bg['usd_per_million_tokens']:.3f} per 1M output tokens",
    ]


def _wide_lines(r: dict) -> list[str]:
    """Issue 37: the best deployment's (or, with none, the closest near miss's) ranges wider
    than 3x their predictions, and the measurement that would narrow them."""
    dep = r["best"] or (r["near_misses"][0]["deployment"] if r.get("near_misses") else None)
    wide = ((dep or {}).get("intervals") or {}).get("wide")
    if not wide:
        return []
    who = "" if r["best"] else "closest deployment: "
    if (r["best"] or {}).get("at_risk"):
        # the AT RISK headline above already names the measurement that narrows these ranges
        return [f"  WIDE RANGE: {', '.join(wide)}: the steady-service range is wider than "
                f"{WIDE_FACTOR:g}x the prediction; the measurement named above narrows it"]  # fmt: skip
    return ["  WIDE RANGE: " + who + narrowing_advice(
        ", ".join(wide), "the chosen engine", dep["gpu"], "the scenario's load",
        "steady-service range")]  # fmt: skip


def render(r: dict) -> str:
    lines = [f"{r['model']}: {r['sla']}  ({r['candidates_evaluated']:,} deployments evaluated, "
             f"{r['feasible']:,} meet the SLA, "
             + (f"{r['at_risk_count']:,} at risk, " if r.get("at_risk") else "")
             + f"{r['elapsed_ms']:.0f} ms)"]  # fmt: skip
    b = r["best"]
    if b is None:
        lines.append(f"NO DEPLOYMENT: {r['no_best_reason']}")
    else:
        risk = r.get("at_risk")
        lines += [
            f"best (AT RISK): {b['description']}" if risk else f"best: {b['description']}",
            *([f"  {risk}"] if risk else []),
            f"  GPUs {b['gpus']} ({b['nodes']} node(s)); ${b['usd_per_million_tokens']:.3f} "
            f"per 1M output tokens; {b['throughput_tok_s']:.0f} tok/s "
            f"({b['throughput_per_gpu_tok_s']:.0f}/GPU); headroom {b['headroom']:.1f}x",
        ]
        iv = b["intervals"]
        for m in ("ttft_ms", "tpot_ms", "e2e_ms"):
            v = b[m]
            lo, hi = iv[m]
            note = range_note(v[f"p{iv['percentile']}"], lo, hi)
            b_lo, b_hi = (iv.get("benchmark") or {}).get(m, (None, None))
            bench = f"; benchmark run {b_lo:.1f}-{b_hi:.1f}" if b_lo is not None else ""
            lines.append(
                f"  {m[:-3].upper():5s} P50 {v['p50']:.1f}  P90 {v['p90']:.1f}  "
                f"P95 {v['p95']:.1f}  P99 {v['p99']:.1f} ms  "
                f"(P{iv['percentile']} {iv['confidence']:.0%} steady range {lo:.1f}-{hi:.1f}{note}"
                f"{bench})"
            )
    lines += _wide_lines(r)
    if r.get("client_profile"):
        lines.append(render_line(r["client_profile"]))
    if r.get("budget"):
        lines += budget_lines(r["budget"])
    for q in r.get("quality") or []:
        what = "weights" if q["tensor"] == "weights" else "KV cache"
        released = q["finding"].startswith("the publisher's own")
        parts = (
            [q["finding"]]
            if released
            else ([] if q["measured"] else ["not measured for this model"])
        )
        parts += q["notes"] + ([q["unknown"]] if q.get("unknown") else [])
        lines.append(f"quality, {what} {q['dtype']}: " + "; ".join(parts))
    lines.append("why:" if b is not None else "why no deployment meets the SLA:")
    lines += [f"  - {x}" for x in r["explanation"]]
    dm = r["decision_matrix"]
    shape = f" (read as {dm['article_shape']} per replica)" if dm.get("article_shape") else ""
    # as the PDF words it: None means there is no recommendation to hold the rule against
    verdict = {True: "agrees", False: "differs", None: "cannot be compared (no deployment)"}
    lines.append(f"article ({dm['row']}): {dm['article_answer']}{shape}; {verdict[dm['agrees']]}")
    if dm.get("note"):
        lines.append(f"  note: {dm['note']}")
    lines += [f"  - {x}" for x in dm["differences"]]
    if r["near_misses"]:
        lines.append("near misses:")
        lines += [f"  - {n['deployment']['description']}: {'; '.join(n['fails'])}"
                  for n in r["near_misses"]]  # fmt: skip
    if r["rejected"]:
        lines.append(f"rejected (memory): {sum(r['rejected'].values()):,} candidates")
        lines += [f"  - {k}: {v}" for k, v in list(r["rejected"].items())[:5]]
    if r.get("focus"):
        lines += _focus_lines(r["focus"], r.get("client_profile"))
    return "\n".join(lines)


def _focus_lines(f: dict, profile: dict | None = None) -> list[str]:
    """The ``--deployment`` evaluation: does it fit, does it meet the SLA, its percentiles, and
    whether ``--profile`` (its ``client_profile`` block) priced it."""
    head = f"deployment {_spec_text(f['spec'])}: "
    if not f["fits"]:
        return [head + "does not fit: " + "; ".join(f["reasons"])]
    d = f["deployment"]
    if profile:
        return [*_focus_lines(f), profile_line(profile, d)]
    verdict = "meets the SLA" if d["meets_sla"] else "misses the SLA: " + "; ".join(f["fails"])
    if not d["meets_sla"] and d.get("sla_verdict") == "at risk":
        verdict = "AT RISK: " + "; ".join(d["at_risk"])
    if not d["stable"]:  # no steady state: no cost per token and no percentiles to print
        return [head + verdict, f"  {d['description']}: GPUs {d['gpus']}"]
    lines = [head + verdict, f"  {d['description']}: GPUs {d['gpus']}; "
             f"${d['usd_per_million_tokens']:.3f} per 1M output tokens"]  # fmt: skip
    for m in ("ttft_ms", "tpot_ms", "e2e_ms"):
        v = d[m]
        lines.append(f"  {m[:-3].upper():5s} P50 {v['p50']:.1f}  P90 {v['p90']:.1f}  "
                     f"P95 {v['p95']:.1f}  P99 {v['p99']:.1f} ms")  # fmt: skip
    return lines


def _spec_text(spec: dict) -> str:
    from advisor.search.deployment_spec import DeploymentSpec

    return str(DeploymentSpec.model_validate(spec, strict=False))

"""``advisor estimate``: latency and throughput of one deployment, or of each line of a JSONL file."""

from __future__ import annotations

import argparse
import json
import math
from collections import OrderedDict
from collections.abc import Iterator
from typing import BinaryIO

from pydantic import ValidationError

from advisor.catalog import KV_DTYPES, WEIGHT_DTYPES
from advisor.catalog.files import (
    MAX_JSON_DEPTH,
    FileReadError,
    loads_json,
    no_duplicate_keys,
    open_bounded,
    scan_json_depth,
)
from advisor.catalog.loader import UnknownIdError
from advisor.catalog.quoting import echo
from advisor.cli import (
    CliInputError,
    Streamed,
    add_json_flag,
    choice_of,
    dumps,
    float_in,
    int_in,
    shown,
)
from advisor.cli.common import (
    check_ep,
    check_link,
    check_tp,
    resolve_gpu,
    resolve_model,
)
from advisor.cli.profile_opt import add_profile_flag, apply_to_estimate, load_profile, render_line
from advisor.cli.profile_opt import check as check_profile
from advisor.perf.calibration.client_profile import ProfileDoc
from advisor.perf.model.estimate import EstimateInput, estimate
from advisor.perf.model.intervals import narrowing_advice, range_note, side_of_range
from advisor.perf.model.overlay import active
from advisor.perf.model.profiles import ENGINES
from advisor.perf.model.sweeps import fmt_ms
from advisor.perf.validation.bench_forecast import CLIENTS
from advisor.scenario import DEFAULT_ENGINE, THINK_TIME_DEFAULT_S, format_validation_error

MAX_INPUT_BYTES = 10_000_000
_KEYS = {
    "model", "gpu", "tp", "pp", "dp", "weights", "kv", "isl", "osl", "concurrency", "qps",
    "link", "inter_link", "engine", "spec_draft", "spec_tokens", "spec_acceptance", "gpus_per_node",
    "ep", "dp_attention", "batching", "confidence", "users", "think_time_s",
    *(_BENCH_KEYS := ("num_prompts", "bench_client", "range_ratio", "prefill_budget_tokens")),
}  # fmt: skip
#: Bounds of the users' load (as recommend's and the scenario's Workload).
USERS_RANGE, THINK_RANGE_S = (1, 1_000_000), (0.0, 3600.0)


def _concurrency(text: str) -> int | str:
    if text.strip().lower() == "max":
        return "max"
    return int_in(1, 1_000_000)(text)


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("estimate", help="TTFT, TPOT, end-to-end latency and throughput")
    p.add_argument("--input", help="JSONL file: one estimate per line (keys as the flags)")
    p.add_argument("--model", help="catalog id or path to a config.json")
    p.add_argument("--gpu", help="accelerator id")
    p.add_argument("--tp", type=int_in(1, 1024), default=1)
    p.add_argument("--pp", type=int_in(1, 1024), default=1)
    p.add_argument("--dp", type=int_in(1, 100_000), default=1)
    p.add_argument("--weights", type=choice_of(WEIGHT_DTYPES, "weights dtype"), default="fp16")
    p.add_argument("--kv", type=choice_of(KV_DTYPES, "KV dtype"), default="fp16")
    p.add_argument("--isl", type=int_in(1, 10_000_000), help="input (prompt) tokens")
    p.add_argument("--osl", type=int_in(1, 1_000_000), help="output tokens")
    p.add_argument(
        "--concurrency", type=_concurrency, default=None,
        help="N: requests in flight over the whole deployment (N clients in a closed loop, "
        "spread evenly over the --dp replicas); max: every replica's KV cache full",
    )  # fmt: skip
    p.add_argument("--qps", type=float_in(0, 1e7, lo_open=True), default=None, help="requests/s")
    p.add_argument(
        "--users", type=int_in(*USERS_RANGE), default=None,
        help="concurrent users over the whole deployment, each thinking --think-time-s between "
        "an answer and the next request (the load recommend --users puts on it)",
    )  # fmt: skip
    p.add_argument(
        "--think-time-s", dest="think_time_s", type=float_in(*THINK_RANGE_S), default=None,
        help=f"seconds each --users user reads before the next request (0..3600, default "
        f"{THINK_TIME_DEFAULT_S:g})",
    )  # fmt: skip
    p.add_argument("--link", help="intra-node interconnect id (default: the GPU's own)")
    p.add_argument("--inter-link", dest="inter_link", help="inter-node interconnect id")
    p.add_argument("--gpus-per-node", dest="gpus_per_node", type=int_in(1, 72), default=8)
    p.add_argument("--engine", type=choice_of(ENGINES, "engine"), default=DEFAULT_ENGINE)
    p.add_argument(
        "--batching", type=choice_of(("continuous", "chunked", "static"), "batching"),
        default=None, help="continuous (default), chunked (prefill), or static batches",
    )  # fmt: skip
    p.add_argument(
        "--ep", action="store_true", default=None,
        help="MoE expert parallelism over the TP GPUs (whole experts per GPU, all-to-alls)",
    )  # fmt: skip
    p.add_argument(
        "--dp-attention", dest="dp_attention", action="store_true", default=None,
        help="MoE attention data parallel over the TP GPUs (SGLang --enable-dp-attention with "
        "--dp = --tp, TensorRT-LLM enable_attention_dp): whole attention weights per GPU, each "
        "sequence's KV on one GPU",
    )  # fmt: skip
    p.add_argument("--spec-draft", dest="spec_draft", help="draft model id")
    p.add_argument("--spec-tokens", dest="spec_tokens", type=int_in(1, 16), default=4)
    p.add_argument("--spec-acceptance", dest="spec_acceptance", type=float_in(0, 1), default=0.7)
    p.add_argument(
        "--confidence", type=float_in(0.5, 0.99), default=None,
        help="confidence of the ranges around each number (0.5..0.99, default 0.8)",
    )  # fmt: skip
    g = p.add_argument_group(
        "benchmark run", "what the engine's benchmark client would print for a finite run of "
        "this load (random dataset): its start-up wave included, which the steady figures above "
        "leave out",
    )  # fmt: skip
    g.add_argument(
        "--num-prompts", dest="num_prompts", type=int_in(1, 1_000_000), default=None,
        help="prompts of the run (--num-prompts of vllm bench serve / sglang.bench_serving), "
        "with --concurrency N (its --max-concurrency) or --qps (its --request-rate)",
    )  # fmt: skip
    g.add_argument(
        "--bench-client", dest="bench_client", type=choice_of(CLIENTS, "benchmark client"),
        default=None, help="whose random lengths: vllm (L(1-r)..L(1+r)) or sglang (rL..L); "
        "default: sglang for --engine sglang, else vllm",
    )  # fmt: skip
    g.add_argument(
        "--range-ratio", dest="range_ratio", type=float_in(0.0, 1.0), default=None,
        help="the client's --random-range-ratio r (default 0: vLLM's lengths fixed, SGLang's "
        "1..L)",
    )  # fmt: skip
    g.add_argument(
        "--prefill-budget-tokens", dest="prefill_budget_tokens", type=int_in(1, 10_000_000),
        default=None, help="prompt tokens one iteration prefills (vLLM --max-num-batched-tokens, "
        "SGLang --chunked-prefill-size; default 8192)",
    )  # fmt: skip
    add_profile_flag(p)
    add_json_flag(p)
    return p


def _bench_opts(d: dict) -> dict | None:
    """The benchmark-run keys of a line or the flags, popped from ``d`` and checked; None when
    no run is asked for (then none of them may be given)."""
    opts = {k: d.pop(k, None) for k in _BENCH_KEYS}
    if opts["num_prompts"] is None:
        given = [k for k in _BENCH_KEYS if opts[k] is not None]
        if given:
            flag = "--" + given[0].replace("_", "-")
            raise CliInputError(f"{flag} {opts[given[0]]!r}: needs --num-prompts (the run it "
                                "describes)")  # fmt: skip
        return None
    for key, lo, hi, kind in (("num_prompts", 1, 1_000_000, int),
                              ("range_ratio", 0.0, 1.0, float),
                              ("prefill_budget_tokens", 1, 10_000_000, int)):  # fmt: skip
        v = opts[key]
        if v is None:
            continue
        ok = not isinstance(v, bool) and isinstance(v, int | float) and lo <= v <= hi
        if kind is int and ok and float(v).is_integer():
            v = opts[key] = int(v)
        if not ok or (kind is int and not float(v).is_integer()):
            flag = "--" + key.replace("_", "-")
            raise CliInputError(f"{flag} {v!r} is outside {lo}..{hi:,}"
                                + (" (a whole number)" if kind is int else ""))  # fmt: skip
    client = opts["bench_client"]
    if client is not None and client not in CLIENTS:
        raise CliInputError(f"--bench-client {echo(str(client), 40)}: allowed {', '.join(CLIENTS)}")
    if d.get("users") is not None:
        raise CliInputError("--num-prompts works with --concurrency N or --qps, not --users "
                            "(a benchmark client does not think)")  # fmt: skip
    if d.get("spec_draft") is not None:
        raise CliInputError("--num-prompts: the replay of a benchmark run has no speculative "
                            "decoding; leave out --spec-draft")  # fmt: skip
    return opts


def _benchmark_run(model, gpu, inp: EstimateInput, result: dict, opts: dict) -> dict:
    """The ``benchmark_run`` of a result: the forecast run under the same constants as the
    estimate (the client profile's where it applied), or why there is none."""
    from advisor.perf.validation.bench_forecast import ForecastInputError, forecast_for

    if result.get("fits") is False:
        return {"none": "the deployment does not fit (see the reasons above)"}
    kw = dict(prompts=opts["num_prompts"], client=opts["bench_client"],
              range_ratio=opts["range_ratio"] or 0.0,
              budget_tokens=opts["prefill_budget_tokens"] or 0.0,
              regime=result.get("load_regime") or
              ("overloaded" if result.get("stable") is False else None))  # fmt: skip
    try:
        if result.get("client_profile_fallback"):
            with active(gpu.id, inp.engine, None):
                run = forecast_for(model, gpu, inp, **kw)
        else:
            run = forecast_for(model, gpu, inp, **kw)
    except ForecastInputError as exc:
        if exc.field == "load":
            raise CliInputError(f"--num-prompts: {exc}") from None
        raise CliInputError(f"--{exc.field.replace('_', '-')} {exc}") from None
    return run.to_dict()


def _run_one(d: dict, profile: ProfileDoc | None = None) -> dict:
    for key in ("model", "gpu", "isl", "osl"):
        if d.get(key) is None:
            raise CliInputError(f"--{key} is required")
    d = dict(d)
    bench = _bench_opts(d)
    result = _estimate_one(d, profile)
    if bench is not None:
        model, gpu = resolve_model(str(d["model"])), resolve_gpu(str(d["gpu"]))
        inp = EstimateInput.model_validate(_fields(d, None) | _default_load(d))
        result["benchmark_run"] = _benchmark_run(model, gpu, inp, result, bench)
    return result


def _fields(d: dict, draft) -> dict:
    fields = {
        k: v for k, v in d.items() if k not in ("model", "gpu", "spec_draft") and v is not None
    }
    if draft is not None:
        fields["spec_draft"] = draft
    return fields


def _default_load(d: dict) -> dict:
    return {"concurrency": 1} if d.get("concurrency") is None and d.get("qps") is None else {}


def _estimate_one(d: dict, profile: ProfileDoc | None) -> dict:
    if d.get("concurrency") is not None and d.get("qps") is not None:
        raise CliInputError("--concurrency and --qps are exclusive: give one of them")
    users, think_s = _users(d)
    if d.get("spec_draft") is not None and d.get("qps") is not None:
        raise CliInputError("--spec-draft works with --concurrency N, not with --qps")
    model = resolve_model(str(d["model"]))
    gpu = resolve_gpu(str(d["gpu"]))
    draft = _draft(model, str(d["spec_draft"])) if d.get("spec_draft") else None
    for flag, scope in (("link", "intra_node"), ("inter_link", "inter_node")):
        if d.get(flag):
            check_link(str(d[flag]), [gpu], scope, "--" + flag.replace("_", "-"))
    fields = _fields(d, draft) | _default_load(d)
    try:
        inp = EstimateInput.model_validate(fields)
    except ValidationError as exc:
        raise CliInputError(format_validation_error(exc, prefix="--")) from None
    layout = check_tp(model, inp.tp)
    check_ep(model, inp.tp, inp.ep)
    if inp.pp > model.num_hidden_layers:
        raise CliInputError(f"--pp {inp.pp} exceeds the model's {model.num_hidden_layers} layers")
    if draft is not None and inp.concurrency == "max":
        raise CliInputError("--spec-draft needs --concurrency N (a number), not max")
    if profile is not None:
        check_profile(profile, [gpu.id], inp.engine)
    if users is not None:
        inp, load = _users_rate(model, gpu, inp, users, think_s)
        if inp is None:
            result = estimate(
                model, gpu, EstimateInput.model_validate({**fields, "concurrency": 1})
            )
            return {**result, "users": load}
    result = estimate(model, gpu, inp)
    if users is not None:
        result["users"] = load
    if "replicated" in layout:  # say it, as the engines' logs do
        result["notes"] = [*result.get("notes", []), layout]
    return apply_to_estimate(result, profile, gpu.id) if profile is not None else result


def _users(d: dict) -> tuple[int | None, float]:
    """(users, think time s) of a line or the flags, validated; (None, _) without --users."""
    users, think = d.pop("users", None), d.pop("think_time_s", None)
    if users is None:
        if think is not None:
            raise CliInputError(f"--think-time-s {think!r}: needs --users (the users who think)")
        return None, THINK_TIME_DEFAULT_S
    for flag, v in (("--qps", d.get("qps")), ("--concurrency", d.get("concurrency"))):
        if v is not None:
            raise CliInputError(f"--users {users!r} and {flag} {v!r}: give one load, not both")
    if isinstance(users, bool) or not isinstance(users, int) or not (
        USERS_RANGE[0] <= users <= USERS_RANGE[1]
    ):  # fmt: skip
        raise CliInputError(f"--users {users!r} is outside {USERS_RANGE[0]}..{USERS_RANGE[1]:,}")
    think = THINK_TIME_DEFAULT_S if think is None else think
    if isinstance(think, bool) or not isinstance(think, int | float) or not (
        THINK_RANGE_S[0] <= think <= THINK_RANGE_S[1]
    ):  # fmt: skip
        raise CliInputError(f"--think-time-s {think!r} is outside 0..3600 (seconds)")
    return users, float(think)


def _users_rate(model, gpu, inp: EstimateInput, users: int, think_s: float):
    """``inp`` at the request rate ``users`` users thinking ``think_s`` s put on it (the
    search's closed loop, ``perf.model.sweeps.closed_loop_qps``), and the ``users`` field of the
    result; None for the input when no sequence fits (the estimate then says why)."""
    from advisor.perf.model.sweeps import closed_loop_qps

    x = closed_loop_qps(model, gpu, inp, users, think_s)
    load = {"users": users, "think_time_s": think_s,
            "request_rate_per_s": x, "law": "X = N / (Z + E2E(X)) (interactive response-time law)"}  # fmt: skip
    if x is None:
        return None, load
    return inp.model_copy(update={"qps": x, "concurrency": None}), load


def _draft(model, draft_id: str):
    """The draft's ModelSpec: ``mtp`` (the model's own head) or a model with its tokenizer;
    another tokenizer is refused with the reason (advisor/catalog/drafts.py)."""
    from advisor.catalog.drafts import MTP, draft_spec, has_own_head, tokenizer_problem

    if draft_id == MTP:
        if not has_own_head(model):
            raise CliInputError(f"--spec-draft mtp: {model.id} has no MTP head of its own")
        return draft_spec(model, MTP)
    draft = resolve_model(draft_id, "--spec-draft")
    why = tokenizer_problem(model, draft)
    if why:
        raise CliInputError(f"--spec-draft {draft.id}: {why}")
    return draft


def _args_dict(args: argparse.Namespace) -> dict:
    return {k: getattr(args, k) for k in _KEYS}


#: Keys whose value is a JSON boolean; everywhere else true/false is refused, not read as 1/0.
_BOOL_KEYS = {"ep", "dp_attention"}
_TEXT_KEYS = {"model", "gpu", "weights", "kv", "link", "inter_link", "engine", "spec_draft",
              "batching"}  # fmt: skip
#: Distinct lines whose output is remembered (a grid file repeats the same deployment often).
_CACHE_LINES = 4096


class _DuplicateKey(ValueError):
    pass


def _no_constant(name: str) -> None:
    raise ValueError(f"non-standard JSON constant {name} (NaN/Infinity refused)")


_no_duplicates = no_duplicate_keys(lambda key: _DuplicateKey(f"key {echo(key)} given twice"))


def _parse_line(raw: bytes, n: int) -> dict:
    """One JSONL line as the keys of one estimate; CliInputError naming the line and the key."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CliInputError(f"line {n}: not UTF-8 text (byte {exc.start + 1})") from None
    brackets = text.count("{") + text.count("[")
    too_deep = scan_json_depth(text)[0] if brackets > MAX_JSON_DEPTH else None
    if too_deep is not None:
        raise CliInputError(f"line {n}: not valid JSON: nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        d = loads_json(
            text,
            object_pairs_hook=_no_duplicates,
            parse_constant=_no_constant,
        )
    except _DuplicateKey as exc:
        raise CliInputError(f"line {n}: {exc} (each key may appear once)") from None
    except (ValueError, RecursionError) as exc:  # JSONDecodeError is a ValueError
        raise CliInputError(f"line {n}: not valid JSON: {exc}") from None
    if not isinstance(d, dict):
        raise CliInputError(f"line {n}: expected a JSON object")
    unknown = sorted(set(d) - _KEYS)
    if unknown:
        keys = ", ".join(echo(k, 40) for k in unknown[:5]) + (", ..." if len(unknown) > 5 else "")
        raise CliInputError(f"line {n}: unknown keys [{keys}]; allowed: {sorted(_KEYS)}")
    for key, value in d.items():
        if isinstance(value, bool) and key not in _BOOL_KEYS:
            want = "a text value" if key in _TEXT_KEYS else "a number"
            raise CliInputError(
                f"line {n}: {key}: {json.dumps(value)} is a boolean; expected {want}"
            )
        if key in _BOOL_KEYS and value is not None and not isinstance(value, bool):
            # pydantic would read "yes", 1 or "on" as true: a typo must not switch a layout on
            raise CliInputError(
                f"line {n}: {key}: {json.dumps(value)[:40]} is not a boolean; expected true or false"
            )
    return d


def _open_input(path: str) -> BinaryIO:
    """The JSONL file, opened for streaming under the size cap (refused before any output)."""
    try:
        f = open_bounded(path, MAX_INPUT_BYTES)
    except FileReadError as exc:
        raise CliInputError(f"--input {shown(path)}: {exc}") from None
    return f


def _results(f: BinaryIO, total_cap: int, profile: ProfileDoc | None = None) -> Iterator[str]:
    """One serialized result per non-blank line, in order; a bad line is an error item.

    Lines are split on \\n only (iterating a binary file): a U+2028 inside a JSON string is
    text, not a line break, so line numbers stay those of the file.
    """
    cache = _Lru(_CACHE_LINES)  # canonical line (keys sorted) -> serialized result
    seen = _Lru(_CACHE_LINES)  # the line's exact bytes -> serialized result (a repeated line)
    read = 0
    with f:
        for n, raw in enumerate(f, 1):
            read += len(raw)
            if read > total_cap:  # the file grew after the size check
                yield dumps({"line": n, "error": f"file grew past the {total_cap:,}-byte limit"})
                return
            line = raw.strip()
            if not line:
                continue
            out = seen.get(line)
            if out is not None:
                yield out
                continue
            try:
                d = _parse_line(line, n)
                key = json.dumps(d, sort_keys=True)
                out = cache.get(key)
                if out is None:
                    out = cache.put(key, dumps(_run_one(d, profile)))
                yield seen.put(line, out)
            except (CliInputError, UnknownIdError, ValueError) as exc:
                yield dumps({"line": n, "error": str(exc)})


class _Lru(OrderedDict):
    """A dict that forgets its least recently used entry past ``size`` entries."""

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size = size

    def get(self, key, default=None):  # noqa: ANN001, ANN201
        if key in self:
            self.move_to_end(key)
            return self[key]
        return default

    def put(self, key, value: str) -> str:  # noqa: ANN001
        self[key] = value
        if len(self) > self.size:
            self.popitem(last=False)
        return value


def run(args: argparse.Namespace) -> dict | Streamed:
    profile = load_profile(args.profile)
    if args.input is None:
        return _run_one(_args_dict(args), profile)
    return Streamed("results", _results(_open_input(args.input), MAX_INPUT_BYTES, profile))


def _in_flight(r: dict) -> str:
    """The load: requests in flight over the deployment, and per replica when DP > 1."""
    n = r["concurrency"]
    total = (f"{n:,.0f} request{'' if n == 1 else 's'} in flight" if float(n).is_integer()
             else f"{n:,.1f} in flight")  # fmt: skip
    if r["dp"] == 1:
        return total
    return f"{total} over {r['dp']} replicas ({r['running_per_replica']:,.1f} per replica)"


def _load_text(r: dict) -> str:
    """The load an answer is at, as the user gave it."""
    u = r.get("users")
    if u:
        return (f"{u['users']:,} users thinking {u['think_time_s']:g} s "
                f"({u['request_rate_per_s']:.3g} req/s)")  # fmt: skip
    if r.get("percentiles_load") == "poisson":
        return f"{r['throughput_tok_s'] / r['osl']:.3g} req/s (Poisson arrivals)"
    return f"{_in_flight(r)} (clients in a closed loop)"


def _percentile_lines(r: dict) -> list[str]:
    """P50 / P90 / P99 of TTFT, TPOT, ITL and E2E with their ranges, the load they are at,
    and, for a range wider than 3x its prediction, the measurement that would narrow it."""
    if "percentiles" not in r:
        note = r.get("percentiles_note")
        return [f"  percentiles: none ({note})"] if note else []
    piv = r.get("percentile_intervals") or {}
    pct = f"{piv.get('confidence', 0.8):.0%}"
    lines = [f"  percentiles at {_load_text(r)}: utilisation {r['utilisation']:.0%}, "
             f"{r['load_regime']} load; {pct} benchmark ranges (held-out published percentiles "
             "of each statistic at that load: benchmark runs of more than 101 prompts, start-up "
             "waves included; a shorter run's P99 is its slowest request's: --num-prompts "
             "ranges it apart):"]  # fmt: skip
    for metric, label in (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT"), ("itl_ms", "ITL"),
                          ("e2e_ms", "E2E")):  # fmt: skip
        cells = []
        for p in ("p50", "p90", "p99"):
            v = r["percentiles"][metric][p]
            lo, hi = (piv.get(metric) or {}).get(p, (v, v))
            side = side_of_range(v, lo, hi)  # as the benchmark run's lines say it
            cells.append(
                f"{p.upper()} {fmt_ms(v)} ({fmt_ms(lo)}-{fmt_ms(hi)}{', ' + side if side else ''})"
            )
        lines.append(f"    {label:<5} " + "   ".join(cells))
    steady = r.get("steady_intervals") or {}
    cells = [f"P99 {label} {fmt_ms(lo)}-{fmt_ms(hi)}"
             for metric, label in (("ttft_ms", "TTFT"), ("tpot_ms", "TPOT"), ("e2e_ms", "E2E"))
             for lo, hi in [(steady.get(metric) or {}).get("p99", (math.nan, math.nan))]
             if math.isfinite(lo)]  # fmt: skip
    if cells:
        lines.append(f"  {pct} steady-service ranges (held-out errors of means and medians at that "
                     "load; an SLA verdict reads their upper end, as recommend and the app show "
                     "them): " + " · ".join(cells))  # fmt: skip
    if piv.get("wide"):
        load = f"{_load_text(r)} ({r['utilisation']:.0%} utilisation)"
        lines.append("  WIDE RANGE: " + narrowing_advice(", ".join(piv["wide"]), r["engine"],
                                                         r["gpu"], load, "benchmark-run range"))  # fmt: skip
    return lines


def _benchmark_lines(b: dict | None) -> list[str]:
    """What the benchmark client would print for the run asked for, each figure with its range."""
    if not b:
        return []
    if "none" in b:
        return [f"  benchmark run: none ({b['none']})"]
    pct = f"{b['confidence']:.0%}"
    lines = [f"  benchmark run (replayed, seed {b['seed']}): {b['command']}",
             f"    {b['prompts']:,} prompts in {b['duration_s']:.1f} s: "
             f"{b['output_tok_s']:,.0f} output tok/s, {b['requests_per_s']:.3g} req/s; "
             f"{pct} ranges from held-out errors of published rows of each statistic:"]  # fmt: skip
    for metric, label in (("ttft", "TTFT"), ("tpot", "TPOT"), ("itl", "ITL"), ("e2e", "E2E")):
        cells = []
        for st, name in (("mean", "mean"), ("median", "P50"), ("p99", "P99")):
            v = b["ms"][metric][st]
            lo, hi = b["ranges"][metric].get(st, (v, v))
            side = side_of_range(v, lo, hi)
            cells.append(
                f"{name} {fmt_ms(v)} ({fmt_ms(lo)}-{fmt_ms(hi)}{', ' + side if side else ''})"
            )
        lines.append(f"    {label:<5} " + "   ".join(cells))
    lines += [f"    note: {n}" for n in b.get("notes", [])]
    return lines


def render(r: dict) -> str:
    head = (
        f"{r['model']} on {r['gpus']} x {r['gpu']} (TP={r['tp']} PP={r['pp']} DP={r['dp']}"
        f"{', EP' if r.get('expert_parallel') else ''}"
        f"{', attention DP' if r.get('attention_data_parallel') else ''}), "
        f"weights {r['weights']}, KV {r['kv']}, engine {r['engine']}"
    )
    warn = [f"  WARNING: {w}" for w in r.get("warnings", [])]
    if not r["fits"] or r.get("stable") is False:
        return "\n".join(
            [
                head,
                *warn,
                *(f"  NOT FEASIBLE: {x}" for x in r["reasons"]),
                *_benchmark_lines(r.get("benchmark_run")),
            ]
        )
    iv = r["intervals"]
    pct = f"{iv['confidence']:.0%}"

    def rng(key: str, fmt: str) -> str:
        lo, hi = iv[key]
        return f" ({pct} range {lo:{fmt}}-{hi:{fmt}}{range_note(r[key], lo, hi)})"

    lines = [
        head,
        *warn,
        f"  TTFT {r['ttft_ms']:.1f} ms{rng('ttft_ms', '.1f')}   "
        f"TPOT {r['tpot_ms']:.2f} ms{rng('tpot_ms', '.2f')}   "
        f"E2E {r['e2e_ms']:.0f} ms{rng('e2e_ms', '.0f')}",
        f"  throughput {r['throughput_tok_s']:.0f} output tok/s{rng('throughput_tok_s', '.0f')} "
        f"({r['throughput_tok_s_per_gpu']:.0f} per GPU) with {_in_flight(r)}",
    ]
    if not iv["calibrated"]:
        what = [x for x, ok in ((r["gpu"], iv["family_calibrated"]),
                                (f"engine {r['engine']}", iv["engine_calibrated"])) if not ok]  # fmt: skip
        lines.append(f"  UNCALIBRATED: {' and '.join(what)} predicted from priors; ranges widened")
    ep = r["engine_profile"]
    if r["tp"] > 1 and not ep["collective_calibrated"]:
        lines.append(f"  UNCALIBRATED: all-reduces' data at {ep['collective_efficiency']:.2f} x "
                     f"its nccl-tests rate, {ep['collective_note']}")  # fmt: skip
    lines.append(f"  ranges from out-of-sample errors: {iv['basis']}")
    lines += _percentile_lines(r)
    lines += _benchmark_lines(r.get("benchmark_run"))
    if "client_profile" in r:
        lines.append(render_line(r["client_profile"]))
    for phase, comp in r["breakdown"].items():
        if isinstance(comp, dict):
            parts = ", ".join(f"{k} {v:.2f}" for k, v in comp.items() if v > 0.005)
            lines.append(f"  {phase} breakdown (ms): {parts}")
        else:
            lines.append(f"  {phase}: {comp:.2f}")
    for note in r.get("notes", []):
        lines.append(f"  note: {note}")
    return "\n".join(lines)

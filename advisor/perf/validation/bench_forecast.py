"""What a finite benchmark run would print: the replay of ``--num-prompts`` requests on a deployment.

A client checks a deployment with the engine's own benchmark client (``vllm bench serve``,
``python -m sglang.bench_serving``): N prompts from C clients (``--max-concurrency``) or sent at
a request rate, not the steady service ``estimate`` answers for. A run of a few prompts per
client starts with every client's prompt queued at once, and its mean and median TTFT are then
seconds where the steady state says a few hundred ms (vLLM recipes, Llama-3.3-70B FP8 on one
MI355X, 64 clients, 128 prompts of 8192/1024 tokens: median 7.5 s, mean 11.6 s, P99 31.8 s; the
steady state 0.64 s). Compared with the steady answer, the client's own figures look like a 5-10x
miss that is not one. This module replays such a run on the model's service times, as the
percentile check replays the published runs (:func:`bench_run.replay_closed_loop`), and returns
what the client prints: mean, median, P90 and P99 of TTFT, TPOT, ITL and E2E, the run's length
and output throughput, each statistic with its range from the held-out errors of published rows
of that statistic (``perf.model.intervals``; a mean TTFT or E2E over a run whose first wave is in
it takes the start-up-wave means' errors).

Lengths are drawn as the client draws its random dataset (:func:`client_length_bounds`), seeded
(``SEED``): the figures are those of one run, as the client's are. Send times at a request rate
are Poisson (exponential gaps, the clients' default ``--burstiness 1``), seeded too.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass, field

import numpy as np

from advisor.perf.model.intervals import DEFAULT_CONFIDENCE, e2e_range, range_factors
from advisor.perf.model.predict import DEFAULT_PREFILL_BUDGET_TOKENS
from advisor.perf.model.replica import ReplicaConfig, build_replicas
from advisor.perf.model.service import service_for
from advisor.perf.model.step import chunk_offset_attention_s
from advisor.perf.validation.bench_run import (
    gap_statistic,
    prefill_iteration_table,
    replay_closed_loop,
    run_statistic,
)
from advisor.perf.validation.client_draws import benchmark_lengths, uniform_length_cv
from advisor.perf.validation.repeats import ttft_repeat_note
from advisor.perf.validation.run_length import run_statistic_of_tail
from advisor.perf.validation.short_runs import short_run_note

#: The benchmark clients whose random-dataset draws are modelled.
CLIENTS = ("vllm", "sglang")
#: Seed of the replay's length and send-time draws (numpy.random.default_rng).
SEED = 0
#: Longest run replayed (prompts per replica): a replay walks every iteration in Python, about
#: a second per 10,000 requests of 1,000 output tokens on these machines.
MAX_PROMPTS = 20_000
#: The statistics a run prints, in order, and the held-out rows that range each.
STATISTICS = ("mean", "median", "p90", "p99")
METRICS = ("ttft", "tpot", "itl", "e2e")
#: Metric -> prediction kind of its range (an ITL takes the TPOT's, as in ``estimate``).
_RANGE_KIND = {"ttft": "ttft", "tpot": "tpot", "itl": "itl", "e2e": "e2e"}


class ForecastInputError(ValueError):
    """A benchmark run that cannot be replayed as given: ``field`` (num_prompts, concurrency,
    qps, range_ratio, client, load) and why, the value and the allowed range in the message."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


def client_length_bounds(client: str, range_ratio: float) -> tuple[float, float]:
    """(low, high) of a random-dataset length as fractions of the nominal ``--random-*-len`` L.

        vLLM ``bench serve``:        uniform on [L (1 - r), L (1 + r)],   0 <= r < 1
        SGLang ``bench_serving``:    uniform on [r L, L],                 0 <= r <= 1

    r is ``--random-range-ratio`` (default 0 in both: vLLM's lengths are then fixed, SGLang's
    uniform from 1 to L, mean L / 2). Source: vllm/benchmarks/datasets.py
    ``RandomDataset.sample`` (input_low = floor(L (1 - r)), input_high = ceil(L (1 + r)));
    sglang/bench_serving.py ``sample_random_requests`` (randint(max(int(L r), 1), L + 1)).

    >>> client_length_bounds("vllm", 0.0), client_length_bounds("vllm", 0.5)
    ((1.0, 1.0), (0.5, 1.5))
    >>> client_length_bounds("sglang", 0.0), client_length_bounds("sglang", 0.8)
    ((0.0, 1.0), (0.8, 1.0))
    """
    if client not in CLIENTS:
        raise ForecastInputError("client", f"{client!r}: allowed {', '.join(CLIENTS)}")
    hi_ratio = 1.0 if client == "sglang" else 1.0 - 1e-9
    if not (isinstance(range_ratio, int | float) and 0.0 <= range_ratio <= hi_ratio):
        allowed = "0..1" if client == "sglang" else "0 <= r < 1"
        raise ForecastInputError(
            "range_ratio", f"{range_ratio!r} is outside {allowed} for the {client} client"
        )
    if client == "vllm":
        return 1.0 - range_ratio, 1.0 + range_ratio
    return float(range_ratio), 1.0


def client_command(
    client: str, isl: int, osl: int, prompts: int, range_ratio: float,
    clients: int | None, qps: float | None,
) -> str:  # fmt: skip
    """The benchmark client's command line for this run (the model and host left out)."""
    tool = "vllm bench serve" if client == "vllm" else "python -m sglang.bench_serving"
    args = ["--dataset-name", "random", "--random-input-len", str(isl), "--random-output-len",
            str(osl), "--random-range-ratio", f"{range_ratio:g}", "--num-prompts", str(prompts)]  # fmt: skip
    if clients is not None:
        args += ["--max-concurrency", str(clients)]
    if qps is not None:
        args += ["--request-rate", f"{qps:g}"]
    if client == "vllm":
        args += ["--ignore-eos"]
    return tool + " " + " ".join(shlex.quote(a) for a in args)


@dataclass(frozen=True)
class BenchmarkRun:
    """A forecast run: per metric (ttft, tpot, itl, e2e) and statistic (mean, median, p90,
    p99) the value in ms and its [low, high] range; the run's duration and throughput."""

    client: str
    command: str
    prompts: int
    clients: int | None
    qps: float | None
    replicas: int
    mean_isl: float
    mean_osl: float
    duration_s: float
    output_tok_s: float
    requests_per_s: float
    first_wave_share: float
    ms: dict[str, dict[str, float]]
    ranges: dict[str, dict[str, list[float]]]
    basis: dict[str, str]
    confidence: float
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {
            "client": self.client, "command": self.command, "prompts": self.prompts,
            "clients": self.clients, "qps": self.qps, "replicas": self.replicas,
            "mean_isl": self.mean_isl, "mean_osl": self.mean_osl, "seed": SEED,
            "duration_s": self.duration_s, "output_tok_s": self.output_tok_s,
            "requests_per_s": self.requests_per_s, "first_wave_share": self.first_wave_share,
            "ms": self.ms, "ranges": self.ranges, "range_basis": self.basis,
            "confidence": self.confidence, "notes": self.notes,
        }  # fmt: skip


def _check(prompts: int, clients: int | None, qps: float | None, replicas: int) -> None:
    if (clients is None) == (qps is None):
        raise ForecastInputError(
            "load", "a benchmark run needs a concurrency or a request rate (one)"
        )
    if isinstance(prompts, bool) or not isinstance(prompts, int) or prompts < 1:
        raise ForecastInputError("num_prompts", f"{prompts!r}: need a whole number >= 1")
    per = math.ceil(prompts / replicas)
    if per > MAX_PROMPTS:
        raise ForecastInputError(
            "num_prompts",
            f"{prompts:,} is {per:,} per replica, above the {MAX_PROMPTS:,} a "
            "replay takes; a run that long is the steady state: see the estimate's percentiles",
        )
    if clients is not None and (isinstance(clients, bool) or clients < 1):
        raise ForecastInputError("concurrency", f"{clients!r}: need a whole number >= 1")
    if qps is not None and not (math.isfinite(qps) and qps > 0):
        raise ForecastInputError("qps", f"{qps!r}: need a finite rate > 0")


def forecast_run(
    cfg: ReplicaConfig,
    isl: int,
    osl: int,
    *,
    prompts: int,
    clients: int | None = None,
    qps: float | None = None,
    client: str = "vllm",
    range_ratio: float = 0.0,
    replicas: int = 1,
    budget_tokens: float = 0.0,
    regime: str | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
) -> BenchmarkRun:
    """Replay a benchmark run of ``prompts`` random-dataset requests (nominal lengths ``isl`` /
    ``osl``, drawn as ``client`` draws them) from ``clients`` clients in a closed loop or sent
    at ``qps`` requests/s, on ``replicas`` data-parallel copies of ``cfg`` behind an even router
    (each replays its share: clients / replicas, prompts / replicas, rate / replicas).

    Steps: the lengths (``client_length_bounds``, seeded uniform draws); the replica's service
    times at the run's mean lengths (``service.service_for``: decode step per running batch,
    prefill per iteration of ``budget_tokens`` prompt tokens, 0 = the engines' default 8,192);
    the replay (``bench_run.replay_closed_loop``); each statistic as the clients compute it
    (``bench_run.run_statistic``, ``bench_run.gap_statistic`` for ITL); its range from held-out
    rows of that statistic at ``regime`` (``intervals.range_factors``).
    """
    _check(prompts, clients, qps, replicas)
    lo, hi = client_length_bounds(client, range_ratio)
    cv = uniform_length_cv(lo, hi) if hi > lo else 0.0
    per_prompts = max(1, round(prompts / replicas))
    per_clients = None if clients is None else max(1, round(clients / replicas))
    rng = np.random.default_rng(SEED)
    lens_in = benchmark_lengths(rng, isl * (lo + hi) / 2.0, cv, per_prompts)
    lens_out = benchmark_lengths(rng, osl * (lo + hi) / 2.0, cv, per_prompts)
    arrivals = None
    if qps is not None:
        gaps = rng.exponential(replicas / qps, per_prompts)
        arrivals = np.concatenate([[0.0], np.cumsum(gaps[:-1])])
    mean_in, mean_out = float(lens_in.mean()), float(lens_out.mean())
    r = build_replicas([cfg])
    sm = service_for(r, np.array([mean_in]), np.array([mean_out]))
    budget = float(budget_tokens) if budget_tokens > 0 else DEFAULT_PREFILL_BUDGET_TOKENS
    cache: dict[int, float] = {}

    def step_s(b: int) -> float:
        v = cache.get(b)
        if v is None:
            v = cache[b] = float(sm.decode_step_s(np.array([float(b)]))[0])
        return v

    s = replay_closed_loop(
        step_s, prefill_iteration_table(r, mean_in, budget),
        delay_s=float(np.asarray(sm.request_delay_s, dtype=float).ravel()[0]),
        max_running=float(np.asarray(sm.max_running, dtype=float).ravel()[0]),
        clients=per_clients or 1, requests=per_prompts, isl_tokens=lens_in,
        osl_tokens=lens_out, budget_tokens=int(budget), arrival_s=arrivals,
        offset_pair_s=float(chunk_offset_attention_s(r)[0]),
    )  # fmt: skip
    samples = {"ttft": s.ttft_s, "tpot": s.tpot_s, "e2e": s.e2e_s}
    ms: dict[str, dict[str, float]] = {}
    for metric in METRICS:
        ms[metric] = {}
        for st in STATISTICS:
            if metric == "itl":
                v = gap_statistic(s.gap_s, s.gap_count, st)
            else:
                x = samples[metric]
                v = run_statistic(x, st) if np.isfinite(x).any() else math.nan
            ms[metric][st] = v * 1e3
    wave = per_clients is not None and per_clients > 1 and per_prompts > per_clients
    ranges, basis = _ranges(ms, cfg, wave, regime, confidence, prompts)
    notes = []
    if replicas > 1:
        notes.append(f"{replicas} replicas behind an even router: each replays "
                     f"{per_prompts:,} prompts"
                     + (f" from {per_clients:,} clients" if per_clients else
                        f" at {qps / replicas:.3g} req/s"))  # fmt: skip
    if client == "sglang" and range_ratio == 0.0:
        notes.append(f"sglang.bench_serving draws lengths uniformly from 1 to the nominal "
                     f"length: mean {mean_in:.0f} / {mean_out:.0f} tokens, not {isl} / {osl}")  # fmt: skip
    if wave:
        notes.append(f"the first {per_clients:,} of {per_prompts:,} requests leave at once (a "
                     f"start-up wave of {per_clients / per_prompts:.0%} of the run): its mean "
                     "and median TTFT are above the steady state's")  # fmt: skip
    # the client takes its percentiles over every request it sent, whatever replica served it
    tail = short_run_note(prompts, cfg.engine, cfg.gpu.family)
    if tail is not None:
        notes.append(tail)
    repeats = ttft_repeat_note()
    if repeats is not None:
        notes.append(repeats)
    return BenchmarkRun(
        client=client,
        command=client_command(client, isl, osl, prompts, range_ratio, clients, qps),
        prompts=prompts, clients=clients, qps=qps, replicas=replicas, mean_isl=mean_in,
        mean_osl=mean_out, duration_s=s.duration_s,
        output_tok_s=s.output_tokens / s.duration_s * replicas,
        requests_per_s=per_prompts / s.duration_s * replicas,
        first_wave_share=(per_clients / per_prompts) if per_clients else 0.0,
        ms=ms, ranges=ranges, basis=basis, confidence=confidence, notes=notes,
    )  # fmt: skip


def _ranges(
    ms: dict, cfg: ReplicaConfig, wave: bool, regime: str | None, confidence: float,
    prompts: int,
) -> tuple[dict, dict]:  # fmt: skip
    """[low, high] of each statistic from held-out rows of that statistic (a mean TTFT or E2E
    of a run with a start-up wave: the start-up-wave means' rows; a P90/P99 of a run of
    ``prompts`` so few that it reads at most two requests: the short runs' rows)."""
    from advisor.perf.model.intervals import is_calibrated

    engine, family = cfg.engine, cfg.gpu.family
    fam_ok, eng_ok = is_calibrated(engine, family)
    kw = dict(family_calibrated=fam_ok, engine_calibrated=eng_ok, moe=cfg.model.is_moe,
              attention_dp=bool(cfg.dp_attention), regime=regime)  # fmt: skip
    ranges: dict[str, dict[str, list[float]]] = {}
    basis: dict[str, str] = {}
    for metric, stats in ms.items():
        ranges[metric] = {}
        for st, v in stats.items():
            if not math.isfinite(v):
                continue
            stat = "wave-mean" if (st == "mean" and wave and metric in ("ttft", "e2e")) else st
            stat = run_statistic_of_tail(stat, prompts)
            ttft = ms["ttft"].get(st, math.nan)
            if metric == "e2e" and math.isfinite(ttft):
                ranges[metric][st], basis[f"{metric} {st}"] = e2e_range(
                    engine, family, confidence, ttft, v, statistic=stat, **kw
                )
                continue
            iv = range_factors(_RANGE_KIND[metric], engine, family, confidence,
                               statistic=stat, **kw)  # fmt: skip
            ranges[metric][st] = list(iv.of(v))
            basis[f"{metric} {st}"] = iv.basis
    return ranges, basis


def unsupported(inp) -> str | None:
    """Why the deployment and load of an ``EstimateInput`` cannot be replayed as a benchmark
    run, or None: the replay is continuous batching of one model at a concurrency or a rate."""
    if inp.qps is None and (inp.concurrency is None or inp.concurrency == "max"):
        return "a benchmark run needs --concurrency N (its --max-concurrency) or --qps"
    if inp.batching == "static":
        return "static batches are not a serving benchmark's continuous batching"
    if inp.spec_draft is not None:
        return "the replay has no speculative decoding"
    if inp.prefill_elsewhere:
        return "a disaggregated decode pool is not replayed"
    return None


def forecast_for(
    model, gpu, inp, *, prompts: int, client: str | None = None, range_ratio: float = 0.0,
    budget_tokens: float = 0.0, regime: str | None = None,
) -> BenchmarkRun:  # fmt: skip
    """``forecast_run`` for the deployment and load of an ``EstimateInput`` (the one
    ``estimate`` answers for): its replica, --dp replicas, --concurrency or --qps over all of
    them. ``client``: None takes the engine's own (sglang for SGLang, else vllm)."""
    from advisor.perf.model.estimate import replica_config

    why = unsupported(inp)
    if why:
        raise ForecastInputError("load", why)
    client = client or ("sglang" if inp.engine == "sglang" else "vllm")
    clients = None if inp.qps is not None else int(inp.concurrency)
    if clients is not None and clients < inp.dp:
        raise ForecastInputError("concurrency", f"{clients} is below the {inp.dp} replicas "
                                 "(--dp): give each replica a client")  # fmt: skip
    return forecast_run(
        replica_config(model, gpu, inp), inp.isl, inp.osl, prompts=prompts, clients=clients,
        qps=inp.qps, client=client, range_ratio=range_ratio, replicas=inp.dp,
        budget_tokens=budget_tokens, regime=regime, confidence=inp.confidence,
    )  # fmt: skip

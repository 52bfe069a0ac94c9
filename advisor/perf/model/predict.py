"""Serving-level predictions from step times: offline throughput, static batches, fixed concurrency.

Vectorised over replicas. Conventions (the ones the published benchmarks use):
- offline throughput (trtllm-bench, MLPerf Offline): every request queued at once; the server
  runs as many sequences as its KV cache and ``max_num_seqs`` allow; in steady state each
  iteration also prefills the prompts of the requests that replace finished ones
  (``batch x isl / osl`` prompt tokens per iteration, in-flight batching / chunked prefill);
- static batching (TensorRT-LLM gptSessionBenchmark): prefill the whole batch (which yields
  the first token), then ``osl - 1`` decode steps;
- fixed concurrency (vLLM ``--max-concurrency``): ``n`` sequences always running; while one
  request decodes its ``osl - 1`` tokens the other ``n - 1`` are each replaced once, and each
  replacement's prefill stalls the batch.
Throughputs are output tokens per second of one replica.
"""

from __future__ import annotations

import numpy as np

from advisor.perf.model.replica import ReplicaArrays, max_running
from advisor.perf.model.step import StepTimes, decode_step, prefill


def offline_batch(r: ReplicaArrays, isl: np.ndarray, osl: np.ndarray) -> np.ndarray:
    """Running sequences in offline mode: min(KV capacity at isl + osl, engine max_num_seqs)."""
    cap = max_running(r, np.asarray(isl, dtype=float) + np.asarray(osl, dtype=float))
    return np.minimum(cap, r.max_num_seqs)


def offline_step(
    r: ReplicaArrays, isl: np.ndarray, osl: np.ndarray
) -> tuple[np.ndarray, StepTimes]:
    isl = np.asarray(isl, dtype=float)
    osl = np.asarray(osl, dtype=float)
    b = offline_batch(r, isl, osl)
    step = decode_step(
        r,
        np.maximum(b, 1.0),
        isl + osl / 2.0,
        prefill_tokens=np.maximum(b, 1.0) * isl / osl,
        prompt_tokens=isl,
    )
    return b, step


def offline_throughput(r: ReplicaArrays, isl: np.ndarray, osl: np.ndarray) -> np.ndarray:
    """Output tokens/s of one replica with all requests queued (0 where nothing fits)."""
    b, step = offline_step(r, isl, osl)
    return np.where(b >= 1, b / step.total, 0.0)


def static_throughput(
    r: ReplicaArrays, batch: np.ndarray, isl: np.ndarray, osl: np.ndarray
) -> np.ndarray:
    """Output tokens/s of a static batch: batch x osl / (prefill(batch) + (osl - 1) x step).

    The prefill's logits give every sequence its first output token, so ``osl`` tokens take
    ``osl - 1`` decode steps. Source: Orca (Yu et al. 2022, OSDI) sec. 2 for request-level
    batching; vLLM benchmark_serving's TPOT = (E2E - TTFT) / (osl - 1) for the same count.
    """
    batch = np.asarray(batch, dtype=float)
    osl = np.asarray(osl, dtype=float)
    isl = np.asarray(isl, dtype=float)
    pre = prefill(r, isl, batch).total
    dec = decode_step(r, batch, isl + osl / 2.0).total
    return batch * osl / (pre + (osl - 1.0) * dec)


def prefill_interruption_s(r: ReplicaArrays, isl: np.ndarray) -> np.ndarray:
    """GPU time one prompt's prefill takes from the running batch (no request overhead).

    The engine's fixed times and the host's dispatch wait are left out: the running batch's
    decode steps are taken to fit in them (calibrated that way; whether a decode step can run
    while an eager prefill's kernels are still being issued is not settled by the rows).
    """
    p = prefill(r, isl)
    return p.total - (p.overhead + p.host)


def prefill_stall_per_token_s(n: np.ndarray, osl: np.ndarray, prefill_s: np.ndarray) -> np.ndarray:
    """Prefill stall per output token with ``n`` sequences always running: (n - 1) P / (osl - 1).

    A request decodes ``osl - 1`` tokens after the prefill that gives its first one; meanwhile
    each of the other ``n - 1`` requests finishes and is replaced once (staggered steady state:
    every request's cycle is n prefills + (osl - 1) steps), and each replacement's prefill of
    ``prefill_s`` stalls the batch. 0 for n = 1 or osl = 1. Source: Orca (Yu et al. 2022) and
    Sarathi-Serve (Agrawal et al. 2024) for prefill stalls in iteration-level scheduling; the
    count is the argument above.

    >>> round(float(prefill_stall_per_token_s(8, 4, 0.030)), 6)  # 7 stalls of 30 ms / 3 tokens
    0.07
    """
    n = np.asarray(n, dtype=float)
    osl = np.asarray(osl, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        stalls = (n - 1.0) * np.asarray(prefill_s, dtype=float) / (osl - 1.0)
    return np.where((n > 1) & (osl > 1), stalls, 0.0)


def concurrency_tpot(
    r: ReplicaArrays, n: np.ndarray, isl: np.ndarray, osl: np.ndarray
) -> np.ndarray:
    """Mean time per output token with ``n`` sequences always running.

        TPOT = step(n, isl + osl/2) + (n - 1) x prefill(isl) / (osl - 1)

    (``prefill_stall_per_token_s``). TPOT is measured as (E2E - TTFT) / (osl - 1) (vLLM
    benchmark_serving); with osl = 1 nothing is decoded and the step alone is returned.
    """
    n = np.asarray(n, dtype=float)
    osl = np.asarray(osl, dtype=float)
    isl = np.asarray(isl, dtype=float)
    step = decode_step(r, n, isl + osl / 2.0).total
    return step + prefill_stall_per_token_s(n, osl, prefill_interruption_s(r, isl))


def concurrency_throughput(
    r: ReplicaArrays, n: np.ndarray, isl: np.ndarray, osl: np.ndarray
) -> np.ndarray:
    """Output tokens/s with ``n`` sequences always running: n x osl / (TTFT + (osl - 1) x TPOT).

    Little's law with n requests in the system: n / E2E requests/s, osl tokens each; TTFT is
    the closed loop's (``concurrency_ttft``: the wait for the iteration in flight included).
    """
    n = np.asarray(n, dtype=float)
    osl = np.asarray(osl, dtype=float)
    tpot = concurrency_tpot(r, n, isl, osl)
    ttft = concurrency_ttft(r, n, isl, osl, tpot)
    return n * osl / (ttft + (osl - 1.0) * tpot)


def concurrency_ttft(
    r: ReplicaArrays,
    n: np.ndarray,
    isl: np.ndarray,
    osl: np.ndarray,
    tpot_s: np.ndarray | None = None,
    iteration_s: np.ndarray | None = None,
) -> np.ndarray:
    """Mean time to first token with ``n`` clients in a closed loop (``--max-concurrency n``).

    TTFT = prefill(isl) + [n > 1] x step(n - 1) / 2 + W,
    W = rho / (1 - rho) x (1 + 0) / 2 x p   (Kingman, Poisson arrivals, deterministic prefill p),
    rho = lambda x p, lambda = (n - 1) / E2E0, E2E0 = prefill + (osl - 1) x TPOT(n):
    the new request waits for the iteration in flight (half a step of the n - 1 others on
    average), then for the prompts of other clients that arrived just before it. rho is capped
    at 0.95: in a closed loop the prompt queue cannot grow without bound. With osl = 1 (prompts
    only) no request decodes, so the clients resend together after each prefill iteration and
    every cycle is the start-up wave (``first_wave_ttft_s``).
    Source: Kingman (1961) via physics.queueing.classic_queues.kingman_mean_wait_s;
    closed-loop arrival rate = clients / cycle time (interactive response-time law, Lazowska et al. 1984, ch. 3).
    ``tpot_s``: ``concurrency_tpot`` of the same rows, when the caller has it already (or the
    TPOT the deployment really runs at, e.g. with speculative decoding).
    ``iteration_s``: the iteration the n - 1 others run, where it is not one plain decode step
    (speculative decoding: k draft steps and one verify step).
    """
    from advisor.physics.queueing.classic_queues import kingman_mean_wait_s

    n = np.asarray(n, dtype=float)
    isl = np.asarray(isl, dtype=float)
    osl = np.asarray(osl, dtype=float)
    first = prefill(r, isl).total
    p = prefill_interruption_s(r, isl)
    others = np.maximum(n - 1.0, 0.0)
    if iteration_s is None:
        iteration_s = decode_step(r, np.maximum(others, 1.0), isl + osl / 2.0).total
    residual = np.where(others > 0, iteration_s, 0.0)
    if tpot_s is None:
        tpot_s = concurrency_tpot(r, n, isl, osl)
    cycle = first + np.maximum(osl - 1.0, 0.0) * tpot_s
    rho = np.minimum(others / cycle * p, 0.95)
    steady = first + residual / 2.0 + kingman_mean_wait_s(rho, 1.0, 0.0, p)
    prompts_only = np.broadcast_to(osl <= 1.0, steady.shape)
    if not prompts_only.any():
        return steady
    # osl = 1: nobody decodes, so each request returns with the prefill iteration that took it
    # and its client resends at once; the n clients stay in step, every cycle a start-up wave
    iteration, m, delay = first_wave_iteration(r, isl, n, np.zeros(steady.shape))
    wave = first_wave_ttft_s(iteration, m, np.broadcast_to(n, steady.shape)) + delay
    return np.where(prompts_only, wave, steady)


#: Prompt tokens one prefill iteration takes by default: vLLM's max_num_batched_tokens for its
#: API server (8192, vllm EngineArgs), SGLang's chunked_prefill_size (8192 below 80 GB-class
#: GPUs' larger settings, sglang ServerArgs), TensorRT-LLM's max_num_tokens (8192, its
#: build/runtime default).
DEFAULT_PREFILL_BUDGET_TOKENS = 8192.0


def prompts_per_prefill(budget_tokens, isl, clients) -> np.ndarray:
    """Prompts one prefill iteration takes: budget / isl, at least 1, at most the clients."""
    m = np.asarray(budget_tokens, dtype=float) / np.maximum(np.asarray(isl, dtype=float), 1.0)
    return np.clip(m, 1.0, np.maximum(np.asarray(clients, dtype=float), 1.0))


def first_wave_iteration(
    r: ReplicaArrays, isl: np.ndarray, clients: np.ndarray, budget_tokens: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(iteration GPU time s, prompts per iteration, request delay s) of a start-up wave.

    An iteration prefills m = ``prompts_per_prefill`` prompts together: its GPU time is the
    batched prefill's (``prefill(isl, m)``) without the request overhead, which is the delay
    every first token also pays (``step.prefill_busy_and_delay_s``). A budget of 0 (not stated
    in the row) is the engines' default, ``DEFAULT_PREFILL_BUDGET_TOKENS``.
    """
    from advisor.perf.model.step import prefill_busy_and_delay_s

    budget = np.asarray(budget_tokens, dtype=float)
    m = prompts_per_prefill(
        np.where(budget > 0, budget, DEFAULT_PREFILL_BUDGET_TOKENS), isl, clients
    )
    busy, delay = prefill_busy_and_delay_s(prefill(r, isl, m).total, r.request_overhead_s)
    return busy, m, delay


def first_wave_ttfts_s(
    iteration_s: float, prompts_per_iteration: float, clients: float
) -> np.ndarray:
    """GPU times to first token of the n requests a closed loop sends at once, ascending.

        TTFT_i = ceil(i / m) x T,   i = 1..n

    A ``--max-concurrency n`` benchmark with the default infinite request rate (vLLM bench
    serve, SGLang bench_serving, GenAI-Perf's concurrency mode) releases n requests at t = 0;
    the server prefills their prompts first come first served, m prompts (its token budget /
    prompt length) per iteration of T seconds, so the i-th prompt's first token waits for every
    iteration up to its own. Only this first wave pays it: later requests arrive one by one as
    others finish. Source: the benchmark clients' dispatch loop (vllm/benchmarks/serve.py,
    sglang/bench_serving.py: a semaphore of n around requests sent without delay at rate inf);
    chunked-prefill token budget per iteration (Agrawal et al. 2024, Sarathi-Serve).

    >>> [round(float(x), 6) for x in first_wave_ttfts_s(0.060, 2.0, 4.0)]  # 2 prompts/iteration
    [0.06, 0.06, 0.12, 0.12]
    """
    k = int(max(clients, 1.0))
    i = np.arange(1, k + 1, dtype=float)
    return np.ceil(i / max(prompts_per_iteration, 1.0) - 1e-9) * iteration_s


def first_wave_ttft_s(iteration_s, prompts_per_iteration, clients) -> np.ndarray:
    """Mean of ``first_wave_ttfts_s`` per row.

    >>> # 8 prompts in one iteration of 240 ms: all wait 240 ms
    >>> round(float(first_wave_ttft_s(0.240, 8.0, 8.0)[0]), 6)
    0.24
    >>> # 16 prompts, 8 per 240 ms iteration: half wait 240 ms, half 480 ms -> 360 ms
    >>> round(float(first_wave_ttft_s(0.240, 8.0, 16.0)[0]), 6)
    0.36
    """
    t = np.atleast_1d(np.asarray(iteration_s, dtype=float))
    m = np.broadcast_to(np.asarray(prompts_per_iteration, dtype=float), t.shape)
    n = np.broadcast_to(np.asarray(clients, dtype=float), t.shape)
    # n is at most a few hundred clients: a short sum per row
    return np.array([float(np.mean(first_wave_ttfts_s(t[j], m[j], n[j]))) for j in range(t.size)])


def with_first_wave(
    steady_s: np.ndarray, wave_s: np.ndarray, clients: np.ndarray, requests: np.ndarray
) -> np.ndarray:
    """Mean over a run of ``requests`` whose first ``clients`` form the start-up wave.

        mean = ((R - n) x steady + n x wave) / R   for R > n (stated), else steady

    >>> float(with_first_wave(0.1, 1.1, 8.0, 80.0)[0])  # 72 x 0.1 + 8 x 1.1 = 16 -> / 80
    0.2
    """
    steady = np.atleast_1d(np.asarray(steady_s, dtype=float))
    n = np.asarray(clients, dtype=float)
    r = np.asarray(requests, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        mixed = ((r - n) * steady + n * np.asarray(wave_s, dtype=float)) / r
    return np.where(r > n, mixed, steady)


def overload_queue_wait_s(
    requests: np.ndarray, offered_per_s: np.ndarray, capacity_per_s: np.ndarray
) -> np.ndarray:
    """Mean queueing delay of a finite benchmark run offered faster than the server can serve.

    W = (N - 1) / 2 x (1 / mu - 1 / lambda)   for lambda > mu, else 0:
    request i arrives at i / lambda and starts at i / mu (the server never idles once behind),
    so it waits i (1/mu - 1/lambda); the mean over i = 0..N-1 is the formula. The backlog of a
    run above capacity grows with its length, so the run length N (a condition of the benchmark)
    is needed; a steady state does not exist. Source: deterministic fluid approximation of a
    transient overloaded queue (Newell, Applications of Queueing Theory, 1982, ch. 2).

    >>> round(float(overload_queue_wait_s(500, 16.0, 10.0)), 4)  # 249.5 x (0.1 - 0.0625) = 9.35625
    9.3563
    >>> float(overload_queue_wait_s(500, 8.0, 10.0))  # below capacity: no backlog
    0.0
    """
    n = np.asarray(requests, dtype=float)
    lam = np.asarray(offered_per_s, dtype=float)
    mu = np.asarray(capacity_per_s, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        w = (n - 1.0) / 2.0 * (1.0 / mu - 1.0 / lam)
    return np.where((lam > mu) & (n > 1), w, 0.0)

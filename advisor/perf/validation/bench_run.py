"""A finite closed-loop benchmark run replayed iteration by iteration, for its TTFT statistics.

A ``--max-concurrency n --num-prompts R`` run (vLLM ``bench serve``, SGLang ``bench_serving``)
is not the steady state the queueing model describes: its n clients send their first prompts at
t = 0, the server prefills them a token budget at a time, and when the lengths are fixed the
clients finish together and send the next round together, so every round starts with a queue of
prompts. A run of two or three rounds then has a median TTFT of seconds where the steady state
gives a few hundred ms (vLLM recipes, Llama-3.3-70B on one MI355X, 64 clients, 128 requests of
8192/1024 tokens: median 7.5 s, mean 11.6 s, P99 31.8 s; the steady state 0.64 s). With
SGLang's default lengths, uniform in [1, L], the rounds dissolve within a few requests per client.
No closed form covers both, so a run whose request count and length distribution are stated is
replayed on the model's own service times:

* each iteration decodes one token of every running sequence (``ServiceModel.decode_step_s``
  at the running batch) and prefills up to ``budget`` prompt tokens of the waiting prompts, first
  come first served, a prompt split across iterations when it does not fit (chunked prefill:
  Agrawal et al. 2024, Sarathi-Serve; vLLM ``max_num_batched_tokens``, SGLang
  ``chunked_prefill_size``); the prefill part costs what ``step.prefill`` gives for that many
  tokens batched, without the request overhead (``step.prefill_busy_and_delay_s``);
* a prompt waits while the running sequences fill the KV cache (``ServiceModel.max_running``);
* a client sends its next prompt when its last answer ends; the request overhead (tokenisation,
  HTTP) delays its arrival at the server and is part of its TTFT;
* lengths are drawn as the clients draw them (:func:`benchmark_lengths`), seeded, so a replay
  is deterministic.

The replay is a prediction of a benchmark's statistic (what the row measured), not of a service:
``estimate`` and ``recommend`` answer for a steady state (:mod:`advisor.perf.model.closed_loop`),
which has no start-up round. It only takes rows whose lengths it can draw (a random dataset);
ShareGPT rows and runs of unstated length keep the steady-state prediction.
"""

from __future__ import annotations

import heapq
import math
import re
from collections import deque
from dataclasses import dataclass, field

import numpy as np

from advisor.perf.model.predict import DEFAULT_PREFILL_BUDGET_TOKENS
from advisor.perf.model.replica import ReplicaArrays, build_replicas
from advisor.perf.model.service import service_for
from advisor.perf.model.step import chunk_offset_attention_s, prefill, prefill_busy_and_delay_s
from advisor.perf.validation.client_draws import (
    RANDOM_STATED,
    SHAREGPT,
    benchmark_lengths,
    client_arrivals,
    client_lengths,
    length_cv,
)
from advisor.perf.validation.measurements import Case

#: Seed of the replay's length draws (numpy.random.default_rng).
SEED = 0
#: Prompt-token counts at which an iteration's prefill time is tabulated (geometric, 16 tokens to
#: the budget; linear in between): the prefill is far from proportional to its tokens (weights
#: read once per pass, fixed per-layer costs), so a batch of short prompts is not the sum of them.
TABLE_POINTS = 24


def prefill_iteration_table(
    r: ReplicaArrays, isl_tokens: float, budget_tokens: float
) -> tuple[np.ndarray, np.ndarray]:
    """(prompt tokens, GPU seconds) of an iteration that prefills that many tokens, for row 0 of ``r``.

    T <= isl: one prompt's chunk of T tokens, ``prefill(T, 1)``; T > isl: T / isl prompts of the
    mean length, ``prefill(isl, T / isl)``; the request overhead is left out (it delays the
    request, not the iteration: ``step.prefill_busy_and_delay_s``).
    """
    tokens = np.unique(np.rint(np.geomspace(16.0, max(budget_tokens, 32.0), TABLE_POINTS)))
    one = tokens <= isl_tokens
    rows = r.take(np.zeros(tokens.size, dtype=int))
    total = prefill(rows, np.where(one, tokens, isl_tokens),
                    np.where(one, 1.0, tokens / isl_tokens)).total  # fmt: skip
    busy, _ = prefill_busy_and_delay_s(total, rows.request_overhead_s)
    return tokens, busy


@dataclass(frozen=True)
class RunSamples:
    """Per-request samples of one replayed run (s), in the order the requests were sent."""

    ttft_s: np.ndarray
    tpot_s: np.ndarray
    e2e_s: np.ndarray
    duration_s: float
    output_tokens: float = 0.0
    #: every iteration's length (s) and how many answers got a token at its end: the run's
    #: inter-token gaps, ``gap_count[i]`` of them equal to ``gap_s[i]`` (:func:`gap_statistic`)
    gap_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    gap_count: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=int))


def replay_closed_loop(
    step_s,
    prefill_table: tuple[np.ndarray, np.ndarray],
    *,
    delay_s: float,
    max_running: float,
    clients: int,
    requests: int,
    isl_tokens: np.ndarray,
    osl_tokens: np.ndarray,
    budget_tokens: int,
    arrival_s: np.ndarray | None = None,
    offset_pair_s: float = 0.0,
) -> RunSamples:
    """Replay a closed-loop run of ``requests`` prompts from ``clients`` clients (see module doc);
    with ``arrival_s``, an open-loop one instead: request j leaves the client at ``arrival_s[j]``
    whatever the others do (a request-rate run), ``clients`` unused.

    ``step_s(b)``: the decode step of b running sequences (s); ``prefill_table``: an iteration's
    prefill time against its prompt tokens (:func:`prefill_iteration_table`); ``delay_s``: the
    request overhead; ``max_running``: the KV cache's sequence cap; per-request lengths
    ``isl_tokens`` / ``osl_tokens`` (length ``requests``, the order they are sent in);
    ``offset_pair_s``: what each (query, key) pair of a chunk's attention to its prompt's earlier
    tokens adds (``step.chunk_offset_attention_s``): the table prices a chunk as a prompt of its
    own, so a prompt split over iterations pays the rest of its causal attention here.

    Hand check, one client, prompts of 100 tokens whose prefill takes 0.1 s, 3 output tokens,
    a 10 ms step, no overhead: TTFT 0.1 s; the two later tokens come with the next two
    iterations, 10 ms each (TPOT 10 ms, E2E 0.12 s); the second request starts at 0.12 s.

    >>> s = replay_closed_loop(lambda b: 0.010, (np.array([16.0, 100.0]), np.array([0.1, 0.1])),
    ...     delay_s=0.0, max_running=8, clients=1, requests=2, isl_tokens=np.array([100, 100]),
    ...     osl_tokens=np.array([3, 3]), budget_tokens=8192)
    >>> np.round(s.ttft_s, 6).tolist(), np.round(s.tpot_s, 6).tolist(), round(s.duration_s, 6)
    ([0.1, 0.1], [0.01, 0.01], 0.24)
    """
    n_req = int(requests)
    cap = int(max_running) if math.isfinite(max_running) else n_req
    cap = max(cap, 1)
    sent = np.zeros(n_req)
    ttft = np.full(n_req, np.nan)
    e2e = np.full(n_req, np.nan)
    arriving: list[tuple[float, int]] = []  # (time at the server, request), a heap
    waiting: deque[list[int]] = deque()  # admitted prompts: [request, prompt tokens left]
    queued: deque[int] = deque()  # arrived, not admitted (KV cache full)
    finishing: list[tuple[int, int]] = []  # (iteration of the last token, request), a heap
    t = 0.0
    iteration = 0
    running = 0
    done = 0
    if arrival_s is not None:  # open loop: every request leaves at its own time
        sent[:] = arrival_s[:n_req]
        arriving = [(float(a) + delay_s, j) for j, a in enumerate(sent)]
        heapq.heapify(arriving)
        nxt = n_req
    else:
        nxt = min(int(clients), n_req)
        for j in range(nxt):
            heapq.heappush(arriving, (delay_s, j))
    tab_tokens, tab_s = prefill_table
    gaps: list[float] = []
    gap_counts: list[int] = []

    def finish(j_done: int) -> None:  # the answer ends at t: its client sends the next prompt
        nonlocal done, nxt
        e2e[j_done] = t - sent[j_done]
        done += 1
        if nxt < n_req:
            sent[nxt] = t
            heapq.heappush(arriving, (t + delay_s, nxt))
            nxt += 1

    while done < n_req:
        while arriving and arriving[0][0] <= t:
            queued.append(heapq.heappop(arriving)[1])
        while queued and running + len(waiting) < cap:
            j = queued.popleft()
            waiting.append([j, int(isl_tokens[j])])
        if running == 0 and not waiting:
            if not arriving:  # pragma: no cover - every unfinished request is somewhere
                break
            t = arriving[0][0]
            continue
        budget = int(budget_tokens)
        tokens = 0
        pairs = 0.0  # (query, key) pairs of the chunks' attention to their earlier chunks
        first: list[int] = []
        for entry in waiting:
            if budget <= 0:
                break
            take = min(budget, entry[1])
            pairs += take * float(isl_tokens[entry[0]] - entry[1])
            entry[1] -= take
            budget -= take
            tokens += take
            if entry[1] == 0:
                first.append(entry[0])
        for _ in first:
            waiting.popleft()
        decoding = running
        dt = step_s(decoding) if decoding > 0 else 0.0
        if tokens > 0:
            dt += float(np.interp(tokens, tab_tokens, tab_s)) + offset_pair_s * pairs
        t += dt
        if decoding > 0:
            iteration += 1
            gaps.append(dt)
            gap_counts.append(decoding)
            while finishing and finishing[0][0] == iteration:
                running -= 1
                finish(heapq.heappop(finishing)[1])
        for j in first:
            ttft[j] = t - sent[j]
            if osl_tokens[j] <= 1:
                finish(j)
            else:
                heapq.heappush(finishing, (iteration + int(osl_tokens[j]) - 1, j))
                running += 1
    multi = osl_tokens > 1
    # a one-token answer has no TPOT: the clients leave it out of theirs (NaN, dropped)
    tpot = np.where(multi, (e2e - ttft) / np.maximum(osl_tokens - 1, 1), np.nan)
    return RunSamples(
        ttft_s=ttft, tpot_s=tpot, e2e_s=e2e, duration_s=t,
        output_tokens=float(np.sum(osl_tokens[:n_req])),
        gap_s=np.array(gaps), gap_count=np.array(gap_counts, dtype=int),
    )  # fmt: skip


#: The case kinds a replay answers, and the per-request samples each reads ("tput": the run's
#: output tokens over its duration, as the clients print it).
REPLAYED_METRIC = {
    "conc_ttft": "ttft", "conc_tpot": "tpot", "conc_e2e": "e2e", "conc_tput": "tput",
    "load_ttft": "ttft", "load_itl": "tpot", "load_e2e": "e2e", "load_tput": "tput",
}  # fmt: skip


def replayable(c: Case) -> bool:
    """A closed-loop row the replay answers: a TTFT or throughput row of a stated run length
    whose lengths the replay can draw (a random dataset, and no ShareGPT unless the command
    names the random one: a client given ``--random-input-len`` without ``--dataset-name
    random`` ran its default, ShareGPT); a TTFT, TPOT or E2E row of a run whose every request's lengths are the
    client's own (:func:`client_lengths`), one client included; and a request-rate row (TTFT,
    TPOT, E2E, throughput) of a run whose send times are the client's own too
    (:func:`client_arrivals`), on one replica; likewise a client's file that lists each
    request's lengths (and, for a rate, send times: ``importers.per_request``). ITL rows are not: the table's mean ITL is read
    as the TPOT the steady state predicts, and its percentiles are the percentile check's
    (:func:`gap_statistic` over the replay's gaps, ``percentiles.replayed_quantile_s``)."""
    notes = (c.row or {}).get("notes", "") or ""
    metric = str((c.row or {}).get("metric", ""))
    if c.kind not in REPLAYED_METRIC or metric.startswith("itl"):
        return False
    own = _own_run(c)
    if c.kind.startswith("load_"):  # open loop: the client's own send times, one replica
        if own is not None:
            return c.replicas == 1 and own[2] is not None
        return c.replicas == 1 and client_arrivals(notes, float(c.qps)) is not None
    if c.batch < 1:
        return False
    if own is not None or client_lengths(notes) is not None:
        return True
    random = RANDOM_STATED.search(notes) or (
        "random" in notes and not re.search("sharegpt", notes, re.I)
    )
    return (
        c.kind in ("conc_ttft", "conc_tput")
        and c.batch >= 2
        and c.requests >= 2
        and bool(random)
        and not SHAREGPT.search(notes)
    )


def _own_run(c: Case) -> tuple[np.ndarray, np.ndarray, np.ndarray | None] | None:
    """(input lengths, output lengths, send times or None) a client's detailed result file
    listed for its run (``importers.per_request``), in send order; None for other rows."""
    row = c.row or {}
    if row.get("input_lens") is None:
        return None
    starts = row.get("start_s")
    return (np.asarray(row["input_lens"], dtype=np.int64),
            np.asarray(row["output_lens"], dtype=np.int64),
            None if starts is None else np.asarray(starts, dtype=float))  # fmt: skip


def run_lengths(c: Case) -> tuple[np.ndarray, np.ndarray, int]:
    """(input lengths, output lengths, requests) of a case's run, in the order they were sent:
    the lengths a client's detailed result file lists (:func:`_own_run`), the client's own
    draws where they can be reproduced (:func:`client_lengths`), else a seeded draw of the same
    distribution (:func:`benchmark_lengths`)."""
    own = _own_run(c)
    if own is not None:
        return own[0], own[1], int(own[0].size)
    notes = c.row.get("notes", "") or ""
    exact = client_lengths(notes)
    if exact is not None:
        return exact[0], exact[1], int(exact[0].size)
    cv = length_cv(notes)
    rng = np.random.default_rng(SEED)
    n_req = int(c.requests)
    return (benchmark_lengths(rng, float(c.isl), cv, n_req),
            benchmark_lengths(rng, float(c.osl), cv, n_req), n_req)  # fmt: skip


def replay_runs(items: list[Case]) -> list[RunSamples]:
    """Replay each case's run on its deployment's service times (``service.service_for``)."""
    if not items:
        return []
    r = build_replicas([c.config for c in items])
    out = []
    for k, c in enumerate(items):
        one = r.take(np.array([k]))
        sm = service_for(one, np.array([c.isl]), np.array([c.osl]))
        budget = c.prefill_budget_tokens or DEFAULT_PREFILL_BUDGET_TOKENS
        cache: dict[int, float] = {}

        def step_s(b: int, sm=sm, cache=cache) -> float:
            v = cache.get(b)
            if v is None:
                v = cache[b] = float(sm.decode_step_s(np.array([float(b)]))[0])
            return v

        lens_in, lens_out, n_req = run_lengths(c)
        arrivals = None
        if c.kind.startswith("load_"):
            own = _own_run(c)
            arrivals = (own[2] if own is not None else
                        client_arrivals(c.row.get("notes", "") or "", float(c.qps)))  # fmt: skip
        out.append(
            replay_closed_loop(
                step_s, prefill_iteration_table(one, float(c.isl), float(budget)),
                delay_s=float(np.asarray(sm.request_delay_s, dtype=float).ravel()[0]),
                max_running=float(np.asarray(sm.max_running, dtype=float).ravel()[0]),
                clients=int(c.batch), requests=n_req, isl_tokens=lens_in, osl_tokens=lens_out,
                budget_tokens=int(budget), arrival_s=arrivals,
                offset_pair_s=float(chunk_offset_attention_s(one)[0]),
            )
        )  # fmt: skip
    return out


def run_statistic(samples: np.ndarray, statistic: str) -> float:
    """A run's statistic as the benchmark clients compute it: mean, median, or pNN (numpy's
    linear percentile, as vLLM's and SGLang's clients use).

    >>> run_statistic(np.array([1.0, 2.0, 3.0, 10.0]), "median"), run_statistic(np.array([1.0, 3.0]), "mean")
    (2.5, 2.0)
    """
    x = samples[np.isfinite(samples)]
    if statistic == "mean":
        return float(x.mean())
    if statistic == "median":
        return float(np.median(x))
    m = re.fullmatch(r"p(\d+)", statistic)
    if not m:
        raise ValueError(f"statistic: got {statistic!r}, allowed mean, median, pNN")
    return float(np.percentile(x, float(m.group(1))))


def gap_statistic(gap_s: np.ndarray, gap_count: np.ndarray, statistic: str) -> float:
    """A run's inter-token statistic (mean, median or pNN) over every token gap, ``gap_count[i]``
    gaps of ``gap_s[i]`` each: what the clients' ITL figures are (every gap of every answer
    pooled, numpy's linear percentile), without listing the gaps one by one.

    Hand check: gaps 1, 1, 1, 4 (one iteration of 1 s with three answers, one of 4 s with one):
    mean 1.75; median 1; P90 at position 0.9 x 3 = 2.7 lies between the third gap (1) and the
    fourth (4): 1 + 0.7 x 3 = 3.1, as ``np.percentile([1, 1, 1, 4], 90)``.

    >>> g, n = np.array([4.0, 1.0]), np.array([1, 3])
    >>> [round(gap_statistic(g, n, s), 6) for s in ("mean", "median", "p90")]
    [1.75, 1.0, 3.1]
    """
    keep = gap_count > 0
    g, n = gap_s[keep], gap_count[keep]
    if g.size == 0:
        return math.nan
    if statistic == "mean":
        return float(np.sum(g * n) / np.sum(n))
    if statistic == "median":
        q = 50.0
    else:
        m = re.fullmatch(r"p(\d+)", statistic)
        if not m:
            raise ValueError(f"statistic: got {statistic!r}, allowed mean, median, pNN")
        q = float(m.group(1))
    order = np.argsort(g, kind="stable")
    g, ends = g[order], np.cumsum(n[order])
    h = q / 100.0 * (ends[-1] - 1)
    lo, hi = (g[np.searchsorted(ends, k, side="right")] for k in (math.floor(h), math.ceil(h)))
    return float(lo + (h - math.floor(h)) * (hi - lo))


def replayed_values(items: list[Case]) -> np.ndarray:
    """Each replayable case's value from its replayed run (:func:`run_value`)."""
    runs = replay_runs(items)
    return np.array([run_value(c, s) for c, s in zip(items, runs, strict=True)])


def run_value(c: Case, s: RunSamples) -> float:
    """The case's statistic of its replayed run: output tokens / duration for a throughput,
    else its statistic (mean, median) of the requests' TTFT, TPOT or E2E (s)."""
    metric = REPLAYED_METRIC[c.kind]
    if metric == "tput":
        return s.output_tokens / s.duration_s
    return run_statistic(getattr(s, metric + "_s"), c.statistic)

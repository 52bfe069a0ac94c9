"""Latency under load: TTFT, TPOT and end-to-end latency of a batching LLM server at a request rate.

Two implementations of the same server model, tested against each other:

* :func:`latency_under_load` -- a vectorised analytic approximation across candidates (arrays of
  shape ``[n]``, no Python loop per candidate). This is what the recommendation search calls.
* :func:`advisor.perf.validation.queue_sim.simulate` -- a seeded discrete-event simulation of one
  candidate (the reference; in perf because it is a check, not a formula).

Server model (both implementations)
-----------------------------------
Requests arrive as a Poisson process at ``arrival_rate_per_s``. Each request has a prompt of
``isl`` tokens and produces ``osl`` output tokens (the first token comes out of the prefill, the
other ``osl - 1`` out of decode steps). A request holds one of ``max_running`` KV slots from
admission to its last token; the waiting queue is FIFO.

* Decode step time for ``b`` running sequences (the ``linear`` form of :class:`ServiceModel`)::

      step(b) = max(decode_step_base_s + decode_step_per_seq_s * b, compute_per_seq_s * b)

  ``base`` is the batch-independent part (weights read once per step, launch overhead, TP
  collectives), ``per_seq`` the per-sequence memory-bound part (its KV cache at the mean context
  plus per-token work), ``compute_per_seq`` the compute-bound floor (decode FLOPs per token /
  achievable FLOP/s); the step is the larger of the memory and compute times (roofline,
  formulas.md). A callable ``decode_step_fn(b)`` may replace the linear form.
* Prefill of a request takes ``prefill_s * (isl_i / isl) ** e`` with ``e`` the prefill's length
  elasticity (``prefill_elasticity``; 1: linear in tokens, the GEMMs; near 0 where a fixed floor
  such as the host's kernel dispatch sets the time). Its coefficient of variation is then
  ``e * isl_cv`` (first order in the length's spread). Batched prefills of k prompts take the
  sum: prefill is compute-bound so batching saves little.
* Policies (``policy=``):

  - ``"continuous"`` (Orca, Yu et al. 2022 OSDI, iteration-level scheduling; vLLM's pre-chunked
    scheduler): each iteration first prefills every request admitted since the last iteration
    (one batched prefill; those requests' first tokens come out at its end), then runs one decode
    step for all running sequences. A prefill stalls decode for its whole duration.
  - ``"chunked"`` (Sarathi-Serve, Agrawal et al. 2024 OSDI): each iteration runs one decode step
    plus up to ``chunk_tokens`` prompt tokens taken FIFO from admitted requests; the iteration
    takes ``step(b) + chunk_tokens_used * prefill_s / isl``. A request's first token comes out at
    the end of the iteration that completes its prompt; it decodes from the next iteration.
  - ``"static"`` (request-level batching, for comparison): when the server is free it takes up
    to ``max_running`` waiting requests, prefills them together, then runs ``max(osl) - 1``
    decode steps at ``step(k)``; requests arriving meanwhile wait for the whole batch.

Definitions of the outputs follow vLLM ``benchmarks/benchmark_serving.py``: TTFT = first token
time - arrival; TPOT (per request) = (E2E - TTFT) / (osl - 1), averaged over requests with
osl > 1; E2E = last token time - arrival. Requests with osl == 1 have TPOT 0 here.

Capacity and utilisation
------------------------
At the largest batch the server spends ``prefill_s + (osl - 1) * step(M) / M`` of busy time per
request (M = max_running). Its capacity is therefore ``1 / that`` requests/s and the utilisation
is ``rho = arrival_rate * (prefill_s + (osl - 1) * step(M) / M)`` (:func:`utilisation`). Chunked
prefill adds a second bottleneck: each chunk also runs a decode step, so the prompt pipeline has
utilisation ``rho_prefill = arrival_rate * (prefill_s + isl / chunk_tokens * step_busy)``.
``stable`` is ``rho < 1`` (and ``rho_prefill < 1`` for chunked); unstable candidates get ``inf``
latencies and a reason code (:data:`REASONS`).

Analytic approximation (what :func:`latency_under_load` computes)
------------------------------------------------------------------
1. Running batch (mean field + Little's law). A tagged request in decode sees ``n`` others (for a
   Poisson stream the others in an infinite-server system are Poisson(n) distributed, PASTA), so
   its step time is ``step(min(M, 1 + n))``. Prefills of other requests take a fraction
   ``rho_p = arrival_rate * prefill_s`` of the server's time, stretching its time per token to
   ``tau = step(min(M, 1 + n)) / (1 - rho_p)``. Little's law gives ``n = arrival_rate * (osl - 1)
   * tau``; the fixed point is solved in closed form for the linear step (smallest root of a
   convex piecewise-linear equation) and for a tabulated :class:`PiecewiseLinearStep` (exact
   per segment), or by vectorised bisection for any other callable.
2. TTFT, continuous: an arrival waits for the iteration in progress to end, then is prefilled
   together with everyone who arrived during that iteration. Iteration lengths follow
   ``L' = D + sum of the prefills of Poisson(arrival_rate * L) arrivals``, so
   ``E[L] = D / (1 - rho_p)`` and ``Var[L] = arrival_rate E[L] E[P^2] / (1 - rho_p^2)``. The
   arrival lands in a length-biased iteration (moments ``E[L^2]/E[L]``, ``E[L^3]/E[L]``, third
   moment from a gamma fit of the prefill part); the residual is uniform within it (renewal
   theory / Pollaczek-Khinchine residual ``E[L^2] / 2E[L]``). With probability
   ``exp(-(n + arrival_rate * prefill_s))`` (empty infinite-server system) it finds the server
   idle and waits for nothing. When all ``M`` slots are busy it also waits for a slot: Erlang-C
   with ``M`` servers (exact recursion for M <= 64, Halfin-Whitt 1981 above) and an exponential
   conditional wait of mean ``hold / (M - A)``.
3. TTFT, chunked: M/G/1 Pollaczek-Khinchine queue for the prompt pipeline (service
   ``prefill_s + ceil(isl / chunk) * D``), mean and second moment of the wait (Takacs), plus half
   an iteration of residual and the same Erlang-C slot wait.
4. TTFT, static: the same length-biased residual argument with the "iteration" being a whole
   batch (prefill + (osl - 1) decode steps); the busy batch size solves
   ``k = m / (1 - exp(-m))``, ``m = arrival_rate * S(k)`` (gated batch service, a batch being the
   arrivals during the previous one, conditioned on being non-empty).
5. TPOT = ``tau``; its request-to-request variance combines the batch-size fluctuation averaged
   over the request's lifetime (for an M/D/infinity occupancy the lifetime average of the
   Poisson count has variance 2n/3) and the compound-Poisson prefill stalls
   (``arrival_rate * T_decode * E[P^2] / (osl - 1)^2``).
6. Percentiles: two-moment fits. TTFT = prefill + a zero-inflated gamma waiting time (atom at 0
   with the probability of not waiting, gamma fitted to the mean and variance of the positive
   part); TPOT gamma; E2E = a floor + gamma, the floor being the unloaded request at the mean
   length when every answer has it, else the prefill (an answer may stop after one token).
   Where the lengths are uniform (``length_dist="uniform"``, a benchmark's random dataset),
   E2E = (a gamma at the mean length) + (a uniform decode time of the answer's length), whose
   quantiles come from the CDF of the sum (:func:`gamma_plus_uniform_quantiles_s`): the
   uniform's tail stops at the longest answer. Gamma quantiles by the Wilson-Hilferty cube-root
   normal approximation (Wilson and Hilferty 1931; Johnson, Kotz and Balakrishnan, Continuous
   Univariate Distributions vol. 1, ch. 17), normal quantiles by Acklam's rational approximation.

Where each step lives (this package, one module each): the inputs ``service`` (ServiceModel,
PiecewiseLinearStep, utilisation) and outputs ``results`` (LatencyStats, LoadResult, REASONS);
step 1 ``running_batch``; the slot wait and the continuous and chunked waits ``waits``; static
batches ``static_batch``; TPOT / E2E spread and the percentiles ``tails``, with the normal and
gamma quantiles of ``distributions``; the inter-token gap ``inter_token``; the textbook formulas
(Little, Kingman, Pollaczek-Khinchine, Erlang C) ``classic_queues``; this module puts them
together in :func:`latency_under_load`.

Agreement with the simulation is checked in tests/test_queueing.py (mean TTFT and TPOT within
15 %, P99 within 25 %, for rho 0.2..0.8 on small cases). Source for the queueing results:
formulas.md "Batching and queueing"; Kleinrock, Queueing Systems vol. 1 (1975) for M/G/1,
M/G/infinity and Erlang-C; Kingman (1961) for the rho / (1 - rho) growth.
"""

from __future__ import annotations

import numpy as np

from advisor.physics.queueing.inter_token import inter_token_stats
from advisor.physics.queueing.results import (
    DECODE_SATURATED,
    KV_CAPACITY,
    OK,
    PREFILL_SATURATED,
    QUANTILES,
    LatencyStats,
    LoadResult,
)
from advisor.physics.queueing.running_batch import decode_backlog_gains, running_batch_fixed_point
from advisor.physics.queueing.service import (
    POLICIES,
    ArrayLike,
    ServiceModel,
    busy_s_per_request,
    checked_array,
)
from advisor.physics.queueing.static_batch import static_batch_terms
from advisor.physics.queueing.tails import (
    LENGTH_DISTS,
    UNIFORM_MAX_CV,
    e2e_variance_s2,
    gamma_plus_uniform_quantiles_s,
    shifted_gamma_quantiles_s,
    tpot_variance_s2,
    ttft_quantiles_s,
    uniform_half_width_s,
)
from advisor.physics.queueing.waits import (
    chunked_wait_moments,
    continuous_wait_moments,
    occupancy_peakedness,
    slot_wait_moments,
)


def _check_workload(
    n: int,
    arrival_rate_per_s: ArrayLike,
    isl_tokens: ArrayLike,
    osl_tokens: ArrayLike,
    isl_cv: ArrayLike,
    osl_cv: ArrayLike,
    policy: str,
    chunk_tokens: ArrayLike,
) -> tuple[np.ndarray, ...]:
    if policy not in POLICIES:
        raise ValueError(f"policy: got {policy!r}, allowed {POLICIES}")
    out = []
    for name, val, low in (
        ("arrival_rate_per_s", arrival_rate_per_s, 0.0),
        ("isl_tokens", isl_tokens, 1.0),
        ("osl_tokens", osl_tokens, 1.0),
        ("isl_cv", isl_cv, 0.0),
        ("osl_cv", osl_cv, 0.0),
        ("chunk_tokens", chunk_tokens, 1.0),
    ):
        arr = checked_array(name, val, low=low)
        if arr.ndim == 1 and arr.shape[0] not in (1, n):
            raise ValueError(f"{name}: shape {arr.shape} does not match {n} candidates")
        out.append(np.broadcast_to(arr, (n,)).astype(float))
    return tuple(out)


def _stats(mean, p50, p90, p95, p99) -> LatencyStats:
    return LatencyStats(mean, p50, p90, p95, p99)


def _mask_inf(stats: LatencyStats, bad: np.ndarray) -> LatencyStats:
    def m(a):
        return np.where(bad, np.inf, a)

    return LatencyStats(
        m(stats.mean_s), m(stats.p50_s), m(stats.p90_s), m(stats.p95_s), m(stats.p99_s)
    )


def latency_under_load(
    service: ServiceModel,
    arrival_rate_per_s: ArrayLike,
    osl_tokens: ArrayLike,
    *,
    isl_tokens: ArrayLike,
    isl_cv: ArrayLike = 0.0,
    osl_cv: ArrayLike = 0.0,
    policy: str = "continuous",
    chunk_tokens: ArrayLike = 512,
    with_itl: bool = False,
    length_dist: str = "gamma",
) -> LoadResult:
    """TTFT / TPOT / E2E mean and percentiles per candidate at a Poisson arrival rate (analytic).

    Arguments are arrays ``[n]`` or scalars: ``arrival_rate_per_s`` (requests/s), ``osl_tokens``
    and ``isl_tokens`` (means), ``isl_cv`` / ``osl_cv`` (coefficients of variation of the lengths,
    0 = fixed), ``policy`` (one of :data:`POLICIES`), ``chunk_tokens`` (prompt tokens per
    iteration for ``"chunked"``), ``with_itl`` (also the inter-token gap's percentiles,
    :func:`inter_token_stats`; the search does not ask), ``length_dist`` (the shape of the
    lengths' spread, one of :data:`LENGTH_DISTS`: "gamma", the scenario's; "uniform", a
    benchmark's random dataset, whose E2E quantiles are then a gamma plus a uniform decode time,
    :func:`gamma_plus_uniform_quantiles_s`). The approximation is described in the
    module docstring; its
    steps are :func:`running_batch_fixed_point`, :func:`slot_wait_moments`, the policy's wait
    (:func:`continuous_wait_moments`, :func:`chunked_wait_moments`, :func:`static_batch_terms`),
    :func:`tpot_variance_s2` / :func:`e2e_variance_s2` and the quantiles
    (:func:`ttft_quantile_s`, :func:`shifted_gamma_quantile_s`).

    >>> sm = ServiceModel(0.010, 0.0002, 0.040, 256)
    >>> r = latency_under_load(sm, 1e-6, 101, isl_tokens=512)  # nearly no load
    >>> round(float(r.ttft.mean_s[0]), 4), round(float(r.tpot.mean_s[0]), 4)  # prefill, step(1)
    (0.04, 0.0102)
    """
    n = service.n
    if length_dist not in LENGTH_DISTS:
        raise ValueError(f"length_dist: got {length_dist!r}, allowed {LENGTH_DISTS}")
    arrival_rate_per_s, isl, osl, cv_i, cv_o, chunk = _check_workload(
        n, arrival_rate_per_s, isl_tokens, osl_tokens, isl_cv, osl_cv, policy, chunk_tokens
    )
    if (
        length_dist == "uniform"
        and max(cv_i.max(initial=0.0), cv_o.max(initial=0.0)) > UNIFORM_MAX_CV
    ):
        # a uniform on [m - h, m + h] of positive lengths has h <= m: cv <= 1 / sqrt(3)
        worst = max(cv_i.max(initial=0.0), cv_o.max(initial=0.0))
        raise ValueError(
            f"isl_cv / osl_cv: got {worst:g} with length_dist 'uniform', allowed 0 to "
            f"{UNIFORM_MAX_CV:.4f} (a uniform of positive lengths)"
        )
    max_running = service.max_running
    prefill_s = service.prefill_s
    decode_steps = osl - 1.0  # decode steps per request
    cv_p = cv_i * service.prefill_elasticity  # the prefill's spread across prompts
    prefill_second_moment_s2 = prefill_s**2 * (1.0 + cv_p**2)  # E[P^2]
    step = service.decode_step_s

    busy_s = busy_s_per_request(service, osl)
    rho_full = arrival_rate_per_s * busy_s
    rho_p = arrival_rate_per_s * prefill_s
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        capacity = 1.0 / busy_s
        unlimited_tok = step(np.full(n, 1e9)) / 1e9
        rho_unlimited = arrival_rate_per_s * (prefill_s + decode_steps * unlimited_tok)
        rho_p_safe = np.minimum(rho_p, 0.999999)

        # 1. running batch
        g_tr, h_tr = decode_backlog_gains(rho_p_safe, decode_steps, policy)
        dec = running_batch_fixed_point(
            service, arrival_rate_per_s, prefill_second_moment_s2, decode_steps, rho_p, g_tr, h_tr
        )
        nrun, tau = dec.running_seqs, dec.tpot_mean_s

        # 2. queue wait for a KV slot
        z_peak = occupancy_peakedness(arrival_rate_per_s, h_tr, dec.step_slope_s)
        occ = np.minimum(
            nrun + rho_p, np.where(np.isfinite(max_running), max_running * rho_full, np.inf)
        )
        c_wait, ew, vw = slot_wait_moments(arrival_rate_per_s, occ, max_running, z_peak)

        # 3. wait before the first token, per policy
        rho_prefill = rho_p
        if policy == "continuous":
            ex, vx, p_zero_x = continuous_wait_moments(
                arrival_rate_per_s,
                prefill_second_moment_s2,
                dec.lb1_s,
                dec.lb2_s2,
                rho_p_safe,
                dec.p_idle,
            )
        elif policy == "chunked":
            ex, vx, p_zero_x, rho_prefill = chunked_wait_moments(
                arrival_rate_per_s,
                prefill_s,
                isl,
                chunk,
                cv_i,
                dec.busy_decode_s,
                nrun,
                service.prefill_elasticity,
            )
        else:  # static
            ex, vx, p_zero_x, tau, var_tpot_static, nrun = static_batch_terms(
                service,
                arrival_rate_per_s,
                prefill_s,
                prefill_second_moment_s2,
                decode_steps,
                max_running,
            )
        ttft_mean = prefill_s + ex + ew
        y_var = np.maximum(vx + vw + (prefill_s * cv_p) ** 2, 0.0)
        p_zero = p_zero_x * (1.0 - c_wait)

        # 4. spread of TPOT and E2E
        if policy == "static":
            var_tpot = var_tpot_static
            cov_q0 = np.zeros(n)
        else:
            var_tpot = tpot_variance_s2(
                dec.step_slope_s, nrun, z_peak, rho_p_safe, arrival_rate_per_s, dec.decode_time_s, prefill_second_moment_s2, decode_steps,
                g_tr, dec.own_prefill_var_s2,
            )  # fmt: skip
            cov_q0 = g_tr * dec.own_prefill_var_s2  # Cov(TTFT, decode time) through Q0
        tpot_mean = np.where(decode_steps > 0, tau, 0.0)
        var_tpot = np.where(decode_steps > 0, var_tpot, 0.0)
        e2e_mean = ttft_mean + decode_steps * tau
        e2e_var = e2e_variance_s2(y_var, decode_steps, var_tpot, cov_q0, cv_o, osl, tau)
        # shifts for the percentile fits: the unloaded values are hard lower bounds
        tpot_floor = np.where(decode_steps > 0, np.minimum(step(np.ones(n)), tpot_mean), 0.0)
        e2e_floor = np.minimum(prefill_s + decode_steps * tpot_floor, e2e_mean)

    stable = (rho_full < 1.0) & (rho_prefill < 1.0) & np.isfinite(rho_full)
    reason = np.full(n, OK, dtype=np.int8)
    reason = np.where(~stable & (rho_unlimited >= 1.0), DECODE_SATURATED, reason)
    reason = np.where(~stable & (rho_unlimited < 1.0), KV_CAPACITY, reason)
    reason = np.where(~stable & (rho_prefill >= 1.0), PREFILL_SATURATED, reason).astype(np.int8)
    bad = ~stable

    # 5. percentiles
    # The request's own front-end work (tokenisation, HTTP, admission) delays its first token
    # but runs beside the GPU, so it is outside every utilisation above.
    d = service.request_delay_s
    ttft = _stats(
        ttft_mean + d,
        *(
            x + d
            for x in ttft_quantiles_s(
                prefill_s, ex + ew, y_var, p_zero, QUANTILES, cv_p, length_dist
            )
        ),
    )
    # static batching has no stalls: a request's TPOT is step(its batch) <= step(M)
    tpot_cap = (
        step(np.where(np.isfinite(max_running), max_running, 1e9)) if policy == "static" else np.inf
    )
    tpot = _stats(
        tpot_mean,
        *(
            np.minimum(x, tpot_cap)
            for x in shifted_gamma_quantiles_s(tpot_floor, tpot_mean, var_tpot, QUANTILES)
        ),
    )
    if length_dist == "uniform":
        # the output length's part of the spread is a uniform decode time about the mean
        length_var = (cv_o * osl * tau) ** 2
        e2e_q = gamma_plus_uniform_quantiles_s(
            e2e_floor + d,
            e2e_mean + d,
            np.maximum(e2e_var - length_var, 0.0),
            np.where(np.isfinite(tau), uniform_half_width_s(osl * tau, cv_o), 0.0),
            QUANTILES,
        )
    else:
        # the unloaded request at the mean length bounds E2E only when every answer has that
        # length; a random one can stop after its first token, so the prefill is the floor
        floor = np.where(cv_o > 0, np.minimum(prefill_s, e2e_mean), e2e_floor)
        e2e_q = shifted_gamma_quantiles_s(floor + d, e2e_mean + d, e2e_var, QUANTILES)
    e2e = _stats(e2e_mean + d, *e2e_q)
    itl = None
    if with_itl:
        itl = _mask_inf(
            inter_token_stats(step, nrun, z_peak, dec.step_slope_s, tpot_mean, arrival_rate_per_s, prefill_s, isl,
                              chunk, policy, decode_steps),
            bad,
        )  # fmt: skip
    util = np.maximum(rho_full, rho_prefill)
    with np.errstate(divide="ignore", invalid="ignore"):
        cap = np.where(
            policy == "chunked",
            np.minimum(
                capacity, np.where(rho_prefill > 0, arrival_rate_per_s / rho_prefill, np.inf)
            ),
            capacity,
        )
    throughput = np.where(stable, arrival_rate_per_s, cap) * osl
    return LoadResult(
        ttft=_mask_inf(ttft, bad),
        tpot=_mask_inf(tpot, bad),
        e2e=_mask_inf(e2e, bad),
        running_mean=np.where(stable, nrun, max_running),
        utilisation=util,
        capacity_req_per_s=cap,
        throughput_tok_per_s=throughput,
        stable=stable,
        reason_code=reason,
        itl=itl,
    )

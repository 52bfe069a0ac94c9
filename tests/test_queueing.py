"""Tests for advisor/physics/queueing/: analytic latency under load versus the simulation.

Expected values come from hand calculations (stated next to each assertion), from queueing
limits (unloaded server, saturation), or from the discrete-event simulation
(advisor/perf/validation/queue_sim.py, the reference for the analytic approximation).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from advisor.perf.validation.queue_sim import simulate
from advisor.physics.queueing.classic_queues import erlang_c
from advisor.physics.queueing.distributions import gamma_quantile, norm_ppf
from advisor.physics.queueing.model import latency_under_load
from advisor.physics.queueing.results import (
    DECODE_SATURATED,
    KV_CAPACITY,
    OK,
    PREFILL_SATURATED,
    QUANTILES,
    REASONS,
)
from advisor.physics.queueing.service import ServiceModel, utilisation

# Small reference cases (step base s, per-seq s, prefill s, max_running), osl, isl.
# A: 70B-on-4-GPUs-like (15 ms step, 60 ms prefill); B: 8B-like; D: prefill-heavy (long prompt,
# short answer: prefill interruptions dominate TPOT); C: tight KV budget (8 slots).
CASES = {
    "A": ((0.015, 0.0004, 0.060, 64), 64, 512),
    "B": ((0.006, 0.0001, 0.020, 128), 64, 512),
    "C": ((0.010, 0.0010, 0.030, 8), 32, 256),
    "D": ((0.008, 0.0002, 0.080, 64), 16, 2048),
}


def _case(name: str, rho: float) -> tuple[ServiceModel, float, int, int]:
    coeffs, osl, isl = CASES[name]
    sm = ServiceModel(*coeffs)
    lam = rho / float(utilisation(sm, 1.0, osl)[0])  # utilisation is linear in the rate
    return sm, lam, osl, isl


def _rel(a: np.ndarray | float, b: np.ndarray | float) -> float:
    return abs(float(np.asarray(a).ravel()[0]) / float(np.asarray(b).ravel()[0]) - 1.0)


# ------------------------------------------------------------------ formulas and helpers


def test_norm_ppf_matches_tables():
    # standard normal tables: z_0.5 = 0, z_0.9 = 1.28155, z_0.95 = 1.64485, z_0.99 = 2.32635
    z = norm_ppf(np.array([0.5, 0.9, 0.95, 0.99, 0.01]))
    assert np.allclose(z, [0.0, 1.281552, 1.644854, 2.326348, -2.326348], atol=1e-5)


def test_gamma_quantile_exponential_and_degenerate():
    # exponential (gamma shape 1) of mean 2: x_q = -2 ln(1 - q); WH is 1.0 % low at q = 0.9
    for q in (0.9, 0.95, 0.99):
        assert _rel(gamma_quantile(2.0, 4.0, q), -2.0 * math.log(1 - q)) < 0.015
    # zero variance: every quantile is the mean
    assert float(gamma_quantile(3.0, 0.0, 0.99)) == 3.0


def test_erlang_c_textbook_and_limits():
    # M/M/1: P(wait) = rho; M/M/2 at A = 1: C = A^2/(2 - A) / (1 + A + A^2/(2 - A)) = 1/3
    assert float(erlang_c(1, 0.7)[()]) == pytest.approx(0.7)
    assert float(erlang_c(2, 1.0)[()]) == pytest.approx(1.0 / 3.0)
    # overloaded -> 1; no load -> 0
    assert float(erlang_c(8, 9.0)[()]) == 1.0 and float(erlang_c(8, 0.0)[()]) == 0.0
    # Halfin-Whitt branch (c > 64) continues the exact one: c = 64 vs 65 at the same beta
    exact = float(erlang_c(64, 56.0)[()])
    hw = float(erlang_c(65, 56.0 * 65 / 64)[()])
    assert abs(exact - hw) < 0.05


# ------------------------------------------------------------------ limits


@pytest.mark.parametrize("policy", ["continuous", "static"])
def test_low_load_tends_to_unloaded_times(policy):
    # At 1e-6 req/s nobody else is ever in the system: TTFT = prefill_s = 60 ms and
    # TPOT = step(1) = 15 ms + 0.4 ms (hand calculation from case A's coefficients).
    sm, _, osl, isl = _case("A", 0.5)
    r = latency_under_load(sm, 1e-6, osl, isl_tokens=isl, policy=policy)
    assert float(r.ttft.mean_s[0]) == pytest.approx(0.060, rel=1e-3)
    assert float(r.ttft.p99_s[0]) == pytest.approx(0.060, rel=1e-3)
    assert float(r.tpot.mean_s[0]) == pytest.approx(0.0154, rel=1e-3)
    assert float(r.e2e.mean_s[0]) == pytest.approx(0.060 + 63 * 0.0154, rel=1e-3)
    # the simulation at a very low rate agrees (median: a few requests may overlap)
    sim = simulate(sm, 0.01, osl, isl_tokens=isl, policy=policy, n_requests=200, seed=3)
    assert float(np.median(sim.ttft_s)) == pytest.approx(0.060, rel=1e-9)
    assert float(np.median(sim.tpot_s)) == pytest.approx(0.0154, rel=1e-9)


def test_chunked_low_load_ttft_counts_chunks():
    # isl 512 in chunks of 256: two iterations (alone: no decode step), prefill 60 ms in total
    sm, _, osl, isl = _case("A", 0.5)
    r = latency_under_load(sm, 1e-6, osl, isl_tokens=isl, policy="chunked", chunk_tokens=256)
    assert float(r.ttft.mean_s[0]) == pytest.approx(0.060, rel=1e-3)
    sim = simulate(
        sm, 0.01, osl, isl_tokens=isl, policy="chunked", chunk_tokens=256, n_requests=200
    )
    assert float(np.median(sim.ttft_s)) == pytest.approx(0.060, rel=1e-9)


def test_ttft_grows_steeply_near_saturation():
    # Kingman: waiting ~ rho / (1 - rho); from rho 0.5 to 0.95 that factor grows 19x. The
    # queueing part of TTFT (TTFT - prefill) must grow at least 5x, and rho -> 1 gives inf.
    _, lam, osl, isl = _case("C", 1.0)
    rates = lam * np.array([0.5, 0.95, 0.999, 1.001])
    sm = ServiceModel(*(np.repeat(a, 4) for a in CASES["C"][0]))
    r = latency_under_load(sm, rates, osl, isl_tokens=isl)
    wait = r.ttft.mean_s - 0.030
    assert wait[1] > 5 * wait[0]
    assert wait[2] > 5 * wait[1]
    assert np.isinf(r.ttft.mean_s[3]) and not r.stable[3]


@pytest.mark.parametrize("policy", ["continuous", "chunked", "static"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_p99_never_decreases_with_rate(policy, name):
    sm, lam1, osl, isl = _case(name, 1.0)
    rates = lam1 * np.linspace(0.001, 1.2, 300)
    smn = ServiceModel(*(np.repeat(a, rates.size) for a in CASES[name][0]))
    r = latency_under_load(smn, rates, osl, isl_tokens=isl, policy=policy, chunk_tokens=256)
    fin = np.isfinite(r.ttft.mean_s)
    assert fin[0] and not fin[-1]  # stable at 0.1 % of capacity, unstable at 120 %
    assert np.all(fin[: fin.argmin()]) and not np.any(fin[fin.argmin() :])  # one switch
    for stats in (r.ttft, r.tpot, r.e2e):
        # (the median is not checked: moment-fitted medians may dip by ~1 % at light load)
        for arr in (stats.mean_s, stats.p90_s, stats.p95_s, stats.p99_s):
            a = arr[fin]
            assert np.all(np.diff(a) >= -1e-12 * a[1:]), (policy, name)
    assert np.all(np.diff(r.utilisation) > 0)


# ------------------------------------------------------------------ analytic vs simulation

# (case, rho) for continuous batching where mean TTFT/TPOT must agree within 15 % and P99
# TTFT/TPOT/E2E within 25 %. Measured agreement (seed 1, 20,000 requests) is printed in the
# module docstring table of the report; case C (8 KV slots) at rho >= 0.5 is excluded from the
# P99 check (see test_tight_kv_known_gap).
AGREE = [(c, r) for c in ("A", "B", "D") for r in (0.2, 0.5, 0.8)] + [("C", 0.2)]


@pytest.mark.parametrize("name,rho", AGREE)
def test_analytic_agrees_with_simulation_continuous(name, rho):
    sm, lam, osl, isl = _case(name, rho)
    sim = simulate(sm, lam, osl, isl_tokens=isl, n_requests=20_000, seed=1).stats()
    ana = latency_under_load(sm, lam, osl, isl_tokens=isl)
    assert _rel(ana.ttft.mean_s, sim.ttft.mean_s) < 0.15
    assert _rel(ana.tpot.mean_s, sim.tpot.mean_s) < 0.15
    assert _rel(ana.ttft.p99_s, sim.ttft.p99_s) < 0.25
    assert _rel(ana.tpot.p99_s, sim.tpot.p99_s) < 0.25
    assert _rel(ana.e2e.p99_s, sim.e2e.p99_s) < 0.25
    assert _rel(ana.running_mean, sim.running_mean) < 0.15  # Little's law
    assert _rel(ana.throughput_tok_per_s, sim.throughput_tok_per_s) < 0.05


@pytest.mark.parametrize("rho", [0.3, 0.6, 0.85])
def test_short_outputs_mean_tpot_agrees_with_simulation(rho):
    # osl 4 behind 2048-token prompts (case D's server): the own prefill batch seeds a backlog
    # that relaxes as rho_p^j. With (1 - rho_p)^j in its place (the code before 2026-11) the
    # mean TPOT was 26 % low at rho 0.3 and 3.05 x the simulation at rho 0.85.
    sm, lam, _, isl = _case("D", rho)
    lam = rho / float(utilisation(sm, 1.0, 4)[0])
    sim = simulate(sm, lam, 4, isl_tokens=isl, n_requests=20_000, seed=1).stats()
    ana = latency_under_load(sm, lam, 4, isl_tokens=isl)
    assert _rel(ana.tpot.mean_s, sim.tpot.mean_s) < 0.15
    assert _rel(ana.ttft.mean_s, sim.ttft.mean_s) < 0.20


@pytest.mark.parametrize("cv,rho", [(0.577, 0.02), (1.0, 0.02), (1.0, 0.1)])
def test_light_load_ttft_p99_carries_the_prompt_spread(cv, rho):
    # Hardly anyone waits, so the P99 TTFT is the P99 of the own prefill: with gamma prompt
    # lengths of cv 0.577 / 1 (the simulation draws the same) the simulation gives 172 / 278 /
    # 307 ms against the mean prefill of 60 ms, which the model returned before 2026-11.
    sm, lam, osl, isl = _case("A", rho)
    sim = simulate(sm, lam, osl, isl_tokens=isl, isl_cv=cv, n_requests=20_000, seed=1).stats()
    ana = latency_under_load(sm, lam, osl, isl_tokens=isl, isl_cv=cv)
    assert _rel(ana.ttft.p99_s, sim.ttft.p99_s) < 0.15


def test_tight_kv_known_gap():
    # With only 8 slots the slot wait (Erlang-C with peakedness) is the weak part: means agree
    # within 25 %, the P99 of TTFT within a factor 2. A regression guard, not a claim of accuracy.
    for rho in (0.5, 0.8):
        sm, lam, osl, isl = _case("C", rho)
        sim = simulate(sm, lam, osl, isl_tokens=isl, n_requests=20_000, seed=1).stats()
        ana = latency_under_load(sm, lam, osl, isl_tokens=isl)
        assert _rel(ana.ttft.mean_s, sim.ttft.mean_s) < 0.25
        assert _rel(ana.tpot.mean_s, sim.tpot.mean_s) < 0.15
        ratio = float(ana.ttft.p99_s[0] / sim.ttft.p99_s[0])
        assert 0.5 < ratio < 2.0


@pytest.mark.parametrize("name,rho", [(c, r) for c in ("A", "B") for r in (0.2, 0.5, 0.8)])
def test_analytic_agrees_with_simulation_static(name, rho):
    sm, lam, osl, isl = _case(name, rho)
    sim = simulate(sm, lam, osl, isl_tokens=isl, policy="static", n_requests=20_000, seed=1)
    s = sim.stats()
    ana = latency_under_load(sm, lam, osl, isl_tokens=isl, policy="static")
    assert _rel(ana.ttft.mean_s, s.ttft.mean_s) < 0.15
    assert _rel(ana.tpot.mean_s, s.tpot.mean_s) < 0.15
    assert _rel(ana.ttft.p99_s, s.ttft.p99_s) < 0.25
    assert _rel(ana.e2e.p99_s, s.e2e.p99_s) < 0.25


@pytest.mark.parametrize("name,rho", [("A", 0.2), ("A", 0.5), ("B", 0.2), ("B", 0.5)])
def test_analytic_agrees_with_simulation_chunked_means(name, rho):
    # Chunked prefill: means within 15 %; P99 TTFT is a known weak spot (reported, not tested).
    sm, lam, osl, isl = _case(name, rho)
    kw = dict(isl_tokens=isl, policy="chunked", chunk_tokens=256)
    s = simulate(sm, lam, osl, n_requests=20_000, seed=1, **kw).stats()
    ana = latency_under_load(sm, lam, osl, **kw)
    assert _rel(ana.ttft.mean_s, s.ttft.mean_s) < 0.15
    assert _rel(ana.tpot.mean_s, s.tpot.mean_s) < 0.15


def test_chunked_prefill_pipeline_saturation_agrees_with_simulation():
    # Case B at rho 0.8 with 256-token chunks: each 512-token prompt needs 2 iterations that
    # also carry a ~10 ms decode step, so the prompt pipeline needs 27.3 x (20 + 2 x ~10) ms
    # > 1 s per second: unstable. The simulation confirms it: TTFT grows to tens of seconds.
    sm, lam, osl, isl = _case("B", 0.8)
    ana = latency_under_load(sm, lam, osl, isl_tokens=isl, policy="chunked", chunk_tokens=256)
    assert not ana.stable[0] and REASONS[int(ana.reason_code[0])] == "prefill_saturated"
    sim = simulate(
        sm, lam, osl, isl_tokens=isl, policy="chunked", chunk_tokens=256, n_requests=5000
    )
    assert float(np.mean(sim.ttft_s)) > 1.0
    # the same load without chunking is stable (continuous prefill has no per-chunk step)
    assert latency_under_load(sm, lam, osl, isl_tokens=isl).stable[0]


def test_simulation_is_deterministic_per_seed():
    sm, lam, osl, isl = _case("B", 0.5)
    a = simulate(sm, lam, osl, isl_tokens=isl, n_requests=2000, seed=7)
    b = simulate(sm, lam, osl, isl_tokens=isl, n_requests=2000, seed=7)
    c = simulate(sm, lam, osl, isl_tokens=isl, n_requests=2000, seed=8)
    assert np.array_equal(a.ttft_s, b.ttft_s) and np.array_equal(a.e2e_s, b.e2e_s)
    assert not np.array_equal(a.ttft_s, c.ttft_s)


def test_variable_lengths_run_and_agree_on_means():
    # isl/osl with CV 0.5 (gamma lengths in the simulation); means within 20 %.
    sm, lam, osl, isl = _case("A", 0.5)
    kw = dict(isl_tokens=isl, isl_cv=0.5, osl_cv=0.5)
    s = simulate(sm, lam, osl, n_requests=20_000, seed=1, **kw).stats()
    ana = latency_under_load(sm, lam, osl, **kw)
    assert _rel(ana.ttft.mean_s, s.ttft.mean_s) < 0.20
    assert _rel(ana.tpot.mean_s, s.tpot.mean_s) < 0.20


@pytest.mark.parametrize("name", ["A", "B"])
@pytest.mark.parametrize("rho", [0.05, 0.3])
def test_variable_output_lengths_set_the_e2e_tail_at_light_load(name, rho):
    # Output lengths of CV 0.5 (gamma in the simulation): at light load the E2E spread is the
    # answers' lengths. The analytic P50 / P99 within 10 % of the simulation's (case A at rho
    # 0.05: 0.999 s / 2.66 s simulated). Until 2026-12-06 the fit's floor was the unloaded
    # request at the MEAN length, so at rho 0.05 both came out at the mean (1.03 s).
    sm, lam, osl, isl = _case(name, rho)
    kw = dict(isl_tokens=isl, isl_cv=0.5, osl_cv=0.5)
    s = simulate(sm, lam, osl, n_requests=20_000, seed=1, **kw).stats()
    ana = latency_under_load(sm, lam, osl, **kw)
    assert _rel(ana.e2e.p50_s, s.e2e.p50_s) < 0.10
    assert _rel(ana.e2e.p99_s, s.e2e.p99_s) < 0.10


# ------------------------------------------------------------------ stability and reasons


def test_unstable_candidates_get_inf_and_reasons():
    # 0: prefill 0.5 s at 3 req/s -> rho_p = 1.5 (prefill_saturated)
    # 1: 2 slots, step 10 ms, osl 101 -> capacity 2 / (100 x 10.0 ms) = 2 req/s < 3 (kv_capacity)
    # 2: unlimited slots but compute floor 5 ms per sequence: 3 x 100 x 5 ms = 1.5 (decode_saturated)
    # 3: comfortable (ok)
    sm = ServiceModel(
        decode_step_base_s=[0.01, 0.01, 0.001, 0.01],
        decode_step_per_seq_s=[0.0, 0.0, 0.0, 0.0],
        prefill_s=[0.5, 0.0, 0.0, 0.01],
        max_running=[64, 2, np.inf, 64],
        compute_per_seq_s=[0.0, 0.0, 0.005, 0.0],
    )
    r = latency_under_load(sm, 3.0, 101, isl_tokens=1000)
    assert list(r.reason_code) == [PREFILL_SATURATED, KV_CAPACITY, DECODE_SATURATED, OK]
    assert list(r.stable) == [False, False, False, True]
    for stats in (r.ttft, r.tpot, r.e2e):
        for q in QUANTILES:
            vals = stats.quantile_s(q)
            assert np.all(np.isinf(vals[:3])) and np.isfinite(vals[3])
        assert not np.any(np.isnan(stats.mean_s))
    assert list(r.reason) == ["prefill_saturated", "kv_capacity", "decode_saturated", "ok"]
    # saturated throughput = capacity x osl: candidate 1 -> 2 req/s x 101 tokens
    assert float(r.throughput_tok_per_s[1]) == pytest.approx(2.0 * 101)


def test_utilisation_hand_value():
    # 4 req/s x (50 ms prefill + 100 decode steps x step(10)/10 = 10 ms x 100 / 10) = 0.6
    assert float(utilisation(ServiceModel(0.010, 0.0, 0.05, 10), 4.0, 101)[0]) == pytest.approx(0.6)


# ------------------------------------------------------------------ vectorisation


def test_vectorised_50k_shapes_and_consistency():
    rng = np.random.default_rng(0)
    n = 50_000
    sm = ServiceModel(
        rng.uniform(0.003, 0.03, n),
        rng.uniform(0.0, 0.001, n),
        rng.uniform(0.005, 0.3, n),
        rng.integers(1, 512, n).astype(float),
        rng.uniform(0.0, 0.0005, n),
    )
    lam = rng.uniform(0.1, 30.0, n)
    r = latency_under_load(sm, lam, 256, isl_tokens=1024)
    for arr in (
        r.ttft.mean_s,
        r.tpot.p99_s,
        r.e2e.p95_s,
        r.running_mean,
        r.utilisation,
        r.throughput_tok_per_s,
        r.stable,
        r.reason_code,
    ):
        assert arr.shape == (n,)
    assert not np.any(np.isnan(r.ttft.p99_s)) and not np.any(np.isnan(r.e2e.p99_s))
    assert 0 < r.stable.sum() < n  # the random grid contains both kinds
    # a candidate evaluated alone gives the same answer as inside the batch
    for i in (0, 17, 4242):
        one = latency_under_load(sm.select(i), lam[i], 256, isl_tokens=1024)
        assert float(one.ttft.p99_s[0]) == pytest.approx(float(r.ttft.p99_s[i]))
        assert float(one.tpot.mean_s[0]) == pytest.approx(float(r.tpot.mean_s[i]))


def test_callable_step_matches_linear_form():
    base, per, comp = 0.012, 0.0003, 0.0009
    lin = ServiceModel([base] * 3, [per] * 3, [0.05] * 3, [16, 256, np.inf], [comp] * 3)
    fn = ServiceModel(
        0.0,
        0.0,
        [0.05] * 3,
        [16, 256, np.inf],
        decode_step_fn=lambda b: np.maximum(base + per * b, comp * b),
    )
    rates = np.array([2.0, 6.0, 9.0])
    a = latency_under_load(lin, rates, 128, isl_tokens=512)
    b = latency_under_load(fn, rates, 128, isl_tokens=512)
    assert np.allclose(a.ttft.p99_s, b.ttft.p99_s, rtol=1e-6)
    assert np.allclose(a.tpot.mean_s, b.tpot.mean_s, rtol=1e-6)
    assert np.array_equal(a.stable, b.stable)


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "kwargs,field",
    [
        (dict(decode_step_base_s=-1.0), "decode_step_base_s"),
        (dict(prefill_s=float("nan")), "prefill_s"),
        (dict(max_running=0), "max_running"),
        (dict(max_running=2.5), "max_running"),
    ],
)
def test_service_model_rejects_bad_values(kwargs, field):
    base = dict(decode_step_base_s=0.01, decode_step_per_seq_s=0.0, prefill_s=0.05, max_running=8)
    base.update(kwargs)
    with pytest.raises(ValueError, match=field):
        ServiceModel(**base)


def test_workload_rejects_bad_values():
    sm = ServiceModel(0.01, 0.0, 0.05, 8)
    with pytest.raises(ValueError, match="policy"):
        latency_under_load(sm, 1.0, 10, isl_tokens=10, policy="orca")
    with pytest.raises(ValueError, match="arrival_rate_per_s"):
        latency_under_load(sm, -1.0, 10, isl_tokens=10)
    with pytest.raises(ValueError, match="osl_tokens"):
        latency_under_load(sm, 1.0, 0, isl_tokens=10)
    with pytest.raises(ValueError, match="isl_tokens"):
        latency_under_load(sm, 1.0, 10, isl_tokens=[10, 20, 30])


# ------------------------------------------------------------------ hypothesis properties

_pos = st.floats(min_value=1e-4, max_value=0.05)


@settings(max_examples=150, deadline=None)
@given(
    base=_pos,
    per=st.floats(min_value=0.0, max_value=0.002),
    pre=st.floats(min_value=1e-3, max_value=0.5),
    mr=st.integers(min_value=1, max_value=1024),
    comp=st.floats(min_value=0.0, max_value=0.002),
    rho=st.floats(min_value=0.0, max_value=1.5),
    osl=st.integers(min_value=1, max_value=2048),
    isl=st.integers(min_value=1, max_value=32768),
    cv=st.floats(min_value=0.0, max_value=1.5),
    policy=st.sampled_from(["continuous", "chunked", "static"]),
    dist=st.sampled_from(["gamma", "uniform"]),
)
def test_properties_random_candidates(base, per, pre, mr, comp, rho, osl, isl, cv, policy, dist):
    sm = ServiceModel(base, per, pre, mr, comp)
    lam = rho / float(utilisation(sm, 1.0, osl)[0])
    if dist == "uniform":
        cv = min(cv, 1 / math.sqrt(3))  # a uniform of positive lengths
    r = latency_under_load(sm, lam, osl, isl_tokens=isl, isl_cv=cv, osl_cv=cv, policy=policy,
                           length_dist=dist)  # fmt: skip
    for stats in (r.ttft, r.tpot, r.e2e):
        qs = [stats.p50_s[0], stats.p90_s[0], stats.p95_s[0], stats.p99_s[0]]
        assert not any(math.isnan(x) for x in [*qs, stats.mean_s[0]])
        assert qs[0] <= qs[1] <= qs[2] <= qs[3]
    if r.stable[0]:
        assert r.reason_code[0] == OK and r.utilisation[0] < 1.0
        assert math.isfinite(r.e2e.p99_s[0])
        assert r.ttft.p50_s[0] >= pre * (1 - 1e-9)  # never faster than the prefill alone
        assert r.ttft.mean_s[0] >= pre * (1 - 1e-9)
        if osl > 1:
            assert r.tpot.p50_s[0] >= float(sm.decode_step_s(np.ones(1))[0]) * (1 - 1e-9)
        assert r.running_mean[0] <= mr + 1e-9
    else:
        assert r.reason_code[0] != OK and math.isinf(r.ttft.p99_s[0])


@settings(max_examples=40, deadline=None)
@given(
    rho_lo=st.floats(min_value=0.01, max_value=0.98),
    frac=st.floats(min_value=0.0, max_value=1.0),
    name=st.sampled_from(sorted(CASES)),
    policy=st.sampled_from(["continuous", "chunked", "static"]),
)
def test_property_more_load_never_lowers_p99(rho_lo, frac, name, policy):
    rho_hi = rho_lo + frac * (0.999 - rho_lo)
    sm, lam1, osl, isl = _case(name, 1.0)
    smn = ServiceModel(*(np.repeat(a, 2) for a in CASES[name][0]))
    r = latency_under_load(
        smn, lam1 * np.array([rho_lo, rho_hi]), osl, isl_tokens=isl, policy=policy
    )
    for stats in (r.ttft, r.tpot, r.e2e):
        assert stats.p99_s[1] >= stats.p99_s[0] * (1 - 1e-12)


@pytest.mark.parametrize("policy", ["continuous", "chunked", "static"])
def test_vanishing_rate_is_the_unloaded_latency_not_nan(policy):
    # Found by hypothesis: a rate of 1e-313 req/s overflowed pi0 / lam in the static idle
    # probability (inf / inf = NaN). At such a rate TTFT is the prefill alone (0.5 s here).
    sm = ServiceModel(0.03125, 0.0, 0.5, 1, 0.0)
    r = latency_under_load(sm, 1e-313, 1, isl_tokens=1, policy=policy)
    assert r.ttft.mean_s[0] == pytest.approx(0.5) and r.ttft.p99_s[0] == pytest.approx(0.5)

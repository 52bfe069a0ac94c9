"""The search's latency percentiles against the discrete-event simulation (physics.queueing).

The search evaluates every candidate with the analytic ``latency_under_load``; here a handful of
its own candidates (its step tables, prefill times and KV slot limits, unchanged) are re-run
through ``simulate`` (seeded) and the two are compared. Tolerances are those the queueing model
is held to on synthetic cases (physics/queueing/model.py module doc, tests/test_queueing.py): means
within 15 %, P99 within 25 %, at utilisations 0.2-0.75. Reasons they cannot be tighter: the
analytic percentiles are two-moment (gamma / zero-inflated gamma) fits, the mean-field running
batch ignores its fluctuation in the step time, and a 6,000-request simulation has its own
sampling error at the P99 (~60 requests above it; a few % at these loads).
"""

from __future__ import annotations

import numpy as np
import pytest

from advisor.perf.validation.queue_sim import simulate
from advisor.physics.queueing.model import latency_under_load
from advisor.physics.queueing.service import PiecewiseLinearStep, ServiceModel
from advisor.scenario import SLA, Hardware, Options, Scenario, Workload
from advisor.search.evaluate import GRID, build_shapes, evaluate_aggregated, service

N_REQ = 6000


def _scenario(rate: float) -> Scenario:
    return Scenario(
        model="llama-3.1-8b",
        hardware=Hardware(gpus=["h100-sxm", "a100-sxm-80gb"], gpus_per_node=4, nodes=1),
        workload=Workload(isl_tokens=512, osl_tokens=64, arrival_rate_per_s=rate),
        sla=SLA(percentile=99, tpot_ms=200.0),
        options=Options(weight_dtypes=["fp16", "int4"], kv_dtypes=["fp16"], disaggregated=False),
    )


def _picks(rate: float, n: int = 3) -> list[tuple[Scenario, object, int]]:
    """Up to n of the search's own stable candidates spread over utilisation 0.2-0.75.

    Not up to 0.8: an A100 TP=1 int4 candidate at 0.797 (16 req/s) came out 15 % low on mean
    TPOT and 28 % low on its P99 against the simulation. Near saturation the mean-field running
    batch misses the batch's fluctuations; docs/accuracy.md says so (trust the tail less there).
    """
    sc = _scenario(rate)
    st, _ = build_shapes(sc)
    ev = evaluate_aggregated(sc, st)
    u = ev.res.utilisation
    ok = np.nonzero(ev.res.stable & (u >= 0.2) & (u <= 0.75) & (ev.dp == 1))[0]
    ok = ok[np.argsort(u[ok])]
    chosen = ok[np.linspace(0, ok.size - 1, min(n, ok.size)).astype(int)] if ok.size else ok
    return [(sc, st, int(ev.shape_idx[i])) for i in chosen]


def _one(st, k: int) -> ServiceModel:
    return service(st.step_tab_s[k : k + 1], st.prefill_s[k : k + 1], st.max_running[k : k + 1],
                   st.r.request_overhead_s[k : k + 1])  # fmt: skip


# Two loads whose candidates fall in the band: at 8 req/s up to u ~0.37, at 24 req/s up to ~0.68
# (at 4 req/s every candidate of this 8B scenario runs below u = 0.2).
CASES = [(rate, j) for rate in (8.0, 24.0) for j in range(3)]


@pytest.mark.parametrize("rate,j", CASES)
def test_search_candidates_against_simulation(rate, j):
    picks = _picks(rate)
    if j >= len(picks):
        pytest.skip("fewer candidates in the utilisation band at this rate")
    sc, st, k = picks[j]
    sm = _one(st, k)
    wl = sc.workload
    ana = latency_under_load(sm, rate, wl.osl_tokens, isl_tokens=wl.isl_tokens)
    assert 0.2 <= float(ana.utilisation[0]) <= 0.75
    sim = simulate(sm, rate, wl.osl_tokens, isl_tokens=wl.isl_tokens, n_requests=N_REQ, seed=7)
    s = sim.stats()
    for m in ("ttft", "tpot"):
        a, b = getattr(ana, m), getattr(s, m)
        assert float(a.mean_s[0]) == pytest.approx(float(b.mean_s[0]), rel=0.15), m
        assert float(a.p99_s[0]) == pytest.approx(float(b.p99_s[0]), rel=0.25), m


@pytest.mark.parametrize("rho", [0.3, 0.6, 0.8])
def test_prefill_only_pool_against_simulation(rho):
    # A disaggregated prefill pool: osl = 1, no decode work (the search's step table of 1 us is
    # only a placeholder). Mean TTFT = P + wait: by hand (M/D/1-like batches, P = 50 ms) the
    # model gives c (1/2 + rho), c = lam P^2 / (1 - rho^2); the simulation agrees within 5 %.
    # The P99 is conservative (the wait's third moment comes from a gamma fit): within +30 %.
    pre = 0.05
    lam = rho / pre
    sm = ServiceModel(0.0, 0.0, [pre], [np.inf],
                      decode_step_fn=PiecewiseLinearStep(GRID, np.full((1, GRID.size), 1e-6)))  # fmt: skip
    ana = latency_under_load(sm, lam, 1.0, isl_tokens=512)
    sim = simulate(sm, lam, 1.0, isl_tokens=512, n_requests=20_000, seed=1).stats()
    c = lam * pre**2 / (1 - rho**2)
    assert float(ana.ttft.mean_s[0]) == pytest.approx(pre + c * (0.5 + rho), rel=1e-6)
    assert float(ana.ttft.mean_s[0]) == pytest.approx(float(sim.ttft.mean_s[0]), rel=0.05)
    p99_a, p99_s = float(ana.ttft.p99_s[0]), float(sim.ttft.p99_s[0])
    assert 0.95 * p99_s <= p99_a <= 1.30 * p99_s

"""The inter-token gap's tail (issue 37): P99 ITL is a decode step carrying a prefill, not the
mean gap. Checked against the discrete-event simulation (advisor/perf/validation/queue_sim.py records every
gap a decoding sequence waits) and on hand-made cases."""

from __future__ import annotations

import pytest

from advisor.perf.validation.queue_sim import simulate
from advisor.physics.queueing.model import latency_under_load
from advisor.physics.queueing.service import ServiceModel

#: step(b) = 10 ms + 0.2 ms x b, prefill 40 ms of a 2,048-token prompt, 256 KV slots.
SERVICE = ServiceModel(0.010, 0.0002, 0.040, 256)


@pytest.mark.parametrize("policy", ["continuous", "chunked"])
@pytest.mark.parametrize("rate", [0.5, 2.0, 5.0])
def test_itl_percentiles_match_the_simulation(policy, rate):
    # utilisation 0.04-0.47; the simulation's gaps include every prefill (chunk) in between
    res = latency_under_load(SERVICE, rate, 201, isl_tokens=2048, policy=policy, with_itl=True)
    sim = simulate(SERVICE, rate, 201, isl_tokens=2048, policy=policy, n_requests=3000, seed=1)
    for q in (0.5, 0.99):
        model = float(res.itl.quantile_s(q)[0])
        assert model == pytest.approx(sim.itl_quantile_s(q), rel=0.08), (policy, rate, q)


def test_p99_itl_is_the_interrupted_step_when_more_than_one_percent_of_gaps_carry_a_prefill():
    # 2 req/s x ~12 ms gaps = 2.4% of gaps carry a whole 40 ms prefill: P99 = step + 40 ms
    # (~11 + 40 = 51 ms by hand), while the P99 of a request's mean gap (TPOT) stays ~14 ms
    res = latency_under_load(SERVICE, 2.0, 201, isl_tokens=2048, with_itl=True)
    assert float(res.itl.p99_s[0]) == pytest.approx(0.051, abs=0.002)
    assert float(res.tpot.p99_s[0]) < 0.015
    # chunked (512-token chunks, 10 ms each): the interrupted step is 10 ms longer, not 40
    chunk = latency_under_load(SERVICE, 2.0, 201, isl_tokens=2048, policy="chunked", with_itl=True)
    assert float(chunk.itl.p99_s[0]) == pytest.approx(0.0216, abs=0.001)


def test_no_prefill_interruption_at_light_load_keeps_p99_itl_at_the_step():
    # 0.5 req/s x 10.6 ms = 0.5% of gaps: under 1%, so P99 is a plain step (~10.8 ms)
    res = latency_under_load(SERVICE, 0.5, 201, isl_tokens=2048, with_itl=True)
    assert float(res.itl.p99_s[0]) < 0.012


def test_the_search_does_not_pay_for_itl():
    assert latency_under_load(SERVICE, 1.0, 201, isl_tokens=2048).itl is None

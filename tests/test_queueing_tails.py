"""The E2E tail of a workload whose output lengths are uniform (a benchmark's random dataset).

Expected values: a seeded Monte Carlo of the same sum (an independent computation, not the
function's formula), the uniform's quantiles by hand, and a published P99 E2E row (sgl-cookbook
MiniMax-M2.5 on 8 x B200, row S0032 of data/measurements-serving-cookbooks.csv).
"""

from __future__ import annotations

import numpy as np
import pytest

from advisor.physics.queueing.model import latency_under_load
from advisor.physics.queueing.service import ServiceModel
from advisor.physics.queueing.tails import (
    gamma_plus_uniform_quantiles_s,
    shifted_gamma_quantiles_s,
)

QS = (0.5, 0.9, 0.99)


@pytest.mark.parametrize(
    ("floor", "mean", "sd", "half_width"),
    [
        (1.0, 3.0, 2.0, 15.0),  # a long uniform decode time over a short queueing spread
        (2.0, 20.0, 15.0, 41.0),  # both wide
        (5.0, 30.0, 20.0, 15.0),  # the gamma wider
        (1.0, 3.0, 2.0, 0.5),  # a narrow uniform
    ],
)
def test_gamma_plus_uniform_matches_a_monte_carlo_of_the_sum(floor, mean, sd, half_width):
    rng = np.random.default_rng(7)
    k = ((mean - floor) / sd) ** 2
    n = 1_000_000
    draws = floor + rng.gamma(k, (mean - floor) / k, n) + rng.uniform(-half_width, half_width, n)
    want = np.quantile(draws, QS)
    got = gamma_plus_uniform_quantiles_s(
        np.array([floor]), np.array([mean]), np.array([sd**2]), np.array([half_width]), QS
    )
    # Wilson-Hilferty's gamma is ~1 % off the exact one at these shapes
    assert [float(x[0]) for x in got] == pytest.approx(list(want), rel=0.02)


def test_its_limits_are_the_gamma_and_the_uniform():
    one = np.ones(1)
    # no uniform part: exactly the shifted gamma
    got = gamma_plus_uniform_quantiles_s(one, 3 * one, 4 * one, 0 * one, QS)
    assert [float(x[0]) for x in got] == [
        float(x[0]) for x in shifted_gamma_quantiles_s(one, 3 * one, 4 * one, QS)
    ]
    # no gamma spread: uniform on [floor + above - h, floor + above + h] = [1 + 2 - 4, 1 + 2 + 4]
    got = gamma_plus_uniform_quantiles_s(one, 3 * one, 0 * one, 4 * one, QS)
    assert [float(x[0]) for x in got] == pytest.approx([3.0, -1 + 0.9 * 8, -1 + 0.99 * 8])


def test_unloaded_e2e_p99_of_uniform_answers_is_the_longest_answers():
    # One request at a time (rate 1e-6/s), step(b) = 10 ms + 0.2 ms b, prefill 40 ms, outputs
    # uniform on [1, 1000] tokens (mean 500.5, cv 999 / (500.5 sqrt 12)). E2E = 40 ms +
    # (L - 1) x 10.2 ms, so its P99 is that of L = 990.0 (uniform on [0.5, 1000.5]):
    # 40 + 989.0 x 10.2 = 10,128 ms. A gamma of the same cv put it at 2.8 x the mean.
    sm = ServiceModel(0.010, 0.0002, 0.040, 256)
    cv = 999 / (500.5 * 12**0.5)
    kw = dict(isl_tokens=512, osl_cv=cv)
    uni = latency_under_load(sm, 1e-6, 500.5, length_dist="uniform", **kw)
    assert float(uni.e2e.p99_s[0]) == pytest.approx(0.040 + 989.0 * 0.0102, rel=0.01)
    assert float(uni.e2e.p50_s[0]) == pytest.approx(0.040 + 499.5 * 0.0102, rel=0.01)
    gam = latency_under_load(sm, 1e-6, 500.5, **kw)
    assert float(gam.e2e.p99_s[0]) > 1.3 * float(uni.e2e.p99_s[0])
    # the means do not depend on the shape
    assert float(gam.e2e.mean_s[0]) == pytest.approx(float(uni.e2e.mean_s[0]))


def test_an_unknown_length_distribution_is_refused_by_name():
    sm = ServiceModel(0.010, 0.0002, 0.040, 256)
    with pytest.raises(ValueError, match="length_dist: got 'pareto', allowed"):
        latency_under_load(sm, 1.0, 100, isl_tokens=512, length_dist="pareto")


def test_published_p99_e2e_of_a_random_dataset():
    """sgl-cookbook MiniMax-M2.5 on 8 x B200 (S0032): 100 clients, 500 random prompts of
    --random-input-len / --random-output-len 1000 (SGLang: uniform on [1, 1000]), P99 E2E
    34,787.91 ms. The gamma matched to the E2E variance gave 45.8 s (+32 %); the uniform
    answer's tail stops at the longest answer."""
    from advisor.perf.validation.measurements import load_rows
    from advisor.perf.validation.percentiles import percentile_cases, predict_percentiles

    row = next(r for r in load_rows() if r["id"] == "S0032")
    (pred,) = predict_percentiles(percentile_cases([row])[0])
    assert pred.predicted_s == pytest.approx(34.78791, rel=0.15)


def test_a_uniform_wider_than_positive_lengths_allow_is_refused():
    # a uniform of mean m on [0, 2m] has cv 1 / sqrt(3) = 0.5774; 0.6 would need negative lengths
    sm = ServiceModel(0.010, 0.0002, 0.040, 256)
    with pytest.raises(ValueError, match=r"osl_cv: got 0.6 with length_dist 'uniform'.*0.5774"):
        latency_under_load(sm, 1.0, 100, isl_tokens=512, osl_cv=0.6, length_dist="uniform")

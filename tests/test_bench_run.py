"""The replay of a finite closed-loop benchmark run (advisor/perf/validation/bench_run.py)."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.perf.validation.bench_run import (
    gap_statistic,
    replay_closed_loop,
    replay_runs,
    replayable,
    run_lengths,
    run_statistic,
)
from advisor.perf.validation.client_draws import benchmark_lengths, client_lengths, length_cv
from advisor.perf.validation.measurements import cases
from advisor.perf.validation.validate import predict_cases

#: An iteration's prefill costs 1 s whatever its tokens (a flat table).
FLAT_1S = (np.array([16.0, 100.0]), np.array([1.0, 1.0]))


def test_second_prompt_of_a_round_waits_for_the_first():
    # Hand replay: 2 clients, 4 prompts of 100 tokens, budget 100 (one prompt per iteration,
    # 1 s), 2 output tokens, a 0.5 s decode step, no request overhead.
    #   it.1 t=1.0  A's first token (TTFT 1.0)
    #   it.2 t=2.5  A decodes + B prefills: A ends (C sent at 2.5), B's first token (TTFT 2.5)
    #   it.3 t=4.0  B decodes + C prefills: B ends (D sent at 4.0), C's first token (TTFT 1.5)
    #   it.4 t=5.5  C decodes + D prefills: C ends, D's first token (TTFT 1.5)
    #   it.5 t=6.0  D decodes: D ends (E2E 2.0)
    s = replay_closed_loop(lambda b: 0.5, FLAT_1S, delay_s=0.0, max_running=8, clients=2,
                           requests=4, isl_tokens=np.full(4, 100), osl_tokens=np.full(4, 2),
                           budget_tokens=100)  # fmt: skip
    assert s.ttft_s.tolist() == [1.0, 2.5, 1.5, 1.5]
    assert s.e2e_s.tolist() == [2.5, 4.0, 3.0, 2.0]
    assert s.duration_s == 6.0


def test_request_overhead_delays_the_arrival_and_counts_in_ttft():
    # The same run with a 0.25 s overhead per request: every arrival at the server is 0.25 s
    # after the send; A: prefilled 0.25..1.25 (TTFT 1.25); B waits behind A's iteration.
    s = replay_closed_loop(lambda b: 0.5, FLAT_1S, delay_s=0.25, max_running=8, clients=2,
                           requests=2, isl_tokens=np.full(2, 100), osl_tokens=np.full(2, 2),
                           budget_tokens=100)  # fmt: skip
    assert s.ttft_s.tolist() == [1.25, 2.75]


def test_full_kv_cache_holds_prompts_back():
    # max_running 1: B is admitted only when A has ended (A: prefill 1 s, then one 0.5 s step);
    # B's prefill starts at 1.5 and ends at 2.5.
    s = replay_closed_loop(lambda b: 0.5, FLAT_1S, delay_s=0.0, max_running=1, clients=2,
                           requests=2, isl_tokens=np.full(2, 100), osl_tokens=np.full(2, 2),
                           budget_tokens=100)  # fmt: skip
    assert s.ttft_s.tolist() == [1.0, 2.5]


def test_lengths_are_drawn_as_the_clients_draw_them():
    # SGLang's default random dataset: uniform in [1, L] (cv 1/sqrt(3)); vLLM's fixed.
    rng = np.random.default_rng(1)
    x = benchmark_lengths(rng, 500.0, length_cv("sglang.bench_serving --dataset-name random"),
                          10_000)  # fmt: skip
    assert 1 <= x.min() <= 5 and 995 <= x.max() <= 1000
    assert benchmark_lengths(rng, 1024.0, length_cv("vllm bench serve --dataset-name random"),
                             4).tolist() == [1024] * 4  # fmt: skip


def test_run_statistic_is_numpys_linear_percentile():
    # vLLM's and SGLang's clients report np.percentile (linear): P99 of 1..100 is 99.01.
    x = np.arange(1.0, 101.0)
    assert run_statistic(x, "p99") == pytest.approx(99.01)
    assert run_statistic(x, "median") == 50.5 and run_statistic(x, "mean") == 50.5
    with pytest.raises(ValueError, match="statistic: got 'p'"):
        run_statistic(x, "p")


def test_a_prefill_between_two_tokens_stretches_that_gap():
    """Hand check: prompts of 100 tokens prefill in 0.1 s, a decode step takes 10 ms. Request 0
    (4 tokens) is sent at 0, request 1 (2 tokens) at 0.105 s: request 0's first token at 0.1 s,
    its second at 0.11 s; its third waits for request 1's prefill too (0.11 + 0.01 + 0.1 =
    0.22 s: a 0.11 s gap); then both decode one step (two 10 ms gaps). Four gaps: 10, 10, 10 and
    110 ms, so the median ITL is 10 ms, the mean 35 ms, and P99 (position 0.99 x 3 = 2.97, between
    the third gap and the fourth) 10 + 0.97 x 100 = 107 ms."""
    s = replay_closed_loop(
        lambda b: 0.01, (np.array([16.0, 100.0]), np.array([0.1, 0.1])), delay_s=0.0,
        max_running=8, clients=1, requests=2, isl_tokens=np.array([100, 100]),
        osl_tokens=np.array([4, 2]), budget_tokens=8192, arrival_s=np.array([0.0, 0.105]),
    )  # fmt: skip
    assert np.round(s.gap_s, 9).tolist() == [0.01, 0.11, 0.01] and s.gap_count.tolist() == [1, 1, 2]
    assert s.e2e_s.tolist() == pytest.approx([0.23, 0.125])
    assert gap_statistic(s.gap_s, s.gap_count, "median") == pytest.approx(0.01)
    assert gap_statistic(s.gap_s, s.gap_count, "mean") == pytest.approx(0.035)
    assert gap_statistic(s.gap_s, s.gap_count, "p99") == pytest.approx(0.107)
    with pytest.raises(ValueError, match="statistic: got 'p'"):
        gap_statistic(s.gap_s, s.gap_count, "p")


def _case(row_id: str):
    return next(c for c in cases()[0] if c.id == row_id)


def test_a_two_round_fixed_length_run_is_not_the_steady_state():
    # vLLM recipes, Llama-3.3-70B FP8 on one MI355X, 64 clients, 128 prompts of 8192/1024 tokens
    # (--ignore-eos, fixed lengths): median TTFT 7544 ms (V0016), P99 31798 ms (V0017), benchmark
    # duration 149.97 s. The steady state gives ~0.64 s (0.08 x); the replay keeps the rounds.
    c = _case("V0016")
    assert replayable(c)
    run = replay_runs([c])[0]
    median = run_statistic(run.ttft_s, "median")
    assert 0.3 * 7.544 < median < 1.5 * 7.544
    assert 0.7 * 31.798 < run_statistic(run.ttft_s, "p99") < 1.3 * 31.798
    assert 0.7 * 149.97 < run.duration_s < 1.3 * 149.97
    steady = float(predict_cases([c], replay=False)[0])
    assert steady < 0.15 * 7.544 and float(predict_cases([c])[0]) == pytest.approx(median)


def test_sharegpt_and_unstated_runs_keep_the_steady_state():
    # sgl-cookbook GPT-OSS (E0186): ShareGPT, lengths' spread unknown; TensorRT-LLM issue 5929
    # (N0187): LLMPerf run of unstated length; sgl-cookbook DeepSeek-V3.1 on MI300X (C0120):
    # --random-input-len without --dataset-name, so bench_serving's default ShareGPT ran.
    assert not any(replayable(_case(i)) for i in ("E0186", "N0187", "C0120"))
    # The Qwen3 page's section text mentions ShareGPT, its commands name the random dataset.
    assert replayable(_case("C0016"))


def test_the_fit_sees_a_replayed_row_as_its_replay():
    # calibrate.Problem holds replay factors: at the constants they were taken at, its residual
    # of a replayed row is the replayed prediction's log error, and a row that is not replayed
    # keeps its steady-state one (V0016: a replayed vLLM run; V0019: its TPOT, not replayed).
    from advisor.perf.calibration import calibrate
    from advisor.perf.model import profiles

    items = [_case("V0016"), _case("V0019")]
    prob = calibrate.problem(items)
    z = prob.start(None)
    held = prob.with_factors_at(z)
    assert held.factors[1] == 1.0 and held.factors[0] > 1.0
    profiles.set_active(calibrate._doc(prob.params, z * prob.scale))
    try:
        want = np.log(predict_cases(items) / np.array([c.measured for c in items])) * prob.weights
    finally:
        profiles.set_active(None)
    assert held.residuals(z) == pytest.approx(want, rel=1e-9)
    assert prob.residuals(z)[0] < held.residuals(z)[0]  # the steady state alone is lower


def test_an_sglang_run_sends_the_lengths_its_seed_draws():
    # sgl-cookbook MiniMax-M2 on 4 MI300X (A0713): bench_serving --dataset-name random
    # --random-input-len 1000 --random-output-len 1000 --num-prompts 10 --max-concurrency 1,
    # "10 prompts: 6101 input / 4220 generated tokens". SGLang 0.5.x seeds numpy with 1 and
    # draws randint(1, 1001, 10): 38 236 909 73 768 906 716 646 848 961 (sum 6101, the page's
    # total), so the median prompt it sent is (716 + 768) / 2 = 742 tokens, not the mean 610.1.
    c = _case("A0713")
    lens_in, lens_out, n = run_lengths(c)
    assert n == 10 and int(lens_in.sum()) == 6101 and float(np.median(lens_in)) == 742.0
    assert lens_in[:3].tolist() == [38, 236, 909] and lens_out.min() >= 1
    # sgl-cookbook Llama-4-Scout on MI300X, 80 prompts (A0682, SGLang 0.5.9): its input total
    # (49668) is no seed's, its generated total (40805) is seed 1's with outputs from 1 up
    # (the later client's lower bound): the draw is taken on that agreement.
    lens_in, lens_out, n = run_lengths(_case("A0682"))
    assert n == 80 and int(lens_out.sum()) == 40805 and int(lens_in.sum()) == 39668


def test_lengths_no_seed_reproduces_are_not_invented():
    # Totals no default seed gives (a hand-edited 6000 / 4000): the run falls back to a seeded
    # draw of the same distribution, never to lengths it did not send.
    notes = ("sglang.bench_serving --dataset-name random --random-input-len 1000 "
             "--random-output-len 1000 --num-prompts 10. 10 prompts: 6000 input / 4000 generated")  # fmt: skip
    assert client_lengths(notes) is None
    # vLLM's client draws otherwise (and fixed by default): never read as SGLang's.
    assert client_lengths("vllm bench serve --dataset-name random --random-input-len 1000 "
                          "--random-output-len 1000. 10 prompts: 6101 input / 4210 generated") is None  # fmt: skip
    # A stated --seed is the only one tried: seed 7 does not give 6101.
    assert (
        client_lengths(notes.replace("6000 input / 4000", "6101 input / 4210") + " --seed 7")
        is None
    )


def test_a_one_client_median_ttft_is_the_median_prompts():
    # One client, nothing queues: each TTFT is its own prompt's prefill. sgl-cookbook
    # DeepSeek-V3.1 on 8 MI300X, --random-input-len 8000, 10 prompts (A0038): seed 1 sends
    # 5158 236 3981 5193 7936 906 2764 7814 2896 5057 (41941 tokens, the page's total), so the
    # median TTFT is the mean of the prefills of 3981 and 5057 tokens, not the prefill of the
    # mean prompt (4194.1), which the model puts lower.
    from advisor.perf.model.replica import build_replicas
    from advisor.perf.model.step import prefill

    c = _case("A0038")
    assert c.statistic == "median" and c.isl == pytest.approx(4194.1)
    r = build_replicas([c.config])
    two = prefill(r.take(np.array([0, 0])), np.array([3981.0, 5057.0])).total
    got = float(predict_cases([c])[0])
    assert got == pytest.approx(float(two.mean()), rel=1e-9)
    assert got > 1.01 * float(prefill(r, np.array([4194.1])).total[0])


def test_a_request_rate_run_is_replayed_on_the_send_times_its_seed_drew():
    # DataCrunch h200-benchmarks, SGLang (Dec 2024) serving Llama-3.1-405B BF16 on 8 H200 at
    # 1 req/s, 300 random 1024/1024 prompts (E0461): "152612 input / 160347 output tokens over
    # 300 completed requests" are seed 1's draws, and the client then sleeps
    # numpy.random.exponential(1 / rate) between requests, so the run is replayed on the send
    # times it had. Its printed duration, 317.55 s (an output the fit never sees), comes back
    # within 1% (318.35 s, 2026-12-05 calibration); its median TTFT, 218.8 ms, within 25%.
    from advisor.perf.validation.bench_run import run_value
    from advisor.perf.validation.client_draws import client_arrivals

    c = _case("E0461")
    assert replayable(c) and c.kind == "load_ttft"
    t = client_arrivals(c.row["notes"], c.qps)
    assert t.size == 300 and 280.0 < t[-1] < 300.0
    run = replay_runs([c])[0]
    assert run.duration_s == pytest.approx(317.55, rel=0.01)
    assert run_value(c, run) == pytest.approx(0.2188, rel=0.25)
    assert float(predict_cases([c])[0]) == pytest.approx(run_value(c, run))
    # The same run's output throughput (E0460, 504.96 tok/s): its tokens over its duration.
    tput = _case("E0460")
    assert replayable(tput) and run_value(tput, run) == pytest.approx(160347 / run.duration_s)


def test_a_chunk_pays_its_attention_to_the_prompts_earlier_chunks():
    # Hand replay: one prompt of 200 tokens, budget 100 (two iterations of the flat 1 s), no
    # decode; the second chunk's 100 queries attend to the first chunk's 100 keys: 1e4 pairs at
    # 1 us each add 0.01 s. TTFT = 1 + 1 + 0.01 = 2.01 s.
    s = replay_closed_loop(lambda b: 0.5, FLAT_1S, delay_s=0.0, max_running=8, clients=1,
                           requests=1, isl_tokens=np.array([200]), osl_tokens=np.array([1]),
                           budget_tokens=100, offset_pair_s=1e-6)  # fmt: skip
    assert s.ttft_s[0] == pytest.approx(2.01)


def test_a_long_prompt_in_chunks_costs_at_least_its_whole_prefill():
    """A 30,000-token prompt (vLLM PR 43232's Qwen3-235B runs on 4 x B200) prefilled in
    8,192-token chunks attends to the same T^2 / 2 pairs as in one pass, and repeats each pass's
    weight reads and fixed costs four times: its first token comes no sooner than the one-pass
    prefill (``step.prefill``, without the request overhead), and not far later. Priced as four
    prompts of their own, the chunks took 0.84 x the one pass (attention to the earlier chunks
    left out)."""
    from advisor.catalog import get_accelerator, get_model
    from advisor.perf.model.replica import ReplicaConfig, build_replicas
    from advisor.perf.model.step import chunk_offset_attention_s, prefill
    from advisor.perf.validation.bench_run import prefill_iteration_table

    cfg = ReplicaConfig(model=get_model("qwen3-235b-a22b"), gpu=get_accelerator("b200"), tp=4,
                        weights="fp8", kv="fp8", engine="vllm")  # fmt: skip
    r = build_replicas([cfg])
    one_pass = float(prefill(r, np.array([30_000.0])).total[0] - r.request_overhead_s[0])
    s = replay_closed_loop(lambda b: 0.0, prefill_iteration_table(r, 30_000.0, 8192.0),
                           delay_s=0.0, max_running=8, clients=1, requests=1,
                           isl_tokens=np.array([30_000]), osl_tokens=np.array([1]),
                           budget_tokens=8192, offset_pair_s=float(chunk_offset_attention_s(r)[0]))  # fmt: skip
    assert 1.0 <= s.ttft_s[0] / one_pass <= 1.15


def test_a_finite_closed_loop_runs_throughput_carries_its_start_up_and_drain():
    """A closed-loop run of stated length prints output tokens over its whole duration: its
    start-up wave (every client's prompt at t = 0) and its drain (the last answers finish with
    fewer in flight; sglang.bench_serving draws lengths uniformly up to the nominal one, so
    clients finish their share apart). The sgl-cookbook runs send 5 x clients prompts (80 from
    16, 500 from 100). Predicted at the steady state these throughputs read 1.12x the published
    ones in sample (72 rows, 2026-12-07, constants fitted that way); replayed as the runs they
    were, 1.02x, and the refit keeps it there."""
    items = [c for c in cases()[0] if c.kind == "conc_tput" and replayable(c)]
    assert len(items) >= 60
    measured = np.array([c.measured for c in items])
    steady = np.median(predict_cases(items, replay=False) / measured)
    run = np.median(predict_cases(items) / measured)
    assert steady > 1.08, steady
    assert abs(run - 1.0) < 0.05, run

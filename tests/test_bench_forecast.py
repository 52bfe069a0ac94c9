"""``estimate --num-prompts``: what the engine's benchmark client would print for a finite run
(advisor/perf/validation/bench_forecast.py), so a client's own benchmark figures can be read
against the tool's (issue 37: published serving runs with medians and P99s were predicted
0.12-0.42x on TTFT by the steady state)."""

from __future__ import annotations

import json

import pytest

from advisor.catalog import get_accelerator, get_model
from advisor.perf.model.replica import ReplicaConfig
from advisor.perf.validation.bench_forecast import (
    ForecastInputError,
    client_command,
    client_length_bounds,
    forecast_run,
)

#: vLLM recipes, Llama/Llama3.3-70B-ROCm.md @be7e1c5 (2025-11-27), "amd/Llama-3.3-70B-Instruct-
#: FP8-KV TP1 8k/1k conc=64 performance on MI355" (rows V0016-V0026 of data/measurements-vllm-
#: recipes-under-load.csv; in the calibration, so an in-sample check of the replay's shape):
#: vllm bench serve --random-input-len 8192 --random-output-len 1024 --max-concurrency 64
#: --num-prompts 128, server --max-num-batched-tokens 32768. Published: benchmark duration
#: 149.97 s, TTFT mean 11,599 ms, median 7,544 ms, P99 31,798 ms.
MI355X_RUN = dict(isl=8192, osl=1024, prompts=128, clients=64, budget_tokens=32768)
PUBLISHED_DURATION_S, PUBLISHED_TTFT_P99_S, PUBLISHED_TTFT_MEAN_S = 149.97, 31.798, 11.599


def _mi355x() -> ReplicaConfig:
    return ReplicaConfig(model=get_model("llama-3.3-70b"), gpu=get_accelerator("mi355x"), tp=1,
                         weights="fp8", kv="fp8", engine="vllm")  # fmt: skip


def test_a_short_run_is_its_start_up_wave_not_the_steady_state():
    """The published run's P99 TTFT and length come out of the replay within 15%; the steady
    state's TTFT (what ``estimate`` prints without --num-prompts) is a tenth of the run's mean."""
    from advisor.perf.model.estimate import EstimateInput, estimate

    run = forecast_run(_mi355x(), MI355X_RUN["isl"], MI355X_RUN["osl"],
                       prompts=MI355X_RUN["prompts"], clients=MI355X_RUN["clients"],
                       budget_tokens=MI355X_RUN["budget_tokens"])  # fmt: skip
    assert run.ms["ttft"]["p99"] / 1e3 == pytest.approx(PUBLISHED_TTFT_P99_S, rel=0.15)
    assert run.duration_s == pytest.approx(PUBLISHED_DURATION_S, rel=0.15)
    assert run.ms["ttft"]["mean"] / 1e3 == pytest.approx(PUBLISHED_TTFT_MEAN_S, rel=0.25)
    steady = estimate(get_model("llama-3.3-70b"), get_accelerator("mi355x"), EstimateInput(
        weights="fp8", kv="fp8", isl=8192, osl=1024, concurrency=64, engine="vllm"))  # fmt: skip
    assert steady["ttft_ms"] < 0.1 * PUBLISHED_TTFT_MEAN_S * 1e3
    # half the run is its first wave: the mean is ranged by the start-up-wave means' errors
    assert run.first_wave_share == 0.5
    assert "start-up-wave mean" in run.basis["ttft mean"]
    assert "median" in run.basis["ttft median"] and "P99" in run.basis["ttft p99"]


def test_the_clients_length_draws():
    """vLLM draws [L(1-r), L(1+r)], SGLang [rL, L] (their random datasets' code): SGLang's
    default mean is half the nominal length, vLLM's default lengths are all L."""
    sgl = forecast_run(_mi355x(), 1000, 400, prompts=2000, qps=2.0, client="sglang")
    assert sgl.mean_isl == pytest.approx(500, rel=0.03)
    assert sgl.mean_osl == pytest.approx(200, rel=0.03)
    vllm = forecast_run(_mi355x(), 1000, 400, prompts=50, clients=4)
    assert (vllm.mean_isl, vllm.mean_osl) == (1000.0, 400.0)
    assert client_length_bounds("sglang", 0.5) == (0.5, 1.0)
    with pytest.raises(ForecastInputError) as exc:
        client_length_bounds("vllm", 1.0)
    assert exc.value.field == "range_ratio" and "0 <= r < 1" in str(exc.value)


def test_one_client_in_sequence_has_no_queue():
    """One client, fixed lengths: every request is alone on the server, so all TTFTs are one
    prefill (mean = median = P99) and the run lasts prompts x E2E."""
    run = forecast_run(_mi355x(), 2000, 100, prompts=20, clients=1)
    t = run.ms["ttft"]
    assert t["mean"] == pytest.approx(t["median"], rel=1e-9) == pytest.approx(t["p99"], rel=1e-9)
    assert run.duration_s * 1e3 == pytest.approx(20 * run.ms["e2e"]["mean"], rel=1e-6)
    assert run.first_wave_share == 1 / 20 and not any("start-up wave" in n for n in run.notes)


def test_the_command_is_quoted_for_a_shell():
    cmd = client_command("vllm", 8192, 1024, 128, 0.0, 64, None)
    assert cmd.startswith("vllm bench serve --dataset-name random --random-input-len 8192")
    assert "--max-concurrency 64" in cmd and "--num-prompts 128" in cmd


BASE = ["estimate", "--model", "llama-3.3-70b", "--gpu", "mi355x", "--weights", "fp8", "--kv",
        "fp8", "--isl", "8192", "--osl", "1024", "--engine", "vllm"]  # fmt: skip


def test_cli_prints_the_run_and_its_json(run_cli):
    code, out, err = run_cli([*BASE, "--concurrency", "64", "--num-prompts", "128",
                              "--prefill-budget-tokens", "32768"])  # fmt: skip
    assert code == 0, err
    assert "benchmark run (replayed, seed 0): vllm bench serve" in out
    assert "--num-prompts 128 --max-concurrency 64" in out
    code, out, _ = run_cli([*BASE, "--concurrency", "64", "--num-prompts", "128",
                            "--prefill-budget-tokens", "32768", "--json"])  # fmt: skip
    b = json.loads(out)["benchmark_run"]
    assert b["ms"]["ttft"]["p99"] / 1e3 == pytest.approx(PUBLISHED_TTFT_P99_S, rel=0.15)
    lo, hi = b["ranges"]["ttft"]["p99"]
    assert lo < PUBLISHED_TTFT_P99_S * 1e3 < hi


def test_an_overloaded_rate_is_a_finite_backlog_not_an_error(run_cli):
    code, out, err = run_cli(["estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm",
                              "--isl", "1000", "--osl", "500", "--qps", "500", "--num-prompts",
                              "2000", "--json"])  # fmt: skip
    assert code == 0, err
    r = json.loads(out)
    assert r["stable"] is False
    b = r["benchmark_run"]
    assert b["requests_per_s"] < 500 and b["ms"]["ttft"]["median"] > 1e3


@pytest.mark.parametrize("extra, flag", [
    (["--num-prompts", "0"], "--num-prompts"),
    (["--range-ratio", "0.2"], "--range-ratio"),
    (["--bench-client", "sglang"], "--bench-client"),
    (["--num-prompts", "10", "--concurrency", "max"], "--num-prompts"),
    (["--num-prompts", "10", "--users", "20"], "--num-prompts"),
    (["--num-prompts", "10", "--range-ratio", "1.0"], "--range-ratio"),
    (["--num-prompts", "10", "--dp", "4", "--concurrency", "2"], "--concurrency"),
    (["--num-prompts", "10", "--bench-client", "tgi"], "--bench-client"),
    (["--num-prompts", "5000000"], "--num-prompts"),
])  # fmt: skip
def test_bad_run_options_exit_2_naming_the_flag(run_cli, extra, flag):
    code, out, err = run_cli([*BASE, *extra])
    assert code == 2 and out == ""
    assert flag in err and "Traceback" not in err


def test_an_e2e_range_is_its_parts_ranges_not_the_hull_of_their_factors():
    """E2E = TTFT + (osl - 1) x TPOT for every request (the clients' definition of TPOT), so its
    range is the TTFT part at TTFT's error plus the rest at TPOT's (intervals.e2e_from_parts).
    The Latency page showed Llama-3.1-70B on 2 H100 at 2 req/s, 256-token answers, with an E2E
    P50 of 5.22 s ranged 218 ms-10.3 s: TTFT's widest factor (0.04, from 15 held-out median
    TTFT rows) applied to the whole answer, whose decode alone takes 255 x ~20 ms."""
    from advisor.perf.model.estimate import EstimateInput, estimate
    from advisor.perf.validation.bench_forecast import forecast_for

    inp = EstimateInput(isl=1024, osl=256, qps=2.0, tp=2, weights="fp16", kv="fp16",
                        engine="vllm")  # fmt: skip
    m, g = get_model("llama-3.1-70b"), get_accelerator("h100-sxm")
    run = forecast_for(m, g, inp, prompts=10, client="vllm",
                       regime=estimate(m, g, inp).get("load_regime"))  # fmt: skip
    e2e, ttft, tpot = run.ms["e2e"]["median"], run.ms["ttft"]["median"], run.ms["tpot"]["median"]
    lo, hi = run.ranges["e2e"]["median"]
    tpot_lo = run.ranges["tpot"]["median"][0] / tpot
    assert lo >= 0.99 * (e2e - ttft) * tpot_lo  # the decode part alone at TPOT's low end
    assert lo <= e2e <= hi and hi / lo < 3.0
    assert run.basis["e2e median"].startswith("TTFT + the rest at TPOT's error")


def test_a_light_load_percentile_is_ranged_by_light_load_rows():
    """Held-out median TTFT rows of dense models at light load are too few (fewer than 10 rows
    from 3 sources), and the pool of all dense median TTFTs holds overloaded request-rate runs
    predicted 17x and 38x high (datacrunch H200 sweeps, rows E0425 and E0481): ranged by that
    pool, Llama-3.1-70B on 2 H100 at 0.5 req/s (capacity ~1.9 req/s: light load) read a TTFT P50
    range 24x below its prediction. The regime's mean/median rows range it now, and the basis
    says so."""
    from advisor.perf.model.estimate import EstimateInput
    from advisor.perf.model.intervals import load_regime
    from advisor.perf.validation.bench_forecast import forecast_for

    inp = EstimateInput(isl=1024, osl=256, qps=0.5, tp=2, weights="fp16", kv="fp16",
                        engine="vllm")  # fmt: skip
    run = forecast_for(get_model("llama-3.1-70b"), get_accelerator("h100-sxm"), inp, prompts=100,
                       client="vllm", regime=load_regime(0.5 / 1.92))  # fmt: skip
    v = run.ms["ttft"]["median"]
    lo, hi = run.ranges["ttft"]["median"]
    assert v / lo < 2.0 and hi / v < 2.0
    assert "light load" in run.basis["ttft median"]
    assert "too few held-out median rows at light load" in run.basis["ttft median"]

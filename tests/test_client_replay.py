"""A client's detailed serving result (``vllm bench serve --save-detailed``: each request's
``input_lens``, ``output_lens`` and ``start_times``) is replayed on its own lengths and send times,
as the shipped rows are (advisor/perf/importers/per_request.py, bench_run.replayable), so a
short run's mean TTFT carries its own start-up wave in the client's calibration."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.perf.importers import BenchmarkFileError, Deployment, load_bytes
from advisor.perf.validation.bench_run import replayable
from advisor.perf.validation.validate import predict_cases

FIX = Path(__file__).parent / "fixtures" / "client"
VLLM = Deployment("llama-3.1-8b", "h100-sxm", 1, 1, "bf16", "bf16", "vllm")
#: tests/fixtures/client/vllm_bench_serve.json: 320 requests of 1024 / 256 tokens (327,680 and
#: 81,920 in total: vLLM's fixed random lengths) from 32 clients. With --save-detailed the same run
#: lists 1024 and 256 for each of its 320 requests.
SERVE = json.loads((FIX / "vllm_bench_serve.json").read_text(encoding="utf-8"))
DETAILED = {**SERVE, "input_lens": [1024] * 320, "output_lens": [256] * 320}


def _cases(doc: dict, name: str = "detailed.json"):
    got = load_bytes(json.dumps(doc).encode(), name, VLLM)
    return {c.kind: c for c in got.cases}, got


def test_a_detailed_run_is_replayed_as_the_benchmark_forecast_replays_it():
    # The same run through the importer (a client's file) and through `estimate --num-prompts`
    # (bench_forecast): one replay, one figure.
    from advisor.catalog import get_accelerator, get_model
    from advisor.perf.model.replica import ReplicaConfig
    from advisor.perf.validation.bench_forecast import forecast_run

    k, _ = _cases(DETAILED)
    assert replayable(k["conc_ttft"]) and replayable(k["conc_e2e"])
    got = predict_cases([k["conc_ttft"], k["conc_tpot"]])
    cfg = ReplicaConfig(model=get_model("llama-3.1-8b"), gpu=get_accelerator("h100-sxm"), tp=1,
                        weights="bf16", kv="bf16", engine="vllm")  # fmt: skip
    run = forecast_run(cfg, 1024, 256, prompts=320, clients=32)
    assert got[0] * 1e3 == pytest.approx(run.ms["ttft"]["mean"], rel=1e-9)
    assert got[1] * 1e3 == pytest.approx(run.ms["tpot"]["mean"], rel=1e-9)
    # without the lists the mean TTFT is the closed form (steady state + first wave)
    plain, _ = _cases(SERVE, "plain.json")
    assert not replayable(plain["conc_ttft"])


def test_lists_that_are_not_the_runs_are_refused_naming_the_field():
    bad = {**DETAILED, "output_lens": [256] * 319 + [257]}
    with pytest.raises(BenchmarkFileError, match="'output_lens' add up to 81,921 tokens, "
                       "'total_output_tokens' says 81,920"):  # fmt: skip
        _cases(bad)
    with pytest.raises(BenchmarkFileError, match="'input_lens' without 'output_lens'"):
        _cases({**SERVE, "input_lens": [1024] * 320})
    with pytest.raises(BenchmarkFileError, match=r"input_lens\[3\] = 'x'"):
        _cases({**DETAILED, "input_lens": [1024] * 3 + ["x"] + [1024] * 316})
    with pytest.raises(BenchmarkFileError, match="'start_times' must list one time per request"):
        _cases({**DETAILED, "start_times": [0.0]})


def test_a_failed_request_keeps_the_closed_form_and_says_why():
    # 321 sent, one failed (output length 0, not in the totals): not replayed, said so.
    doc = {**DETAILED, "input_lens": [1024] * 321, "output_lens": [256] * 320 + [0]}
    k, got = _cases(doc)
    assert not replayable(k["conc_ttft"])
    assert any("1 of 321 requests failed" in n for n in got.notes)


def test_a_rate_run_with_send_times_is_replayed_on_them():
    rate = {**DETAILED, "request_rate": 8.8, "max_concurrency": None,
            "start_times": [1000.0 + i / 8.8 for i in range(320)]}  # fmt: skip
    k, _ = _cases(rate)
    assert replayable(k["load_ttft"]) and replayable(k["load_tput"])
    assert k["load_ttft"].row["start_s"][0] == 0.0
    assert k["load_ttft"].row["start_s"][-1] == pytest.approx(319 / 8.8)
    no_times, _ = _cases({**rate, "start_times": None})
    assert not replayable(no_times["load_ttft"])

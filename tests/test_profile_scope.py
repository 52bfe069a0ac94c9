"""A client profile prices a replica only where its runs' range holds the replica's deployment
and workload, on every path: the estimate, the search's candidates, a hand-set deployment
(`recommend --deployment`) and the Latency page's roofline and batch sweep
(advisor/perf/model/replica.applied; audit: /work/notes/helperC.md section 2).

The profile: runs 1, 2, 3 and 5 of the DataCrunch Llama-3.1-405B / 8x H200 SGLang sweep
(tests/fixtures/client), accepted held out; its range is a request rate of 1-4 req/s per
replica at ~510/520 tokens (and 4 req/s at ShareGPT's ~224/189). The scenario: 512/512 tokens at
2 req/s on 4 nodes of 8 H200, so one TP=8 replica runs 2 req/s (inside) and four run 0.5 req/s
each (outside). Expected values are the CLI's own estimate at the same load (a cross-path check:
one deployment at one load must get one number wherever it is shown)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from advisor.cli import main

CLIENT = Path(__file__).parent / "fixtures" / "client"
MODEL = ["--model", "llama-3.1-405b", "--gpu", "h200-sxm", "--engine", "sglang",
         "--weights", "bf16", "--kv", "bf16", "--isl", "512", "--osl", "512"]  # fmt: skip
RECOMMEND = ["recommend", *MODEL, "--gpus-per-node", "8", "--nodes", "4", "--qps", "2",
             "--ttft-p99-ms", "5000", "--tpot-p99-ms", "200"]  # fmt: skip
ESTIMATE = ["estimate", *MODEL, "--tp", "8", "--qps", "2"]
OUTSIDE = "request rate 0.5 req/s is outside 1-4 req/s"


@pytest.fixture(scope="module")
def profile(tmp_path_factory) -> Path:
    from advisor.perf.calibration.client_profile import dump, fit_profile
    from advisor.perf.importers import Deployment, load_bytes

    dep = Deployment("llama-3.1-405b", "h200-sxm", 8, 1, "bf16", "bf16", "sglang")
    lines = (CLIENT / "sglang_bench_serving_dec2024_405b.jsonl").read_bytes().splitlines()
    runs = [load_bytes(lines[i], f"run{i + 1}.json", dep) for i in (0, 1, 2, 4)]
    path = tmp_path_factory.mktemp("prof") / "dc1235.yaml"
    path.write_text(dump(fit_profile(runs, dep, "dc1235").doc))
    return path


def _json(argv: list[str], capsys) -> dict:
    assert main([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _focus(dp: int, profile: Path, capsys) -> tuple[dict, str]:
    """recommend --deployment (TP=8 x ``dp``) with the profile: (its focus JSON, its text)."""
    argv = [*RECOMMEND, "--deployment", f"h200-sxm.tp8.pp1.dp{dp}.bf16.bf16", "--profile",
            str(profile)]  # fmt: skip
    focus = _json(argv, capsys)["focus"]["deployment"]
    assert main(argv) == 0
    return focus, capsys.readouterr().out


def test_recommend_deployment_outside_the_range_is_the_shipped_estimate(profile, capsys):
    """Four replicas at 0.5 req/s each: outside. The focus was priced with the profile (TTFT
    P50 208 ms against 136 ms shipped) while `estimate` at that load fell back."""
    focus, text = _focus(4, profile, capsys)
    est = _json([*ESTIMATE, "--dp", "4", "--profile", str(profile)], capsys)
    # the estimate at the same load (2 req/s over 4 replicas) falls back to the shipped calibration
    assert est["client_profile_fallback"].startswith(OUTSIDE)
    # both run the same queueing model on the same prefill (the search's interpolated decode
    # step barely moves TTFT): the same figures, to the last digit the CLI prints
    for p in ("p50", "p99"):
        assert focus["ttft_ms"][p] == pytest.approx(est["percentiles"]["ttft_ms"][p], rel=1e-6)
    # one rule, one reason: the focus says why in JSON and in text, as the estimate does
    assert focus["client_profile_fallback"] == est["client_profile_fallback"]
    assert "client profile dc1235 not applied: " + OUTSIDE in text


def test_recommend_deployment_inside_the_range_uses_the_profile(profile, capsys):
    """One replica at 2 req/s: inside; the focus and the estimate both use the profile."""
    focus, text = _focus(1, profile, capsys)
    est = _json([*ESTIMATE, "--profile", str(profile)], capsys)
    shipped = _json(ESTIMATE, capsys)
    assert "client_profile_fallback" not in est and focus["client_profile_fallback"] is None
    assert focus["ttft_ms"]["p50"] == pytest.approx(est["percentiles"]["ttft_ms"]["p50"], rel=1e-6)
    # and the profile moved it (TTFT P50 225 ms with it, 136 ms without at this load)
    assert focus["ttft_ms"]["p50"] > 1.3 * shipped["percentiles"]["ttft_ms"]["p50"]
    assert "client profile dc1235 applied" in text


def test_the_search_prices_each_candidate_at_its_own_load(profile):
    """Every (TP=8 bf16, DP) candidate of the search: with the profile at DP 1-2 (2 and 1 req/s
    per replica, inside), with the shipped calibration at DP 3-4 (0.67 and 0.5 req/s, outside).
    Before, all four were priced with the profile; only the winner's load was checked."""
    from advisor.perf.calibration.client_profile import read_profile
    from advisor.perf.model.overlay import active, shipped_only
    from advisor.scenario import Hardware, Options, Scenario, Workload
    from advisor.search.evaluate import build_shapes, evaluate_aggregated

    doc = read_profile(profile)
    sc = Scenario(
        model="llama-3.1-405b",
        hardware=Hardware(gpus=["h200-sxm"], gpus_per_node=8, nodes=4),
        workload=Workload(isl_tokens=512, osl_tokens=512, arrival_rate_per_s=2.0),
        options=Options(engine="sglang", weight_dtypes=["bf16"], kv_dtypes=["bf16"],
                        speculative=False, disaggregated=False, max_pp=1),
    )  # fmt: skip

    def ttft_by_dp() -> dict[int, float]:
        st, _ = build_shapes(sc)
        ev = evaluate_aggregated(sc, st)
        tp8 = [st.shapes[k].tp == 8 for k in ev.shape_idx]
        return {int(d): float(ev.res.ttft.mean_s[i]) for i, d in enumerate(ev.dp) if tp8[i]}

    with active("h200-sxm", "sglang", doc.overlay()):
        with_profile = ttft_by_dp()
    with shipped_only():
        shipped = ttft_by_dp()
    assert sorted(with_profile) == [1, 2, 3, 4]
    assert with_profile[3] == shipped[3] and with_profile[4] == shipped[4]
    assert with_profile[1] != shipped[1] and with_profile[2] != shipped[2]


def test_latency_page_roofline_and_batch_sweep_follow_the_estimate(profile):
    """The Latency page builds its roofline and batch sweep from ``replica_config`` of the
    estimate's input (ui/pages/latency.roofline_section). Outside the range (8,192 input tokens
    at a concurrency of 64: the audit's case) the estimate falls back, and the charts drew the
    profile's achievable peak (728 against 846 TFLOP/s shipped, compute_factor 0.86); inside
    (2 req/s at 512/512) both use it."""
    from advisor.catalog import get_accelerator, get_model
    from advisor.perf.calibration.client_profile import read_profile
    from advisor.perf.model.estimate import EstimateInput, estimate
    from advisor.perf.model.overlay import active, shipped_only
    from advisor.perf.model.replica import build_replicas
    from advisor.perf.model.sweeps import batch_sweep, replica_config, roofline_points

    model, gpu = get_model("llama-3.1-405b"), get_accelerator("h200-sxm")
    dep = dict(tp=8, weights="bf16", kv="bf16", engine="sglang", percentiles=False)
    outside = EstimateInput(isl=8192, osl=512, concurrency=64, **dep)
    inside = EstimateInput(isl=512, osl=512, qps=2.0, concurrency=None, **dep)

    def page(inp: EstimateInput) -> tuple[float, np.ndarray]:
        r = build_replicas([replica_config(model, gpu, inp)])
        peak = roofline_points(r, inp.isl, 8, inp.isl + inp.osl / 2)["peak_flops_per_s"]
        return peak, batch_sweep(r, inp.isl + inp.osl / 2, np.array([1.0, 8.0, 64.0]))["step_ms"]

    doc = read_profile(profile)
    with shipped_only():
        shipped = {"out": page(outside), "in": page(inside)}
    with active("h200-sxm", "sglang", doc.overlay()):
        assert estimate(model, gpu, outside)["client_profile_fallback"]
        assert "client_profile_fallback" not in estimate(model, gpu, inside)
        peak, steps = page(outside)
        assert peak == shipped["out"][0] and list(steps) == list(shipped["out"][1])
        peak, steps = page(inside)
        assert peak != shipped["in"][0] and list(steps) != list(shipped["in"][1])

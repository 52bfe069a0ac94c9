"""The deployment in focus: its text form (advisor/search/deployment_spec.py) and its evaluation
through the search's own code (advisor/search/focus.py)."""

from __future__ import annotations

import pytest

from advisor.scenario import SLA, Hardware, Options, Scenario, Workload
from advisor.search.deployment_spec import DeploymentSpec, DeploymentSpecError, parse_spec
from advisor.search.focus import evaluate_spec
from advisor.search.recommend import recommend

SPECS = [
    DeploymentSpec(gpu="h100-sxm", tp=4, pp=1, dp=2, weights="fp8", kv="fp8"),
    DeploymentSpec(gpu="mi300x", tp=8, pp=4, dp=1, weights="int4", kv="fp16", speculative=True),
    DeploymentSpec(gpu="l40s", tp=2, dp=3, weights="bf16", kv="int8", prefill_tp=1, prefill_dp=5),
]


@pytest.mark.parametrize("spec", SPECS, ids=str)
def test_text_form_round_trips(spec):
    assert parse_spec(str(spec)) == spec


def test_text_form_reads_as_designed():
    # The documented example: two TP=4 replicas on H100 SXM, fp8 weights, fp8 KV.
    assert str(SPECS[0]) == "h100-sxm.tp4.pp1.dp2.fp8.fp8"
    assert str(SPECS[1]) == "mi300x.tp8.pp4.dp1.int4.fp16.spec"
    assert str(SPECS[2]) == "l40s.tp2.pp1.dp3.ptp1.pdp5.bf16.int8"
    # GPUs: TP x PP x DP (+ prefill TP x DP): 8, 32, 6 + 5
    assert [s.gpus for s in SPECS] == [8, 32, 11]


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("h100-sxm.tp4.pp1.dp2.fp9.fp8", ["weight dtype", "'fp9'", "int4"]),
        ("h100-sxm.tp4.pp1.dp2.fp8.fp32", ["KV dtype", "'fp32'", "int8"]),
        ("tpu-v9.tp4.pp1.dp1.fp8.fp8", ["gpu", "'tpu-v9'", "h100-sxm", "mi300x"]),
        ("h100-sxm.tp0.pp1.dp1.fp8.fp8", ["tp = 0", "1..1024"]),
        ("h100-sxm.tp4.pp256.dp1.fp8.fp8", ["pp = 256", "1..128"]),
        ("h100-sxm.pp1.dp1.fp8.fp8", ["tp<N> is missing"]),
        ("h100-sxm.tpx.pp1.dp1.fp8.fp8", ["'tpx'", "e.g. tp4"]),
        ("h100-sxm.tp4.tp2.dp1.fp8.fp8", ["tp is given twice"]),
        ("h100-sxm.tp4.fp8", ["weight dtype then a KV dtype", "fp16"]),
        ("h100-sxm.tp4.pp2.dp1.ptp2.pdp1.fp8.fp8", ["pp", "PP = 1", "got 2"]),
        ("h100-sxm.tp4.pp1.dp1.ptp2.fp8.fp8", ["prefill_tp (2)", "prefill_dp (None)"]),
        ("h100", ["expected <accelerator>", "h100-sxm.tp4.pp1.dp2.fp8.fp8"]),
    ],
)
def test_bad_text_names_field_value_and_allowed(text, names):
    with pytest.raises(DeploymentSpecError) as exc:
        parse_spec(text)
    msg = str(exc.value)
    assert msg.startswith("deployment ")
    for part in names:
        assert part in msg, msg


SCENARIOS = {
    # default: 70B on 8 H100, 2 req/s, P99 TPOT 50 ms (the search picks disaggregated pools)
    "default": Scenario(),
    "405b-4-nodes": Scenario(model="llama-3.1-405b", hardware=Hardware(nodes=4)),
    "8b-one-gpu": Scenario(model="llama-3.1-8b", hardware=Hardware(gpus_per_node=1)),
    "users": Scenario(workload=Workload(arrival_rate_per_s=None, concurrent_users=64)),
    "speculative": Scenario(
        model="llama-3.1-8b",
        workload=Workload(arrival_rate_per_s=0.2),
        options=Options(speculative=True, disaggregated=False, weight_dtypes=["fp16"]),
    ),  # fmt: skip
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_every_deployment_of_a_recommendation_carries_its_spec(name, point_predictions):
    rec = recommend(SCENARIOS[name])
    deps = [rec.best, rec.lowest_latency, rec.decision_matrix.article_shaped]
    deps += [m.deployment for m in rec.near_misses]
    deps = [d for d in deps if d is not None]
    assert rec.best is not None and len(deps) >= 3
    for d in deps:
        s = d.spec
        assert (s.gpu, s.tp, s.pp, s.dp, s.weights, s.kv, s.speculative) == (
            d.gpu, d.tp, d.pp, d.dp, d.weights, d.kv, d.speculative,
        )  # fmt: skip
        assert s.gpus == d.gpus
        assert s.disaggregated == (d.kind == "disaggregated")
        if s.disaggregated:
            assert (s.prefill_tp, s.prefill_dp) == (d.prefill_pool["tp"], d.prefill_pool["dp"])
    assert all(p.spec is not None for p in rec.pareto + rec.pareto_cost)
    # the lowest-latency alternative is at least as fast as every Pareto point
    lat = rec.latency_metric.split()[1].lower() + "_ms"
    pct = f"p{SCENARIOS[name].sla.percentile}"
    fastest = getattr(getattr(rec.lowest_latency, lat), pct)
    assert all(fastest <= p.latency_ms + 1e-9 for p in rec.pareto)


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_the_recommended_spec_evaluates_to_the_recommendation(name, point_predictions):
    # Expected values: the search's own result for the same scenario (two routes, one model).
    sc = SCENARIOS[name]
    rec = recommend(sc)
    f = evaluate_spec(sc, rec.best.spec)
    assert f.fits and f.reasons == [] and f.fails == []
    assert f.deployment.model_dump() == rec.best.model_dump()


def test_a_near_miss_spec_misses_for_the_same_reasons():
    sc = SCENARIOS["405b-4-nodes"]
    rec = recommend(sc)
    for m in rec.near_misses[:3]:
        f = evaluate_spec(sc, m.deployment.spec)
        assert f.fits and not f.meets_sla
        assert f.fails == m.fails
        assert f.deployment.tpot_ms == m.deployment.tpot_ms
        assert f.deployment.usd_per_million_tokens == m.deployment.usd_per_million_tokens


def test_405b_fp16_at_tp4_does_not_fit_with_the_reason():
    # Llama 3.1 405B: 405.9e9 parameters x 2 bytes / TP 4 = 203 GB per GPU > 80 GB (datasheet).
    sc = SCENARIOS["405b-4-nodes"]
    f = evaluate_spec(sc, parse_spec("h100-sxm.tp4.pp1.dp1.fp16.fp16"))
    assert not f.fits and f.deployment is None
    assert any("weights do not fit: 203 GB" in r and "TP=4" in r for r in f.reasons), f.reasons


def test_more_gpus_than_the_cluster_and_a_foreign_accelerator_are_reasons():
    sc = Scenario()  # 1 node x 8 H100
    f = evaluate_spec(sc, parse_spec("mi300x.tp4.pp1.dp4.fp16.fp16"))
    assert not f.fits
    assert any("needs 16 GPUs; the cluster has 8" in r for r in f.reasons)
    assert any("mi300x is not one of the scenario's accelerators" in r for r in f.reasons)


def test_a_hand_set_deployment_that_misses_the_sla_says_which_target():
    # 70B fp16 on TP=4 at P99 TPOT <= 5 ms: one decode step reads 141 GB / 4 GPUs of weights at
    # 3.35 TB/s (datasheet) = 10.5 ms > 5 ms, whatever the batch.
    sc = Scenario(sla=SLA(tpot_ms=5.0))
    f = evaluate_spec(sc, parse_spec("h100-sxm.tp4.pp1.dp2.fp16.fp16"))
    assert f.fits and not f.meets_sla
    assert any(r.startswith("P99 TPOT") and "> 5 ms" in r for r in f.fails), f.fails


def _pdf_first_page(pdf: bytes) -> str:
    import io

    from pypdf import PdfReader

    return " ".join(PdfReader(io.BytesIO(pdf)).pages[0].extract_text().split())


def test_the_pdf_describes_the_deployment_in_focus():
    from advisor.report.pdf import build_report

    # 70B fp16 on 2 x TP=4 at P99 TPOT <= 5 ms misses the target (see above)
    sc = Scenario(sla=SLA(tpot_ms=5.0))
    rec = recommend(sc)
    f = evaluate_spec(sc, parse_spec("h100-sxm.tp4.pp1.dp2.fp16.fp16"))
    note = f"{f.spec.describe()}, chosen by hand: misses the SLA: {'; '.join(f.fails)}"
    text = _pdf_first_page(
        build_report(sc, recommendation=rec, focus=f.deployment, focus_note=note, charts=False)
    )
    assert f"Deployment in focus: {f.deployment.description}" in text
    assert "chosen by hand: misses the SLA: P99 TPOT" in text
    assert "not the search's recommendation" in text
    # without a focus, the same report says what the search found (nothing meets 5 ms)
    plain = _pdf_first_page(build_report(sc, recommendation=rec, charts=False))
    assert "No recommendation" in plain and "Deployment in focus" not in plain
    # both say why nothing meets it, in the search's words, not "why this deployment"
    flat = [" ".join(t.split()) for t in (text, plain)]
    for t in flat:
        assert "Why no deployment meets the SLA" in t and "Why this deployment" not in t
        assert "No deployment reaches P99 TPOT ≤ 5 ms at 80% confidence" in t
    assert "Why the search recommends its pick" not in flat[0]


def test_a_pdf_whose_focus_does_not_fit_says_so_then_gives_the_recommendation():
    from advisor.report.pdf import build_report

    sc = Scenario()
    rec = recommend(sc)
    f = evaluate_spec(sc, parse_spec("h100-sxm.tp1.pp1.dp1.fp16.fp16"))  # 141 GB > 80 GB
    note = f"{f.spec.describe()}, chosen by hand: does not fit: {'; '.join(f.reasons)}"
    text = _pdf_first_page(build_report(sc, recommendation=rec, focus_note=note, charts=False))
    assert "Deployment in focus in the app: 1 × (TP=1) h100-sxm" in text
    assert "does not fit: weights do not fit: 141 GB" in text
    assert f"Recommended deployment: {rec.best.description}" in text


def test_cli_recommend_evaluates_a_deployment_and_refuses_a_bad_one(capsys):
    import json

    from advisor.cli import main

    assert main(["recommend", "--deployment", "h100-sxm.tp4.pp1.dp2.fp8.fp8", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # the same evaluation as the library's, for the CLI's default scenario (= Scenario())
    want = evaluate_spec(Scenario(), parse_spec("h100-sxm.tp4.pp1.dp2.fp8.fp8"))
    assert out["focus"] == want.model_dump(mode="json")
    with pytest.raises(SystemExit) as exc:
        main(["recommend", "--deployment", "h100-sxm.tp4.pp1.dp2.fp8.fp7"])
    err = capsys.readouterr().err.strip().splitlines()
    assert exc.value.code == 2 and len(err) == 1
    assert "--deployment" in err[0] and "'fp7'" in err[0] and "int8" in err[0]


def test_cli_recommend_words_a_deployment_that_cannot_serve_the_load(capsys):
    # The test_focus.py case: 70B int4 on one MI300X, 5 requests/s of 2,000-token prompts, each
    # prefill >= 216 ms at the datasheet's 1,307 TFLOP/s (282 TFLOP): 1.08 s of GPU time a second.
    from advisor.cli import main

    assert main(["recommend", "--model", "llama-3.1-70b", "--gpu", "mi300x", "--engine", "vllm",
                 "--isl", "2000", "--osl", "300", "--qps", "5", "--ttft-p99-ms", "800",
                 "--tpot-p99-ms", "60", "--deployment", "mi300x.tp1.pp1.dp1.int4.fp16"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    tail = out[out.index("deployment mi300x.tp1.pp1.dp1.int4.fp16") :]
    assert tail.startswith("deployment mi300x.tp1.pp1.dp1.int4.fp16: misses the SLA: unstable at "
                           "the offered load: prefilling the arriving prompts alone")  # fmt: skip
    assert "inf" not in tail.replace("weights int4", "")

"""Issue 38: the prompt-length spread (``isl_cv``) in the sidebar, the URL and ``recommend
--isl-cv``; ``report`` titles a command-line scenario from what it is about (or ``--title``).
Expected values: the scenario field's bounds (advisor/scenario.py: 0 to 3) and the values the
tests set."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from advisor.cli import main
from advisor.scenario import Scenario, Workload

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def test_isl_cv_travels_in_the_url():
    from ui.url import View, scenario_from_params, scenario_to_params

    s = Scenario(workload=Workload(isl_cv=0.8))
    params = scenario_to_params(s, View())
    assert params["icv"] == "0.8"
    back, _, warnings = scenario_from_params(params)
    assert back.workload.isl_cv == 0.8 and not warnings
    _, _, warnings = scenario_from_params({**params, "icv": "5"})
    assert any("isl_cv" in w and "'5'" in w for w in warnings)  # field, value; the bound: 3


@pytest.mark.parametrize("key,field,help_says", [("icv", "isl_cv", "prompt lengths"),
                                                  ("ocv", "osl_cv", "answer lengths")])  # fmt: skip
def test_sidebar_sets_the_length_spreads(key, field, help_says):
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params[key] = "0.5"
    at = at.run()
    box = next(w for w in at.number_input if w.key == f"w.{key}")
    assert box.value == 0.5 and box.max == 3.0 and box.min == 0.0
    assert "coefficient of variation" in box.help and help_says in box.help
    box.set_value(1.2).run()
    assert not at.exception and not at.error
    assert getattr(at.session_state["scenario"].workload, field) == 1.2


def test_cli_isl_cv_reaches_the_search_and_bad_values_exit_2(capsys):
    from advisor.search.recommend import recommend

    flags = ["recommend", "--model", "llama-3.1-8b", "--gpu", "l40s", "--gpus-per-node", "2",
             "--no-disaggregated", "--json"]  # fmt: skip
    assert main([*flags, "--isl-cv", "1.5"]) == 0
    got = json.loads(capsys.readouterr().out)["best"]
    s = Scenario(model="llama-3.1-8b", hardware={"gpus": ["l40s"], "gpus_per_node": 2},
                 workload=Workload(isl_cv=1.5), options={"disaggregated": False})  # fmt: skip
    # the same search as the library with the same spread (the CLI and the app share it)
    assert got["ttft_ms"]["p99"] == pytest.approx(recommend(s).best.ttft_ms.p99)
    plain = recommend(s.model_copy(update={"workload": Workload()})).best
    assert got["ttft_ms"]["p99"] != pytest.approx(plain.ttft_ms.p99)  # the flag changed it


@pytest.mark.parametrize("flag", ["--isl-cv", "--osl-cv"])
def test_cli_length_spreads_refuse_bad_values_with_exit_2(flag, capsys):
    # the scenario's bound for both spreads: 0 to 3 (advisor/scenario.py ISL_CV_MAX, OSL_CV_MAX)
    flags = ["recommend", "--model", "llama-3.1-8b", "--gpu", "l40s", "--json"]
    for bad in ("3.5", "-0.1", "nan", "x"):
        with pytest.raises(SystemExit) as exc:
            main([*flags, flag, bad])
        assert exc.value.code == 2
        err = capsys.readouterr().err
        assert flag in err and bad in err and "3" in err


def test_report_title_from_the_scenario_or_the_flag(tmp_path, capsys):
    from pypdf import PdfReader

    out = tmp_path / "r.pdf"
    base = ["report", "--model", "llama-3.1-8b", "--gpu", "l40s", "--gpus-per-node", "1",
            "--users", "40", "--no-sensitivities", "--out", str(out)]  # fmt: skip
    assert main(base) == 0
    text = PdfReader(out).pages[0].extract_text()
    assert "Scenario cli" not in text and "cli\n" not in text  # issue 38: titled "cli"
    assert "Llama 3.1 8B" in text and "40 concurrent users" in text
    assert main([*base, "--title", "St Mary's <b>clinical</b> assistant"]) == 0
    assert "St Mary's <b>clinical</b> assistant" in PdfReader(out).pages[0].extract_text()
    for bad in ("", "x" * 201, "bad\x1b[31m"):
        assert main([*base, "--title", bad]) == 2  # one line on stderr naming the flag
        assert "--title" in capsys.readouterr().err


def test_report_body_leaves_row_ids_and_the_article_to_the_appendices():
    import re
    from io import BytesIO

    from pypdf import PdfReader

    from advisor.report.pdf import build_report
    from advisor.scenario import SLA, Hardware

    # the hospital question (gpt-oss-120b, 400 clinicians thinking 60 s, 6,000 / 400)
    s = Scenario(name="Hospital", model="gpt-oss-120b", hardware=Hardware(gpus=["b200"]),
                 workload=Workload(isl_tokens=6000, osl_tokens=400, arrival_rate_per_s=None,
                                   concurrent_users=400, think_time_s=60),
                 sla=SLA(ttft_ms=3000, tpot_ms=60))  # fmt: skip
    pdf = build_report(s, charts=False, sensitivities=False)
    text = "\n".join(p.extract_text() for p in PdfReader(BytesIO(pdf)).pages)
    body, _, appendix = text.partition("Appendix A: calibration")
    assert appendix, "no appendix"
    assert "Appendix B: where the article" in appendix and "Appendix C: sources" in appendix
    assert "rules of thumb" not in body.replace("Appendix B", "")
    assert "Measurements behind" not in body
    # measurement-row ids (E0233, N0181, V0067: data/measurements*.csv) nowhere: counts per source
    assert not re.findall(r"\b[A-Z]{1,2}\d{4}\b", text)
    assert re.search(r"\d+ rows?: ", appendix)


def test_capacity_table_counts_prefill_and_decode_replicas_apart(point_predictions):
    import math

    from advisor.scenario import SLA
    from advisor.search.recommend import recommend
    from ui.url import View, scenario_to_params

    # The default scenario with P99 TPOT 20 ms: the winner is disaggregated (prefill and
    # decode replicas on H100; at 50 ms an aggregated TP=2 with more headroom wins the tie).
    s = Scenario(sla=SLA(ttft_ms=2000.0, tpot_ms=20.0))
    cap = recommend(s).capacity
    assert cap.kind == "disaggregated"
    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in scenario_to_params(s, View()).items():
        at.query_params[k] = v
    at = at.run()  # Recommendation page
    assert not at.exception
    from ui.format import md_escape as E

    table = next(d.value for d in at.dataframe if "prefill replicas" in d.value)
    rp = cap.prefill_max_rate_per_replica_at_sla_req_s
    rd = cap.max_rate_per_replica_at_sla_req_s
    caption = next(c.value for c in at.caption if E("counted apart") in c.value)
    assert E(f"{rp:.3g} requests/s") in caption and E(f"{rd:.3g} requests/s") in caption
    for row, r in zip(table.to_dict("records"), cap.rows, strict=True):
        # the caption's rule by hand: ceil(R / per-replica rate) of each pool
        assert row["prefill replicas"] == math.ceil(r.target_rate_req_s / rp - 1e-9)
        assert row["decode replicas"] == math.ceil(r.target_rate_req_s / rd - 1e-9)
        assert row["GPUs"] == row["prefill replicas"] * cap.prefill_gpus_per_replica + (
            row["decode replicas"] * cap.gpus_per_replica
        )


@pytest.mark.parametrize(
    ("model", "card_b"),
    # gpt-oss card (arXiv 2508.10925) Table 1: 5.13B active; Qwen3-235B-A22B card: 22B activated
    [("gpt-oss-120b", 5.13), ("qwen3-235b-a22b", 22.0)],
)
def test_one_active_parameter_count_in_the_catalog_memory_and_recommendation(model, card_b, capsys):
    from advisor.catalog import get_accelerator, get_model
    from advisor.physics.memory import memory_budget
    from advisor.search.recommend import recommend

    assert main(["catalog", "--json"]) == 0
    cat = next(m for m in json.loads(capsys.readouterr().out)["models"] if m["id"] == model)
    mem = memory_budget(get_model(model), get_accelerator("b200"), tp=8, weights_dtype="fp8")
    s = Scenario(model=model, hardware={"gpus": ["b200"]})
    note = recommend(s).decision_matrix.note
    shown = {round(cat["active_params"] / 1e9, 1), round(mem.active_params / 1e9, 1)}
    assert len(shown) == 1  # before issue 38: 22.2B in the catalog, 21.6B on Recommendation
    (b,) = shown
    assert abs(b - card_b) <= 0.25  # the publisher's convention, to its rounding
    assert f"{b:.1f}B active" in note


def test_speculative_page_tells_one_story_at_the_scenarios_load():
    # The hospital question on B200: Qwen3-235B-A22B (MoE) with a Qwen3-8B draft. Its
    # speedup grows with the batch (more experts read per target step, a flat dense draft
    # step), so "Stops paying at batch 1" beside a speedup above 1x at batch 43 was wrong.
    from advisor.scenario import SLA, Hardware
    from ui.url import View, scenario_to_params

    s = Scenario(model="qwen3-235b-a22b", hardware=Hardware(gpus=["b200"]),
                 workload=Workload(isl_tokens=6000, osl_tokens=400, arrival_rate_per_s=None,
                                   concurrent_users=400, think_time_s=60),
                 sla=SLA(ttft_ms=3000, tpot_ms=60))  # fmt: skip
    at = AppTest.from_file(APP, default_timeout=200)
    for k, v in scenario_to_params(s, View()).items():
        at.query_params[k] = v
    at = at.run().switch_page("ui/pages/speculative.py").run()
    assert not at.exception and not at.error
    m = {x.label: x.value for x in at.metric}
    label = next(k for k in m if k.startswith("Speedup per token at batch "))
    batch = int(label.rsplit(" ", 1)[1].replace(",", ""))
    speedup = float(m[label].rstrip("×"))
    with_ = float(m["TPOT, with speculation (ms)"])
    without = float(m["TPOT, no speculation (ms)"])
    pays = next(x.value for x in at.markdown if x.value.startswith("**Pays (speedup ≥ 1×) at:**"))
    pays = pays.split(":** ", 1)[1]
    assert "Stops paying" not in str(m)
    # the two ratios are said side by side where they are seen (the replay: 1.40x beside
    # 30.1 / 24.3 = 1.24x, explained only in a tooltip)
    line = next(c.value for c in at.caption if c.value.startswith("With "))
    assert line.startswith(
        f"With {batch:,} sequences kept running on each replica: decode steps {speedup:.2f}× "
        "faster; TPOT "
    )
    said = float(line.split("TPOT ", 1)[1].split("×", 1)[0])
    if with_ <= without:
        # TPOT = time per step / tokens per step, the same interleaved prefills in both: the
        # faster one is the one the speedup says (Leviathan et al. 2023)
        assert speedup > 1
        assert said == pytest.approx(without / with_, abs=0.02)  # 3 significant figures
    else:
        # the draft's own prefill of each new prompt stalls decoding (in a disaggregated decode
        # pool the target's do not: the winner of this scenario since 2026-12-07): said so,
        # as "higher", not as a ratio "lower" below 1
        assert said == pytest.approx(with_ / without, abs=0.02)
        assert "× higher" in line and "the draft prefills every new prompt" in line
    if speedup > 1:
        assert not pays.startswith("none")


def test_memory_page_says_what_fits_and_where_offloading_starts_as_one_number():
    # Issue 38: "Sequences (paged) 921" beside a chart titled "offloading starts: 922".
    at = AppTest.from_file(APP, default_timeout=120).run().switch_page("ui/pages/memory.py").run()
    assert not at.exception
    fits = next(m.value for m in at.metric if m.label == "Sequences (paged)")
    titles = [json.loads(c.proto.spec)["layout"]["title"]["text"] for c in at.get("plotly_chart")]
    kv = next(t for t in titles if "offloading starts" in t)
    # the same count in both, and the first sequence that does not fit is the next one
    assert kv.startswith(f"KV fits {fits} sequences")
    assert f"at sequence {int(fits.replace(',', '')) + 1:,}" in kv


def test_interconnect_all_reduce_per_step_is_the_decode_steps_communication():
    # Issue 38: 6.29 ms on the Interconnect page, 9.69 ms on the Latency page (MI300X): the
    # chart used the nccl-tests time, the decode step divides it by the fitted in-engine
    # collective efficiency of its fabric (data/calibration.yaml fabrics).
    from advisor.catalog import get_accelerator, get_model, interconnects
    from advisor.charts import interconnect_charts as ic
    from advisor.perf.model.replica import ReplicaConfig, build_replicas
    from advisor.perf.model.step import decode_step

    m = get_model("llama-3.1-70b")  # dense: the step's communication is the TP all-reduces
    for gpu_id in ("mi300x", "h100-sxm"):
        gpu = get_accelerator(gpu_id)
        link = interconnects()[gpu.scale_up_link]
        rows = ic.tp_comm_sweep(m, gpu, [link], batch_tokens=64, weights_dtype="fp8",
                                kv_dtype="fp8", context_tokens=2048, tps=(8,))  # fmt: skip
        r = build_replicas([ReplicaConfig(model=m, gpu=gpu, tp=8, weights="fp8", kv="fp8")])
        step = decode_step(r, 64.0, 2048.0)
        assert rows[0]["per_token_s"] == pytest.approx(float(step.communication[0]), rel=1e-6)


def test_compare_batch_sweep_means_do_not_depend_on_skipping_percentiles():
    # The Compare sweep skips the closed-loop percentiles (issue 38: 29 of them made the
    # comparison PDF take 15 s warm); the means it draws are the full estimate's.
    from advisor.catalog import get_accelerator, get_model
    from advisor.charts import compare_charts as cc
    from advisor.perf.model.estimate import EstimateInput, estimate

    m, g = get_model("llama-3.1-8b"), get_accelerator("l40s")
    rows = cc.batch_sweep(m, g, EstimateInput(tp=1), [1, 8, 32])
    for r in rows:
        full = estimate(m, g, EstimateInput(tp=1, concurrency=r["batch"], qps=None))
        assert "percentiles" in full  # the full estimate has them; the sweep does not need them
        assert r["tpot_ms"] == pytest.approx(full["tpot_ms"])
        assert r["ttft_ms"] == pytest.approx(full["ttft_ms"])
        assert r["throughput_tok_s_per_gpu"] == pytest.approx(full["throughput_tok_s_per_gpu"])


def test_osl_cv_travels_in_the_url():
    from ui.url import View, scenario_from_params, scenario_to_params

    params = scenario_to_params(Scenario(workload=Workload(osl_cv=0.7)), View())
    assert params["ocv"] == "0.7"
    back, _, warnings = scenario_from_params(params)
    assert back.workload.osl_cv == 0.7 and not warnings
    _, _, warnings = scenario_from_params({**params, "ocv": "4"})
    assert any("osl_cv" in w and "'4'" in w for w in warnings)  # field, value; the bound: 3


def test_cli_osl_cv_reaches_the_search(capsys):
    from advisor.search.recommend import recommend

    flags = ["recommend", "--model", "llama-3.1-8b", "--gpu", "l40s", "--gpus-per-node", "2",
             "--no-disaggregated", "--e2e-p99-ms", "60000", "--json"]  # fmt: skip
    assert main([*flags, "--osl-cv", "1"]) == 0
    got = json.loads(capsys.readouterr().out)["best"]
    s = Scenario(model="llama-3.1-8b", hardware={"gpus": ["l40s"], "gpus_per_node": 2},
                 workload=Workload(osl_cv=1.0), sla={"e2e_ms": 60000.0},
                 options={"disaggregated": False})  # fmt: skip
    best = recommend(s).best
    assert got["e2e_ms"]["p99"] == pytest.approx(best.e2e_ms.p99)  # the app's search, same spread
    # Hand calculation: answers drawn gamma with CV 1 are exponential, mean 256 tokens; at light
    # load E2E ~ TTFT + length x TPOT, so its P50 and P99 are those of the length: 256 ln 2 = 177
    # and 256 ln 100 = 1,179 tokens x the P50 TPOT, plus the TTFT (fixed lengths: P99/P50 ~1.1)
    ttft, tpot = best.ttft_ms.p50, best.tpot_ms.p50
    assert best.e2e_ms.p50 == pytest.approx(ttft + 256 * math.log(2) * tpot, rel=0.05)
    assert best.e2e_ms.p99 == pytest.approx(ttft + 256 * math.log(100) * tpot, rel=0.05)

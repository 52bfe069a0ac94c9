"""Wrong answers the third hardening round found (issue 36, second half): one meaning for the
concurrency, impossible budgets and bandwidths never shown as numbers, contexts beyond the
engine's limit, links that cannot exist, and calibrations of deployments that cannot load."""

from __future__ import annotations

from pathlib import Path

import pytest

from advisor.catalog import get_accelerator, get_model
from advisor.perf.model.estimate import EstimateInput, estimate

APP = str(Path(__file__).resolve().parents[1] / "app.py")
M, G = get_model("llama-3.1-8b"), get_accelerator("h100-sxm")


def _est(dp: int, n: int) -> dict:
    return estimate(M, G, EstimateInput(dp=dp, concurrency=n, isl=1024, osl=256))


# -- 1: --concurrency N is the total over the deployment ----------------------------------------
def test_eight_clients_over_two_replicas_obey_littles_law():
    # Reported: --dp 2 --concurrency 8 gave 1,771 tok/s with a 2,313 ms E2E; 8 clients that
    # each wait one E2E per 256 output tokens deliver 8 x 256 / 2.313 s = 885 tok/s (Little).
    r = _est(2, 8)
    assert r["throughput_tok_s"] == pytest.approx(8 * 256 / (r["e2e_ms"] / 1e3), rel=1e-9)
    # two identical replicas with 4 clients each: each one's latency, twice its throughput
    one = _est(1, 4)
    assert r["e2e_ms"] == pytest.approx(one["e2e_ms"], rel=1e-9)
    assert r["throughput_tok_s"] == pytest.approx(2 * one["throughput_tok_s"], rel=1e-9)
    assert (r["concurrency"], r["running_per_replica"]) == (8, 4)


def test_uneven_split_runs_three_three_two_and_idle_replicas_add_nothing():
    # 8 over 3 replicas: two run 3 sequences, one runs 2; tokens/s add up, and the mean E2E is
    # over requests, so 8 clients x 256 tokens / E2E is the throughput again
    r, three, two = _est(3, 8), _est(1, 3), _est(1, 2)
    assert r["throughput_tok_s"] == pytest.approx(
        2 * three["throughput_tok_s"] + two["throughput_tok_s"], rel=1e-9
    )
    assert r["throughput_tok_s"] == pytest.approx(8 * 256 / (r["e2e_ms"] / 1e3), rel=1e-9)
    assert any("2 run 3, 1 run 2" in n for n in r["notes"])
    alone, spread = _est(1, 1), _est(4, 1)  # one client keeps one replica of four busy
    assert spread["throughput_tok_s"] == pytest.approx(alone["throughput_tok_s"], rel=1e-9)
    assert spread["throughput_tok_s_per_gpu"] == pytest.approx(alone["throughput_tok_s"] / 4)
    assert any("3 replica(s) idle" in n for n in spread["notes"])


def test_estimate_states_the_meaning_in_help_and_output(run_cli):
    code, out, _ = run_cli(["estimate", "--help"])
    assert code == 0 and "over the whole deployment" in " ".join(out.split())
    argv = ["estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "1024",
            "--osl", "256", "--dp", "2", "--concurrency", "8"]  # fmt: skip
    code, out, err = run_cli(argv)
    assert code == 0, err
    assert "with 8 requests in flight over 2 replicas (4.0 per replica)" in out


# -- 2: an impossible budget or bandwidth is a result with reasons, never a number --------------
def test_weights_over_memory_show_the_reason_not_a_negative_kv_budget(run_cli):
    # Llama-3.1-405B in fp16: 405.85e9 parameters x 2 B = 811.7 GB; one H100 SXM has 80 GiB =
    # 85.5 GB, 0.90 of it usable = 77.0 GB (vLLM gpu_memory_utilization)
    argv = ["memory", "--model", "llama-3.1-405b", "--gpu", "h100-sxm"]
    code, out, err = run_cli(argv)
    assert code == 0, err
    assert "KV budget / GPU       none" in out and "-" not in out.split("KV budget / GPU")[1][:20]
    assert "weights need 811.7 GB per GPU" in out and "the GPU has 77.0 GB usable" in out
    code, out, _ = run_cli([*argv, "--json"])
    assert '"kv_budget_bytes_per_gpu": 0.0' in out and '"fits": false' in out
    r = estimate(get_model("llama-3.1-405b"), G, EstimateInput())
    assert not r["fits"] and r["memory"]["kv_budget_gb_per_gpu"] == 0.0


def test_a_collective_on_one_gpu_prints_no_infinite_bandwidth(run_cli):
    argv = ["collective", "--gpu", "h100-sxm", "--n", "1", "--bytes", "1e6"]
    code, out, err = run_cli(argv)
    assert code == 0, err
    assert "inf" not in out and "nothing to exchange" in out
    code, out, _ = run_cli([*argv, "--json"])
    assert '"algbw_gbps": null' in out and "Infinity" not in out


def test_the_memory_page_says_why_instead_of_a_negative_budget():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["dep"] = "h100-sxm.tp1.pp1.dp1.fp16.fp16"  # 70B fp16: 141 GB on 80 GB
    at.run().switch_page("ui/pages/memory.py").run()
    fits = next(m for m in at.metric if m.label == "Fits")
    assert fits.value == "no" and "weights need" in fits.help and "-" not in fits.help[:3]


# -- 3: a context longer than max_model_len is refused -----------------------------------------
def test_context_beyond_max_model_len_is_refused_naming_both(run_cli):
    argv = ["memory", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--context", "4096",
            "--max-model-len", "1"]  # fmt: skip
    code, out, err = run_cli(argv)
    assert code == 2 and out == "" and err.count("\n") == 1
    assert "--context 4,096" in err and "--max-model-len 1" in err
    from advisor.physics.memory import memory_budget

    with pytest.raises(ValueError, match="context_tokens=4,096 exceeds max_model_len=1"):
        memory_budget(get_model("llama-2-7b"), G, context_tokens=4096, max_model_len=1)


def test_the_memory_page_refuses_a_max_model_len_below_the_context():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["ml"] = "16"  # the default scenario's sequences are 1,024 + 256 tokens
    at.run().switch_page("ui/pages/memory.py").run()
    assert not at.exception
    assert any("max_model_len 16 is shorter than the 1,280 tokens" in e.value for e in at.error)


# -- 4: a link that cannot exist is refused where it enters -------------------------------------
@pytest.mark.parametrize(
    "gpu, flag, link, why",
    [
        ("h100-sxm", "--link", "ib-ndr", "is an inter-node link, not one inside a node"),
        ("h100-sxm", "--inter-link", "nvlink4", "is an intra-node link, not one between nodes"),
        ("mi300x", "--link", "nvlink5", "is on NVIDIA accelerators only, not on the AMD Instinct"),
        ("h100-sxm", "--link", "xgmi", "is on AMD accelerators only, not on the NVIDIA H100"),
    ],
)
def test_estimate_refuses_a_link_of_the_wrong_scope_or_vendor(gpu, flag, link, why, run_cli):
    argv = ["estimate", "--model", "llama-3.1-8b", "--gpu", gpu, "--isl", "8", "--osl", "8",
            "--tp", "2", flag, link]  # fmt: skip
    code, out, err = run_cli(argv)
    assert code == 2 and out == "" and err.count("\n") == 1, err
    assert f"{flag} '{link}'" in err and why in err


def test_scenario_file_and_collective_refuse_nvlink_on_amd(tmp_path, run_cli):
    from advisor.scenario import Hardware

    with pytest.raises(ValueError, match="intra_link: 'nvlink5' .* NVIDIA accelerators only"):
        Hardware(gpus=["h100-sxm", "mi300x"], intra_link="nvlink5")
    f = tmp_path / "s.json"
    f.write_text('{"schema_version": 1, "hardware": {"gpus": ["mi300x"], "intra_link": "nvlink5"}}')
    code, out, err = run_cli(["recommend", "--scenario", str(f)])
    assert code == 2 and "intra_link" in err and "nvlink5" in err and "MI300X" in err
    f.write_text('{"schema_version": 1, "hardware": {"inter_link": "xgmi"}}')
    code, out, err = run_cli(["recommend", "--scenario", str(f)])
    assert code == 2 and "inter_link" in err and "not one between nodes" in err
    code, out, err = run_cli(["recommend", "--gpu", "h100-sxm,mi300x", "--intra", "nvlink4"])
    assert (
        code == 2
        and err.startswith("advisor recommend: error: --intra 'nvlink4'")
        and "MI300X" in err
    )
    code, out, err = run_cli(["recommend", "--inter", "xgmi"])
    assert code == 2 and "--inter 'xgmi'" in err and "not one between nodes" in err
    code, out, err = run_cli(["collective", "--gpu", "mi300x", "--n", "8", "--bytes", "1e6",
                           "--link", "nvlink4"])  # fmt: skip
    assert code == 2 and "--link nvlink4" in err and "NVIDIA accelerators only" in err


def test_every_accelerator_s_own_link_is_compatible_with_it():
    from advisor.catalog import accelerators, interconnects

    links = interconnects()
    for g in accelerators().values():
        assert links[g.scale_up_link].mismatch(g, "intra_node") is None, g.id


def test_the_app_names_the_link_and_the_gpu():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=60)
    at.query_params["g"] = "mi300x"
    at.query_params["il"] = "nvlink5"
    at.run()
    assert not at.exception
    text = " ".join(e.value for e in [*at.sidebar.error, *at.warning, *at.error])
    assert "nvlink5" in text and "MI300X" in text, text


# -- 5: calibrate refuses a deployment that cannot have run -------------------------------------
def test_calibrate_refuses_weights_that_exceed_the_gpu(tmp_path, run_cli):
    # Llama-3.1-405B in bf16 on one H100: 811.7 GB of weights, 77.0 GB usable (as above)
    fix = Path(__file__).parent / "fixtures" / "client" / "vllm_bench_throughput.json"
    out = tmp_path / "p.yaml"
    argv = ["calibrate", "--from", str(fix), "--model", "llama-3.1-405b", "--gpu", "h100-sxm",
            "--engine", "vllm", "--isl", "1024", "--osl", "512", "--out", str(out)]  # fmt: skip
    code, stdout, err = run_cli(argv)
    assert code == 2 and stdout == "" and err.count("\n") == 1, err
    assert "weights need 811.7 GB per GPU" in err and "77.0 GB usable" in err
    assert not out.exists()
    from advisor.perf.calibration.client_profile import fit_profile
    from advisor.perf.importers import Deployment

    dep = Deployment(model="llama-3.1-405b", gpu="h100-sxm", tp=8, weights="bf16")
    with pytest.raises(ValueError, match="cannot run: weights need 101.5 GB per GPU"):
        fit_profile([], dep, "x")  # 811.7 GB / 8 = 101.5 GB per GPU, still over 77.0 GB


def test_the_kv_demand_chart_of_an_infeasible_budget_says_so():
    from advisor.charts import memory_charts as mc
    from advisor.physics.memory import memory_budget

    b = memory_budget(get_model("llama-3.1-405b"), G)  # 811.7 GB of weights on 77.0 GB
    assert b.kv_budget_bytes_per_gpu == 0.0 and not b.fits
    fig = mc.kv_demand_figure(mc.kv_demand_curve(2e9, b.kv_budget_bytes_per_gpu, 4), "t")
    text = " ".join(a.text for a in fig.layout.annotations)
    assert "no room for a KV cache" in text and "-" not in text.replace("KV", "")


def test_the_app_reads_the_concurrency_as_the_deployment_total():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(APP, default_timeout=120)
    for k, v in {"m": "llama-3.1-8b", "g": "h100-sxm", "dep": "h100-sxm.tp1.pp1.dp2.fp8.fp8",
                 "c": "8"}.items():  # fmt: skip
        at.query_params[k] = v
    at.run().switch_page("ui/pages/memory.py").run()
    assert not at.exception
    box = next(w for w in at.number_input if w.key == "w.c")
    assert box.label == "Requests in flight, whole deployment" and box.value == 8
    assert any("**4 sequences in flight** per replica: 8 requests" in c.value for c in at.caption)
    at.switch_page("ui/pages/latency.py").run()
    assert not at.exception
    assert any("8 requests in flight over 2 replicas" in c.value for c in at.caption)
    running = next(m for m in at.metric if m.label == "Mean running seqs / replica")
    assert running.value == "4.00"  # sig3(8 / 2)

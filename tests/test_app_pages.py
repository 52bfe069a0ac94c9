"""The Streamlit app under AppTest: every page runs, shown numbers equal the advisor's, the URL
round-trips, malformed links warn instead of failing.

Expected numbers come from advisor.physics.memory.memory_budget called with the same inputs.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from advisor.catalog import get_accelerator, get_model
from advisor.physics.memory import memory_budget
from advisor.scenario import Scenario
from advisor.search.recommend import recommend
from ui.format import gb, small_bytes
from ui.url import URL_KEYS, View, scenario_from_params, scenario_to_params

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
PAGES = ["ui/pages/overview.py", "ui/pages/memory.py", "ui/pages/interconnect.py"]


def _app(params: dict[str, str] | None = None) -> AppTest:
    at = AppTest.from_file(APP, default_timeout=60)
    for k, v in (params or {}).items():
        at.query_params[k] = v
    return at.run()


def _metrics(at: AppTest) -> dict[str, str]:
    return {m.label: m.value for m in at.metric}


def _widget(at: AppTest, key: str):
    for kind in ("selectbox", "multiselect", "number_input", "radio"):
        for w in getattr(at, kind):
            if w.key == key:
                return w
    raise KeyError(key)


def test_app_runs_without_exception():
    at = _app()
    assert not at.exception
    assert not at.error
    assert at.title[0].value == "Recommendation"  # the default (first) page
    # The caption states the search's order (search/ranking.py rank_order: price per hour, then
    # GPUs in use, then headroom, then latency), not the "rank by cost" it said before.
    caption = " ".join(c.value for c in at.caption)
    assert ("ranked by price per hour (whole servers when bought), then fewest GPUs in use, then "
            "most headroom, then lowest latency") in caption  # fmt: skip
    assert "rank by cost" not in caption


@pytest.mark.parametrize("page", PAGES)
def test_every_page_runs_with_the_default_scenario(page):
    at = _app()
    at.switch_page(page).run()
    assert not at.exception, at.exception
    assert not at.error, [e.value for e in at.error]


def test_memory_page_numbers_equal_memory_budget_defaults():
    # The page shows the recommended deployment (the deployment in focus by default).
    at = _app()
    at.switch_page("ui/pages/memory.py").run()
    s = Scenario()
    spec = recommend(s).best.spec
    b = memory_budget(
        get_model(s.model), get_accelerator(spec.gpu), tp=spec.tp, pp=spec.pp,
        weights_dtype=spec.weights, kv_dtype=spec.kv,
        context_tokens=s.workload.isl_tokens + s.workload.osl_tokens,
    )  # fmt: skip
    m = _metrics(at)
    assert m["Weights per GPU"] == gb(b.weights_bytes_per_gpu)
    assert m["Sequences (paged)"] == f"{b.max_concurrent_sequences:,}"
    assert m["Sequences (contiguous)"] == f"{b.max_concurrent_sequences_contiguous:,}"
    assert m["Fits"] == "yes"


def hand_set(at: AppTest, **fields) -> AppTest:
    """Set a deployment by hand on the Recommendation page (its form) and submit it."""
    at.switch_page("ui/pages/recommendation.py").run()
    for name, value in fields.items():
        at.session_state[f"focus.hand.{name}"] = value  # noqa: B909 - the form's widget keys
    kinds = ("selectbox", "number_input", "checkbox")
    for name, value in fields.items():
        for kind in kinds:
            for w in getattr(at, kind):
                if w.key == f"focus.hand.{name}":
                    w.set_value(value)
    next(b for b in at.button if b.label == "Put in focus").click()
    return at.run()


def test_changing_gpu_tp_and_context_updates_the_numbers():
    at = _app()
    _widget(at, "w.g").set_value(["mi300x", "h100-sxm"]).run()
    _widget(at, "w.in").set_value(8000).run()
    hand_set(at, gpu="mi300x", tp=2, pp=1, dp=1, weights="fp16", kv="fp16", disaggregated=False)
    at.switch_page("ui/pages/memory.py").run()
    assert not at.exception and not at.error
    b = memory_budget(
        get_model("llama-3.1-70b"), get_accelerator("mi300x"), tp=2, pp=1,
        weights_dtype="fp16", kv_dtype="fp16", context_tokens=8000 + 256,
    )  # fmt: skip
    m = _metrics(at)
    assert m["Weights per GPU"] == gb(b.weights_bytes_per_gpu)
    assert m["KV per sequence per GPU"] == small_bytes(b.kv_bytes_per_sequence_per_gpu)
    assert m["Sequences (paged)"] == f"{b.max_concurrent_sequences:,}"
    # the URL follows the sidebar
    assert at.query_params["g"] == "mi300x,h100-sxm"
    assert at.query_params["dep"] == "mi300x.tp2.pp1.dp1.fp16.fp16"


def test_tp1_70b_fp16_on_h100_does_not_fit_and_says_why():
    # 70.6e9 parameters x 2 bytes = 141 GB > 80 GB of one H100 (datasheet)
    at = _app({"dep": "h100-sxm.tp1.pp1.dp1.fp16.fp16"})
    at.switch_page("ui/pages/memory.py").run()
    assert _metrics(at)["Fits"] == "no"
    assert any("Does not fit" in e.value for e in at.error)  # the result, not a crash
    assert any("does not fit" in e.value and "In focus" in e.value for e in at.error)
    assert not at.exception


def test_empty_accelerator_list_shows_an_error_next_to_it_not_a_traceback():
    at = _app()
    at.switch_page("ui/pages/memory.py").run()
    _widget(at, "w.g").set_value([]).run()
    assert not at.exception
    assert any("Hardware" in e.value and "gpus" in e.value for e in at.sidebar.error)
    assert any("defaults are used for: Hardware" in w.value for w in at.warning)


def test_inputs_survive_page_switches():
    at = _app()
    at.switch_page("ui/pages/memory.py").run()
    _widget(at, "w.in").set_value(4096).run()
    at.switch_page("ui/pages/interconnect.py").run()
    at.switch_page("ui/pages/memory.py").run()
    assert _widget(at, "w.in").value == 4096


def test_link_reproduces_the_scenario():
    params = {"m": "llama-3.1-8b", "g": "l40s", "dep": "l40s.tp1.pp1.dp1.fp16.fp16",
              "in": "2048", "users": "40"}  # fmt: skip
    at = _app(params)
    at.switch_page("ui/pages/memory.py").run()
    assert not [w.value for w in at.warning if "In focus" not in w.value]  # nothing ignored
    assert _widget(at, "w.m").value == "llama-3.1-8b"
    assert _widget(at, "w.g").value == ["l40s"]
    assert at.session_state["scenario"].workload.concurrent_users == 40
    b = memory_budget(
        get_model("llama-3.1-8b"), get_accelerator("l40s"), tp=1, context_tokens=2048 + 256
    )
    assert _metrics(at)["Sequences (paged)"] == f"{b.max_concurrent_sequences:,}"


def test_malformed_link_warns_and_keeps_defaults_for_those_fields_only():
    at = _app({"g": "h999", "dep": "banana", "p": "97", "in": "4096", "zz": "1"})
    assert not at.exception
    text = " ".join(w.value for w in at.warning)
    assert "h999" in text and "allowed" in text  # field, value, allowed values
    assert "banana" in text and "'97'" in text and "'zz'" in text
    s = at.session_state["scenario"]
    assert s.hardware.gpus == ["h100-sxm"] and s.sla.percentile == 99  # defaults
    assert s.workload.isl_tokens == 4096  # the good value is kept


# --- URL mapping (pure) --------------------------------------------------------------------


def test_url_keys_are_short_and_unique():
    assert len(set(URL_KEYS.values())) == len(URL_KEYS)
    assert all(len(k) <= 5 for k in URL_KEYS.values())


def test_round_trip_scenario_params_scenario():
    s = Scenario(
        model="mixtral-8x7b",
        hardware={"gpus": ["mi300x", "h100-sxm"], "gpus_per_node": 4, "nodes": 2,
                  "intra_link": "pcie5", "inter_link": "roce-400g"},
        workload={"isl_tokens": 3000, "osl_tokens": 500, "arrival_rate_per_s": None,
                  "concurrent_users": 123},
        sla={"percentile": 90, "ttft_ms": 250.5, "tpot_ms": None, "e2e_ms": 9000.0},
        options={"weight_dtypes": ["int4", "fp8"], "kv_dtypes": ["fp8"], "engine": "vllm"},
        cost={"mode": "hourly", "gpu_hour_usd": 2.345678901},
    )  # fmt: skip
    v = View(block_size=32, concurrency=17, max_model_len=32768)
    s2, v2, warnings = scenario_from_params(scenario_to_params(s, v))
    assert warnings == []
    assert s2 == s and v2 == v


def test_round_trip_of_the_defaults():
    s, v, w = scenario_from_params(scenario_to_params(Scenario(), View()))
    assert (s, v, w) == (Scenario(), View(), [])


def test_rate_and_users_together_is_refused_as_a_pair():
    s, _, w = scenario_from_params({"rate": "3", "users": "10"})
    assert s.workload == Scenario().workload
    assert len(w) == 1 and "exactly one" in w[0]


def test_memory_page_shows_the_attention_dp_what_if_for_moe_models_only():
    # DeepSeek-V3 on 8 x H200, fp8 weights, bf16 KV: under TP every GPU keeps every sequence's
    # MLA latent; under attention DP only its own. The numbers are memory_budget's, both ways.
    at = _app({"m": "deepseek-v3", "g": "h200-sxm", "dep": "h200-sxm.tp8.pp1.dp1.fp8.bf16"})
    at.switch_page("ui/pages/memory.py").run()
    assert not at.exception and not at.error
    w = Scenario().workload
    kw = dict(tp=8, pp=1, weights_dtype="fp8", kv_dtype="bf16",
              context_tokens=w.isl_tokens + w.osl_tokens)  # fmt: skip
    m, g = get_model("deepseek-v3"), get_accelerator("h200-sxm")
    # the what-if counts the scenario's engine's attention-DP placement (default vLLM)
    tp = memory_budget(m, g, **kw)
    dp = memory_budget(m, g, attention_dp=True, engine=Scenario().options.engine, **kw)
    text = " ".join(c.value for c in at.caption if "What if attention ran" in c.value)
    assert f"**{dp.max_concurrent_sequences:,} sequences** (paged) instead of " in text
    assert f"instead of {tp.max_concurrent_sequences:,}" in text
    assert dp.max_concurrent_sequences > 4 * tp.max_concurrent_sequences
    at = _app({"dep": "h100-sxm.tp4.pp1.dp1.fp8.fp8"})  # Llama 3.1 70B: dense, no what-if
    at.switch_page("ui/pages/memory.py").run()
    assert not any("What if attention ran" in c.value for c in at.caption)


def test_the_article_shape_comparison_is_plain_text_with_both_costs():
    """Qwen3-235B for 400 users on B200 (the link's m, g, users, in, out): the decision-matrix
    bullet quotes two prices ("$24.09/h ... its $1.040/M tokens"; $1.032 before vLLM's attention
    DP held every weight but the routed experts whole per GPU (2026-12-07, the shape is TP=8 with
    attention DP=8 on the default engine vLLM), $1.014 before the 2026-12-07 night refit, $1.015
    before the evening one), which st.markdown would read as a LaTeX formula between the dollar
    signs. Shown escaped, with the shape's own cost per token, the figure the caption under it
    gives (rounded to the cent: $1.04)."""
    at = _app({"m": "qwen3-235b-a22b", "g": "b200", "users": "400", "in": "1500", "out": "400"})
    assert not at.exception and not at.error
    bullet = next(m.value for m in at.markdown if "the article's shape \\(" in m.value)
    caption = next(c.value for c in at.caption if "shape as evaluated" in c.value)
    for text in (bullet, caption):
        assert "$" in text and not re.search(r"(?<!\\)\$", text), text
    plain = bullet.replace("\\", "")
    assert "same price per hour ($24.09/h" in plain and "its $1.040/M tokens" in plain
    assert "$1.04 per million tokens" in caption.replace("\\", "")

"""Issue 16 item 9: a TP that cannot split the attention heads is refused everywhere.

Rule (vLLM ModelConfig.verify_with_parallel_config and QKVParallelLinear; TensorRT-LLM the
same): TP divides the query heads, and TP divides the KV heads or is a multiple of them (each KV
head then replicated on TP/n_kv ranks). Head counts are the models' config.json values:
Llama 3.1 8B 32 query / 8 KV heads, Llama 2 13B 40 / 40, Falcon 180B 232 / 8,
Llama 2 70B 64 / 8.
"""

from __future__ import annotations

import json

import pytest

from advisor.catalog import get_model
from advisor.cli import main
from advisor.physics.memory import tp_head_split
from advisor.scenario import Hardware, Scenario
from advisor.search.deployment_spec import parse_spec
from advisor.search.focus import evaluate_spec
from advisor.search.space import shapes

EST = ["estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "8", "--osl", "8"]


@pytest.mark.parametrize(
    "model, tp, why",
    [
        ("llama-3.1-8b", 3, "must divide the 32 attention heads"),  # 32 mod 3 = 2
        ("llama-3.1-8b", 1024, "must divide the 32 attention heads"),
        ("llama-2-13b", 16, "must divide the 40 attention heads"),  # 40 mod 16 = 8
        ("falcon-180b", 16, "must divide the 232 attention heads"),  # 232 mod 16 = 8
    ],
)
def test_tp_not_dividing_the_heads_is_named(model, tp, why):
    reason, layout = tp_head_split(get_model(model), tp)
    assert why in reason and f"TP={tp}" in reason and layout == ""


def test_kv_heads_are_sharded_or_replicated_and_the_layout_says_which():
    m = get_model("llama-3.1-8b")  # 8 KV heads
    assert tp_head_split(m, 4) == (None, "TP=4: 2 KV head(s) per rank")
    assert tp_head_split(m, 16) == (
        None,
        "TP=16 > 8 KV heads: each KV head is replicated on 2 ranks",
    )
    q12 = get_model("llama-3.1-8b").model_copy(update={"num_key_value_heads": 12,
                                                       "num_attention_heads": 48})  # fmt: skip
    assert "multiple of them" in tp_head_split(q12, 16)[0]  # 16 > 12 and 16 mod 12 = 4
    assert "must divide the 12 KV heads" in tp_head_split(q12, 8)[0]  # 12 mod 8 = 4


def _cli(argv, capsys):
    try:
        code = main(argv)
    except SystemExit as exc:
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("tp", ["3", "1024"])
def test_cli_estimate_and_memory_refuse_with_exit_2(tp, capsys):
    code, out, err = _cli([*EST, "--tp", tp], capsys)  # was exit 0 with a result
    assert code == 2 and out == "" and err.count("\n") == 1
    assert f"--tp {tp}" in err and "must divide the 32 attention heads" in err
    mem = ["memory", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--tp", tp]
    code, _, err = _cli(mem, capsys)
    assert code == 2 and "attention heads" in err


def test_cli_input_line_with_a_bad_tp_is_an_error_item(tmp_path, capsys):
    f = tmp_path / "in.jsonl"
    line = {"model": "llama-3.1-8b", "gpu": "h100-sxm", "isl": 8, "osl": 8}
    f.write_text(json.dumps({**line, "tp": 3}) + "\n" + json.dumps({**line, "tp": 2}) + "\n")
    code, out, _ = _cli(["estimate", "--input", str(f), "--json"], capsys)
    res = json.loads(out)["results"]
    assert code == 0 and "attention heads" in res[0]["error"] and "ttft_ms" in res[1]


def test_search_never_proposes_a_tp_the_engines_refuse():
    sc = Scenario(model="llama-2-13b", hardware=Hardware(gpus=["h100-sxm"], nodes=4))  # 32 GPUs
    tps = {s.tp for s in shapes(sc)}
    assert 8 in tps and 16 not in tps and 32 not in tps  # 40 heads: 16 and 32 do not divide


def test_a_hand_set_or_linked_deployment_with_a_bad_tp_says_why():
    sc = Scenario(model="llama-2-13b", hardware=Hardware(gpus=["h100-sxm"], nodes=2))
    f = evaluate_spec(sc, parse_spec("h100-sxm.tp16.pp1.dp1.fp16.fp16"))
    assert not f.fits and any("must divide the 40 attention heads" in r for r in f.reasons)


def test_a_link_with_a_bad_tp_shows_the_rule_in_the_app(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    from tests.test_hardening_escape import APP

    monkeypatch.setenv("INFERENCE_ARCHITECT_DATA_DIR", str(tmp_path))
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["dep"] = "h100-sxm.tp3.pp1.dp1.fp8.fp8"  # default model: Llama 3.1 70B
    at.run()
    assert not at.exception
    assert any("TP=3 must divide the 64 attention heads" in e.value for e in at.error)


def test_cli_estimate_says_when_kv_heads_are_replicated(capsys):
    code, out, _ = _cli([*EST, "--tp", "16", "--json"], capsys)  # 8 KV heads, TP 16
    assert code == 0
    assert "TP=16 > 8 KV heads: each KV head is replicated on 2 ranks" in json.loads(out)["notes"]

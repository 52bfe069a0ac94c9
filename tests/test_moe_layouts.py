"""MoE layouts searched and launched (issue 33): expert parallelism (EP = TP) and attention data
parallel (DP-attention = TP) in the search space, the deployment's text form, the estimate's
refusal of EP that cannot give each GPU whole experts, and the engines' flags.

Expected values are hand calculations from DeepSeek-V3/R1's config.json (hidden 7168, 61 layers
of which the first 3 dense with intermediate 18432, 256 routed experts of intermediate 2048,
8 per token, 1 shared expert, vocab 129280, MLA latent 512 + rope key 64) and the engines'
documented flags (vLLM docs/serving/data_parallel_deployment.md and
expert_parallel_deployment.md; SGLang server_args.py; TensorRT-LLM LlmArgs).
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import yaml

import advisor.physics.collectives as coll
from advisor.catalog import get_accelerator, get_model
from advisor.deploy.bundle import deploy_bundle
from advisor.perf.model import step
from advisor.perf.model.replica import ReplicaConfig, build_replicas
from advisor.physics.collectives import moe_ep_bytes_per_token
from advisor.physics.memory import kv_bytes_per_sequence_per_gpu, memory_budget
from advisor.scenario import SLA, Hardware, Options, Scenario, Workload
from advisor.search.deployment_spec import DeploymentSpec, DeploymentSpecError, parse_spec
from advisor.search.focus import evaluate_spec
from advisor.search.recommend import recommend
from advisor.search.space import shapes

# DeepSeek-V3/R1 parameters by part (config.json, hand-multiplied):
ATTENTION = 61 * 187_107_328  # MLA projections + latent norms (tests/test_attention_dp.py)
EXPERTS = 58 * 256 * 3 * 7168 * 2048  # 653,908,770,816
DENSE_MLP = 3 * 3 * 7168 * 18432  # 1,189,085,184
SHARED_AND_ROUTER = 58 * (3 * 7168 * 2048 + 256 * 7168)  # shared expert + router gate
EMBED_AND_HEAD = 2 * 129280 * 7168  # bf16 in the FP8 checkpoint
NORMS = 61 * 2 * 7168 + 7168  # per-layer input/post-attention norms + the final norm (bf16)
MLA_BYTES_PER_TOKEN_FP8 = 61 * (512 + 64)  # one byte per value


def dep8_weight_bytes_per_gpu() -> int:
    """Whole attention + 1/8 of every other linear layer (routed experts whole, 32 of 256 per
    GPU) in fp8, 1/8 of the bf16 embedding and lm_head, the norms whole."""
    return (
        ATTENTION
        + (EXPERTS + DENSE_MLP + SHARED_AND_ROUTER) // 8
        + EMBED_AND_HEAD * 2 // 8
        + NORMS * 2
    )


def test_dep8_memory_per_gpu_of_deepseek_r1_fp8():
    m, g = get_model("deepseek-r1"), get_accelerator("h200-sxm")
    want = dep8_weight_bytes_per_gpu()
    assert want == 94_098_477_056  # the sum above, written out
    # the search's replica arrays: the same bytes, and EP moves no weight bytes (32 whole
    # experts or a 1/8 slice of all 256: the same count)
    for ep in (True, False):
        r = build_replicas([ReplicaConfig(model=m, gpu=g, tp=8, weights="fp8", kv="fp8",
                                          ep=ep, dp_attention=True)])  # fmt: skip
        assert float(r.dense_weight_bytes[0] + r.expert_weight_bytes[0]) == pytest.approx(want)
    budget = memory_budget(m, g, tp=8, weights_dtype="fp8", kv_dtype="fp8",
                           context_tokens=2048, attention_dp=True)  # fmt: skip
    assert budget.weights_bytes_per_gpu == pytest.approx(want)
    # KV of 1/8 of the sequences: 368 sequences of 2,048 tokens, 46 on each GPU
    kv = 368 * kv_bytes_per_sequence_per_gpu(m, "fp8", 2048, 8, 1, attention_dp=True)
    assert kv == pytest.approx(46 * 2048 * MLA_BYTES_PER_TOKEN_FP8)  # 3,310,133,248 bytes
    assert (want + kv) / 1e9 == pytest.approx(97.41, abs=0.01)


@pytest.mark.parametrize(
    ("model", "gpu", "tp", "hidden"),
    [("deepseek-r1", "h200-sxm", 8, 7168), ("qwen3-30b-a3b", "rtx-pro-6000", 2, 2048)],
)
def test_ep_collective_volume_per_token(monkeypatch, model, gpu, tp, hidden):
    # All-gather of the tokens, reduce-scatter of the sums (TensorRT-LLM's fused MoE under
    # attention DP): each token's 16-bit hidden state crosses to each of the EP - 1 other ranks
    # once each way, whatever its 8 experts: DeepSeek-R1 at EP 8 2 x 7 x 7168 x 2 = 200,704 bytes
    # (the per-expert count too, k = EP), Qwen3-30B-A3B at EP 2 2 x 1 x 2048 x 2 = 8,192 (not
    # the 32,768 of 8 copies at EP 2).
    assert moe_ep_bytes_per_token(7168, 8) == 200_704
    assert moe_ep_bytes_per_token(2048, 2) == 8_192
    # The step model sends exactly that: record the all-to-all buffers it times.
    seen = []
    real = coll.all_to_all_time_s

    def spy(msg, n, bw, lat):
        seen.append((np.asarray(msg).copy(), n))
        return real(msg, n, bw, lat)

    monkeypatch.setattr(coll, "all_to_all_time_s", spy)
    r = build_replicas([ReplicaConfig(model=get_model(model), gpu=get_accelerator(gpu), tp=tp,
                                      weights="fp8", kv="fp8", ep=True, dp_attention=True)])  # fmt: skip
    step.tp_communication_s(r, np.array([256.0]))
    ((msg, n),) = seen
    assert n == tp
    # the gathered buffer: all 256 tokens x hidden x 2 bytes; (N-1)/N of it reaches each GPU,
    # twice per MoE layer (gather, scatter back): N GPUs x that / 256 tokens = the volume above
    assert float(msg[0]) == 256 * hidden * 2
    assert float(msg[0]) * (tp - 1) / tp * 2 * tp / 256 == moe_ep_bytes_per_token(hidden, tp)


SPECS = [
    "h200-sxm.tp8.pp1.dp1.ep8.dpa8.fp8.fp8",
    "h200-sxm.tp8.pp1.dp2.dpa8.fp8.fp8",
    "h100-sxm.tp4.pp1.dp1.ep4.fp8.fp8",
    "h200-sxm.tp8.pp1.dp1.ep8.dpa8.ptp4.pdp2.pep4.fp8.fp8",
]


@pytest.mark.parametrize("text", SPECS)
def test_layout_text_round_trips(text):
    spec = parse_spec(text)
    assert str(spec) == text
    assert parse_spec(str(spec)) == spec
    assert DeploymentSpec.model_validate_json(spec.model_dump_json()) == spec


def test_layout_reads_as_designed():
    s = parse_spec(SPECS[0])
    assert (s.tp, s.ep, s.dpa) == (8, 8, 8)
    assert s.describe() == "1 × (TP=8, EP=8, attention DP=8) h200-sxm, fp8 weights, fp8 KV"
    d = parse_spec(SPECS[3])
    assert (d.prefill_tp, d.prefill_ep, d.prefill_dpa) == (4, 4, 1)
    assert "prefill 2 × (TP=4, EP=4) + decode 1 × (TP=8, EP=8, attention DP=8)" in d.describe()


@pytest.mark.parametrize(
    ("text", "names"),
    [
        ("h200-sxm.tp8.pp1.dp1.ep4.fp8.fp8", ["ep = 4", "1 or TP (8)"]),
        ("h200-sxm.tp8.pp1.dp1.dpa2.fp8.fp8", ["dpa = 2", "1 or TP (8)"]),
        ("h200-sxm.tp4.pp2.dp1.ep4.fp8.fp8", ["ep = 4", "PP = 1", "pp = 2"]),
        ("h200-sxm.tp8.pp1.dp1.pep8.fp8.fp8", ["pep = 8", "prefill pool"]),
        ("h200-sxm.tp8.pp1.dp1.ep8.ep8.fp8.fp8", ["ep is given twice"]),
        ("h200-sxm.tp8.pp1.dp1.epx.fp8.fp8", ["'epx'"]),
    ],
)
def test_bad_layout_text_names_field_and_values(text, names):
    with pytest.raises(DeploymentSpecError) as exc:
        parse_spec(text)
    for part in names:
        assert part in str(exc.value), str(exc.value)


def _r1_scenario(**options) -> Scenario:
    return Scenario(
        model="deepseek-r1",
        hardware=Hardware(gpus=["h200-sxm"], gpus_per_node=8, nodes=1),
        workload=Workload(isl_tokens=1024, osl_tokens=1024, arrival_rate_per_s=6.0),
        sla=SLA(percentile=50, confidence=0.5, ttft_ms=1000, tpot_ms=50),
        options=Options(engine="trtllm", weight_dtypes=["fp8"], kv_dtypes=["fp8"], **options),
    )


def test_search_space_holds_the_layouts_for_moe_only():
    got = {(s.tp, s.pp, s.ep, s.dpa) for s in shapes(_r1_scenario(disaggregated=False))}
    # TP=8 at PP=1: plain, EP, attention DP, both (DEP8); at PP=2 plain TP only
    for layout in ((8, 1, False, False), (8, 1, True, False), (8, 1, False, True),
                   (8, 1, True, True), (4, 2, False, False)):  # fmt: skip
        assert layout in got
    assert (4, 2, True, True) not in got
    dense = Scenario(model="llama-3.1-70b", hardware=Hardware(gpus=["h100-sxm"]))
    assert not any(s.ep or s.dpa for s in shapes(dense))
    # Mixtral's 8 experts: no EP at TP=16; attention DP there (its 32 heads split 16 ways too)
    mix = Scenario(model="mixtral-8x7b", hardware=Hardware(gpus=["h100-sxm"], nodes=2))
    at16 = {(s.ep, s.dpa) for s in shapes(mix) if s.tp == 16 and s.pp == 1}
    assert at16 == {(False, False), (False, True)}


def test_recommendation_names_its_layout_and_round_trips():
    res = recommend(_r1_scenario())
    d = res.best or res.near_misses[0].deployment
    assert d.ep == d.spec.ep and d.attention_dp == d.spec.dpa
    assert d.attention_dp == 8  # attention DP wins at this load (the lowest TPOT)
    assert "attention DP=8" in d.description
    f = evaluate_spec(_r1_scenario(), parse_spec(str(d.spec)))
    assert f.fits and f.deployment.tpot_ms == d.tpot_ms


def test_hand_set_layout_the_model_cannot_run_is_a_result_with_reasons():
    sc = Scenario(model="mixtral-8x7b", hardware=Hardware(gpus=["h100-sxm"], nodes=2))
    f = evaluate_spec(sc, parse_spec("h100-sxm.tp16.pp1.dp1.ep16.fp16.fp16"))
    assert not f.fits
    assert any("EP=16 > 8 experts" in r for r in f.reasons), f.reasons
    dense = evaluate_spec(Scenario(), parse_spec("h100-sxm.tp4.pp1.dp1.dpa4.fp8.fp8"))
    assert any("attention data parallel: the model is dense" in r for r in dense.reasons)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "advisor", *args], capture_output=True,
                          text=True, timeout=300)  # fmt: skip


def test_estimate_refuses_ep_over_more_gpus_than_experts():
    p = _cli("estimate", "--model", "mixtral-8x7b", "--gpu", "h100-sxm", "--tp", "16", "--ep",
             "--isl", "128", "--osl", "128")  # fmt: skip
    assert p.returncode == 2
    assert "--ep with --tp 16: EP=16 > 8 experts" in p.stderr
    assert "allowed EP: 2, 4, 8" in p.stderr
    assert "Traceback" not in p.stderr


#: (engine, flags on the server's command line, keys of the TensorRT-LLM options file)
DEP8_FLAGS = {
    "vllm": ({"--tensor-parallel-size": "1", "--data-parallel-size": "8",
              "--enable-expert-parallel": None}, {}),
    # SGLang 0.5.23 (the default): --attn-dp-size (its parser warns that --enable-dp-attention
    # --dp-size is deprecated); sglang/srt/arg_groups/fields/parallel.py
    "sglang": ({"--tp-size": "8", "--attn-dp-size": "8", "--ep-size": "8"}, {}),
    "trtllm": ({"--tp_size": "8"}, {"enable_attention_dp": True, "moe_expert_parallel_size": 8,
                                    "moe_tensor_parallel_size": 1}),
}  # fmt: skip


@pytest.mark.parametrize("engine", sorted(DEP8_FLAGS))
def test_deploy_writes_the_engines_layout_flags(engine):
    sc = _r1_scenario()
    b = deploy_bundle(sc, parse_spec("h200-sxm.tp8.pp1.dp1.ep8.dpa8.fp8.fp8"), engine)
    assert not b.reasons and b.problems == []
    (server,) = [s for s in b.launch.servers if s.pool is not None]
    args = dict(server.commands[0].args)
    flags, options = DEP8_FLAGS[engine]
    for flag, value in flags.items():
        assert flag in args and args[flag] == value, (flag, args)
    if options:
        opts = yaml.safe_load(b.files["extra-llm-api-options.yaml"])
        assert {k: opts[k] for k in options} == options
    # the running-sequence cap is per attention-DP rank where the engine schedules per rank
    seqs = {"vllm": "--max-num-seqs", "sglang": "--max-running-requests",
            "trtllm": "--max_batch_size"}[engine]  # fmt: skip
    cap = server.pool.max_num_seqs
    assert int(args[seqs]) == (cap if engine == "sglang" else -(-cap // 8))


def test_plain_tp_writes_no_layout_flags():
    b = deploy_bundle(_r1_scenario(), parse_spec("h200-sxm.tp8.pp1.dp1.fp8.fp8"), "vllm")
    args = dict(b.launch.servers[0].commands[0].args)
    assert "--enable-expert-parallel" not in args and "--data-parallel-size" not in args


def test_layout_survives_the_share_link_and_the_pdf():
    from advisor.report.pdf import build_report
    from tests.test_report import _flat, _text
    from ui.url import DEP_KEY, dep_from_params

    text = "h200-sxm.tp8.pp1.dp1.ep8.dpa8.fp8.fp8"
    assert dep_from_params({DEP_KEY: text}) == (text, None)
    bad = dep_from_params({DEP_KEY: "h200-sxm.tp8.pp1.dp1.ep4.fp8.fp8"})
    assert bad[0] is None and "ep = 4" in bad[1]
    sc = _r1_scenario(disaggregated=False)
    focus = evaluate_spec(sc, parse_spec(text)).deployment
    _, pdf = _text(build_report(sc, focus=focus, focus_note="chosen by hand", sensitivities=False))
    assert "Deployment in focus: 1 x (TP=8, EP=8, attention DP=8, PP=1) on h200-sxm" in _flat(pdf)

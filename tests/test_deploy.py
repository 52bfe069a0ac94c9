"""advisor.deploy: launch commands and manifests for a deployment (issue 15).

Expected values come from the deployment spec (TP/PP/DP/dtypes the recommendation names), the
scenario (ISL + OSL), the engines' documented spellings (vLLM --kv-cache-dtype fp8, SGLang
fp8_e4m3, TensorRT-LLM kv_cache_config.dtype fp8), vLLM's default gpu_memory_utilization 0.90
(the budget the search assumes, physics.memory.DEFAULT_GPU_MEMORY_UTILIZATION) and
physics.memory.memory_budget, an independent path to the same KV bytes per GPU.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
import yaml

from advisor.catalog import accelerators
from advisor.deploy.bundle import deploy_bundle
from advisor.deploy.engines import LAUNCHERS
from advisor.deploy.flags import command_problems, launch_problems
from advisor.deploy.settings import plan
from advisor.deploy.tables import releases
from advisor.examples import EXAMPLES
from advisor.physics.memory import activation_reserve_bytes, memory_budget
from advisor.scenario import Hardware, Options, Scenario
from advisor.search.deployment_spec import DeploymentSpec, parse_spec
from advisor.search.recommend import recommend

ENGINES = ("vllm", "sglang", "trtllm")
KV_NAME = {"vllm": {"fp8": "fp8", "fp16": "auto"}, "sglang": {"fp8": "fp8_e4m3", "fp16": "auto"}}
TP_FLAG = {"vllm": "--tensor-parallel-size", "sglang": "--tp-size", "trtllm": "--tp_size"}
SEQ_FLAG = {"vllm": "--max-num-seqs", "sglang": "--max-running-requests",
            "trtllm": "--max_batch_size"}  # fmt: skip
LEN_FLAG = {"vllm": "--max-model-len", "sglang": "--context-length", "trtllm": "--max_seq_len"}

#: Deployments covering every form: aggregated, PP, disaggregated, speculative, multi-node, AMD.
SPECS = [
    (Scenario(), "h100-sxm.tp4.pp1.dp2.fp8.fp8"),
    (Scenario(), "h100-sxm.tp2.pp2.dp1.fp16.fp16"),
    (Scenario(), "h100-sxm.tp4.pp1.dp1.ptp2.pdp2.fp8.fp8"),
    (Scenario(options=Options(speculative=True)), "h100-sxm.tp4.pp1.dp1.fp8.fp8.spec"),
    (Scenario(hardware=Hardware(nodes=2)), "h100-sxm.tp16.pp1.dp1.fp8.fp8"),
    (Scenario(hardware=Hardware(gpus=["mi300x"])), "mi300x.tp2.pp1.dp3.fp8.fp8"),
]


def _examples():
    out = []
    for ex in EXAMPLES.values():
        best = recommend(ex.scenario).best
        if best is not None:
            out.append((ex.scenario, str(best.spec)))
    return out


CASES = SPECS + _examples()


def _arg(cmd, flag):
    values = [v for f, v in cmd.args if f == flag]
    assert len(values) == 1, (flag, cmd.args)
    return values[0]


RELEASES = [(e, v) for e in ENGINES for v in releases()[e].releases]


@pytest.mark.parametrize(("engine", "version"), RELEASES)
@pytest.mark.parametrize(("sc", "text"), CASES, ids=[t for _, t in CASES])
def test_every_flag_is_in_the_engines_list_and_yaml_parses(sc, text, engine, version):
    b = deploy_bundle(sc, parse_spec(text), engine, version)
    if b.reasons:  # the engine cannot run it: then a reason names the alternative
        assert all("nearest" in r or "does not fit" in r for r in b.reasons), b.reasons
        return
    assert b.problems == []
    for name, body in b.files.items():
        if name.endswith(".yaml"):
            docs = list(yaml.safe_load_all(body))  # parses (a multi-node file may be comments)
            assert docs or "spans nodes" in body, name


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("sc", "text"), CASES, ids=[t for _, t in CASES])
def test_commands_carry_the_recommendations_numbers(sc, text, engine):
    spec = parse_spec(text)
    b = deploy_bundle(sc, spec, engine)
    if b.reasons:
        return
    servers = [s for s in b.launch.servers if s.pool is not None]
    want = ([("prefill", spec.prefill_tp, spec.prefill_dp), ("decode", spec.tp, spec.dp)]
            if spec.disaggregated else [("server", spec.tp, spec.dp)])  # fmt: skip
    assert [(s.role, s.pool.tp, s.replicas) for s in servers] == want
    for s in servers:
        cmd = s.commands[0]
        if engine == "vllm" and s.pool.dp_attention:
            # vLLM's attention DP: TP data-parallel ranks of TP 1 sharing the experts
            # (docs/serving/data_parallel_deployment.md; deploy.engines._layout_vllm)
            assert _arg(cmd, TP_FLAG[engine]) == "1"
            assert _arg(cmd, "--data-parallel-size") == str(s.pool.tp)
        else:
            assert _arg(cmd, TP_FLAG[engine]) == str(s.pool.tp)
        assert _arg(cmd, LEN_FLAG[engine]) == str(sc.workload.isl_tokens + sc.workload.osl_tokens)
        seqs = int(_arg(cmd, SEQ_FLAG[engine]))
        assert (
            1
            <= seqs
            <= {"generic": 512, "vllm": 256, "sglang": 1024, "trtllm": 2048}[sc.options.engine]
        )  # the engine profiles' caps (perf/model/profiles.py)
        if engine in KV_NAME:
            assert _arg(cmd, "--kv-cache-dtype") == KV_NAME[engine][spec.kv]
        else:
            opts = yaml.safe_load(b.files[_arg(cmd, "--extra_llm_api_options").split("/")[-1]])
            assert opts["kv_cache_config"]["dtype"] == {"fp8": "fp8", "fp16": "auto"}[spec.kv]
        if engine == "vllm" and sc.options.engine != "trtllm":
            assert _arg(cmd, "--gpu-memory-utilization") == "0.9"  # the budget's 0.90
        pp_flag = {"vllm": "--pipeline-parallel-size", "sglang": "--pp-size",
                   "trtllm": "--pp_size"}[engine]  # fmt: skip
        if engine != "sglang" or s.pool.pp > 1:  # SGLang's --pp-size defaults to 1
            assert _arg(cmd, pp_flag) == str(s.pool.pp)


def test_each_engines_memory_knob_leaves_the_budgets_kv_bytes():
    """vLLM u x C - W - R, SGLang s x C - W and TensorRT-LLM f x (C - W - R) all equal the KV
    bytes per GPU physics.memory.memory_budget finds at utilisation 0.90 (to 0.01 GB: the
    fractions are rounded to 4 decimals)."""
    sc = Scenario()
    p = plan(sc, parse_spec("h100-sxm.tp4.pp1.dp2.fp8.fp8")).pools[0]
    m, g = sc.model_spec(), accelerators()["h100-sxm"]
    mb = memory_budget(m, g, tp=4, weights_dtype="fp8", kv_dtype="fp8", suggest=False)
    kv, w, r, c = mb.kv_budget_bytes_per_gpu, mb.weights_bytes_per_gpu, activation_reserve_bytes(
        m, 4), g.memory_bytes  # fmt: skip
    assert p.gpu_memory_utilization * c - w - r == pytest.approx(kv, abs=1e7)
    assert p.mem_fraction_static * c - w == pytest.approx(kv, abs=1e7)
    assert p.free_gpu_memory_fraction * (c - w - r) == pytest.approx(kv, abs=1e7)


def test_published_checkpoint_or_quantize_first():
    sc = Scenario()
    b = deploy_bundle(sc, parse_spec("h100-sxm.tp4.pp1.dp1.fp8.fp8"), "vllm")
    # huggingface.co/nvidia/Llama-3.1-70B-Instruct-FP8: a ModelOpt FP8 export of the model
    assert b.launch.servers[0].commands[0].program == [
        "vllm",
        "serve",
        "nvidia/Llama-3.1-70B-Instruct-FP8",
    ]
    b = deploy_bundle(sc, parse_spec("b200.tp4.pp1.dp1.nvfp4.fp8"),
                      "trtllm") if "b200" in accelerators() else None  # fmt: skip
    if b is not None and not b.reasons:
        assert "Model Optimizer" in b.files["README.md"] or "nvfp4" in b.files["launch.sh"]
    b = deploy_bundle(sc, parse_spec("h100-sxm.tp4.pp1.dp1.int8.fp8"), "trtllm")
    # no int8 ModelOpt export listed: quantize first with ModelOpt's SmoothQuant config
    assert "quantize" in b.files["launch.sh"] and "INT8_SMOOTHQUANT_CFG" in b.files["quantize.py"]


def test_engines_that_cannot_say_so_with_the_nearest_alternative():
    sc = Scenario(options=Options(speculative=True))
    b = deploy_bundle(sc, parse_spec("h100-sxm.tp4.pp1.dp1.fp8.fp8.spec"), "vllm", "0.11.0")
    assert b.files == {} and "draft model" in b.reasons[0] and "nearest" in b.reasons[0]
    # vLLM 0.34.0 runs a draft model: SpeculativeConfig.method "draft_model"
    # (vllm/config/speculative.py of the 0.34.0 wheel)
    b = deploy_bundle(sc, parse_spec("h100-sxm.tp4.pp1.dp1.fp8.fp8.spec"), "vllm")
    spec = json.loads(_arg(b.launch.servers[0].commands[0], "--speculative-config"))
    assert spec["method"] == "draft_model" and spec["num_speculative_tokens"] >= 1
    b = deploy_bundle(Scenario(hardware=Hardware(gpus=["mi300x"])),
                      parse_spec("mi300x.tp2.pp1.dp1.fp8.fp8"), "trtllm")  # fmt: skip
    assert "AMD" in b.reasons[0] and "nearest" in b.reasons[0]
    b = deploy_bundle(Scenario(), parse_spec("h100-sxm.tp1.pp1.dp1.fp16.fp16"), "sglang")
    assert b.files == {} and "do not fit" in b.reasons[0]  # 141 GB of weights on one H100


def test_flags_are_checked_per_release():
    # --speculative-config's "draft_model" came after 0.11; --max-running-requests is SGLang's in
    # every listed release; vLLM 0.34.0's native multi-node flags (--nnodes, --node-rank,
    # vllm/engine/arg_utils.py of the 0.34.0 wheel) are not in 0.11.0's parser
    assert not command_problems("vllm", [("--nnodes", "2")], "0.34.0")
    assert command_problems("vllm", [("--nnodes", "2")], "0.11.0")
    for v in ("0.5.5", "0.5.18", "0.5.23"):
        assert not command_problems("sglang", [("--max-running-requests", "8")], v)
    # an SGLang ROCm tag that was never published is not offered (github:SemiAnalysisAI/
    # InferenceX PR 307 used v0.5.5.post3-rocm700-mi30x)
    tags = [i.image for r in releases()["sglang"].releases.values() for i in r.images]
    assert "lmsysorg/sglang:v0.5.5-rocm700-mi30x" not in tags
    assert releases()["vllm"].default == "0.34.0" and releases()["sglang"].default == "0.5.23"


def test_flag_check_catches_unknown_flags_and_choices():
    assert command_problems("sglang", [("--tensor-parallel-sizes", "2")])
    assert command_problems("sglang", [("--kv-cache-dtype", "fp8")])  # SGLang spells fp8_e4m3
    assert command_problems("trtllm", [("--tp-size", "2")])  # trtllm-serve spells --tp_size
    la = LAUNCHERS["vllm"](plan(Scenario(), parse_spec("h100-sxm.tp4.pp1.dp1.fp8.fp8")))
    la.servers[0].commands[0].args.append(("--no-such-flag", None))
    assert launch_problems(la) == [
        "vllm 0.34.0: flag --no-such-flag is not in data/engine-flags/vllm-0.34.0.yaml"
    ]


def test_compose_structure():
    b = deploy_bundle(Scenario(), parse_spec("h100-sxm.tp4.pp1.dp2.fp8.fp8"), "vllm")
    doc = yaml.safe_load(b.files["docker-compose.yaml"])
    assert set(doc) == {"services"} and len(doc["services"]) == 2  # DP = 2
    gpus = []
    for svc in doc["services"].values():
        assert svc["image"] == "vllm/vllm-openai:v0.34.0" and svc["shm_size"]
        assert {"test", "interval", "retries"} <= set(svc["healthcheck"])
        dev = svc["deploy"]["resources"]["reservations"]["devices"][0]
        assert dev["capabilities"] == ["gpu"] and len(dev["device_ids"]) == 4  # TP = 4
        gpus += dev["device_ids"]
    assert sorted(gpus) == [str(i) for i in range(8)]  # no GPU given to two replicas


@pytest.mark.parametrize(("gpu", "resource"), [("h100-sxm", "nvidia.com/gpu"),
                                               ("mi300x", "amd.com/gpu")])  # fmt: skip
def test_kubernetes_structure(gpu, resource):
    sc = Scenario(hardware=Hardware(gpus=[gpu]))
    b = deploy_bundle(sc, parse_spec(f"{gpu}.tp2.pp1.dp3.fp8.fp8"), "sglang")
    docs = list(yaml.safe_load_all(b.files["kubernetes.yaml"]))
    kinds = [d["kind"] for d in docs]
    assert kinds == ["Deployment", "Service"]
    for d in docs:  # required by the API: apiVersion, kind, metadata.name
        assert d["apiVersion"] and d["metadata"]["name"]
    dep, svc = docs
    spec = dep["spec"]
    assert spec["replicas"] == 3  # DP
    assert spec["selector"]["matchLabels"] == spec["template"]["metadata"]["labels"]
    c = spec["template"]["spec"]["containers"][0]
    # the newest release with an official image for the GPU (data/engine-images.yaml): SGLang
    # 0.5.23 on NVIDIA; on MI300X 0.5.18, whose ROCm tags live in lmsysorg/sglang-rocm
    assert c["image"] == {"h100-sxm": "lmsysorg/sglang:v0.5.23",
                          "mi300x": "lmsysorg/sglang-rocm:v0.5.18-rocm724-mi30x-20260825"}[gpu]  # fmt: skip
    assert c["resources"]["limits"] == {resource: "2"}  # TP = 2
    assert c["readinessProbe"]["httpGet"]["path"] == "/health"
    assert {"name": "shm", "mountPath": "/dev/shm"} in c["volumeMounts"]
    assert svc["spec"]["selector"] == dep["metadata"]["labels"]
    assert svc["spec"]["ports"][0]["port"] == 8000


def test_disaggregated_servers_carry_kv_transfer_settings():
    sc, spec = Scenario(), parse_spec("h100-sxm.tp4.pp1.dp1.ptp2.pdp2.fp8.fp8")
    v = deploy_bundle(sc, spec, "vllm")
    assert "NixlConnector" in v.files["launch.sh"]
    s = deploy_bundle(sc, spec, "sglang")
    assert "--disaggregation-mode prefill" in s.files["launch.sh"]
    assert "--disaggregation-mode decode" in s.files["launch.sh"]
    t = deploy_bundle(sc, spec, "trtllm")
    cfg = yaml.safe_load(t.files["disagg-config.yaml"])
    assert cfg["context_servers"]["num_instances"] == 2  # pdp2
    assert cfg["generation_servers"]["num_instances"] == 1  # dp1
    assert yaml.safe_load(t.files["prefill-options.yaml"])["cache_transceiver_config"]


def test_multi_node_replica_uses_the_engines_multi_node_launch():
    sc, spec = Scenario(hardware=Hardware(nodes=2)), parse_spec("h100-sxm.tp16.pp1.dp1.fp8.fp8")
    s = deploy_bundle(sc, spec, "sglang")
    cmds = s.launch.servers[0].commands
    assert [_arg(c, "--node-rank") for c in cmds] == ["0", "1"]  # 16 GPUs on 8-GPU nodes
    assert all(_arg(c, "--nnodes") == "2" for c in cmds)
    assert "ray start --head" in deploy_bundle(sc, spec, "vllm").files["launch.sh"]
    assert "srun -N 2" in deploy_bundle(sc, spec, "trtllm").files["launch.sh"]
    assert "LeaderWorkerSet" in s.files["kubernetes.yaml"]


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "advisor", "deploy", *args],
                          capture_output=True, text=True, timeout=300)  # fmt: skip


def test_cli_deploy(tmp_path):
    r = _cli("--deployment", "h100-sxm.tp4.pp1.dp2.fp8.fp8", "--engine", "trtllm",
             "--out", str(tmp_path))  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert "trtllm-serve nvidia/Llama-3.1-70B-Instruct-FP8" in r.stdout
    assert {p.name for p in tmp_path.iterdir()} == {
        "launch.sh",
        "extra-llm-api-options.yaml",
        "docker-compose.yaml",
        "kubernetes.yaml",
        "README.md",
    }
    r = _cli("--engine", "generic")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "--engine" in r.stderr
    r = _cli("--out", str(tmp_path / "missing"))
    assert r.returncode == 2 and "--out" in r.stderr
    r = _cli("--deployment", "h100-sxm.tp4.pp1.dp2.fp9.fp8")
    assert r.returncode == 2 and "--deployment" in r.stderr
    r = _cli("--engine", "sglang", "--engine-version", "0.4.0")
    assert r.returncode == 2 and "--engine-version '0.4.0'" in r.stderr and "0.5.23" in r.stderr


@pytest.mark.parametrize("engine", ["vllm", "trtllm"])
def test_kubernetes_router_reaches_pools_through_their_services(engine):
    spec = parse_spec("h100-sxm.tp4.pp1.dp1.ptp2.pdp2.fp8.fp8")
    docs = list(
        yaml.safe_load_all(deploy_bundle(Scenario(), spec, engine).files["kubernetes.yaml"])
    )
    services = {d["metadata"]["name"] for d in docs if d["kind"] == "Service"}
    text = yaml.safe_dump(docs)
    for role in ("prefill", "decode"):
        assert f"{engine}-{role}" in services and f"{engine}-{role}:8000" in text
    assert "prefill-0:" not in text.replace(f"{engine}-prefill", "")  # no Compose host names


def test_pdf_appendix_has_the_launch_command():
    from io import BytesIO

    from pypdf import PdfReader

    from advisor.report.pdf import build_report

    sc = Scenario(options=Options(engine="sglang"))
    pdf = build_report(sc, charts=False, sensitivities=False)
    text = "\n".join(p.extract_text() for p in PdfReader(BytesIO(pdf)).pages)
    spec = recommend(sc).best.spec
    want = deploy_bundle(sc, spec, "sglang").launch.servers[0].commands[0]
    assert "Appendix: launch command" in text
    assert "python3 -m sglang.launch_server" in text  # the scenario's engine
    assert f"--mem-fraction-static {_arg(want, '--mem-fraction-static')}" in text


@pytest.mark.parametrize(("engine", "flag"), [("vllm", "--trust-remote-code"),
                                              ("sglang", "--trust-remote-code"),
                                              ("trtllm", "--trust_remote_code")])  # fmt: skip
def test_models_with_their_own_code_get_the_trust_flag(engine, flag):
    # MiniMax-M2's config.json names its own config class (auto_map configuration_minimax_m2):
    # the sgl-cookbook launch passes --trust-remote-code (data/checkpoints.yaml remote_code);
    # each engine spells the flag as its list does (data/engine-flags)
    sc = Scenario(model="minimax-m2", hardware=Hardware(gpus=["h200-sxm"]))
    b = deploy_bundle(sc, parse_spec("h200-sxm.tp4.pp1.dp1.fp8.fp8"), engine)
    cmd = b.launch.servers[0].commands[-1]
    assert (flag, None) in cmd.args and not launch_problems(b.launch)
    llama = deploy_bundle(Scenario(), parse_spec("h100-sxm.tp4.pp1.dp1.fp8.fp8"), engine)
    assert all(f != flag for c in llama.launch.servers[0].commands for f, _ in c.args)


def test_cli_deploy_without_engine_deploys_what_recommend_recommends(capsys):
    """`deploy` with the flags of a `recommend` and no --engine: the files are vLLM's (the
    default engine) and the deployment is the one `recommend` picks with those flags, as the
    app's Deploy page deploys the deployment in focus. It searched with a 'generic' engine
    profile instead: Qwen3-235B for 400 users on B200 deployed 2 x (TP=2, EP=2, attention DP=2)
    while `recommend` and the PDF said 3 x."""
    from advisor.cli import main

    flags = ["--model", "qwen3-235b-a22b", "--gpu", "b200", "--users", "400", "--isl", "1500",
             "--osl", "400", "--json"]  # fmt: skip
    assert main(["recommend", *flags]) == 0
    best = json.loads(capsys.readouterr().out)["best"]
    assert main(["deploy", *flags]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["engine"] == "vllm"
    assert out["deployment"] == str(DeploymentSpec.model_validate(best["spec"]))
    assert out["deployment"] == "b200.tp2.pp1.dp3.ep2.dpa2.fp8.fp8"

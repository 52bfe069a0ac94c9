"""Issue 34: the files `deploy` writes start the deployment they describe.

Each case was reproduced on the code before (the issue): multi-node vLLM listed GPUs 0-7 twice
in one Compose service (the compose-spec schema refuses non-unique device_ids) and asked one pod
for 16 GPUs; quantize-first served the 16-bit repository; disaggregated vLLM had no proxy and
its NIXL side channel on localhost; SGLang's bootstrap port was not exposed; max model length
was ISL + OSL whatever the spread; a 73,728-GPU cluster gave an 87 MB Compose file.
Schemas: tests/fixtures/schemas (scripts/vendor_schemas.py: compose-spec, Kubernetes 1.34.0
strict, LeaderWorkerSet v1 from its CRD).
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml
from deploy_schemas import compose_errors, kubernetes_errors

from advisor.deploy.bundle import deploy_bundle
from advisor.deploy.layout import MAX_INSTANCES
from advisor.scenario import Hardware, Scenario, Workload
from advisor.search.deployment_spec import parse_spec

ENGINES = ("vllm", "sglang", "trtllm")
#: 405B and DeepSeek-R1 at TP8 x PP2 on two 8-GPU H100 nodes (the issue's commands).
MULTI = [("llama-3.1-405b", "h100-sxm.tp8.pp2.dp1.fp8.fp8"), ("deepseek-r1", "h100-sxm.tp8.pp2.dp1.fp8.fp8")]  # fmt: skip
DISAGG = "h100-sxm.tp4.pp1.dp1.ptp2.pdp2.fp8.fp8"
CASES = [
    (Scenario(), "h100-sxm.tp4.pp1.dp2.fp8.fp8"),
    (Scenario(), DISAGG),
    (Scenario(hardware=Hardware(gpus=["mi300x"])), "mi300x.tp2.pp1.dp3.fp8.fp8"),
    (Scenario(hardware=Hardware(gpus=["mi300x"])), "mi300x.tp2.pp1.dp1.ptp2.pdp1.fp8.fp8"),
    (Scenario(hardware=Hardware(nodes=2)), "h100-sxm.tp16.pp1.dp1.fp8.fp8"),
    *[(Scenario(model=m, hardware=Hardware(gpus=[s.split(".")[0]], nodes=2)), s) for m, s in MULTI],
    # an MoE replica with expert parallelism and attention data parallelism (issue 33's layout)
    (Scenario(model="deepseek-r1", hardware=Hardware(gpus=["h200-sxm"])), "h200-sxm.tp8.pp1.dp1.ep8.dpa8.fp8.fp8"),
]  # fmt: skip


def _docs(b, name="kubernetes.yaml"):
    return [d for d in yaml.safe_load_all(b.files[name]) if d]


def _pods(docs):
    for d in docs:
        if d["kind"] == "Deployment":
            yield d["spec"]["template"]["spec"]
        elif d["kind"] == "LeaderWorkerSet":
            t = d["spec"]["leaderWorkerTemplate"]
            yield t["leaderTemplate"]["spec"]
            yield t["workerTemplate"]["spec"]


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize(("sc", "text"), CASES, ids=[t for _, t in CASES])
def test_files_pass_the_official_schemas_and_fit_the_nodes(sc, text, engine):
    b = deploy_bundle(sc, parse_spec(text), engine)
    if b.reasons:
        assert all("nearest" in r for r in b.reasons), b.reasons
        return
    gpn = sc.hardware.gpus_per_node
    syntax = subprocess.run(["bash", "-n"], input=b.files["launch.sh"], text=True,
                            capture_output=True)  # fmt: skip
    assert syntax.returncode == 0, syntax.stderr  # bash parses launch.sh
    for name in ("docker-compose.yaml", "kubernetes.yaml"):
        assert (name in b.files) != (name in b.refused), name
    if "docker-compose.yaml" in b.files:
        assert compose_errors(b.files["docker-compose.yaml"]) == []
        used: dict[str, list[str]] = {}
        for svc in yaml.safe_load(b.files["docker-compose.yaml"])["services"].values():
            devs = svc.get("deploy", {}).get("resources", {}).get("reservations", {})
            ids = [i for d in devs.get("devices", []) for i in d["device_ids"]]
            ids += svc.get("environment", {}).get("ROCR_VISIBLE_DEVICES", "").split(",") * (
                "ROCR_VISIBLE_DEVICES" in svc.get("environment", {})
            )
            assert all(0 <= int(i) < gpn for i in ids), ids  # a GPU the host has
            used.setdefault(svc["labels"]["host"], []).extend(ids)
        for host, ids in used.items():
            assert len(ids) == len(set(ids)), (host, ids)  # no GPU given twice on a host
    if "kubernetes.yaml" in b.files:
        assert kubernetes_errors(b.files["kubernetes.yaml"]) == []
        for pod in _pods(_docs(b)):  # schedulable: no pod asks for more GPUs than a node has
            lim = pod["containers"][0].get("resources", {}).get("limits", {})
            assert int(lim.get("nvidia.com/gpu", lim.get("amd.com/gpu", 0))) <= gpn


@pytest.mark.parametrize(("model", "text"), MULTI)
def test_multi_node_vllm_is_a_ray_head_and_workers(model, text):
    sc = Scenario(model=model, hardware=Hardware(gpus=[text.split(".")[0]], nodes=2))
    b = deploy_bundle(sc, parse_spec(text), "vllm")
    svcs = yaml.safe_load(b.files["docker-compose.yaml"])["services"]
    head, worker = svcs["replica-0-node0"], svcs["replica-0-node1"]
    assert head["profiles"] == ["host0"] and worker["profiles"] == ["host1"]
    assert "ray start --head" in head["command"][-1] and "vllm serve" in head["command"][-1]
    assert "/16.0 GPU" in head["command"][-1]  # serves once both nodes' 16 GPUs joined
    assert "ray start --address=${HOST0_IP}:6379" in worker["command"][-1]
    assert head["network_mode"] == worker["network_mode"] == "host"
    # each node names the address torch.distributed and Ray use (vLLM's run_cluster.sh)
    assert head["environment"]["VLLM_HOST_IP"] == "${HOST0_IP}"
    assert worker["environment"]["VLLM_HOST_IP"] == "${HOST1_IP}"
    lws = next(d for d in _docs(b) if d["kind"] == "LeaderWorkerSet")["spec"]
    t = lws["leaderWorkerTemplate"]
    assert t["size"] == 2 and lws["replicas"] == 1  # one pod per node, DP = 1
    for role in ("leaderTemplate", "workerTemplate"):
        assert t[role]["spec"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    assert "$LWS_LEADER_ADDRESS:6379" in t["workerTemplate"]["spec"]["containers"][0]["args"][-1]
    launch = b.files["launch.sh"]
    assert 'if [ "$HOST" = 1 ]' in launch and ': "${HOST1_IP:?' in launch


def test_multi_node_sglang_and_trtllm():
    sc, spec = Scenario(model="llama-3.1-405b", hardware=Hardware(nodes=2)), parse_spec(MULTI[0][1])
    s = deploy_bundle(sc, spec, "sglang")
    svcs = yaml.safe_load(s.files["docker-compose.yaml"])["services"]
    for rank in (0, 1):
        cmd = svcs[f"replica-0-node{rank}"]["command"]
        assert cmd[cmd.index("--node-rank") + 1] == str(rank)
        assert cmd[cmd.index("--dist-init-addr") + 1] == "${HOST0_IP}:20000"
    worker = next(d for d in _docs(s) if d["kind"] == "LeaderWorkerSet")
    args = worker["spec"]["leaderWorkerTemplate"]["workerTemplate"]["spec"]["containers"][0]["args"]
    assert args[args.index("--node-rank") + 1] == "$(LWS_WORKER_INDEX)"
    t = deploy_bundle(sc, spec, "trtllm")  # MPI across nodes: launch.sh only, and says so
    assert "srun -N 2" in t.files["launch.sh"]
    assert set(t.refused) == {"docker-compose.yaml", "kubernetes.yaml"}
    assert (
        "launch.sh" in t.refused["kubernetes.yaml"]
        and "LeaderWorkerSet" in t.refused["kubernetes.yaml"]
    )


def test_disaggregated_vllm_has_its_proxy_and_side_channel():
    b = deploy_bundle(Scenario(), parse_spec(DISAGG), "vllm")
    svcs = yaml.safe_load(b.files["docker-compose.yaml"])["services"]
    assert set(svcs) == {"prefill-0", "prefill-1", "decode-0", "router"}
    ports, sides = [], []
    for name, svc in svcs.items():
        cmd = svc["command"]
        if name == "router":
            assert cmd[0] == "/config/vllm-pd-proxy.py" and "--prefill" in cmd and "--decode" in cmd
            continue
        ports.append(cmd[cmd.index("--port") + 1])
        assert svc["environment"]["VLLM_NIXL_SIDE_CHANNEL_HOST"] == "127.0.0.1"
        sides.append(svc["environment"]["VLLM_NIXL_SIDE_CHANNEL_PORT"])
    assert len(set(ports)) == 3 and "8000" not in ports and len(set(sides)) == 3
    assert svcs["router"]["depends_on"]["decode-0"] == {"condition": "service_healthy"}
    assert "vllm-pd-proxy.py" in b.files
    docs = _docs(b)
    for d in docs:
        if d["kind"] == "Deployment" and d["metadata"]["name"] != "vllm-router":
            env = d["spec"]["template"]["spec"]["containers"][0]["env"]
            side = next(e for e in env if e["name"] == "VLLM_NIXL_SIDE_CHANNEL_HOST")
            assert side["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"
    router = next(
        d for d in docs if d["metadata"]["name"] == "vllm-router" and d["kind"] == "Deployment"
    )
    args = router["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "http://vllm-prefill:8000" in args and "http://vllm-decode:8000" in args


def test_disaggregated_sglang_on_kubernetes():
    docs = _docs(deploy_bundle(Scenario(), parse_spec(DISAGG), "sglang"))
    services = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Service"}
    for i in (0, 1):  # one Service per prefill server: its bootstrap room is on that server
        ports = {p["name"]: p["port"] for p in services[f"sglang-prefill-{i}"]["spec"]["ports"]}
        assert ports == {"http": 8000, "bootstrap": 8998}
    router = next(
        d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "sglang-router"
    )
    args = router["spec"]["template"]["spec"]["containers"][0]["args"]
    i = args.index("--prefill")
    assert args[i : i + 3] == ["--prefill", "http://sglang-prefill-0:8000", "8998"]
    for d in docs:
        if d["kind"] == "Deployment" and d["metadata"]["name"] != "sglang-router":
            c = d["spec"]["template"]["spec"]["containers"][0]
            assert c["resources"]["limits"]["rdma/rdma_shared_device_a"] == "1"
            assert {"containerPort": 8998, "name": "bootstrap"} in c["ports"]


def test_max_model_len_covers_the_workloads_longest_request():
    # ISL 1,000 at CV 0.5, OSL 200 fixed: the prompt's 99.9th percentile as lognormal is
    # e^(ln 1000 - ln(1.25)/2 + 3.0902 sqrt(ln 1.25)) = 3,850.4 -> 3,851 tokens, + 200 = 4,051
    sc = Scenario(workload=Workload(isl_tokens=1000, osl_tokens=200, isl_cv=0.5))
    b = deploy_bundle(sc, parse_spec("h100-sxm.tp4.pp1.dp1.fp8.fp8"), "vllm")
    cmd = b.launch.servers[0].commands[0]
    assert dict(cmd.args)["--max-model-len"] == "4051"
    assert "99.9th percentile" in b.files["README.md"]
    b = deploy_bundle(sc, parse_spec("h100-sxm.tp4.pp1.dp1.fp8.fp8"), "sglang", max_context=32768)
    assert dict(b.launch.servers[0].commands[0].args)["--context-length"] == "32768"
    assert "the longest request stated" in b.files["README.md"]


def test_a_huge_cluster_gets_a_bounded_answer():
    # the 73,728 GPUs: 1,024 nodes of 72; Llama 3.1 8B at TP1 on each GPU
    sc = Scenario(model="llama-3.1-8b", hardware=Hardware(nodes=1024, gpus_per_node=72))
    b = deploy_bundle(sc, parse_spec("h100-sxm.tp1.pp1.dp73728.fp8.fp8"), "vllm")  # time: bench/
    assert (
        "docker-compose.yaml" not in b.files
        and str(MAX_INSTANCES) in b.refused["docker-compose.yaml"]
    )
    assert max(len(t) for t in b.files.values()) < 20_000
    k8s = next(d for d in _docs(b) if d["kind"] == "Deployment")
    assert k8s["spec"]["replicas"] == 73728
    r = subprocess.run([sys.executable, "-m", "advisor", "deploy", "--model", "llama-3.1-8b",
                        "--gpu", "h100-sxm", "--gpus-per-node", "72", "--nodes", "1024",
                        "--deployment", "h100-sxm.tp1.pp1.dp73728.fp8.fp8", "--format", "compose"],
                       capture_output=True, text=True, timeout=300)  # fmt: skip
    assert r.returncode == 2 and "--format compose" in r.stderr and "Kubernetes" in r.stderr


def _fake_bin(tmp_path: Path) -> Path:
    """Stand-ins for the engines and curl: each records its GPUs and arguments, then waits."""
    bin_ = tmp_path / "bin"
    bin_.mkdir()
    for name in ("vllm", "python3"):
        (bin_ / name).write_text(
            "#!/usr/bin/env bash\n"
            f'echo "{name} CUDA=${{CUDA_VISIBLE_DEVICES:-}} pid=$$ '
            f'$*" >> "$LOG"\nexec sleep 300\n')  # fmt: skip
    (bin_ / "curl").write_text("#!/usr/bin/env bash\nexit 0\n")
    for f in bin_.iterdir():
        f.chmod(0o755)
    return bin_


def _run(tmp_path: Path, launch: str, expect: int) -> tuple[subprocess.Popen, list[str]]:
    """Run launch.sh with the stand-ins until ``expect`` of them have logged."""
    script = tmp_path / "launch.sh"
    script.write_text(launch)
    log = tmp_path / "log"
    env = {**os.environ, "PATH": f"{_fake_bin(tmp_path)}:{os.environ['PATH']}", "LOG": str(log)}
    p = subprocess.Popen(["bash", str(script)], env=env, stderr=subprocess.PIPE, text=True)
    deadline = time.time() + 60
    while time.time() < deadline and (not log.exists() or log.read_text().count("\n") < expect):
        time.sleep(0.2)
    return p, log.read_text().splitlines()


def test_launch_sh_gives_each_replica_its_own_port(tmp_path):
    # DP = 2 on one host: two servers on the host itself cannot share port 8000
    p, lines = _run(tmp_path, deploy_bundle(Scenario(), parse_spec("h100-sxm.tp4.pp1.dp2.fp8.fp8"),
                                            "vllm").files["launch.sh"], 2)  # fmt: skip
    p.terminate()
    p.wait(timeout=30)
    ports = sorted(ln.split("--port ")[1].split()[0] for ln in lines)
    assert ports == ["8000", "8001"] and sorted(ln.split()[1] for ln in lines) == [
        "CUDA=0,1,2,3", "CUDA=4,5,6,7"]  # fmt: skip


def test_launch_sh_starts_every_server_on_its_gpus_and_stops_them_all(tmp_path):
    p, lines = _run(
        tmp_path, deploy_bundle(Scenario(), parse_spec(DISAGG), "vllm").files["launch.sh"], 4
    )
    assert len(lines) == 4  # two prefill servers, one decode, then the proxy
    gpus = sorted(ln.split()[1] for ln in lines if ln.startswith("vllm"))
    assert gpus == ["CUDA=0,1", "CUDA=2,3", "CUDA=4,5,6,7"]
    proxy = [ln for ln in lines if ln.startswith("python3")]  # the servers log in any order
    assert len(proxy) == 1 and "--prefill http://127.0.0.1:8001" in proxy[0]
    children = subprocess.run(
        ["pgrep", "-P", str(p.pid)], capture_output=True, text=True
    ).stdout.split()
    assert len(children) == 4
    p.terminate()  # the trap stops every server it started
    p.wait(timeout=20)
    time.sleep(0.5)
    alive = [c for c in children if Path(f"/proc/{c}").exists()]
    assert alive == [], alive


@pytest.mark.parametrize(
    ("model", "gpu", "text", "engine", "tool"),
    [  # the cases: the default recommendation on TensorRT-LLM, and gemma-2-27b int4
        # on an L40S (54 GB of bf16 weights on a 48 GB card unless the int4 checkpoint is served)
        ("llama-3.1-70b", "h100-sxm", "h100-sxm.tp2.pp1.dp1.int4.fp8", "trtllm", "INT4_AWQ_CFG"),
        ("gemma-2-27b", "l40s", "l40s.tp1.pp1.dp1.int4.fp8", "vllm", 'scheme="W4A16"'),
    ],
)
def test_quantize_first_then_serve_the_quantized_checkpoint(model, gpu, text, engine, tool):
    b = deploy_bundle(
        Scenario(model=model, hardware=Hardware(gpus=[gpu])), parse_spec(text), engine
    )
    q = b.launch.quantize
    served = b.launch.servers[0].commands[0].argv()
    assert q.path in served and q.source not in served  # the quantized folder, not the 16-bit repo
    compile(b.files["quantize.py"], "quantize.py", "exec")  # valid Python
    assert tool in b.files["quantize.py"] and repr(q.source) in b.files["quantize.py"]
    svcs = yaml.safe_load(b.files["docker-compose.yaml"])["services"]
    assert "./models:/models" in svcs["quantize"]["volumes"]
    assert svcs["quantize"]["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"]
    assert svcs["replica-0"]["depends_on"] == {
        "quantize": {"condition": "service_completed_successfully"}
    }
    assert "./models:/models:ro" in svcs["replica-0"]["volumes"]
    docs = _docs(b)
    pvc = next(d for d in docs if d["kind"] == "PersistentVolumeClaim")
    assert pvc["spec"]["accessModes"] == ["ReadWriteMany"]
    job = next(d for d in docs if d["kind"] == "Job")
    assert job["spec"]["template"]["spec"]["containers"][0]["args"] == q.argv[1:]
    server = next(d for d in docs if d["kind"] == "Deployment")["spec"]["template"]["spec"]
    assert f"{q.path}/config.json" in server["initContainers"][0]["command"][-1]
    assert (
        kubernetes_errors(b.files["kubernetes.yaml"]) == []
        and compose_errors(b.files["docker-compose.yaml"]) == []
    )
    launch = b.files["launch.sh"]
    assert launch.index('"$DIR/quantize.py"') < launch.index("start replica-0")
    assert f"$DIR/models/{q.name}" in launch and '"${DIR}/models/' in launch


def test_a_longest_request_past_the_kv_budget_is_a_reason_or_a_stated_cut():
    # Llama 3.1 8B with fp16 KV: 32 layers x 8 KV heads x 128 x (K, V) x 2 bytes = 131,072 bytes
    # a token (config.json); on one L4 the budget holds fewer than 131,072 such tokens
    sc = Scenario(model="llama-3.1-8b", hardware=Hardware(gpus=["l4"]))
    spec = parse_spec("l4.tp1.pp1.dp1.fp8.fp16")
    b = deploy_bundle(sc, spec, "vllm", max_context=131072)
    assert b.files == {} and "would refuse to start" in b.reasons[0]
    long = Scenario(model="llama-3.1-8b", hardware=Hardware(gpus=["l4"]),
                    workload=Workload(isl_tokens=20000, isl_cv=1.5, osl_tokens=500))  # fmt: skip
    b = deploy_bundle(long, spec, "vllm")
    pool = b.plan.pools[0]
    assert pool.max_model_len == int(pool.kv_budget_bytes // 131072)
    assert f"cut to the {pool.max_model_len:,} tokens" in b.files["README.md"]

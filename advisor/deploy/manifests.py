"""Docker Compose and Kubernetes files for a placed engine Launch (advisor/deploy/layout.py).

Compose: one service per server node, each in the Compose profile of its host (``docker compose
--profile host1 up -d`` on host 1), the official image pinned, its GPUs by id, a health check on
the engine's ``/health``. Servers that talk to each other (a replica over several nodes, or
disaggregated pools and their router) use the host's network and IPC, each on its own port;
the others publish port 8000 of a bridge network on their own host port.
Kubernetes: per pool a Deployment (replicas = the pool's data-parallel count) or, for a replica
spanning nodes, a LeaderWorkerSet (sigs.k8s.io/lws: one pod per node, each requesting its node's
GPUs, ``nvidia.com/gpu`` or ``amd.com/gpu``), a Service in front of each, ``/dev/shm`` as a
memory emptyDir, startup/readiness/liveness probes on ``/health``; the router reaches the pools
through their Services (one per SGLang prefill server: the router must reach the server that
holds the bootstrap room of a request).
TensorRT-LLM's multi-node replica runs under MPI (srun): neither file is written for it.
Sources: Compose specification (services.*.deploy.resources.reservations.devices, profiles,
network_mode, ipc, healthcheck); Kubernetes API apps/v1 Deployment, v1 Service; LeaderWorkerSet
v1 (leaderworkerset.x-k8s.io); NVIDIA and AMD GPU device plugins; the NVIDIA Network Operator's
RDMA shared device plugin (resource rdma/rdma_shared_device_a; IPC_LOCK for RDMA memory
registration); vLLM docs, deployment/k8s (shm emptyDir, /health).
"""

from __future__ import annotations

import yaml

from advisor.deploy.engines import BOOTSTRAP_PORT, CONFIG_DIR, PORT, Launch, Server
from advisor.deploy.layout import Layout
from advisor.deploy.quantize import MODELS_DIR
from advisor.deploy.wiring import (
    compose_str,
    host_urls,
    node_argv,
    node_env,
    ray_node,
    router_argv,
    set_flag,
    trt_disagg_config,
)

#: Shared memory per replica: NCCL/RCCL and PyTorch workers exchange tensors through /dev/shm;
#: Docker's 64 MB default breaks multi-GPU servers (vLLM docs: --ipc=host or --shm-size).
SHM_SIZE = "16g"
#: Seconds a server may take to load weights and capture graphs before probes count.
STARTUP_S = 1800
HEALTH = "/health"
#: The RDMA device a Mooncake transfer needs in a pod (NVIDIA Network Operator's shared device).
RDMA_RESOURCE = "rdma/rdma_shared_device_a"


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data):  # write repeated lists out (readers of k8s YAML expect it)
        return True


def dump(docs: list[dict]) -> str:
    return yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, width=100)


def _name(la: Launch, s: Server) -> str:
    return f"{la.engine}-{s.role}"


def _gpu_resource(vendor: str) -> str:
    return "amd.com/gpu" if vendor == "AMD" else "nvidia.com/gpu"


def refusal(la: Launch, lay: Layout) -> str:
    """Why neither Compose nor Kubernetes can start this launch ("" when they can)."""
    if lay.unplaceable:
        return lay.unplaceable
    if la.engine == "trtllm" and any(len(s.commands[0].program) > 1 and
                                     s.commands[0].program[0] == "srun" for s in la.servers):  # fmt: skip
        return ("a TensorRT-LLM replica spanning nodes runs under MPI (srun ... "
                "trtllm-llmapi-launch, launch.sh in a Slurm allocation); Compose and Kubernetes "
                "cannot start it: use launch.sh, or vLLM/SGLang (Compose per host, a Kubernetes "
                "LeaderWorkerSet)")  # fmt: skip
    return ""


def _health(port: int) -> dict:
    return {"test": ["CMD", "python3", "-c", "import urllib.request; urllib.request."
                     f"urlopen('http://localhost:{port}{HEALTH}')"],
            "interval": "30s", "timeout": "10s", "retries": 3, "start_period": f"{STARTUP_S}s"}  # fmt: skip


def _service(la: Launch, argv: list[str], env: dict, lay: Layout, host: int) -> dict:
    svc: dict = {
        "image": la.image, "profiles": [f"host{host}"],
        "entrypoint": [compose_str(a) for a in argv[:1]],
        "command": [compose_str(a) for a in argv[1:]],
        "volumes": ["${HF_HOME:-~/.cache/huggingface}:/root/.cache/huggingface",
                    f".:{CONFIG_DIR}:ro"],
        "environment": {"HF_TOKEN": "${HF_TOKEN:-}", **{k: compose_str(v) for k, v in env.items()}},
        "labels": {"host": str(host)},
    }  # fmt: skip
    if lay.host_network:
        svc.update({"network_mode": "host", "ipc": "host",
                    "ulimits": {"memlock": -1, "stack": 67108864}})  # fmt: skip
    else:
        svc["shm_size"] = SHM_SIZE
    return svc


def _gpus(svc: dict, vendor: str, ids: list[str]) -> None:
    if vendor == "AMD":
        svc["environment"]["ROCR_VISIBLE_DEVICES"] = ",".join(ids)
        svc.update({"devices": ["/dev/kfd", "/dev/dri"], "group_add": ["video"]})
    else:
        dev = {"driver": "nvidia", "device_ids": ids, "capabilities": ["gpu"]}
        svc["deploy"] = {"resources": {"reservations": {"devices": [dev]}}}


def compose(la: Launch, lay: Layout, vendor: str, gpus_per_node: int) -> str:
    """The Docker Compose file (YAML) of a placed Launch (see the module docstring)."""
    services: dict[str, dict] = {}
    q = la.quantize
    if q:  # on host 0 with all its GPUs, before the servers; its output in ./models
        svc = _service(la, q.argv, {}, lay, 0)
        svc["volumes"].append(f"./models:{MODELS_DIR}")
        svc["restart"] = "no"
        _gpus(svc, vendor, [str(g) for g in range(gpus_per_node)])
        services["quantize"] = svc
    for inst in lay.servers():
        for rank, node in enumerate(inst.nodes):
            if la.engine == "trtllm" and rank:
                continue
            argv, env = node_argv(la, lay, inst, rank), node_env(la, lay, inst, rank)
            svc = _service(la, argv, env, lay, node.host)
            _gpus(svc, vendor, [str(g) for g in node.gpus])
            if q:
                svc["volumes"].append(f"./models:{MODELS_DIR}:ro")
                if lay.hosts == 1:
                    svc["depends_on"] = {
                        "quantize": {"condition": "service_completed_successfully"}
                    }
            if la.engine == "sglang" and inst.server.role in ("prefill", "decode"):
                svc["devices"] = [*svc.get("devices", []), "/dev/infiniband"]  # Mooncake: RDMA
            if rank == 0:
                if not lay.host_network:
                    svc["ports"] = [f"{inst.port}:{PORT}"]
                svc["healthcheck"] = _health(inst.port if lay.host_network else PORT)
            services[inst.name if len(inst.nodes) == 1 else f"{inst.name}-node{rank}"] = svc
    for inst in lay.instances:
        if inst.nodes:
            continue
        pre, dec = host_urls(lay)
        svc = _service(la, router_argv(la, pre, dec), {}, lay, 0)
        svc["healthcheck"] = _health(PORT)
        if lay.hosts == 1:  # one host: start the router once the servers answer
            svc["depends_on"] = {n: {"condition": "service_healthy"} for n in services
                                 if n != "quantize"}  # fmt: skip
        services["router"] = svc
    hosts = sorted({s["labels"]["host"] for s in services.values()}, key=int)
    head = [f"# {la.engine} {la.version}: Docker Compose, image {la.image}, {lay.hosts} host(s).",
            "# On host N: docker compose --profile hostN up -d   (" +
            "; ".join(f"host{h}: " + " ".join(n for n, s in services.items()
                                              if s["labels"]["host"] == h) for h in hosts) + ")",
            "# Run from the folder of this file: it is mounted at /config (option files, "
            "scripts)."]  # fmt: skip
    if lay.hosts > 1:
        head.append("# Export HOST0_IP ... on every host: the address of each host, which the "
                    "servers use to reach each other (host networking).")  # fmt: skip
        if q:
            head.append("# ./models must be storage every host shares (NFS): host0's service "
                        "quantize writes it; start the servers once it has finished.")  # fmt: skip
    if la.engine == "trtllm" and "disagg-config.yaml" in la.files:
        head.append("# disagg-config.yaml lists each server's host:port as its --port here; "
                    "keep the two in step if you edit one.")  # fmt: skip
    return "\n".join(head) + "\n" + dump([{"services": services}])


# -- Kubernetes --------------------------------------------------------------------------------


def _k8s_urls(la: Launch) -> tuple[list[tuple[str, int]], list[str]]:
    pre = [s for s in la.servers if s.role == "prefill"]
    dec = [s for s in la.servers if s.role == "decode"]
    if la.engine == "sglang":  # one Service per prefill server (its bootstrap room)
        prefill = [(f"http://{_name(la, s)}-{i}:{PORT}", BOOTSTRAP_PORT)
                   for s in pre for i in range(s.replicas)]  # fmt: skip
    else:
        prefill = [(f"http://{_name(la, s)}:{PORT}", BOOTSTRAP_PORT) for s in pre]
    return prefill, [f"http://{_name(la, s)}:{PORT}" for s in dec]


def _container(la: Launch, s: Server | None, argv: list[str], vendor: str, gpus: int, probes: bool):
    probe = {"httpGet": {"path": HEALTH, "port": PORT}, "periodSeconds": 10}
    c: dict = {
        "name": la.engine, "image": la.image, "command": argv[:1], "args": argv[1:],
        "ports": [{"containerPort": PORT, "name": "http"}],
        "env": [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {
            "name": "hf-token", "key": "token", "optional": True}}}],
        "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"},
                         {"name": "cache", "mountPath": "/root/.cache/huggingface"}],
    }  # fmt: skip
    if probes:
        c.update({"startupProbe": {**probe, "failureThreshold": STARTUP_S // 10},
                  "readinessProbe": {**probe, "failureThreshold": 3},
                  "livenessProbe": {**probe, "failureThreshold": 3}})  # fmt: skip
    if la.files:
        c["volumeMounts"].append({"name": "config", "mountPath": CONFIG_DIR})
    role = s.role if s else "job"
    if la.engine == "vllm" and role in ("prefill", "decode"):  # NIXL side channel on the pod IP
        c["env"].append({"name": "VLLM_NIXL_SIDE_CHANNEL_HOST",
                         "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})  # fmt: skip
    res: dict = {}
    if gpus:
        res[_gpu_resource(vendor)] = str(gpus)
    if la.engine == "sglang" and role in ("prefill", "decode"):  # Mooncake over RDMA
        c["ports"].append({"containerPort": BOOTSTRAP_PORT, "name": "bootstrap"})
        res[RDMA_RESOURCE] = "1"
        c["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}
    if res:
        c["resources"] = {"limits": dict(res), "requests": dict(res)}
    return c


def _pod(la: Launch, container: dict, labels: dict, kind: str = "server") -> dict:
    """A pod template; ``kind`` server, router or job (the quantize-first Job)."""
    volumes: list[dict] = [
        {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": SHM_SIZE.upper() + "i"}},
        {"name": "cache", "emptyDir": {}},
    ]
    if la.files:
        volumes.append({"name": "config", "configMap": {"name": f"{la.engine}-config"}})
    spec: dict = {"containers": [container], "volumes": volumes}
    q = la.quantize if kind != "router" else None
    job = kind == "job"
    if q:  # the quantized checkpoint: the Job writes it, the servers wait for it and read it
        volumes.append({"name": "models", "persistentVolumeClaim": {"claimName": "models"}})
        mount = {"name": "models", "mountPath": MODELS_DIR, "readOnly": not job}
        container["volumeMounts"].append(mount)
        if not job:
            wait = (
                f"until [ -f {q.path}/config.json ]; do echo waiting for {q.name}; sleep 30; done"
            )
            spec["initContainers"] = [{"name": "wait-for-checkpoint", "image": la.image,
                                       "command": ["bash", "-c", wait],
                                       "volumeMounts": [dict(mount)]}]  # fmt: skip
    if job:
        spec["restartPolicy"] = "OnFailure"
    return {"metadata": {"labels": labels}, "spec": spec}


def _quantize_docs(la: Launch, vendor: str, gpus_per_node: int, model_bytes: float) -> list[dict]:
    """The PersistentVolumeClaim the checkpoint goes to and the Job that writes it."""
    q = la.quantize
    size = f"{max(10, int(model_bytes * 1.2 / 2**30) + 1)}Gi"  # the output, with room
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "models"},
           "spec": {"accessModes": ["ReadWriteMany"],
                    "resources": {"requests": {"storage": size}}}}  # fmt: skip
    c = _container(la, None, q.argv, vendor, gpus_per_node, probes=False)
    c["name"] = "quantize"
    del c["ports"]
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "quantize"},
           "spec": {"backoffLimit": 2, "template": _pod(la, c, {"app": "quantize"}, "job")}}  # fmt: skip
    return [pvc, job]


def _service_doc(name: str, selector: dict, bootstrap: bool) -> dict:
    ports = [{"name": "http", "port": PORT, "targetPort": PORT}]
    if bootstrap:
        ports.append({"name": "bootstrap", "port": BOOTSTRAP_PORT, "targetPort": BOOTSTRAP_PORT})
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "labels": selector},
            "spec": {"selector": selector, "ports": ports}}  # fmt: skip


def _deployment(name: str, replicas: int, pod: dict) -> dict:
    labels = pod["metadata"]["labels"]
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels}, "template": pod}}  # fmt: skip


def _lws(la: Launch, s: Server, vendor: str, gpus_per_node: int) -> list[dict]:
    """A LeaderWorkerSet for a pool whose replica spans nodes, and the leaders' Service."""
    name, nodes = _name(la, s), max(len(s.commands), -(-s.gpus_per_replica // gpus_per_node))
    per = s.gpus_per_replica // nodes
    templates = {}
    for rank, role in ((0, "leader"), (1, "worker")):
        argv = s.commands[min(rank, len(s.commands) - 1)].argv()
        if la.engine == "sglang":
            argv = set_flag(argv, "--dist-init-addr", "$(LWS_LEADER_ADDRESS):20000")
            argv = set_flag(argv, "--node-rank", "0" if rank == 0 else "$(LWS_WORKER_INDEX)")
        else:
            argv = ray_node(argv, rank, nodes, "$LWS_LEADER_ADDRESS", s.gpus_per_replica)
        c = _container(la, s, argv, vendor, per, probes=rank == 0)
        if la.engine == "vllm":  # the address torch.distributed binds: the pod's
            c["env"].append({"name": "VLLM_HOST_IP",
                             "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}})  # fmt: skip
        templates[f"{role}Template"] = _pod(la, c, {"app": name, "role": role})
    lws = {"apiVersion": "leaderworkerset.x-k8s.io/v1", "kind": "LeaderWorkerSet",
           "metadata": {"name": name, "labels": {"app": name}},
           "spec": {"replicas": s.replicas, "startupPolicy": "LeaderCreated",
                    "leaderWorkerTemplate": {"size": nodes,
                                             "restartPolicy": "RecreateGroupOnPodRestart",
                                             **templates}}}  # fmt: skip
    return [lws, _service_doc(name, {"app": name, "role": "leader"}, False)]


def kubernetes(la: Launch, vendor: str, gpus_per_node: int, model_bytes: float = 0.0) -> str:
    """Kubernetes manifests (YAML, several documents): see the module docstring;
    ``model_bytes``: the quantized checkpoint's size (its PersistentVolumeClaim)."""
    docs: list[dict] = []
    pre, dec = _k8s_urls(la)
    files = dict(la.files)
    if "disagg-config.yaml" in files:  # one URL per pool: its Service balances the replicas
        files["disagg-config.yaml"] = trt_disagg_config([u.split("//")[1] for u, _ in pre],
                                                        [u.split("//")[1] for u in dec])  # fmt: skip
    if files:
        docs.append({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": f"{la.engine}-config"}, "data": files})  # fmt: skip
    if la.quantize:
        docs += _quantize_docs(la, vendor, gpus_per_node, model_bytes)
    for s in la.servers:
        name = _name(la, s)
        if not s.gpus_per_replica:
            c = _container(la, s, router_argv(la, pre, dec), vendor, 0, probes=True)
            docs += [_deployment(name, 1, _pod(la, c, {"app": name}, "router")),
                     _service_doc(name, {"app": name}, False)]  # fmt: skip
        elif s.gpus_per_replica > gpus_per_node or len(s.commands) > 1:
            docs += _lws(la, s, vendor, gpus_per_node)
        elif la.engine == "sglang" and s.role == "prefill":
            for i in range(s.replicas):
                c = _container(la, s, s.commands[0].argv(), vendor, s.gpus_per_replica, True)
                labels = {"app": f"{name}-{i}"}
                docs += [_deployment(f"{name}-{i}", 1, _pod(la, c, labels)),
                         _service_doc(f"{name}-{i}", labels, True)]  # fmt: skip
        else:
            c = _container(la, s, s.commands[0].argv(), vendor, s.gpus_per_replica, True)
            boot = la.engine == "sglang" and s.role == "decode"
            docs += [_deployment(name, s.replicas, _pod(la, c, {"app": name})),
                     _service_doc(name, {"app": name}, boot)]  # fmt: skip
    head = [
        f"# {la.engine} {la.version}: Kubernetes, image {la.image}: a Deployment per pool "
        "(a LeaderWorkerSet, sigs.k8s.io/lws, where a replica spans nodes) and a Service."
    ]
    if any(d["kind"] == "LeaderWorkerSet" for d in docs):
        head.append("# Needs the LeaderWorkerSet controller installed in the cluster.")
    if la.quantize:
        head.append("# The Job quantize writes the checkpoint into the PersistentVolumeClaim "
                    "models (ReadWriteMany); the servers wait for it.")  # fmt: skip
    if la.engine == "sglang" and pre:
        head.append(f"# Needs RDMA in the pods ({RDMA_RESOURCE}, e.g. the NVIDIA Network "
                    "Operator's shared device plugin) for Mooncake's KV transfer.")  # fmt: skip
    return "\n".join(head) + "\n" + dump(docs)

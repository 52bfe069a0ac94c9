"""Docker Compose and Kubernetes files for an engine Launch (advisor/deploy/engines.py).

Compose: one service per replica on one host (GPUs by index), the official image pinned, shared
memory, a health check on the engine's ``/health``. Kubernetes: per pool a Deployment (replicas =
the pool's data-parallel count, ``nvidia.com/gpu`` or ``amd.com/gpu`` = GPUs per replica,
``/dev/shm`` as a memory emptyDir, readiness and liveness probes on ``/health``) and a Service.
A replica spanning nodes cannot be one pod: then the files say so (Kubernetes: LeaderWorkerSet;
Compose: one host) and carry no service for it.
Sources: Compose specification (services.*.deploy.resources.reservations.devices, shm_size,
healthcheck); Kubernetes API apps/v1 Deployment, v1 Service; NVIDIA and AMD GPU device plugins
(resource names nvidia.com/gpu, amd.com/gpu); vLLM docs, deployment/k8s (shm emptyDir, /health).
"""

from __future__ import annotations

import yaml

from advisor.deploy.engines import CONFIG_DIR, PORT, Launch, Server

#: Shared memory per replica: NCCL/RCCL and PyTorch workers exchange tensors through /dev/shm;
#: Docker's 64 MB default breaks multi-GPU servers (vLLM docs: --ipc=host or --shm-size).
SHM_SIZE = "16g"
#: Seconds a server may take to load weights and capture graphs before probes count.
STARTUP_S = 1800
HEALTH = "/health"


class _Dumper(yaml.SafeDumper):
    def ignore_aliases(self, data):  # write repeated lists out (readers of k8s YAML expect it)
        return True


def dump(docs: list[dict]) -> str:
    return yaml.dump_all(docs, Dumper=_Dumper, sort_keys=False, width=100)


def _name(la: Launch, s: Server) -> str:
    return f"{la.engine}-{s.role}"


def _gpu_resource(vendor: str) -> str:
    return "amd.com/gpu" if vendor == "AMD" else "nvidia.com/gpu"


def _spans_nodes(s: Server) -> bool:
    return len(s.commands) > 1 or s.commands[0].program[0] == "srun"


def compose(la: Launch, vendor: str, gpus_per_node: int) -> str:
    """The Docker Compose file (YAML) of a Launch: one service per replica."""
    services: dict[str, dict] = {}
    next_gpu, port = 0, PORT
    skipped = []
    for s in la.servers:
        if s.gpus_per_replica and _spans_nodes(s):
            skipped.append(s.role)
            continue
        argv = s.commands[0].argv()
        for i in range(s.replicas if s.gpus_per_replica else 1):
            svc: dict = {
                "image": la.image, "entrypoint": argv[:1], "command": argv[1:],
                "ports": [f"{port}:{PORT}"], "shm_size": SHM_SIZE,
                "volumes": ["${HF_HOME:-~/.cache/huggingface}:/root/.cache/huggingface",
                            f"./config:{CONFIG_DIR}:ro"],
                "environment": {"HF_TOKEN": "${HF_TOKEN:-}"},
                "healthcheck": {
                    "test": ["CMD", "python3", "-c", "import urllib.request; urllib.request."
                             f"urlopen('http://localhost:{PORT}{HEALTH}')"],
                    "interval": "30s", "timeout": "10s", "retries": 3,
                    "start_period": f"{STARTUP_S}s",
                },
            }  # fmt: skip
            if s.gpus_per_replica:
                ids = [str((next_gpu + g) % gpus_per_node) for g in range(s.gpus_per_replica)]
                host = next_gpu // gpus_per_node
                next_gpu += s.gpus_per_replica
                if vendor == "AMD":
                    svc["devices"] = ["/dev/kfd", "/dev/dri"]
                    svc["group_add"] = ["video"]
                    svc["environment"]["HIP_VISIBLE_DEVICES"] = ",".join(ids)
                else:
                    svc["deploy"] = {
                        "resources": {
                            "reservations": {
                                "devices": [
                                    {"driver": "nvidia", "device_ids": ids, "capabilities": ["gpu"]}
                                ]
                            }
                        }
                    }
                svc["labels"] = {"host": str(host)}
            services[f"{s.role}-{i}" if s.role != "server" else f"replica-{i}"] = svc
            port += 1
    head = [f"# {la.engine}: Docker Compose, one service per replica, image {la.image}.",
            "# Services labelled host N need that many GPUs on host N: run `docker compose up",
            "# <services>` on each host (Compose is single-host)."]  # fmt: skip
    if skipped:
        head.append(f"# {', '.join(skipped)}: a replica spans nodes; Compose cannot run it "
                    "(use the multi-node launch in launch.sh).")  # fmt: skip
    return "\n".join(head) + "\n" + dump([{"services": services}])


def _to_services(la: Launch, text: str) -> str:
    """Per-replica host names (the Compose services: prefill-0, ...) -> the pool's Service."""
    for s in la.servers:
        for i in reversed(range(s.replicas if s.pool is not None else 0)):
            text = text.replace(f"{s.role}-{i}:", f"{_name(la, s)}:")
    return text


def _one_url_per_pool(argv: list[str]) -> list[str]:
    """Drop a repeated ``--prefill URL`` / ``--decode URL`` pair (replicas now share a Service)."""
    out: list[str] = []
    seen = set()
    i = 0
    while i < len(argv):
        pair = tuple(argv[i : i + 2])
        if argv[i] in ("--prefill", "--decode") and pair in seen:
            i += 2
            continue
        seen.add(pair)
        out.append(argv[i])
        i += 1
    return out


def _k8s_files(la: Launch) -> dict[str, str]:
    files = {n: _to_services(la, t) for n, t in la.files.items()}
    if "disagg-config.yaml" in files:  # one URL per pool: its Service balances the replicas
        cfg = yaml.safe_load(files["disagg-config.yaml"])
        for key in ("context_servers", "generation_servers"):
            cfg[key]["urls"] = list(dict.fromkeys(cfg[key]["urls"]))
            cfg[key]["num_instances"] = len(cfg[key]["urls"])
        files["disagg-config.yaml"] = yaml.safe_dump(cfg, sort_keys=False)
    return files


def kubernetes(la: Launch, vendor: str) -> str:
    """Kubernetes manifests (YAML, several documents): a Deployment and a Service per pool; the
    router reaches each pool through its Service."""
    docs: list[dict] = []
    skipped = []
    if la.files:
        docs.append({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": f"{la.engine}-config"}, "data": _k8s_files(la)})  # fmt: skip
    for s in la.servers:
        if s.gpus_per_replica and _spans_nodes(s):
            skipped.append(s.role)
            continue
        name = _name(la, s)
        labels = {"app": name}
        argv = _one_url_per_pool([_to_services(la, a) for a in s.commands[0].argv()])
        probe = {"httpGet": {"path": HEALTH, "port": PORT}, "periodSeconds": 10}
        container: dict = {
            "name": la.engine, "image": la.image, "command": argv[:1], "args": argv[1:],
            "ports": [{"containerPort": PORT, "name": "http"}],
            "env": [{"name": "HF_TOKEN", "valueFrom": {"secretKeyRef": {
                "name": "hf-token", "key": "token", "optional": True}}}],
            "volumeMounts": [{"name": "shm", "mountPath": "/dev/shm"},
                             {"name": "cache", "mountPath": "/root/.cache/huggingface"}],
            "startupProbe": {**probe, "failureThreshold": STARTUP_S // 10},
            "readinessProbe": {**probe, "failureThreshold": 3},
            "livenessProbe": {**probe, "failureThreshold": 3},
        }  # fmt: skip
        volumes: list[dict] = [
            {"name": "shm", "emptyDir": {"medium": "Memory", "sizeLimit": SHM_SIZE.upper() + "i"}},
            {"name": "cache", "emptyDir": {}},
        ]
        if la.files:
            container["volumeMounts"].append({"name": "config", "mountPath": CONFIG_DIR})
            volumes.append({"name": "config", "configMap": {"name": f"{la.engine}-config"}})
        if s.gpus_per_replica:
            n = str(s.gpus_per_replica)
            container["resources"] = {"limits": {_gpu_resource(vendor): n},
                                      "requests": {_gpu_resource(vendor): n}}  # fmt: skip
        docs.append({
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": labels},
            "spec": {"replicas": s.replicas if s.gpus_per_replica else 1,
                     "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [container], "volumes": volumes}}},
        })  # fmt: skip
        docs.append({
            "apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "labels": labels},
            "spec": {"selector": labels, "ports": [{"name": "http", "port": PORT,
                                                     "targetPort": PORT}]},
        })  # fmt: skip
    head = [f"# {la.engine}: Kubernetes Deployment + Service per pool, image {la.image}."]
    if skipped:
        head.append(f"# {', '.join(skipped)}: a replica spans nodes; one pod cannot hold it. Use "
                    "a LeaderWorkerSet (sigs.k8s.io/lws) with the multi-node launch of launch.sh.")  # fmt: skip
    return "\n".join(head) + "\n" + dump(docs)

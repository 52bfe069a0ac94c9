"""``deploy_bundle(scenario, spec, engine)``: every file to deploy one deployment on one engine.

Files: ``launch.sh`` (script.py: every server of a host started, health-checked and stopped
together), the engine's option files (TensorRT-LLM), the vLLM prefill/decode proxy, the
quantize-first job (quantize.py), ``docker-compose.yaml`` and ``kubernetes.yaml``
(manifests.py, from the placement of layout.py; ``refused`` says why one is not written) and
``README.md`` (checkpoint, quantize step, what the numbers assumed, what each file needs).
``zip_bytes`` packs them for a download. Every engine flag is checked against the chosen
release's flag list first (``flags.launch_problems``); a problem is reported, not written.
"""

from __future__ import annotations

import io
import re
import zipfile
from dataclasses import dataclass, field

from advisor.catalog.quoting import md_code
from advisor.deploy.engines import LAUNCHERS, Command, Launch
from advisor.deploy.flags import launch_problems, router_problems
from advisor.deploy.layout import MAX_INSTANCES, place
from advisor.deploy.manifests import compose, kubernetes, refusal
from advisor.deploy.script import launch_script
from advisor.deploy.settings import Plan, plan
from advisor.deploy.tables import ENGINES, engine_flags, releases
from advisor.deploy.wiring import host_urls, router_argv, trt_disagg_config
from advisor.physics.memory import weight_bytes
from advisor.scenario import Scenario
from advisor.search.deployment_spec import DeploymentSpec

FORMATS = ("command", "compose", "k8s")


@dataclass
class Bundle:
    """The files of one engine's deployment, or the reasons there are none."""

    engine: str
    plan: Plan
    launch: Launch | None
    files: dict[str, str] = field(default_factory=dict)
    #: Why nothing can be generated (infeasible deployment, engine cannot run it).
    reasons: list[str] = field(default_factory=list)
    #: Flags not in the engine's list (a bug if ever non-empty; shown, never hidden).
    problems: list[str] = field(default_factory=list)
    #: Files not written and why (Compose/Kubernetes past the size bound, or unable to start it).
    refused: dict[str, str] = field(default_factory=dict)

    def text(self, fmt: str) -> str:
        """What ``advisor deploy --format fmt`` prints."""
        if self.reasons:
            return "\n".join(f"cannot generate: {r}" for r in self.reasons)
        name = {"compose": "docker-compose.yaml", "k8s": "kubernetes.yaml"}.get(fmt, "")
        if name in self.refused:
            return f"no {name}: {self.refused[name]}"
        if fmt == "compose":
            return self.files["docker-compose.yaml"]
        if fmt == "k8s":
            return self.files["kubernetes.yaml"]
        extra = [f"# --- {n} ---\n{t}" for n, t in self.files.items() if n.endswith("yaml")
                 and n not in ("docker-compose.yaml", "kubernetes.yaml")]  # fmt: skip
        return "\n".join([self.files["launch.sh"], *extra])


def _needs(la: Launch, p: Plan, refused: dict[str, str]) -> list[str]:
    """The bundle README's "what each file needs": drivers, RDMA, shared storage."""
    amd = p.gpu.vendor == "AMD"
    driver = ("the ROCm driver (/dev/kfd, /dev/dri)" if amd else
              "the NVIDIA driver and the NVIDIA Container Toolkit")  # fmt: skip
    multi = any(len(s.commands) > 1 or s.gpus_per_replica > p.gpus_per_node for s in la.servers
                if s.gpus_per_replica)  # fmt: skip
    rdma = la.engine == "sglang" and p.spec.disaggregated
    net = ("InfiniBand/RoCE between the hosts for " + ", ".join(
        x for x, on in (("NCCL across nodes", multi), ("Mooncake's KV transfer", rdma)) if on)
           if multi or rdma else "")  # fmt: skip
    out = [
        f"launch.sh: {la.engine} {la.version} installed on each host (or run it inside the "
        f"image), {'ROCm' if amd else 'the NVIDIA driver'}, curl; `./launch.sh N` on host N"
    ]
    for name, what in (("docker-compose.yaml", f"Docker with Compose v2 and {driver}"),
                       ("kubernetes.yaml", "a cluster with the " + ("AMD" if amd else "NVIDIA")
                        + " GPU device plugin" + (", the LeaderWorkerSet controller" if multi
                                                  else "") +
                        (", RDMA exposed to pods (rdma/rdma_shared_device_a)" if rdma else "")
                        + ", a Secret hf-token for gated models")):  # fmt: skip
        out.append(f"{name}: " + (f"not written: {refused[name]}" if name in refused else what))
    if net:
        out.append(net)
    out.append("Weights: each host (or pod) downloads them to its Hugging Face cache; mount a "
               "shared cache (HF_HOME) to download once")  # fmt: skip
    if la.quantize:
        out.append("Quantized checkpoint: models/ on storage every host mounts (NFS) for launch.sh "
                   "and Compose over several hosts; Kubernetes: a ReadWriteMany StorageClass")  # fmt: skip
    return out


def _repo_as_code(text: str, repo: str) -> str:
    """``text`` (a checkpoint step, our prose) with each mention of ``repo`` as a code span: the
    repository of an imported config.json is its model id, and ``www.evil.example`` in prose is
    a live autolink on GitHub (quoting.md_code).

    >>> _repo_as_code("download the weights of www.e.x (no published checkpoint)", "www.e.x")
    'download the weights of `www.e.x` (no published checkpoint)'
    """
    if not repo:
        return text
    word = rf"(?<![\w./`-]){re.escape(repo)}(?![\w/`-]|\.\w)"
    return re.sub(word, lambda m: md_code(m.group(0)), text)


def _readme(la: Launch, p: Plan, refused: dict[str, str]) -> str:
    fl = engine_flags(la.engine, la.version)
    img = releases()[la.engine].image(la.version, p.gpu.id, p.gpu.vendor)
    out = [f"# {la.engine}: {p.spec.describe()}", "", f"Deployment: `{p.spec}`", ""]
    out += [f"- {n}" for n in la.notes]
    if la.quantize:
        q = la.quantize
        out.append(f"- Quantize first: {q.tool} quantizes {md_code(q.source)} to {q.weights} into "
                   f"{md_code(q.path)} "
                   "(quantize.py); the servers load that folder. launch.sh runs it on host 0 "
                   "(models/ beside it), Compose as the service quantize (./models), Kubernetes "
                   "as the Job quantize into the PersistentVolumeClaim models; the servers wait "
                   "for its config.json.")  # fmt: skip
    elif la.checkpoint and la.checkpoint.prepare:
        out.append(f"- Before serving: {_repo_as_code(la.checkpoint.prepare, la.checkpoint.repo)}")
    if la.checkpoint and la.checkpoint.online_quantization:
        ck = la.checkpoint
        why = (f"The listed {p.spec.weights} checkpoint {md_code(ck.passed_over)} does not load "
               f"on {la.engine}'s build for {p.gpu.vendor} GPUs" if ck.passed_over else
               f"No published {p.spec.weights} checkpoint listed")  # fmt: skip
        out.append(f"- {why}: {la.engine} quantizes {md_code(ck.repo)} at load (--quantization "
                   f"{ck.online_quantization}).")  # fmt: skip
    out += ["", "What each file needs:", *[f"- {r}" for r in _needs(la, p, refused)]]
    out += ["", f"Flags checked against data/engine-flags/{la.engine}-{la.version}.yaml "
            f"({la.engine} {fl['version']}; {'; '.join(fl['source'])}).",
            f"Image: {la.image} ({img.source if img else ''})."]  # fmt: skip
    return "\n".join(out) + "\n"


def deploy_bundle(
    scenario: Scenario,
    spec: DeploymentSpec,
    engine: str,
    version: str | None = None,
    max_context: int | None = None,
) -> Bundle:
    """Every file to run ``spec`` for ``scenario`` on ``engine`` at release ``version`` (default:
    the newest listed with an image for the GPU), accepting requests up to ``max_context``
    tokens (default: the workload's longest, settings.context_tokens); see the module docstring."""
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}; allowed: {', '.join(ENGINES)}")
    if version is not None and version not in releases()[engine].releases:
        raise ValueError(f"{engine} version {version!r}; allowed: "
                         f"{', '.join(releases()[engine].releases)}")  # fmt: skip
    p = plan(scenario, spec, max_context)
    if not p.feasible:
        return Bundle(engine, p, None, reasons=list(p.reasons))
    la = LAUNCHERS[engine](p, version)
    if not la.supported:
        return Bundle(engine, p, la, reasons=list(la.unsupported))
    lay = place(la, p.gpus_per_node)
    files = {"launch.sh": launch_script(la, p, lay), **la.files}
    if "disagg-config.yaml" in files and lay.instances:  # the servers' host:port (launch, Compose)
        pre, dec = host_urls(lay)
        files["disagg-config.yaml"] = trt_disagg_config([u.split("//")[1] for u, _ in pre],
                                                        [u.split("//")[1] for u in dec])  # fmt: skip
    refused = {}
    why = refusal(la, lay)
    if why or lay.too_large:
        refused["docker-compose.yaml"] = why or lay.too_large
    else:
        files["docker-compose.yaml"] = compose(la, lay, p.gpu.vendor, p.gpus_per_node)
    if why or _too_many_k8s_servers(la):
        refused["kubernetes.yaml"] = why or _too_many_k8s_servers(la)
    else:
        size = weight_bytes(p.model, p.spec.weights) if la.quantize else 0.0
        files["kubernetes.yaml"] = kubernetes(la, p.gpu.vendor, p.gpus_per_node, size)
    files["README.md"] = _readme(la, p, refused)
    for s in la.servers:  # the router as launch.sh runs it (the PDF prints these commands)
        if not s.gpus_per_replica and lay.instances:
            s.commands = [Command(router_argv(la, *host_urls(lay)), [], engine_flags=False)]
    problems = launch_problems(la)
    if la.engine == "sglang" and p.spec.disaggregated:
        problems += router_problems(router_argv(la, [("http://p:8000", 8998)], ["http://d:8000"]))
    return Bundle(engine, p, la, files=files, problems=problems, refused=refused)


def _too_many_k8s_servers(la: Launch) -> str:
    """Kubernetes files hold a replica count per pool, except SGLang's prefill servers (a
    Deployment and Service each): those are bounded like Compose's services."""
    n = sum(s.replicas for s in la.servers if la.engine == "sglang" and s.role == "prefill")
    if n > MAX_INSTANCES:
        return (f"{n:,} SGLang prefill servers, each its own Deployment and Service (the router "
                f"addresses each one): past the {MAX_INSTANCES} written")  # fmt: skip
    return ""


def zip_bytes(files: dict[str, str], folder: str = "deploy") -> bytes:
    """The files in a zip archive under ``folder/`` (the app's download)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in files.items():
            z.writestr(f"{folder}/{name}", text)
    return buf.getvalue()

"""``deploy_bundle(scenario, spec, engine)``: every file to deploy one deployment on one engine.

Files: ``launch.sh`` (the commands, per pool, with the multi-node and disaggregated forms),
the engine's option files (TensorRT-LLM), ``docker-compose.yaml``, ``kubernetes.yaml`` and
``README.md`` (checkpoint, quantization step, what the numbers assumed, what the engine cannot
do). ``zip_bytes`` packs them for a download. Every engine flag is checked against the engine's
flag list first (``flags.launch_problems``); a problem is reported, not written.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, field

from advisor.catalog.quoting import shell_comment
from advisor.deploy.engines import LAUNCHERS, Launch
from advisor.deploy.flags import launch_problems
from advisor.deploy.manifests import compose, kubernetes
from advisor.deploy.settings import Plan, plan
from advisor.deploy.tables import ENGINES, engine_flags, releases
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

    def text(self, fmt: str) -> str:
        """What ``advisor deploy --format fmt`` prints."""
        if self.reasons:
            return "\n".join(f"cannot generate: {r}" for r in self.reasons)
        if fmt == "compose":
            return self.files["docker-compose.yaml"]
        if fmt == "k8s":
            return self.files["kubernetes.yaml"]
        extra = [f"# --- {n} ---\n{t}" for n, t in self.files.items() if n.endswith("yaml")
                 and n not in ("docker-compose.yaml", "kubernetes.yaml")]  # fmt: skip
        return "\n".join([self.files["launch.sh"], *extra])


def launch_script(la: Launch, p: Plan) -> str:
    """launch.sh: setup steps, then each pool's server command(s) under a comment."""
    # The model's name may come from an uploaded config.json: a comment line must stay one line.
    lines = ["#!/usr/bin/env bash",
             shell_comment(f"{la.engine} launch of {p.spec} ({p.spec.describe()}) for {p.model.name}"),
             shell_comment(f"image: {la.image}"), "set -euo pipefail", ""]  # fmt: skip
    lines += la.setup + ([""] if la.setup else [])
    for s in la.servers:
        what = (f"{s.role}: {s.replicas} replica(s), {s.gpus_per_replica} GPU(s) each"
                if s.gpus_per_replica else f"{s.role} (CPU, in front of the servers)")  # fmt: skip
        lines.append(shell_comment(what))
        for i, c in enumerate(s.commands):
            if len(s.commands) > 1:
                lines.append(shell_comment(f"node {i} of each replica"))
            lines += [c.shell(), ""]
    return "\n".join(lines)


def _readme(la: Launch, p: Plan) -> str:
    fl = engine_flags(la.engine, la.version)
    img = releases()[la.engine].image(la.version, p.gpu.id, p.gpu.vendor)
    out = [f"# {la.engine}: {p.spec.describe()}", "", f"Deployment: `{p.spec}`", ""]
    out += [f"- {n}" for n in la.notes]
    if la.checkpoint and la.checkpoint.prepare:
        out.append(f"- Before serving: {la.checkpoint.prepare}")
    if la.checkpoint and la.checkpoint.online_quantization:
        out.append(f"- No published {p.spec.weights} checkpoint listed: {la.engine} quantizes "
                   f"{la.checkpoint.repo} at load (--quantization "
                   f"{la.checkpoint.online_quantization}).")  # fmt: skip
    out += ["", f"Flags checked against data/engine-flags/{la.engine}-{la.version}.yaml "
            f"({la.engine} {fl['version']}; {'; '.join(fl['source'])}).",
            f"Image: {la.image} ({img.source if img else ''})."]  # fmt: skip
    return "\n".join(out) + "\n"


def deploy_bundle(
    scenario: Scenario, spec: DeploymentSpec, engine: str, version: str | None = None
) -> Bundle:
    """Every file to run ``spec`` for ``scenario`` on ``engine`` at release ``version`` (default:
    the newest listed with an image for the GPU; see the module docstring)."""
    if engine not in ENGINES:
        raise ValueError(f"engine {engine!r}; allowed: {', '.join(ENGINES)}")
    if version is not None and version not in releases()[engine].releases:
        raise ValueError(f"{engine} version {version!r}; allowed: "
                         f"{', '.join(releases()[engine].releases)}")  # fmt: skip
    p = plan(scenario, spec)
    if not p.feasible:
        return Bundle(engine, p, None, reasons=list(p.reasons))
    la = LAUNCHERS[engine](p, version)
    if not la.supported:
        return Bundle(engine, p, la, reasons=list(la.unsupported))
    files = {"launch.sh": launch_script(la, p), **la.files,
             "docker-compose.yaml": compose(la, p.gpu.vendor, p.gpus_per_node),
             "kubernetes.yaml": kubernetes(la, p.gpu.vendor), "README.md": _readme(la, p)}  # fmt: skip
    return Bundle(engine, p, la, files=files, problems=launch_problems(la))


def zip_bytes(files: dict[str, str], folder: str = "deploy") -> bytes:
    """The files in a zip archive under ``folder/`` (the app's download)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for name, text in files.items():
            z.writestr(f"{folder}/{name}", text)
    return buf.getvalue()

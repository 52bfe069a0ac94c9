"""launch.sh: the servers of a placed Launch started on bare hosts, ``./launch.sh N`` on host N.

Each server of the host starts in the background on its own GPUs (CUDA_VISIBLE_DEVICES, or
ROCR_VISIBLE_DEVICES on AMD) and port; the script waits until each answers ``/health`` (and
stops if one exits first), then starts the router (host 0), and stops every server it started
when one exits or the script is interrupted (trap on EXIT). Every word from the user (a model
path, a name) reaches the script quoted (wiring.sh_word) or as a comment (shell_comment).
A deployment too large to list server by server gets the pools' commands, one replica each.
"""

from __future__ import annotations

from advisor.catalog.quoting import shell_comment
from advisor.deploy.engines import CONFIG_DIR, Launch
from advisor.deploy.layout import Instance, Layout
from advisor.deploy.quantize import LLM_COMPRESSOR, MODELS_DIR
from advisor.deploy.settings import Plan
from advisor.deploy.wiring import host_urls, node_argv, node_env, router_argv, sh_line

_FUNCTIONS = [
    "pids=()",
    "trap 'trap - EXIT; kill \"${pids[@]}\" 2>/dev/null; wait' EXIT INT TERM",
    "start() {  # start NAME COMMAND...: in the background, remembered for the trap",
    '    echo "starting $1" >&2; shift; "$@" & pids+=("$!")',
    "}",
    "healthy() {  # healthy PORT PID: wait until the server answers, stop if it exits first",
    '    until curl -sf "http://127.0.0.1:$1/health" >/dev/null; do',
    '        kill -0 "$2" 2>/dev/null || { echo "server on port $1 exited" >&2; exit 1; }',
    "        sleep 10",
    "    done",
    "}",
]


def _header(la: Launch, p: Plan) -> list[str]:
    # The model's name may come from an uploaded config.json: a comment line must stay one line.
    return ["#!/usr/bin/env bash",
            shell_comment(f"{la.engine} {la.version} launch of {p.spec} ({p.spec.describe()}) "
                          f"for {p.model.name}"),
            shell_comment(f"image: {la.image}")]  # fmt: skip


def _what(inst: Instance, rank: int, vendor: str) -> str:
    s, node = inst.server, inst.nodes[rank]
    gpus = ",".join(map(str, node.gpus))
    part = f", node {rank} of {len(inst.nodes)}" if len(inst.nodes) > 1 else ""
    return (f"{inst.name}{part}: TP={s.pool.tp} PP={s.pool.pp}, {vendor} GPUs {gpus}, "
            f"port {inst.port}")  # fmt: skip


def _here(argv: list[str]) -> list[str]:
    """Files a container finds in /config (options, the proxy) and /models (a quantized
    checkpoint) are, on a host, in the bundle's folder and its models/."""
    out = []
    for a in argv:
        for where, here in ((CONFIG_DIR, "${DIR}"), (MODELS_DIR, "${DIR}/models")):
            a = here + a[len(where) :] if a.startswith(f"{where}/") else a
            a = a.replace(f" {where}/", f" {here}/")
        out.append(a)
    return out


def _quantize(la: Launch, lay: Layout) -> list[str]:
    """Host 0 runs the quantize-first job unless its output is there; the others wait for it
    (models/ shared between hosts)."""
    q = la.quantize
    done = f'"$DIR/models/{q.name}/config.json"'
    module, pkg = (("llmcompressor", LLM_COMPRESSOR) if q.tool == "llm-compressor" else
                   ("modelopt", "nvidia-modelopt (in the TensorRT-LLM image)"))  # fmt: skip
    run = (f"python3 -c 'import {module}' 2>/dev/null || {{ echo 'install {pkg} first' >&2; "
           f'exit 1; }}; python3 "$DIR/quantize.py" "$DIR/models/{q.name}"')  # fmt: skip
    return [shell_comment(f"quantize first: {q.tool}, {q.source} to {q.weights} (quantize.py)"),
            f'if [ "$HOST" = 0 ] && [ ! -f {done} ]; then {run}; fi',
            f"until [ -f {done} ]; do echo 'waiting for models/{q.name}' >&2; sleep 30; done",
            ""]  # fmt: skip


def launch_script(la: Launch, p: Plan, lay: Layout) -> str:
    """launch.sh for the placed launch (see the module docstring)."""
    if lay.too_large or lay.unplaceable:
        return _per_pool(la, p, lay.too_large or lay.unplaceable)
    vendor = p.gpu.vendor
    visible = "ROCR_VISIBLE_DEVICES" if vendor == "AMD" else "CUDA_VISIBLE_DEVICES"
    lines = _header(la, p)
    usage = (f"usage: ./launch.sh HOST (0 to {lay.hosts - 1}) on each host, HOST0_IP ... set "
             "to the hosts' addresses" if lay.hosts > 1 else "usage: ./launch.sh")  # fmt: skip
    lines += [shell_comment(usage), "set -euo pipefail", 'HOST="${1:-0}"']
    for h in range(lay.hosts if lay.hosts > 1 else 0):
        lines.append(f': "${{HOST{h}_IP:?set HOST{h}_IP to the address of host {h}}}"')
    lines += [
        'DIR="$(cd "$(dirname "$0")" && pwd)"  # the bundle: options files, the proxy',
        "",
        *la.setup,
        *(_quantize(la, lay) if la.quantize else []),
        *_FUNCTIONS,
        "",
    ]
    waits: dict[int, list[str]] = {}
    for inst in lay.servers():
        for rank, node in enumerate(inst.nodes):
            if la.engine == "trtllm" and rank:  # srun starts every node of the replica
                continue
            env = dict(node_env(la, lay, inst, rank))
            if not (la.engine == "trtllm" and len(inst.nodes) > 1):
                env[visible] = ",".join(map(str, node.gpus))
            lines += [f'if [ "$HOST" = {node.host} ]; then',
                      "    " + shell_comment(_what(inst, rank, vendor)),
                      f"    start {inst.name} "
                      + sh_line(_here(["env", *[f"{k}={v}" for k, v in env.items()]]
                                      + node_argv(la, lay, inst, rank, bare=True))),  # fmt: skip
                      "fi"]  # fmt: skip
            if rank == 0:
                var = f"pid_{inst.name.replace('-', '_')}"
                lines.insert(-1, f'    {var}="${{pids[-1]}}"')
                waits.setdefault(node.host, []).append(f'healthy {inst.port} "${var}"')
    lines.append("")
    for h, ws in waits.items():
        lines += [f'if [ "$HOST" = {h} ]; then', *[f"    {w}" for w in ws], "fi"]
    routers = [i for i in lay.instances if not i.nodes]
    if routers:
        pre, dec = host_urls(lay)
        lines += ['if [ "$HOST" = 0 ]; then',
                  "    " + shell_comment("router: in front of the servers, port 8000"),
                  "    start router " + sh_line(_here(router_argv(la, pre, dec))), "fi"]  # fmt: skip
    lines += ["", 'echo "all servers of host $HOST answer /health" >&2',
              "wait -n", 'echo "a server exited: stopping the others" >&2', "exit 1", ""]  # fmt: skip
    return "\n".join(lines)


def _per_pool(la: Launch, p: Plan, why: str) -> str:
    """The pools' commands, one replica each, when the servers are not listed one by one."""
    lines = [*_header(la, p), shell_comment(f"Not listed server by server: {why}."),
             "set -euo pipefail", "", *la.setup, ""]  # fmt: skip
    for s in la.servers:
        what = (f"{s.role}: {s.replicas} replica(s), {s.gpus_per_replica} GPU(s) each; run one "
                "per replica, each on its own GPUs and port" if s.gpus_per_replica
                else f"{s.role} (CPU, in front of the servers)")  # fmt: skip
        lines.append(shell_comment(what))
        for i, c in enumerate(s.commands):
            if len(s.commands) > 1:
                lines.append(shell_comment(f"node {i} of each replica"))
            lines += [sh_line(c.argv(), c.env), ""]
    return "\n".join(lines)

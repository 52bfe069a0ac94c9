"""How the servers of a placed Launch (advisor/deploy/layout.py) find each other: per-instance
server arguments, the multi-node start (Ray for vLLM, SGLang's own rendezvous), the router's
arguments, and the shell/Compose spelling of the host addresses.

On hosts (launch.sh, Compose with host networking) a server is reached at its host's address
(``${HOST<n>_IP}``, loopback on one host) and its own port; on Kubernetes at its Service name
and port 8000, and a LeaderWorkerSet's workers find their leader through the
``LWS_LEADER_ADDRESS`` variable LeaderWorkerSet sets in every pod (lws docs, "Environment
variables": LWS_LEADER_ADDRESS, LWS_GROUP_SIZE, LWS_WORKER_INDEX).
Sources: vLLM docs, serving/parallelism_scaling.md (a Ray cluster: ``ray start --head`` on one
node, ``ray start --address`` on the others, then ``vllm serve`` on the head with
``--distributed-executor-backend ray``); SGLang docs, multi-node deployment (``--dist-init-addr
HEAD:PORT --nnodes N --node-rank i`` on every node); sglang-router PD mode (``--prefill URL
BOOTSTRAP_PORT``, ``--decode URL``).
"""

from __future__ import annotations

import re
import shlex

import yaml

from advisor.deploy.engines import CONFIG_DIR, PORT, Launch
from advisor.deploy.layout import RAY_PORT, Instance, Layout

PROXY = "vllm-pd-proxy.py"
_HOLE = re.compile(r"\$\{HOST\d+_IP\}|\$\{DIR\}|\$\(LWS_[A-Z_]+\)")


def set_flag(argv: list[str], flag: str, value: str) -> list[str]:
    """``argv`` with ``flag``'s value replaced (or the pair appended).

    >>> set_flag(["vllm", "serve", "m", "--port", "8000"], "--port", "8003")
    ['vllm', 'serve', 'm', '--port', '8003']
    """
    out = list(argv)
    if flag in out:
        out[out.index(flag) + 1] = value
    else:
        out += [flag, value]
    return out


def sh_word(arg: str) -> str:
    """One shell word: quoted, except that a ``${HOST<n>_IP}`` in it still expands.

    >>> sh_word("${HOST1_IP}:20010"), sh_word("a b")
    ('"${HOST1_IP}:20010"', "'a b'")
    """
    if not _HOLE.search(arg):
        return shlex.quote(arg)
    parts, holes = _HOLE.split(arg), _HOLE.findall(arg) + [""]
    esc = [p.replace("\\", "\\\\").replace('"', '\\"').replace("`", "\\`").replace("$", "\\$")
           for p in parts]  # fmt: skip
    return '"' + "".join(e + h for e, h in zip(esc, holes, strict=True)) + '"'


def sh_line(argv: list[str], env: dict[str, str] | None = None) -> str:
    """A command line: ``VAR=value`` assignments, then the words, one flag per line."""
    head = "".join(f"{k}={sh_word(v)} " for k, v in (env or {}).items())
    words, lines = [sh_word(a) for a in argv], []
    for w in words:
        if w.startswith("--") and lines:
            lines.append(w)
        elif lines:
            lines[-1] += " " + w
        else:
            lines.append(head + w)
    return " \\\n    ".join(lines)


def compose_str(text: str) -> str:
    """A string for a Compose file: a literal ``$`` doubled (Compose interpolates ``$VAR``),
    the ``${HOST<n>_IP}`` addresses kept for Compose to fill in from the environment."""
    parts, holes = _HOLE.split(text), _HOLE.findall(text) + [""]
    return "".join(p.replace("$", "$$") + h for p, h in zip(parts, holes, strict=True))


def server_argv(
    la: Launch, lay: Layout, inst: Instance, rank: int, bare: bool = False
) -> list[str]:
    """The engine command of node ``rank`` of ``inst`` on hosts (launch.sh, Compose); ``bare``:
    run on the host itself (launch.sh), where every server needs its own port."""
    s = inst.server
    argv = s.commands[rank if len(s.commands) > 1 else 0].argv()
    if lay.host_network or bare:
        argv = set_flag(argv, "--port", str(inst.port))
    if la.engine == "sglang" and s.role in ("prefill", "decode"):
        argv = set_flag(argv, "--disaggregation-bootstrap-port", str(inst.bootstrap_port))
    if la.engine == "sglang" and len(s.commands) > 1:
        head = lay.address(inst.nodes[0].host)
        argv = set_flag(argv, "--dist-init-addr", f"{head}:{inst.dist_port}")
    return argv


def ray_node(
    argv: list[str], rank: int, nodes: int, head: str, gpus: int, ip: str = ""
) -> list[str]:
    """``bash -c`` of node ``rank`` of a vLLM replica on a Ray cluster: the head starts Ray,
    waits until the workers' GPUs have joined, then runs ``vllm serve``; a worker joins and
    blocks. ``head`` is the head's address as the workers reach it, ``ip`` this node's (on
    hosts with several interfaces Ray must advertise the one the others reach)."""
    own = f" --node-ip-address={ip}" if ip else ""
    if rank:
        return ["bash", "-c", f"exec ray start --address={head}:{RAY_PORT}{own} --block"]
    serve = " ".join(sh_word(a) for a in argv)
    return ["bash", "-c",
            f"ray start --head --port={RAY_PORT}{own} && "
            f"until ray status 2>/dev/null | grep -q '/{gpus}.0 GPU'; do "
            f"echo 'waiting for {nodes - 1} Ray worker node(s)'; sleep 5; done && exec {serve}"]  # fmt: skip


def node_argv(la: Launch, lay: Layout, inst: Instance, rank: int, bare: bool = False) -> list[str]:
    """What node ``rank`` of ``inst`` runs on its host: the engine command, wrapped in the Ray
    start for a multi-node vLLM replica (``bare``: see server_argv)."""
    argv = server_argv(la, lay, inst, rank, bare)
    if la.engine == "vllm" and len(inst.nodes) > 1:
        gpus = sum(len(n.gpus) for n in inst.nodes)
        ip = lay.address(inst.nodes[rank].host)
        return ray_node(argv, rank, len(inst.nodes), lay.address(inst.nodes[0].host), gpus, ip)
    return argv


def node_env(la: Launch, lay: Layout, inst: Instance, rank: int) -> dict[str, str]:
    """Environment a server needs beyond its GPUs: vLLM's NIXL side channel must listen on an
    address the decode servers reach (its default, localhost, works on one host only) and on
    a port of its own per server sharing a host; a vLLM node of a multi-node replica names its
    own address (VLLM_HOST_IP, as vLLM's run_cluster.sh sets it)."""
    env = {}
    if la.engine == "vllm" and len(inst.nodes) > 1:  # the address torch.distributed binds
        env["VLLM_HOST_IP"] = lay.address(inst.nodes[rank].host)
    if la.engine == "vllm" and inst.server.role in ("prefill", "decode"):
        env |= {"VLLM_NIXL_SIDE_CHANNEL_HOST": lay.address(inst.nodes[rank].host),
                "VLLM_NIXL_SIDE_CHANNEL_PORT": str(inst.side_channel_port)}  # fmt: skip
    return env


def router_argv(la: Launch, prefill: list[tuple[str, int]], decode: list[str]) -> list[str]:
    """The router in front of disaggregated pools, given the prefill (URL, bootstrap port) and
    decode URLs it sends to."""
    port = ["--port", str(PORT)]
    if la.engine == "vllm":
        return ["python3", f"{CONFIG_DIR}/{PROXY}", "--prefill", *[u for u, _ in prefill],
                "--decode", *decode, *port]  # fmt: skip
    if la.engine == "sglang":
        out = ["python3", "-m", "sglang_router.launch_router", "--pd-disaggregation"]
        for url, boot in prefill:
            out += ["--prefill", url, str(boot)]
        for url in decode:
            out += ["--decode", url]
        return out + ["--host", "0.0.0.0", *port]
    return ["trtllm-serve", "disaggregated", "-c", f"{CONFIG_DIR}/disagg-config.yaml"]


def trt_disagg_config(prefill: list[str], decode: list[str]) -> str:
    """trtllm-serve disaggregated's config: the context and generation servers' host:port."""
    cfg = {"hostname": "0.0.0.0", "port": PORT, "backend": "pytorch",
           "context_servers": {"num_instances": len(prefill), "urls": prefill},
           "generation_servers": {"num_instances": len(decode), "urls": decode}}  # fmt: skip
    return yaml.safe_dump(cfg, sort_keys=False)


def host_urls(lay: Layout) -> tuple[list[tuple[str, int]], list[str]]:
    """Prefill (URL, bootstrap port) and decode URLs of the placed servers, on hosts."""
    pre = [(f"http://{lay.address(i.host)}:{i.port}", i.bootstrap_port)
           for i in lay.servers() if i.server.role == "prefill"]  # fmt: skip
    dec = [f"http://{lay.address(i.host)}:{i.port}" for i in lay.servers()
           if i.server.role == "decode"]  # fmt: skip
    return pre, dec

"""Where each server of a Launch runs: its hosts, GPU ids and ports, for launch.sh and Compose.

Replicas are packed host by host in the order of the pools (a replica that fits a host never
straddles two: a TP group split across hosts would run its all-reduce over the network); a
replica spanning nodes takes whole hosts. Every instance gets its own HTTP port (the router, if
any, keeps 8000), and its own SGLang bootstrap / rendezvous and vLLM NIXL side-channel ports, so
servers sharing a host's network never collide. Beyond ``MAX_INSTANCES`` servers or
``MAX_HOSTS`` hosts per-instance files are not written (``too_large``): a cluster of thousands
of GPUs is run by an orchestrator (the Kubernetes file's replica counts), not by a file that
lists every server.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.deploy.engines import BOOTSTRAP_PORT, PORT, Launch, Server

#: Largest deployment written server by server (launch.sh, Compose): 64 servers on 16 hosts
#: (128 GPUs at 8 per host) keep the files readable; past that the Kubernetes file's replica
#: counts describe it in a few documents.
MAX_INSTANCES = 64
MAX_HOSTS = 16
#: vLLM's default NIXL side-channel port (envs.VLLM_NIXL_SIDE_CHANNEL_PORT); vLLM adds the
#: data-parallel index (up to 64 attention-DP ranks), so instances on one host are spaced by 64.
SIDE_CHANNEL_PORT = 5600
#: SGLang multi-node rendezvous (--dist-init-addr) and Ray head ports, per replica.
DIST_PORT = 20000
RAY_PORT = 6379


@dataclass(frozen=True)
class Node:
    host: int
    gpus: tuple[int, ...]


@dataclass(frozen=True)
class Instance:
    """One replica of a pool (or the CPU router) placed on hosts."""

    server: Server
    index: int
    name: str
    port: int
    nodes: tuple[Node, ...]  # one per node of the replica; () for the router (on host 0)
    seq: int  # the instance's number over the whole launch (spaces the auxiliary ports)

    @property
    def host(self) -> int:
        return self.nodes[0].host if self.nodes else 0

    @property
    def bootstrap_port(self) -> int:
        return BOOTSTRAP_PORT + self.seq

    @property
    def side_channel_port(self) -> int:
        return SIDE_CHANNEL_PORT + 64 * self.seq

    @property
    def dist_port(self) -> int:
        return DIST_PORT + 10 * self.seq


@dataclass(frozen=True)
class Layout:
    instances: tuple[Instance, ...]
    hosts: int
    #: Servers talk across hosts or containers (multi-node, disaggregated): host networking,
    #: each server on its own port, addressed by its host's IP.
    host_network: bool
    #: Why the deployment is not written server by server (too many servers or hosts).
    too_large: str = ""
    #: Why it cannot be placed (a replica that does not split evenly over whole nodes).
    unplaceable: str = ""

    def address(self, host: int) -> str:
        """How another server reaches ``host``: loopback on one host, else HOST<n>_IP."""
        return "127.0.0.1" if self.hosts == 1 else f"${{HOST{host}_IP}}"

    def servers(self) -> list[Instance]:
        return [i for i in self.instances if i.nodes]


def _nodes_of(s: Server, gpus_per_node: int) -> int:
    return max(len(s.commands), -(-s.gpus_per_replica // gpus_per_node))


def place(la: Launch, gpus_per_node: int) -> Layout:
    """The instances of ``la`` on hosts of ``gpus_per_node`` GPUs (see the module docstring)."""
    pools = [s for s in la.servers if s.gpus_per_replica]
    routers = [s for s in la.servers if not s.gpus_per_replica]
    count = sum(s.replicas for s in pools)
    need = sum(s.replicas * _nodes_of(s, gpus_per_node) if _nodes_of(s, gpus_per_node) > 1
               else -(-s.replicas // max(1, gpus_per_node // s.gpus_per_replica)) for s in pools)  # fmt: skip
    if count > MAX_INSTANCES or need > MAX_HOSTS:
        return Layout((), need, True, too_large=(
            f"{count:,} servers on at least {need:,} hosts: past the {MAX_INSTANCES} servers on "
            f"{MAX_HOSTS} hosts written server by server; use the Kubernetes file (one "
            "Deployment or LeaderWorkerSet per pool, replicas = the pool's count)"))  # fmt: skip
    host, used, seq, out = 0, 0, 0, []
    multi = False
    for s in pools:
        n = _nodes_of(s, gpus_per_node)
        for r in range(s.replicas):
            if n == 1:
                if used + s.gpus_per_replica > gpus_per_node:
                    host, used = host + 1, 0
                nodes = (Node(host, tuple(range(used, used + s.gpus_per_replica))),)
                used += s.gpus_per_replica
            else:
                multi = True
                if s.gpus_per_replica % n:
                    return Layout((), 0, True, unplaceable=(
                        f"{s.role}: {s.gpus_per_replica} GPUs per replica do not split evenly "
                        f"over {n} nodes of {gpus_per_node} GPUs"))  # fmt: skip
                if used:
                    host, used = host + 1, 0
                per = s.gpus_per_replica // n
                nodes = tuple(Node(host + k, tuple(range(per))) for k in range(n))
                host += n - 1
                used = gpus_per_node
            name = f"replica-{r}" if s.role == "server" else f"{s.role}-{r}"
            out.append(Instance(s, r, name, 0, nodes, seq))
            seq += 1
    hosts = host + 1
    base = PORT + 1 if routers else PORT
    out = [Instance(i.server, i.index, i.name, base + k, i.nodes, i.seq) for k, i in enumerate(out)]
    out += [Instance(s, 0, "router", PORT, (), seq) for s in routers]
    return Layout(tuple(out), hosts, host_network=multi or bool(routers))

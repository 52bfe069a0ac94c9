"""``advisor collective``: time and nccl-tests bandwidths of one collective on one link."""

from __future__ import annotations

import argparse

from advisor.cli import CliInputError, add_json_flag, choice_of, float_in, int_in
from advisor.cli.common import resolve_gpu, resolve_link
from advisor.perf.validation.collective_ranges import collective_range
from advisor.physics.collectives import CUSTOM_ALGORITHMS, OPS, collective

#: Inter-node link used when the group is larger than the GPU's scale-up domain.
DEFAULT_INTER_NODE_LINK = "ib-ndr"
MAX_BYTES = 1e12


#: argparse type: a message size in bytes, an int or float literal (``1e6``) in 1..1e12.
_bytes = float_in(1, MAX_BYTES)


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("collective", help="time of one all-reduce / all-gather / reduce-scatter")
    p.add_argument("--op", type=choice_of(OPS, "op"), default="allreduce", help=", ".join(OPS))
    p.add_argument("--gpu", required=True, help="accelerator id (see `advisor catalog`)")
    p.add_argument("--n", type=int_in(1, 4096), required=True, help="number of GPUs (1..4096)")
    p.add_argument("--bytes", type=_bytes, required=True, help="message size per GPU in bytes")
    p.add_argument(
        "--link", default=None,
        help="interconnect id (default: the GPU's scale-up link if --n fits its scale-up "
        f"domain, else {DEFAULT_INTER_NODE_LINK})",
    )  # fmt: skip
    p.add_argument(
        "--confidence", type=float_in(0.5, 0.99), default=0.8,
        help="confidence of the range around the time (0.5..0.99, default 0.8)",
    )  # fmt: skip
    add_json_flag(p)
    return p


def run(args: argparse.Namespace) -> dict:
    gpu = resolve_gpu(args.gpu)
    if args.link is not None:
        link = resolve_link(args.link)
        why = link.mismatch(gpu)
        if why:
            raise CliInputError(f"--link {link.id}: {why}")
    elif args.n <= gpu.scale_up_domain:
        link = resolve_link(gpu.scale_up_link)
    else:
        link = resolve_link(DEFAULT_INTER_NODE_LINK)
    if link.scope == "intra_node" and link.topology == "mesh" and args.n > link.links_per_gpu + 1:
        raise CliInputError(
            f"--n {args.n}: link {link.id!r} is a mesh of {link.links_per_gpu + 1} GPUs "
            f"(allowed: 1..{link.links_per_gpu + 1}, or pass an inter-node --link)"
        )
    r = collective(args.op, args.bytes, args.n, link)
    span = (
        collective_range(link, r.message_bytes, r.time_s, args.confidence, n_gpus=r.n_gpus,
                         op=r.op, custom=r.algorithm in CUSTOM_ALGORITHMS)
        if r.n_gpus > 1 else None
    )  # fmt: skip
    return {
        "op": r.op, "gpu": gpu.id, "link": link.id, "n_gpus": r.n_gpus,
        "bytes": r.message_bytes, "algorithm": r.algorithm, "time_us": r.time_s * 1e6,
        # one GPU moves nothing: no rate (null), never an infinite one
        "algbw_gbps": r.algbw_bytes_per_s / 1e9 if r.n_gpus > 1 else None, "busbw_gbps": r.busbw_bytes_per_s / 1e9,
        # how far to trust the time: held-out errors of the published rows nearest in size
        "confidence": args.confidence,
        "time_us_range": [span.low_s * 1e6, span.high_s * 1e6] if span else None,
        "range_basis": span.basis if span else None,
    }  # fmt: skip


def render(r: dict) -> str:
    if r["n_gpus"] == 1:
        return (f"{r['op']} of {r['bytes']:,.0f} bytes on 1 x {r['gpu']}: nothing to exchange "
                "(one GPU): 0 us, no link bandwidth used")  # fmt: skip
    return (
        f"{r['op']} of {r['bytes']:,.0f} bytes on {r['n_gpus']} x {r['gpu']} over {r['link']}: "
        f"{r['time_us']:,.2f} us ({r['algorithm']}), algbw {r['algbw_gbps']:.2f} GB/s, "
        f"busbw {r['busbw_gbps']:.2f} GB/s (GB = 1e9)"
        + (f"\n  {r['confidence']:.0%} range {r['time_us_range'][0]:,.2f}-"
           f"{r['time_us_range'][1]:,.2f} us: {r['range_basis']}" if r["time_us_range"] else "")
    )  # fmt: skip

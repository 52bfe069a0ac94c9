"""nccl-tests ``all_reduce_perf`` standard output: one row per message size.

Layout (NVIDIA/nccl-tests src/common.cu, ``Reporter``): header lines start with ``#`` (the
``#  Rank  N Group ... device  D [0x..] NAME`` lines list the ranks); each result row is
``size count type redop root`` then, out-of-place and in-place, ``time algbw busbw #wrong``
(time in us, bandwidths in GB/s = 1e9 B/s). Each row with size > 0 becomes an all-reduce
measurement (out-of-place time) for the collectives model, on the stated GPU's scale-up link
when every rank runs on one host, and on the inter-node link (``--inter-link``, InfiniBand NDR
when not stated) when the ``#  Rank ... on HOST device`` lines name two hosts or more: the
collectives model takes the slowest link a group crosses (advisor/physics/collectives.py), and the
note says which link and how many hosts. The device names the rank lines print must be the
stated accelerator.
busbw must equal algbw x 2 (n - 1) / n (nccl-tests' all-reduce bus factor) within the
printed rounding, so a file from another collective or a mangled column is refused.
"""

from __future__ import annotations

import math
import re

from advisor.catalog import get_accelerator
from advisor.perf.importers.common import BenchmarkFileError, Deployment, Read
from advisor.perf.importers.consistency import check_gpu
from advisor.perf.validation.collectives import CollectiveRow, one_process_harness
from advisor.physics.collectives import NCCL_ALGORITHMS

FORMAT = "nccl-tests all_reduce_perf"
_HEADER = re.compile(r"^#\s+size\s+count\s+type\s+redop\s+root\s+time\s+algbw\s+busbw", re.M)
#: A rank line: ``#  Rank  0 Group  0 Pid  41873 on HOST device  0 [0x18] NAME``; releases before
#: the ``Group`` column (rccl-tests develop:448c4c7, nccl-tests < 2.13) print ``#  Rank  0 Pid ...``.
_RANK = re.compile(r"^#?\s*Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+(\d+)", re.M)
_RANK_HOST = re.compile(
    r"^#?\s*Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+"
    r"\[[^\]]*\]\s+(.+?)\s*$",
    re.M,
)
#: Inter-node link assumed for a multi-host file when --inter-link is not given.
DEFAULT_INTER_LINK = "ib-ndr"
MAX_ROWS = 10_000


def recognise(text: str) -> bool:
    return bool(_HEADER.search(text))


def _num(tok: str, name: str, line: int, column: str, lo: float, hi: float) -> float:
    try:
        v = float(tok)
    except ValueError:
        raise BenchmarkFileError(
            f"{name} line {line}: column {column!r} is {tok[:20]!r}, not a number"
        ) from None
    if not math.isfinite(v) or not lo <= v <= hi:
        raise BenchmarkFileError(
            f"{name} line {line}: column {column!r} is {v:g}; expected a finite number in [{lo:g}, {hi:g}]"
        )
    return v


def read(text: str, name: str, dep: Deployment) -> Read:
    out = Read(layout=FORMAT)
    out.collectives = rows(text, name, dep, out.notes)
    return out


def rows(
    text: str, name: str, dep: Deployment, notes: list[str] | None = None
) -> list[CollectiveRow]:
    from advisor.catalog.loader import get_interconnect

    pids = _RANK.findall(text)
    n = len(pids) or dep.tp * dep.pp
    if n < 2:
        raise BenchmarkFileError(f"{name}: an all-reduce over {n} rank measures nothing; need >= 2")
    ranks = _RANK_HOST.findall(text)
    for _host, device in ranks[:1]:
        note = check_gpu(name, "the ranks' device", device, dep)
        if note and notes is not None:
            notes.append(note)
    hosts = sorted({h for h, _ in ranks})
    link = get_accelerator(dep.gpu).scale_up_link
    if len(hosts) > 1:
        link = dep.inter_link or DEFAULT_INTER_LINK
        ic = get_interconnect(link)
        why = ic.mismatch(get_accelerator(dep.gpu), "inter_node")
        if why:
            raise BenchmarkFileError(f"{name}: the ranks span {len(hosts)} hosts, but {why}")
        if notes is not None:
            notes.append(
                f"{name}: the {n} ranks span {len(hosts)} hosts ({', '.join(hosts[:4])}): compared "
                f"with the inter-node model over {link} ({ic.name}"
                + (")" if dep.inter_link else "; assumed, state --inter-link)")
            )
    # every rank under one Pid: run with -g N, one thread launching all the GPUs' kernels
    harness = "nccl-tests"
    if len(pids) > 1 and len(set(pids)) == 1:
        harness = one_process_harness(get_interconnect(link).kind)
        if notes is not None:
            notes.append(f"{name}: the {n} ranks share one process (Pid {pids[0]}, nccl-tests "
                         "-g N): compared with that launch mode's fitted overhead")  # fmt: skip
    out: list[CollectiveRow] = []
    for i, line in enumerate(text.splitlines(), start=1):
        s = line.strip()
        if not s or s.startswith("#") or not s[0].isdigit():
            continue
        tok = s.split()
        if len(tok) < 9:
            raise BenchmarkFileError(f"{name} line {i}: {len(tok)} columns; a result row has 13")
        if tok[3] != "sum":
            raise BenchmarkFileError(
                f"{name} line {i}: column 'redop' is {tok[3][:10]!r}; only sum is modelled"
            )
        size = _num(tok[0], name, i, "size", 0, 2**40)
        t_us = _num(tok[5], name, i, "time", 1e-3, 1e9)
        alg = _num(tok[6], name, i, "algbw", 0, 1e5)
        bus = _num(tok[7], name, i, "busbw", 0, 1e5)
        if size == 0:
            continue
        # Printed with 2 decimals: allow that rounding plus 2%.
        if abs(bus - alg * 2 * (n - 1) / n) > 0.02 * bus + 0.011 * (1 + 2 * (n - 1) / n):
            raise BenchmarkFileError(
                f"{name} line {i}: column 'busbw' {bus:g} GB/s is not algbw x 2(n-1)/n = "
                f"{alg * 2 * (n - 1) / n:.2f} for n = {n} ranks: not an all-reduce, or the rank count is wrong"
            )
        out.append(
            CollectiveRow(
                row_id=f"{name}:{int(size)}B", metric="allreduce_latency_us", op="allreduce",
                n_gpus=n, message_bytes=size, measured=t_us, unit="us", link_id=link,
                algorithms=NCCL_ALGORITHMS, harness=harness, reason="",
            )
        )  # fmt: skip
        if len(out) > MAX_ROWS:
            raise BenchmarkFileError(f"{name}: more than {MAX_ROWS:,} result rows")
    if not out:
        raise BenchmarkFileError(
            f"{name}: no result rows under the nccl-tests header (a truncated file?)"
        )
    return out

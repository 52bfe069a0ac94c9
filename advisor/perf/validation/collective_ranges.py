"""How far to trust one collective's predicted time: the held-out errors of the published
collective rows nearest it in size, on the same kind of link.

Every all-reduce row of data/measurements*.csv is predicted by ``python -m advisor crossval``
with the collectives fitted without its source (data/crossval.yaml, ``loso_rows`` of kind
``allreduce``). Here each becomes a time ratio, measured / predicted (a bus-bandwidth row's
ratio is predicted / measured bandwidth: the time goes as its inverse), and a prediction's range
is its time times the (1-c)/2 and (1+c)/2 quantiles (``intervals.quantile_bounds``) of the
ratios of the ``NEAREST`` rows closest to it in log size on its link kind (NVLink, Infinity
Fabric, PCIe, ...; every kind pooled when its own has fewer than ``intervals.MIN_ROWS``).

At most ``PER_SOURCE`` rows come from one source (a sweep repeats its own bias at every size),
and a prediction by an engine's own one-/two-shot kernel reads the custom-kernel rows, NCCL's
the rest, where each has ``MIN_ROWS``. Checked out of source by ``bench/collective_ranges.py``
(every row scored by a range built from the other sources' rows only): on 2026-12-07 the 80%
ranges held 76.7% of the 258 rows (NVLink 80.0%, Infinity Fabric 75.4%; under 64 KiB 78.4%,
64 KiB - 8 MiB 67.7%, 8 MiB - 1 GiB 83.3%, 1 GiB up 78.5%). Three per source was chosen on
those rows: twelve nearest rows of any source held 68.2% (one sweep's rows made a range as
narrow as that sweep's scatter), two or three per source 80-83% before NCCL and custom rows
were split, four 75.2%.

Why by size: the model's error is not one number across sizes. Azure's forced-NVLS sweeps on
8 x H100 / H200 take 1.3-1.4x the predicted time at 8-32 MiB (NCCL cuts NVLS chunks to
16-32 KiB there, which the model's line does not price; docs/accuracy.md) and within 2% at
8 GiB, so one pooled range would be too wide at 8 GiB and too narrow at 16 MiB.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

from advisor.catalog.specs import Interconnect
from advisor.perf.model.intervals import CROSSVAL_PATH, MIN_ROWS, quantile_bounds
from advisor.physics.collectives import CUSTOM_ALGORITHMS

#: Rows a range is read from: the nearest in log message size (12: the 10%/90% quantiles of an
#: 80% range fall between the 1st/2nd and 11th/12th order statistics).
NEAREST = 12
#: At most this many of them from one source: a sweep repeats its own bias at every size, so
#: twelve rows of one sweep would give a range as narrow as that sweep's scatter.
PER_SOURCE = 3


@dataclass(frozen=True)
class HeldOutRow:
    """One published collective row, predicted held out: its link kind, size and time ratio."""

    id: str
    link_kind: str
    message_bytes: float
    n_gpus: int
    time_ratio: float  # measured time / predicted time (inf: the held-out fit failed)
    source: str = ""  # the publication; a row without one is its own
    custom: bool = False  # an engine's own one-/two-shot kernel, not NCCL


@dataclass(frozen=True)
class CollectiveRange:
    """A predicted collective time's range from held-out errors, and what it was read from."""

    low_s: float
    high_s: float
    low_ratio: float
    high_ratio: float
    rows: int
    basis: str


@cache
def held_out_rows() -> tuple[HeldOutRow, ...]:
    """The all-reduce rows of data/crossval.yaml as time ratios, joined with their sizes and
    links (``validation.collectives.load_collective_rows``). A row whose held-out fit failed
    keeps an infinite ratio: a range that reaches it says so."""
    from advisor.catalog import interconnects
    from advisor.catalog.files import load_data_yaml
    from advisor.perf.validation.collectives import load_collective_rows, measured_time_s

    doc = load_data_yaml(CROSSVAL_PATH.read_text(encoding="utf-8"))
    by_id = {r.row_id: r for r in load_collective_rows() if not r.reason}
    links = interconnects()
    out = []
    for r in doc.get("loso_rows") or []:
        row = by_id.get(str(r.get("id")))
        if r.get("kind") != "allreduce" or row is None or row.link_id not in links:
            continue
        p = float(r["predicted"])
        # both through the row's own unit conversion (a busbw row's time goes as 1 / busbw)
        ok = math.isfinite(p) and p > 0 and row.measured > 0
        ratio = measured_time_s(row) / measured_time_s(row._replace(measured=p)) if ok else math.inf
        out.append(HeldOutRow(row.row_id, links[row.link_id].kind, row.message_bytes,
                              row.n_gpus, ratio, str(r.get("source") or ""),
                              row.algorithms == CUSTOM_ALGORITHMS))  # fmt: skip
    return tuple(out)


def _size(nbytes: float) -> str:
    for unit, div in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if nbytes >= div:
            return f"{nbytes / div:g} {unit}"
    return f"{nbytes:g} B"


def collective_range(
    link: Interconnect,
    message_bytes: float,
    time_s: float,
    confidence: float = 0.8,
    rows: tuple[HeldOutRow, ...] | None = None,
    n_gpus: int | None = None,
    op: str = "allreduce",
    custom: bool = False,
) -> CollectiveRange | None:
    """The ``confidence`` range of a collective predicted at ``time_s`` for ``message_bytes``
    on ``link``: time_s x the quantiles of measured/predicted time over the ``NEAREST`` held-out
    all-reduce rows nearest in log size on that link kind, at most ``PER_SOURCE`` from one
    source, of NCCL's algorithms or (``custom``) of an engine's own kernels where those have
    ``intervals.MIN_ROWS`` rows (module docstring). None without rows. The basis says what
    the rows do not cover: another link kind (too few rows of its own), a GPU count ``n_gpus``
    outside theirs, an ``op`` other than all-reduce.

    >>> from advisor.catalog import get_interconnect
    >>> rows = tuple(HeldOutRow(f"r{i}", "nvlink", 2.0**20, 8, 1 + i / 100) for i in range(12))
    >>> c = collective_range(get_interconnect("nvlink4"), 2.0**20, 1e-4, 0.8, rows)
    >>> round(c.low_ratio, 3), round(c.high_ratio, 3), c.rows  # order statistics 1.3 and 11.7
    (1.003, 1.107, 12)
    """
    pool = held_out_rows() if rows is None else rows
    same_kernels = [r for r in pool if r.custom == custom]
    mixed = len(same_kernels) < MIN_ROWS
    pool = list(pool) if mixed else same_kernels
    own = [r for r in pool if r.link_kind == link.kind]
    where = f"on {link.kind}"
    if len(own) < MIN_ROWS:
        n_own = f"{len(own)} published row{'' if len(own) == 1 else 's'}"
        where = (f"on any link ({n_own} on {link.kind}, fewer than {MIN_ROWS}: not a check of "
                 "this link)")  # fmt: skip
        own = list(pool)
    if not own:
        return None
    target = math.log(max(message_bytes, 1.0))
    near, per_source = [], {}
    for r in sorted(own, key=lambda r: abs(math.log(max(r.message_bytes, 1.0)) - target)):
        key = r.source or r.id
        if per_source.get(key, 0) < PER_SOURCE:
            near.append(r)
            per_source[key] = per_source.get(key, 0) + 1
        if len(near) == NEAREST:
            break
    lo, hi = quantile_bounds((math.log(r.time_ratio) for r in near), confidence)
    sizes = sorted(r.message_bytes for r in near)
    gpus = sorted({r.n_gpus for r in near})
    span = f"{gpus[0]}" if len(gpus) == 1 else f"{gpus[0]}-{gpus[-1]}"
    caveats = ""
    if n_gpus is not None and not gpus[0] <= n_gpus <= gpus[-1]:
        caveats += f"; {n_gpus} GPUs lie outside the rows' {span} GPUs"
    if mixed:
        kind = "engine-kernel" if custom else "NCCL"
        caveats += f"; {len(same_kernels)} {kind} rows, too few alone: every kernel's rows"
    if op != "allreduce":
        caveats += f"; all-reduce rows: no {op} rows are held out"
    basis = (
        f"held-out error of the {len(near)} published all-reduce rows nearest in size {where} "
        f"({_size(sizes[0])}-{_size(sizes[-1])}, {span} GPUs, each predicted by a fit without "
        f"its source): measured {lo:.2f}-{hi:.2f}x of predicted{caveats}"
    )
    return CollectiveRange(time_s * lo, time_s * hi, lo, hi, len(near), basis)

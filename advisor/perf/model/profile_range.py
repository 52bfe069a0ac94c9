"""The conditions a client profile was fitted on, and whether a prediction lies inside them.

A profile's constants are checked (held out, advisor/perf/calibration/client_holdout.py) only
where the client's runs are: its deployment (model, TP, PP, weights and KV dtypes) and, per load
mode and per length class (runs whose input and output lengths match), the span of its runs'
load (request rate, concurrency or static batch per replica; offline, every request at once).
A load measured only at other lengths is outside: DataCrunch runs 1-5 (random ~510/520 tokens
at 1-8 req/s, ShareGPT ~224/189 at 4 req/s) accepted held out, then predicted run 6 (ShareGPT
at 8 req/s, near capacity) 148% off against 30% shipped; a box of lengths x loads held it in. Outside that range nothing the client measured
says the profile helps (last session's DataCrunch runs 1-2 profile, fitted at 1-2 req/s, made
the 4 and 8 req/s runs worse), so the prediction uses the shipped calibration and says why.

``SLACK`` = 10% on each end of a range: the lengths and load a file records are the run's own
means (a random 1024/1024 SGLang run records 509 / 534 tokens), so a workshop's round figure
next to them is the same condition, not an extrapolation.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

from advisor.perf.model.layout import layout_text

SLACK = 0.10
#: Load mode of each case kind (advisor/perf/validation/measurements.Case.kind); batch-1 rows are a
#: concurrency of one.
MODE_OF_KIND = {
    "decode_b1": "concurrency", "ttft_b1": "concurrency",
    "conc_ttft": "concurrency", "conc_tpot": "concurrency", "conc_e2e": "concurrency",
    "conc_tput": "concurrency",
    "load_ttft": "request rate", "load_itl": "request rate", "load_e2e": "request rate",
    "load_tput": "request rate",
    "static": "static batch", "static_e2e": "static batch",
    "offline": "offline",
}  # fmt: skip
UNIT = {"concurrency": "", "request rate": " req/s", "static batch": ""}

Span = tuple[float, float]
#: The load mode of a pool of a disaggregated deployment (prefill or decode alone).
DISAGGREGATED = "disaggregated"
#: Why a profile does not apply to a replica built without a workload.
NO_WORKLOAD = "no workload stated (a chart of the replica alone)"


@dataclass(frozen=True)
class Work:
    """What one replica serves, in a profile range's terms: lengths, load mode (a value of
    ``MODE_OF_KIND``, or ``DISAGGREGATED``), load per replica, and the think time of users in a
    closed loop (0: a benchmark load)."""

    isl: float
    osl: float
    mode: str
    load: float
    think_time_s: float = 0.0


@dataclass(frozen=True)
class Domain:
    """Where a profile applies: its deployment, and per load mode the (isl, osl, load) spans."""

    model: str
    tp: int
    pp: int
    weights: str
    kv: str
    #: load mode -> (isl span, osl span, load span per replica; (0, 0) for offline)
    modes: tuple[tuple[str, Span, Span, Span], ...]
    #: the MoE layout of the runs: experts whole per GPU (EP = TP), attention data parallel
    ep: bool = False
    dp_attention: bool = False

    @property
    def _layout(self) -> str:
        """The runs' layout in the range's words: "TP=8 EP=8 attention DP=8"."""
        return layout_text(self.tp, self.ep, self.dp_attention).replace(",", "")

    # every replica of a search asks (advisor/perf/model/replica.applied): a few distinct answers
    @functools.lru_cache(maxsize=1024)  # noqa: B019 (a few frozen domains per process)
    def deployment_problem(self, model: str, tp: int, pp: int, weights: str, kv: str,
                           ep: bool = False, dp_attention: bool = False) -> str | None:  # fmt: skip
        """Why a deployment is outside the profile's, or None. The MoE layout counts: a profile
        fitted on runs with plain TP never saw expert parallelism's gathers or attention DP's
        replicated attention (and the other way round), so its constants are not checked there.

        >>> d = Domain("m", 8, 1, "bf16", "bf16", ())
        >>> d.deployment_problem("m", 4, 1, "bf16", "bf16")
        'TP=4 (the profile was fitted on m TP=8 PP=1 bf16/bf16)'
        >>> d.deployment_problem("m", 8, 1, "bf16", "bf16", ep=True, dp_attention=True)
        'layout TP=8, EP=8, attention DP=8 (the profile was fitted on m TP=8 PP=1 bf16/bf16)'
        """
        got = dict(model=model, TP=tp, PP=pp, weights=weights, KV=kv)
        want = dict(model=self.model, TP=self.tp, PP=self.pp, weights=self.weights, KV=self.kv)
        diff = [f"{k}={v}" if k in ("TP", "PP") else f"{k} {v}" for k, v in got.items()
                if v != want[k]]  # fmt: skip
        if (bool(ep), bool(dp_attention)) != (self.ep, self.dp_attention):
            diff.append(f"layout {layout_text(tp, ep, dp_attention)}")
        if not diff:
            return None
        return (f"{', '.join(diff)} (the profile was fitted on {self.model} {self._layout} "
                f"PP={self.pp} {self.weights}/{self.kv})")  # fmt: skip

    def problem(self, model: str, tp: int, pp: int, weights: str, kv: str, ep: bool,
                dp_attention: bool, work: Work | None) -> str | None:  # fmt: skip
        """Why the profile does not apply to a replica of this deployment serving ``work``, or
        None: the one rule every prediction follows (advisor/perf/model/replica.applied).
        Without a workload nothing says the replica runs where the client measured.

        >>> d = Domain("m", 8, 1, "bf16", "bf16", (("request rate", (500, 510), (530, 540), (1, 8)),))
        >>> d.problem("m", 8, 1, "bf16", "bf16", False, False, Work(512, 512, "request rate", 2.0)) is None
        True
        >>> d.problem("m", 8, 1, "bf16", "bf16", False, False, None)
        'no workload stated (a chart of the replica alone)'
        >>> d.problem("m", 8, 1, "bf16", "bf16", False, False, Work(512, 512, "concurrency", 64, 15))
        "users with 15 s think time (the profile's runs are benchmark loads without think time)"
        """
        why = self.deployment_problem(model, tp, pp, weights, kv, ep, dp_attention)
        if why:
            return why
        if work is None:
            return NO_WORKLOAD
        if work.think_time_s > 0:
            return (f"users with {work.think_time_s:g} s think time (the profile's runs are "
                    "benchmark loads without think time)")  # fmt: skip
        return self.workload_problem(work.isl, work.osl, work.mode, work.load)

    def workload_problem(self, isl: float, osl: float, mode: str, load: float) -> str | None:
        """Why a workload is outside the profile's runs, or None. The load must lie within the
        span of the runs of its mode whose lengths match its own (a length class): a load
        measured only at other lengths is not a condition the client measured.

        >>> d = Domain("m", 8, 1, "bf16", "bf16", (("request rate", (500, 510), (530, 540), (1, 8)),
        ...                                        ("request rate", (224, 225), (189, 190), (4, 4))))
        >>> d.workload_problem(512, 512, "request rate", 2.1) is None
        True
        >>> d.workload_problem(224, 189, "request rate", 8)
        'request rate 8 req/s is outside 4 req/s, what its runs at these lengths (input 224-225, output 189-190 tokens) cover'
        >>> d.workload_problem(350, 300, "request rate", 4)
        'input 350, output 300 tokens: no request rate run at these lengths (input 500-510, output 530-540; input 224-225, output 189-190 tokens)'
        >>> d.workload_problem(512, 512, "concurrency", 8)
        'a concurrency load (the profile covers a request rate)'
        """
        spans = [m for m in self.modes if m[0] == mode]
        if mode == DISAGGREGATED:
            return ("a pool of a disaggregated deployment (the profile's runs prefill and decode "
                    "on the same replicas)")  # fmt: skip
        if not spans:
            covered = " and ".join(dict.fromkeys(f"a {m[0]}" for m in self.modes))
            return f"{'an' if mode[0] in 'o' else 'a'} {mode} load (the profile covers {covered})"
        same = [m for m in spans if inside(isl, m[1]) and inside(osl, m[2])]
        if not same:
            known = "; ".join(f"input {_span(m[1])}, output {_span(m[2])}" for m in spans)
            return f"input {isl:g}, output {osl:g} tokens: no {mode} run at these lengths ({known} tokens)"
        if mode == "offline" or any(inside(load, m[3]) for m in same):
            return None
        m = same[0]
        unit = UNIT.get(mode, "")
        return (f"{mode} {load:g}{unit} is outside {_span(m[3])}{unit}, what its runs at these "
                f"lengths (input {_span(m[1])}, output {_span(m[2])} tokens) cover")  # fmt: skip

    def text(self) -> str:
        """The range in a sentence (page, CLI, PDF)."""
        parts = []
        for mode, si, so, sl in self.modes:
            load = "offline" if mode == "offline" else f"{mode} {_span(sl)}{UNIT.get(mode, '')}"
            parts.append(f"{load}, input {_span(si)}, output {_span(so)} tokens")
        return (f"{self.model} {self._layout} PP={self.pp} {self.weights}/{self.kv}; "
                + "; ".join(parts))  # fmt: skip


def inside(v: float, span: Span) -> bool:
    """``v`` within ``span`` widened by ``SLACK`` on each end.

    >>> inside(1100, (509, 934)), inside(1100, (509, 1024)), inside(450, (509, 1024))
    (False, True, False)
    """
    return span[0] * (1 - SLACK) <= v <= span[1] * (1 + SLACK)


def _span(s: Span) -> str:
    return f"{s[0]:.4g}" if s[0] == s[1] else f"{s[0]:.4g}-{s[1]:.4g}"


def modes_of(points: Iterable[tuple[str, float, float, float]]) -> tuple:
    """(mode, isl span, osl span, load span) per load mode and length class, from (kind, isl,
    osl, load) of the fitted points: a point joins a class of its mode whose lengths it matches
    (``inside``), else starts one.

    >>> modes_of([("load_ttft", 509, 534, 1.0), ("load_tput", 512, 530, 8.0),
    ...           ("load_ttft", 224, 189, 4.0), ("offline", 1024, 512, 1)])
    (('offline', (1024, 1024), (512, 512), (0, 0)), ('request rate', (224, 224), (189, 189), (4.0, 4.0)), ('request rate', (509, 512), (530, 534), (1.0, 8.0)))
    """
    classes: list[list] = []  # [mode, [isl lo, hi], [osl lo, hi], [load lo, hi]]
    for kind, isl, osl, load in sorted(points, key=lambda p: (p[1], p[2], p[3])):
        mode = MODE_OF_KIND.get(kind)
        if mode is None:
            continue
        load = 0 if mode == "offline" else load
        for c in classes:
            if c[0] == mode and inside(isl, tuple(c[1])) and inside(osl, tuple(c[2])):
                for span, v in ((c[1], isl), (c[2], osl), (c[3], load)):
                    span[0], span[1] = min(span[0], v), max(span[1], v)
                break
        else:
            classes.append([mode, [isl, isl], [osl, osl], [load, load]])
    return tuple(sorted((c[0], *(tuple(x) for x in c[1:])) for c in classes))


def load_of(qps: float | None, concurrency: object, batching: str, dp: int) -> tuple[str, float]:
    """An estimate's load mode and its load per replica (advisor/perf/model/estimate.EstimateInput).

    >>> load_of(8.0, 1, "continuous", 2), load_of(None, 64, "continuous", 1), load_of(None, "max", "continuous", 1)
    (('request rate', 4.0), ('concurrency', 64.0), ('offline', 0.0))
    """
    if qps is not None:
        return "request rate", qps / dp
    if concurrency == "max" and batching != "static":
        return "offline", 0.0
    n = float(concurrency) if isinstance(concurrency, int | float) else float("inf")
    return ("static batch" if batching == "static" else "concurrency"), n / dp


def work_of(isl: float, osl: float, qps: float | None, concurrency: object, batching: str,
            dp: int, users: int | None = None, think_time_s: float = 0.0,
            disaggregated: bool = False) -> Work:  # fmt: skip
    """The ``Work`` of one of ``dp`` replicas: the load of ``load_of``; users in a closed loop
    as their number over the replicas with their think time (whatever request rate the loop
    settles at: that rate is itself a prediction, and the calibration that predicts it cannot
    hang on it); a pool of a disaggregated deployment as ``DISAGGREGATED``.

    >>> work_of(512, 512, 2.0, None, "continuous", 4)
    Work(isl=512, osl=512, mode='request rate', load=0.5, think_time_s=0.0)
    >>> work_of(512, 512, 0.8, None, "continuous", 4, users=64, think_time_s=15).load
    16.0
    """
    if disaggregated:
        return Work(isl, osl, DISAGGREGATED, 0.0)
    if users is not None:
        return Work(isl, osl, "concurrency", users / dp, think_time_s)
    mode, load = load_of(qps, concurrency, batching, dp)
    return Work(isl, osl, mode, load)

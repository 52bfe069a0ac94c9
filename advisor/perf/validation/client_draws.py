"""What a benchmark client sent: the lengths of its prompts and answers and when it sent them.

Read from a measurement row's notes (the client's command and the totals it printed): the spread
of a random dataset's lengths (:func:`length_cv`, :func:`benchmark_lengths`), and for an SGLang
``bench_serving`` run whose seeded draws reproduce its stated token totals, the very lengths
(:func:`client_lengths`) and send times (:func:`client_arrivals`). Below the replay
(:mod:`advisor.perf.validation.bench_run`) and the row parser
(:mod:`advisor.perf.validation.measurements`), which both ask whether a run is reproducible.
"""

from __future__ import annotations

import functools
import math
import re
from dataclasses import dataclass

import numpy as np


def uniform_length_cv(low_fraction: float, high_fraction: float) -> float:
    """Coefficient of variation of a length drawn uniformly from [a L, b L].

    cv = (b - a) / (sqrt(3) (a + b)) (uniform: mean (a + b) L / 2, sd (b - a) L / sqrt(12)).

    Source: moments of the continuous uniform distribution.

    Hand check: SGLang's default [0, L]: 1 / sqrt(3) = 0.57735; vLLM with ratio 0.5,
    [0.5 L, 1.5 L]: 1 / (2 sqrt(3)) = 0.28868.

    >>> round(uniform_length_cv(0.0, 1.0), 5), round(uniform_length_cv(0.5, 1.5), 5)
    (0.57735, 0.28868)
    """
    if not 0.0 <= low_fraction <= high_fraction or high_fraction <= 0.0:
        raise ValueError(
            f"low_fraction={low_fraction!r}, high_fraction={high_fraction!r}: need "
            "0 <= low <= high and high > 0"
        )
    return (high_fraction - low_fraction) / (math.sqrt(3.0) * (high_fraction + low_fraction))


_RATIO = re.compile(r"(?:--random-range-ratio[ =]|random_range_ratio\"?:?\s*)([0-9.]+)")
#: How the notes state a client that draws [r L, L] whatever its flags say (InferenceX's
#: benchmark_serving.py, np.random.randint(int(L x ratio), L + 1), ratio from its workflow).
_STATED_UNIFORM = re.compile(r"uniform on \[int\(([0-9.]+) x L\), L\]")
#: A ShareGPT workload, named or as sglang.bench_serving's default dataset: a client command
#: without --dataset-name runs ShareGPT even when it passes --random-input-len (the rows' notes
#: say so in these words; the lengths then vary as the conversations do, not uniformly).
SHAREGPT = re.compile(
    r"dataset[-_ ]name\W+sharegpt|Dataset sharegpt|default dataset \(sharegpt"
    r"|dataset: default \(sharegpt\)|bench_serving default sharegpt"
    r"|sharegpt\S* dataset \(bench_serving default dataset\)",
    re.I,
)
RANDOM_STATED = re.compile(r"dataset[-_ ]name\W+random", re.I)


def length_cv(notes: str) -> float:
    """Spread of the request lengths of a random-dataset benchmark, read from the row's notes.

    SGLang's ``bench_serving`` samples [r L, L], vLLM's ``bench serve`` / ``benchmark_serving``
    [L (1 - r), L (1 + r)]; r is ``--random-range-ratio`` (default 0 in both clients: SGLang's
    lengths vary from 1 to L, vLLM's are fixed). Notes that state "uniform on [int(r x L), L]"
    (a client whose ratio is set outside the command, InferenceX's) give [r L, L]. Other
    datasets: 0 (the row carries no spread).

    >>> length_cv("sglang.bench_serving --dataset-name random (no --random-range-ratio given)")
    0.5773502691896258
    >>> length_cv("vllm bench serve --dataset-name random --random-input-len 1024")
    0.0
    >>> round(length_cv("benchmark_serving.py random, lengths uniform on [int(0.8 x L), L]"), 4)
    0.0642
    """
    sglang = "bench_serving" in notes and "benchmark_serving" not in notes
    if "random" not in notes:
        return 0.0
    stated = _STATED_UNIFORM.search(notes)
    if stated:
        return uniform_length_cv(float(stated.group(1)), 1.0)
    m = _RATIO.search(notes)
    ratio = float(m.group(1)) if m else 0.0
    if sglang:
        return uniform_length_cv(ratio, 1.0)
    if ratio > 1.0:
        return 0.0
    return uniform_length_cv(1.0 - ratio, 1.0 + ratio)


def benchmark_lengths(rng: np.random.Generator, mean: float, cv: float, size: int) -> np.ndarray:
    """``size`` request lengths of mean ``mean`` as the benchmark clients draw them (tokens, >= 1).

        L_i ~ Uniform[mean (1 - sqrt(3) cv), mean (1 + sqrt(3) cv)],  rounded;  cv = 0: all mean

    Both clients' random datasets draw each length uniformly (``length_cv``), so a uniform of
    the same mean and cv is the same distribution. Source: moments of the uniform distribution.

    >>> benchmark_lengths(np.random.default_rng(0), 100.0, 0.0, 3).tolist()
    [100, 100, 100]
    >>> x = benchmark_lengths(np.random.default_rng(0), 500.0, 1 / math.sqrt(3), 20_000)
    >>> int(x.min()), int(x.max()), round(float(x.mean()) / 500.0, 1)  # [0, 1000]: mean 500
    (1, 1000, 1.0)
    """
    if cv <= 0.0:
        return np.full(size, max(1, round(mean)), dtype=np.int64)
    half = math.sqrt(3.0) * cv * mean
    return np.maximum(1, np.rint(rng.uniform(mean - half, mean + half, size))).astype(np.int64)


#: Seeds SGLang's ``bench_serving`` has defaulted to (``--seed``: 1 through 0.5.x, 42 in later
#: releases); a run's draws are taken only when one of them reproduces its stated token totals.
SGLANG_DEFAULT_SEEDS = (1, 42)
_TOTALS = re.compile(r"(\d+) prompts?:\s*(\d+) input / (\d+) generated")
#: bench_serving's result JSON copied as totals: "152612 input / 160347 output tokens over 300
#: completed requests".
_JSON_TOTALS = re.compile(r"(\d+) input / (\d+) output tokens over (\d+) completed requests")


def _flag(notes: str, pattern: str) -> str | None:
    m = re.search(pattern, notes)
    return m.group(1) if m else None


@dataclass(frozen=True)
class ClientDraw:
    """What reproduces an SGLang random-dataset run's draws: its seed, nominal lengths, range
    ratio and request count, and the output lengths' lower bound (the client's release)."""

    seed: int
    requests: int
    nominal_in: int
    nominal_out: int
    ratio: float
    low_out: int

    def state(self) -> np.random.RandomState:
        """numpy's global state as the client left it after drawing the lengths."""
        st = np.random.RandomState(self.seed)
        st.randint(max(int(self.nominal_in * self.ratio), 1), self.nominal_in + 1, self.requests)
        st.randint(self.low_out, self.nominal_out + 1, self.requests)
        return st


def _totals(notes: str) -> tuple[int, int, int] | None:
    """(requests, input tokens, output tokens) the notes state for the run, or None."""
    m = _TOTALS.search(notes)
    if m:
        return int(m.group(1)), int(m.group(2)), int(m.group(3))
    m = _JSON_TOTALS.search(notes)
    return (int(m.group(3)), int(m.group(1)), int(m.group(2))) if m else None


@functools.lru_cache(maxsize=4096)
def _client_draw(notes: str) -> ClientDraw | None:
    """The draw that reproduces the run's stated totals (see :func:`client_lengths`), or None."""
    sglang = "bench_serving" in notes and "benchmark_serving" not in notes
    if not sglang or not RANDOM_STATED.search(notes) or SHAREGPT.search(notes):
        return None
    nominal_in = _flag(notes, r"--random-input(?:-len)?[ =](\d+)")
    nominal_out = _flag(notes, r"--random-output(?:-len)?[ =](\d+)")
    totals = _totals(notes)
    if not (nominal_in and nominal_out and totals):
        return None
    n, total_in, total_out = totals
    ratio = float(_flag(notes, r"(?:--random-range-ratio[ =]|random_range_ratio )([0-9.]+)") or 0.0)
    stated_seed = _flag(notes, r"--seed[ =](\d+)")
    seeds = (int(stated_seed),) if stated_seed else SGLANG_DEFAULT_SEEDS
    lo_in, hi_in = max(int(int(nominal_in) * ratio), 1), int(nominal_in)
    hi_out = int(nominal_out)
    for seed in seeds:
        for lo_out in (int(hi_out * ratio), max(int(hi_out * ratio), 1)):  # 0.5.x, later
            state = np.random.RandomState(seed)
            lens_in = state.randint(lo_in, hi_in + 1, size=n)
            lens_out = state.randint(lo_out, hi_out + 1, size=n)
            if int(lens_in.sum()) == total_in or int(lens_out.sum()) == total_out:
                return ClientDraw(seed, n, hi_in, hi_out, ratio, lo_out)
    return None


@functools.lru_cache(maxsize=4096)
def _client_draws(notes: str) -> tuple[tuple[int, ...], tuple[int, ...]] | None:
    """Cached lengths of :func:`client_lengths` (tuples: the cache hands out shared objects)."""
    d = _client_draw(notes)
    if d is None:
        return None
    st = np.random.RandomState(d.seed)
    lens_in = st.randint(max(int(d.nominal_in * d.ratio), 1), d.nominal_in + 1, d.requests)
    lens_out = st.randint(d.low_out, d.nominal_out + 1, d.requests)
    return tuple(lens_in.tolist()), tuple(np.maximum(lens_out, 1).tolist())


def client_arrivals(notes: str, rate_per_s: float) -> np.ndarray | None:
    """When an SGLang ``bench_serving`` run at a request rate sent each request (s from the
    first), where its lengths can be reproduced (:func:`client_lengths`); None otherwise.

        t_0 = 0,  t_i = t_(i-1) + X_i,  X_i = numpy.random.exponential(1 / rate)

    the gaps drawn from the same seeded state right after the lengths (the client sends a
    request, then sleeps a gap: Poisson arrivals at the requested rate).

    Source: SGLang ``bench_serving.py`` ``get_request`` (0.4.x-0.5.x).

    Hand check: DataCrunch's SGLang run at 1 req/s, 300 random 1024/1024 prompts (seed 1):
    the 300th request leaves at 293.6 s; the run printed a 298.4 s duration, the last answers
    (118 tokens for the last request) taking the rest.

    >>> notes = ('sglang.bench_serving "dataset_name": "random" --random-input 1024 '
    ...          '--random-output 1024; 152612 input / 160347 output tokens over 300 completed requests')
    >>> t = client_arrivals(notes, 1.0)
    >>> t.size, float(t[0]), round(float(t[-1]), 1)
    (300, 0.0, 293.6)
    """
    d = _client_draw(notes)
    if d is None or not rate_per_s > 0 or not math.isfinite(rate_per_s):
        return None
    gaps = d.state().exponential(1.0 / rate_per_s, d.requests)
    return np.concatenate([[0.0], np.cumsum(gaps[:-1])])


def client_lengths(notes: str) -> tuple[np.ndarray, np.ndarray] | None:
    """The (input, output) lengths an SGLang ``bench_serving`` random-dataset run sent, in order,
    when they can be reproduced; None otherwise.

        np.random.seed(s); L_in = randint(max(int(L r), 1), L + 1, n); L_out = randint(lo, O + 1, n)

    with L, O, r the run's ``--random-input-len``, ``--random-output-len``,
    ``--random-range-ratio`` (default 0), s its ``--seed`` (else the client's defaults,
    ``SGLANG_DEFAULT_SEEDS``) and lo = int(O r) (0.5.x; later releases max(int(O r), 1)). The
    draw is taken only when it reproduces the run's stated input or generated token total
    ("10 prompts: 6101 input / 4210 generated"), so a release that draws otherwise is never
    given lengths it did not send. A 10-prompt run's median prompt is then the one it sent
    (742 tokens for ``--random-input-len 1000``), not the mean (610).

    Source: SGLang ``python/sglang/bench_serving.py`` ``sample_random_requests`` (0.5.x),
    ``sglang/benchmark/datasets/common.py`` ``compute_random_lens`` (0.5.23).

    Hand check: seed 1, L = O = 1000, 10 prompts: inputs 38 236 909 73 768 906 716 646 848 961
    (sum 6101, the SGLang cookbook's stated total), median 742.

    >>> lin, lout = client_lengths("sglang.bench_serving --dataset-name random --random-input-len "
    ...     "1000 --random-output-len 1000 --num-prompts 10. 10 prompts: 6101 input / 4210 generated")
    >>> lin.tolist(), float(np.median(lin)), int(lout.sum())
    ([38, 236, 909, 73, 768, 906, 716, 646, 848, 961], 742.0, 4210)
    >>> client_lengths("sglang.bench_serving --dataset-name random --random-input-len 1000 "
    ...     "--random-output-len 1000 --num-prompts 10. 10 prompts: 6000 input / 4000 generated")
    """
    got = _client_draws(notes)
    if got is None:
        return None
    return np.array(got[0], dtype=np.int64), np.array(got[1], dtype=np.int64)

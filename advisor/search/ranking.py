"""The search's order of deployments: what it pays per hour, then the GPUs it uses, then its
headroom, then its latency (``rank_by="gpus"``: the GPUs first).

Per hour, not per token: at a fixed arrival rate every stable deployment makes the same tokens,
so the two orders agree; under a closed loop of users (N users thinking Z s) a faster
deployment makes a few % more tokens only because its users wait less, and that made a
deployment filling a whole server look cheaper per token than one using half of it at the same
price (issue 38: gpt-oss-120b for 400 clinicians on B200, 7 x TP1 + spare on 8 GPUs with 18x
headroom). Bought GPUs come in whole servers (search/cost.py), so deployments on the same
servers pay the same per hour: among them the fewest GPUs in use wins (less power drawn, the
rest of the server free for other work; the spare GPUs are said), then the most headroom
(offered / sustainable rate, the N+1 spare replica not counted), then the lower latency.
"""

from __future__ import annotations

import numpy as np

#: Per-hour prices closer than this (USD) are the same price (the same servers, summed in a
#: different order).
SAME_PRICE_USD = 1e-6


def rank_order(rank_by: str, usd_per_hour, gpus, headroom, latency) -> np.ndarray:
    """Indices of the candidates, best first (module docstring).

    >>> rank_order("cost", [10.0, 10.0, 10.0, 12.0], [8, 4, 4, 2], [18.0, 3.0, 4.0, 9.0],
    ...            [5.0, 9.0, 9.0, 1.0]).tolist()  # same price: 4 GPUs, then more headroom
    [2, 1, 0, 3]
    >>> rank_order("gpus", [10.0, 10.0, 10.0, 12.0], [8, 4, 4, 2], [18.0, 3.0, 4.0, 9.0],
    ...            [5.0, 9.0, 9.0, 1.0]).tolist()
    [3, 2, 1, 0]
    """
    return np.lexsort(_rank_keys(rank_by, usd_per_hour, gpus, headroom, latency))


def rank_first(rank_by: str, usd_per_hour, gpus, headroom, latency) -> int:
    """``rank_order(...)[0]``: the best candidate, found without sorting them all.

    >>> rank_first("cost", [10.0, 10.0, 10.0, 12.0], [8, 4, 4, 2], [18.0, 3.0, 4.0, 9.0],
    ...            [5.0, 9.0, 9.0, 1.0])
    2
    """
    return lexsort_first(_rank_keys(rank_by, usd_per_hour, gpus, headroom, latency))


def _rank_keys(rank_by: str, usd_per_hour, gpus, headroom, latency) -> tuple:
    """The ranking's keys as ``np.lexsort`` takes them (the last one first)."""
    price = _price_key(usd_per_hour)
    room = -np.nan_to_num(np.asarray(headroom, dtype=float), posinf=1e300)
    lat, n = np.asarray(latency, dtype=float), np.asarray(gpus)
    if rank_by == "gpus":
        return (lat, room, price, n)
    return (lat, room, n, price)


def _price_key(usd_per_hour) -> np.ndarray:
    """The per-hour price as the ranking compares it: rounded to SAME_PRICE_USD."""
    return np.round(np.asarray(usd_per_hour, dtype=float) / SAME_PRICE_USD) * SAME_PRICE_USD


def same_price(usd_per_hour_a, usd_per_hour_b):
    """Whether the ranking counts two per-hour prices as one (``_rank_keys``' rounding);
    elementwise for arrays.

    >>> same_price(16.86, 16.86 + 1e-9), same_price(16.86, 17.0)
    (True, False)
    >>> same_price(np.array([16.86, 17.0]), 16.86).tolist()
    [True, False]
    """
    same = _price_key(usd_per_hour_a) == _price_key(usd_per_hour_b)
    return bool(same) if same.ndim == 0 else same


#: The ranking's keys by name, the first decided first (``_rank_keys`` in reverse).
KEY_NAMES = {
    "cost": ("price", "gpus", "headroom", "latency"),
    "gpus": ("gpus", "price", "headroom", "latency"),
}


def deciding_key(rank_by: str, usd_per_hour, gpus, headroom, latency) -> str | None:
    """The first of the ranking's keys on which two candidates differ, each argument a pair
    (a, b): "price", "gpus", "headroom" or "latency", or None where they tie on all four. The
    sentences that say why a deployment ranks below another (``search.explain``, the PDF's
    alternatives) name this key, so they give the reason the ranking used.

    >>> deciding_key("cost", (24.09, 24.09), (6, 6), (2.5, 1.4), (36.0, 21.1))
    'headroom'
    >>> deciding_key("cost", (24.09, 24.09), (6, 8), (2.5, 9.0), (36.0, 21.1))
    'gpus'
    >>> deciding_key("gpus", (30.0, 24.09), (6, 8), (2.5, 9.0), (36.0, 21.1))
    'gpus'
    >>> deciding_key("cost", (16.86, 16.86 + 1e-9), (6, 6), (2.5, 2.5), (36.0, 36.0)) is None
    True
    """
    keys = _rank_keys(rank_by, usd_per_hour, gpus, headroom, latency)
    for name, key in zip(KEY_NAMES[rank_by], reversed(keys), strict=True):
        a, b = np.asarray(key).tolist()
        if a != b:
            return name
    return None


def lexsort_first(keys) -> int:
    """``int(np.lexsort(keys)[0])`` in one pass per key instead of a sort of every row: the
    rows at the primary key's least value, among them those at the next key's least, ..., the
    first row of what is left (the sort is stable). NaN sorts last, as in ``np.lexsort``: a
    key's least value is its least non-NaN one; where every row left is NaN they all tie.
    The search picks its winner, its fastest and its closest miss out of tens of thousands of
    candidates this way (~7 ms of a 36,000-candidate search was the sort).

    >>> k = (np.array([3.0, 1.0, 2.0, 0.0]), np.array([1.0, 0.0, 0.0, np.nan]))
    >>> lexsort_first(k), int(np.lexsort(k)[0])
    (1, 1)
    >>> lexsort_first((np.array([2.0, 1.0]), np.array([np.nan, np.nan])))  # NaNs tie
    1
    """
    rows = None
    for key in reversed(keys):
        v = np.asarray(key)
        if rows is not None:
            v = v[rows]
        if v.dtype.kind == "f":
            ok = ~np.isnan(v)
            if not ok.any():
                continue
            least = v[ok].min()
        else:
            least = v.min()
        at = np.flatnonzero(v == least)
        rows = at if rows is None else rows[at]
        if rows.size == 1:
            break
    return 0 if rows is None else int(rows[0])


def tie_break_text(gpus: int, servers_gpus: int, headroom: float, others: int) -> str:
    """Why the winner, among ``others`` deployments at its price, wins, with its spare GPUs.

    >>> tie_break_text(2, 8, 4.2, 17)
    '17 other deployments cost the same per hour (the same 8 GPUs bought): it uses the fewest GPUs (2; 6 spare for other work), then has the most headroom (4.2x)'
    """
    spare = servers_gpus - gpus
    return (
        f"{others} other deployment{'s' if others != 1 else ''} cost the same per hour (the "
        f"same {servers_gpus} GPUs bought): it uses the fewest GPUs ({gpus}"
        + (f"; {spare} spare for other work" if spare > 0 else "")
        + f"), then has the most headroom ({headroom:.1f}x)"
    )

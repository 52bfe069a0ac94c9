"""Speculative decoding over acceptance rate, draft length and batch, vectorised.

``advisor.perf.model.estimate`` uses these step times too (draft on the same GPUs with TP = min(TP,
draft KV heads), verification of k+1 query tokens per sequence in one target step, each
attending to the whole context):

    speedup(a, k, b) = E(a, k) x T_plain(b) / (k x T_draft(b) + T_verify(b, k))

with E the expected tokens per target step (Leviathan et al. 2023, eq. 1).
"""

from __future__ import annotations

import numpy as np

from advisor.catalog.drafts import MTP, has_own_head, tokenizer_problem
from advisor.catalog.specs import ModelSpec
from advisor.perf.model.replica import ReplicaConfig, build_replicas, repeat
from advisor.perf.model.step import decode_step
from advisor.physics.speculative import expected_tokens_per_step


def draft_config(cfg: ReplicaConfig, draft: ModelSpec) -> ReplicaConfig:
    """The draft's replica: same GPUs, links and dtypes, TP = min(TP, draft KV heads), PP = 1."""
    return ReplicaConfig(
        model=draft, gpu=cfg.gpu, tp=min(cfg.tp, draft.num_key_value_heads), pp=1,
        weights=cfg.weights, kv=cfg.kv, engine=cfg.engine, intra_link=cfg.intra_link,
        inter_link=cfg.inter_link, gpus_per_node=cfg.gpus_per_node,
    )  # fmt: skip


def step_times(
    cfg: ReplicaConfig, draft: ModelSpec, batches: np.ndarray, ks: np.ndarray, ctx: float
) -> dict:
    """Plain, draft and verify step times (s): plain/draft shape [nb], verify shape [nk, nb]."""
    b = np.asarray(batches, dtype=float).reshape(-1)
    k = np.asarray(ks, dtype=float).reshape(-1)
    target = build_replicas([cfg])
    d = build_replicas([draft_config(cfg, draft)])
    nb, nk = b.size, k.size
    plain = decode_step(repeat(target, nb), b, np.full(nb, ctx)).total
    draft_s = decode_step(repeat(d, nb), b, np.full(nb, ctx)).total
    bb = np.tile(b, nk)  # [nk * nb], k major
    kk = np.repeat(k, nb)
    verify = decode_step(
        repeat(target, nb * nk), bb, np.full(nb * nk, ctx), query_tokens_per_seq=kk + 1.0
    ).total.reshape(nk, nb)
    return {"plain_s": plain, "draft_s": draft_s, "verify_s": verify}


def speedup_grid(
    cfg: ReplicaConfig,
    draft: ModelSpec,
    batch: float,
    ctx: float,
    acceptances: np.ndarray,
    ks: np.ndarray,
) -> np.ndarray:
    """Speedup per token at one batch, shape [len(ks), len(acceptances)]."""
    a = np.asarray(acceptances, dtype=float).reshape(-1)
    k = np.asarray(ks, dtype=float).reshape(-1)
    t = step_times(cfg, draft, np.array([batch]), k, ctx)
    e = expected_tokens_per_step(a[None, :], k[:, None])
    return e * t["plain_s"][0] / (k[:, None] * t["draft_s"][0] + t["verify_s"][:, :1])


def speedup_vs_batch(
    cfg: ReplicaConfig,
    draft: ModelSpec,
    batches: np.ndarray,
    ctx: float,
    acceptance: float,
    ks: np.ndarray,
) -> np.ndarray:
    """Speedup per token against batch for each k, shape [len(ks), len(batches)]."""
    k = np.asarray(ks, dtype=float).reshape(-1)
    t = step_times(cfg, draft, batches, k, ctx)
    e = np.asarray(expected_tokens_per_step(acceptance, k))[:, None]
    return e * t["plain_s"][None, :] / (k[:, None] * t["draft_s"][None, :] + t["verify_s"])


def break_even_batch(batches: np.ndarray, speedup: np.ndarray) -> float | None:
    """First batch at which the speedup falls below 1 (None if it never does in the range).

    >>> break_even_batch(np.array([1, 2, 4, 8]), np.array([2.0, 1.5, 0.9, 0.7]))
    4.0
    """
    below = np.nonzero(np.asarray(speedup) < 1.0)[0]
    return float(np.asarray(batches)[below[0]]) if below.size else None


def paying_batches(batches: np.ndarray, speedup: np.ndarray) -> str:
    """The batches at which the speedup is at least 1, as text. Not always "up to a break-even":
    a mixture-of-experts target reads more experts per step as its batch grows while a dense
    draft's step stays flat, so speculation can start paying only at some batch (issue 38: the
    page said "stops paying at batch 1" beside a 1.26x speedup at the scenario's batch 43).

    >>> paying_batches(np.array([1, 2, 4, 8]), np.array([2.0, 1.5, 0.9, 0.7]))
    'batch 1 to 2'
    >>> paying_batches(np.array([1, 2, 4, 8, 16]), np.array([0.9, 0.95, 1.1, 1.2, 1.3]))
    'batch 4 to 16 (the largest tried)'
    >>> paying_batches(np.array([1, 2]), np.array([0.9, 0.8]))
    'none up to batch 2'
    """
    b, ok = np.asarray(batches), np.asarray(speedup) >= 1.0
    if not ok.any():
        return f"none up to batch {b[-1]:,.0f}"
    runs, i = [], 0
    while i < ok.size:
        if ok[i]:
            j = i
            while j + 1 < ok.size and ok[j + 1]:
                j += 1
            last = " (the largest tried)" if j == ok.size - 1 and ok.size > 1 else ""
            runs.append(f"{b[i]:,.0f}" if i == j else f"{b[i]:,.0f} to {b[j]:,.0f}{last}")
            i = j
        i += 1
    return "batch " + ", ".join(runs)


def compatible_drafts(target: ModelSpec, catalog: dict[str, ModelSpec] | None = None) -> list[str]:
    """Drafts for ``target``: its own head (``MTP``) first, then smaller catalog models with its
    tokenizer, smallest first (the cheapest draft step).

    >>> from advisor.catalog import get_model
    >>> compatible_drafts(get_model("qwen3-235b-a22b"))
    ['qwen3-8b', 'qwen3-30b-a3b', 'qwen3-32b']
    >>> compatible_drafts(get_model("deepseek-r1"))
    ['mtp']
    >>> compatible_drafts(get_model("llama-3.1-70b"))[:2]
    ['llama-3.2-1b', 'llama-3.2-3b']
    """
    from advisor.catalog import models
    from advisor.physics.params import param_breakdown

    catalog = models() if catalog is None else catalog
    n = param_breakdown(target).total
    sizes = {
        k: param_breakdown(m).total
        for k, m in catalog.items()
        if k != target.id and tokenizer_problem(target, m) is None
    }
    smaller = sorted((k for k, s in sizes.items() if s < n), key=lambda k: sizes[k])
    return ([MTP] if has_own_head(target) else []) + smaller


def default_draft(target: ModelSpec) -> str | None:
    """The draft a target gets unless one is chosen: its own head, else the smallest catalog
    model with its tokenizer, else None (no speculative decoding to search)."""
    drafts = compatible_drafts(target)
    return drafts[0] if drafts else None

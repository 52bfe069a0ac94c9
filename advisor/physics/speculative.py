"""Speculative decoding: expected accepted tokens per target step and the speedup.

Source: Leviathan, Kalman and Matias 2023, "Fast Inference from Transformers via Speculative
Decoding" (ICML; arXiv 2211.17192), equation (1) and Theorem 3.8.
"""

from __future__ import annotations

import numpy as np


def expected_tokens_per_step(acceptance: float, draft_tokens: int) -> float:
    """Expected tokens one target step yields: (1 - a^(k+1)) / (1 - a); k + 1 when a = 1.

    Includes the token the target model adds itself, so a = 0 gives exactly 1.

    >>> expected_tokens_per_step(0.0, 4)
    1.0
    >>> round(expected_tokens_per_step(0.8, 4), 4)  # (1 - 0.8^5) / 0.2
    3.3616
    >>> expected_tokens_per_step(1.0, 4)
    5.0
    """
    a = np.asarray(acceptance, dtype=float)
    k = np.asarray(draft_tokens, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = (1.0 - a ** (k + 1.0)) / (1.0 - a)
    out = np.where(a >= 1.0, k + 1.0, e)
    return float(out) if out.ndim == 0 else out


def speculative_speedup(
    acceptance: float,
    draft_tokens: int,
    draft_step_s: float,
    target_step_s: float,
    verify_step_s: float,
) -> float:
    """Walltime speedup per token: E x T_target / (k x T_draft + T_verify).

    With T_verify = T_target (verifying k+1 tokens costs one memory-bound step) this is the
    paper's E / (k c + 1), c = T_draft / T_target. At large batch T_verify grows (the step turns
    compute-bound), so the speedup shrinks and can fall below 1 (vLLM measured 1.4-1.8x
    slowdowns at high QPS; data/measurements.csv M0850-M0851).

    >>> round(speculative_speedup(0.8, 4, 1.0, 10.0, 10.0), 3)  # 3.3616 / (0.4 + 1)
    2.401
    """
    e = expected_tokens_per_step(acceptance, draft_tokens)
    return e * target_step_s / (draft_tokens * draft_step_s + verify_step_s)

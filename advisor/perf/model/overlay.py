"""A client calibration layered on the shipped one, for one accelerator and one engine.

A client profile (advisor/perf/calibration/client_profile.py) fits a few constants to the client's own
benchmark files; while it is active, replicas of its accelerator with its engine, of its
deployment and serving a workload inside its runs' range, are built with them
(advisor/perf/model/replica.applied decides), every other replica with the shipped
calibration. The active overlays live in a context variable, so one app session's profile never
leaks into another's (Streamlit runs each session's script in its own thread).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from advisor.perf.model.profile_range import Domain


@dataclass(frozen=True)
class Overlay:
    """Multipliers on the shipped achieved bandwidth and compute, and overheads replacing the
    engine's (None: the shipped value)."""

    mem_factor: float = 1.0
    compute_factor: float = 1.0
    step_overhead_s: float | None = None
    request_overhead_s: float | None = None
    #: Where the constants were checked (a client profile's runs); None: everywhere (a fit's
    #: own trial overlays). Outside it the shipped calibration applies.
    domain: Domain | None = None


_ACTIVE: contextvars.ContextVar[dict[tuple[str, str], Overlay] | None] = contextvars.ContextVar(
    "client_overlays", default=None
)


def overlay_for(gpu_id: str, engine: str) -> Overlay | None:
    """The active overlay for replicas of ``gpu_id`` served by ``engine``, if any."""
    return (_ACTIVE.get() or {}).get((gpu_id, engine))


@contextlib.contextmanager
def active(gpu_id: str, engine: str, overlay: Overlay | None) -> Iterator[None]:
    """Within the block, replicas of (gpu_id, engine) use ``overlay`` (None: none)."""
    current = dict(_ACTIVE.get() or {})
    if overlay is None:
        current.pop((gpu_id, engine), None)
    else:
        current[(gpu_id, engine)] = overlay
    token = _ACTIVE.set(current)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def set_global(gpu_id: str, engine: str, overlay: Overlay | None) -> None:
    """Make ``overlay`` active for the rest of this context (a CLI run applying --profile)."""
    current = dict(_ACTIVE.get() or {})
    if overlay is None:
        current.pop((gpu_id, engine), None)
    else:
        current[(gpu_id, engine)] = overlay
    _ACTIVE.set(current)


def use_only(gpu_id: str | None, engine: str | None, overlay: Overlay | None) -> None:
    """Exactly this overlay (or none) for the rest of this context: an app run sets the
    session's profile, or clears what a previous run on the same thread left."""
    _ACTIVE.set({(gpu_id, engine): overlay} if overlay is not None and gpu_id and engine else None)


def active_key() -> str:
    """The active overlays as text: part of a cache key for results that depend on them."""
    return repr(sorted((_ACTIVE.get() or {}).items()))


@contextlib.contextmanager
def shipped_only() -> Iterator[None]:
    """Within the block, no overlay: the shipped calibration alone (the Trust page's check)."""
    token = _ACTIVE.set(None)
    try:
        yield
    finally:
        _ACTIVE.reset(token)

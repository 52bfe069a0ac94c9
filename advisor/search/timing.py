"""Per-phase wall time of one search (exclusive times, ms), for the bench and the JSON output.

``recommend`` opens a :class:`Phases` and activates it for the current context; code anywhere
below it wraps a stretch of work in ``with phase("name"):``. Nested phases are exclusive: time
spent in an inner phase is not counted again in the outer one. Outside a search ``phase`` does
nothing (so the helpers stay usable on their own).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

#: Phase names in pipeline order (the bench prints them in this order).
PHASES = ("enumerate", "build", "evaluate", "queueing", "rank", "explain")

_CURRENT: ContextVar[Phases | None] = ContextVar("search_phases", default=None)


class Phases:
    """Accumulates exclusive wall time (ms) per phase name.

    >>> ph = Phases()
    >>> with ph.active():
    ...     with phase("build"):
    ...         with phase("queueing"):
    ...             pass
    >>> sorted(ph.ms)
    ['build', 'queueing']
    """

    def __init__(self) -> None:
        self.ms: dict[str, float] = {}
        self._stack: list[list] = []  # [name, seconds spent in inner phases]

    @contextmanager
    def active(self) -> Iterator[Phases]:
        token = _CURRENT.set(self)
        try:
            yield self
        finally:
            _CURRENT.reset(token)

    @contextmanager
    def measure(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        self._stack.append([name, 0.0])
        try:
            yield
        finally:
            elapsed = time.perf_counter() - t0
            _, inner = self._stack.pop()
            self.ms[name] = self.ms.get(name, 0.0) + (elapsed - inner) * 1e3
            if self._stack:
                self._stack[-1][1] += elapsed


@contextmanager
def phase(name: str) -> Iterator[None]:
    """Count the enclosed work under ``name`` in the active :class:`Phases` (if any)."""
    ph = _CURRENT.get()
    if ph is None:
        yield
        return
    with ph.measure(name):
        yield

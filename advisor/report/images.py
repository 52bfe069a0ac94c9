"""Plotly figures to PNG bytes with kaleido 1.x, one browser kept alive across exports.

kaleido 1.x drives a Chrome/Chromium found via ``BROWSER_PATH`` or on PATH. Each plain
``fig.to_image()`` starts a browser (3-6 s); ``kaleido.start_sync_server()`` once, then each image
costs about 0.3 s. The server starts on the first export and is stopped at interpreter exit.

When no browser is found (or the export fails), ``figure_png`` returns None and
:func:`charts_status` says why and how to enable charts; the report lists the missing charts.
"""

from __future__ import annotations

import atexit
import os
import shutil
import sys
import threading
import warnings
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout

ENABLE_HINT = "install chromium (apt-get install chromium) or set BROWSER_PATH"
BROWSER_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")
#: Seconds one image may take (the first includes the browser start).
EXPORT_TIMEOUT_S = 60.0

# plotly passes kopts on every call; with a server running kaleido warns that they are ignored.
warnings.filterwarnings("ignore", message="The kopts argument is ignored", category=UserWarning)

_lock = threading.Lock()
_state: dict = {"started": False, "broken": None}
_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="kaleido-export")


def browser_path() -> str | None:
    """The browser kaleido will use: ``BROWSER_PATH`` if it exists, else one on PATH."""
    env = os.environ.get("BROWSER_PATH")
    if env:
        return env if os.path.isfile(env) and os.access(env, os.X_OK) else None
    for name in BROWSER_NAMES:
        found = shutil.which(name)
        if found:
            return found
    return None


def charts_status() -> tuple[bool, str]:
    """(available, message): whether charts can be exported now, and if not, why and how."""
    if _state["broken"]:
        return False, f"chart export failed ({_state['broken']}); {ENABLE_HINT}"
    try:
        import kaleido  # noqa: F401
    except ImportError:
        return False, "the kaleido package is not installed (pip install kaleido)"
    if browser_path() is None:
        return False, f"no Chrome/Chromium browser found: {ENABLE_HINT}"
    return True, "charts exported with kaleido"


def _start() -> bool:
    if _state["started"]:
        return True
    ok, _ = charts_status()
    if not ok:
        return False
    import kaleido

    path = browser_path()
    if path and not os.environ.get("BROWSER_PATH"):
        os.environ["BROWSER_PATH"] = path  # kaleido/choreographer look here first
    # No MathJax: kaleido fetches it from a CDN by default (a request from the consultant's
    # machine per export) and would typeset a user's "$...$" as LaTeX in the PDF's charts.
    kaleido.start_sync_server(silence_warnings=True, mathjax=False)
    _state["started"] = True
    return True


def prestart() -> None:
    """Start the browser now, without waiting for it (a no-op when charts are off or it runs).

    kaleido opens the browser and loads plotly.js in its own thread (3-6 s, most of it waiting
    on the browser): called before the CPU work that precedes the first chart (the search, the
    PDF's first pages), that wait overlaps it. ``advisor report`` calls it first thing.
    """
    with _lock:
        if _state["broken"]:
            return
        try:
            _start()
        except Exception as exc:  # noqa: BLE001 - figure_png reports it when a chart is asked
            _state["broken"] = _why(exc)


def _why(exc: Exception) -> str:
    return f"{type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"


def _quiet_hook(*_args: object) -> None:
    """Swallow errors raised while the browser shuts down (see ``stop``)."""


def stop() -> None:
    """Stop the kaleido server (registered at exit; safe to call twice).

    The browser's shutdown runs in choreographer's threads and sometimes fails to delete its
    temporary profile ("Directory not empty"); at exit that must never print a traceback in
    front of a user, so errors from those threads are swallowed while it stops.
    """
    with _lock:
        if _state["started"]:
            import kaleido

            threading.excepthook = _quiet_hook
            sys.unraisablehook = _quiet_hook
            try:
                kaleido.stop_sync_server(silence_warnings=True)
            except Exception:  # noqa: BLE001 - the process is exiting; nothing left to save
                pass
            finally:
                _state["started"] = False


atexit.register(stop)


def _render(fig, width: int, height: int, scale: float) -> bytes:
    import plotly.io as pio

    with warnings.catch_warnings():  # only this export thread; pytest resets global filters
        warnings.filterwarnings("ignore", message="The kopts argument", category=UserWarning)
        return pio.to_image(fig, format="png", width=width, height=height, scale=scale)


#: PNGs already rendered, by (figure JSON, size): re-exporting the same scenario (another client
#: name, a second click) reuses them. Bounded; oldest dropped first.
_CACHE: OrderedDict[tuple, bytes] = OrderedDict()
CACHE_ENTRIES = 48


def clear_cache() -> None:
    with _lock:
        _CACHE.clear()


def figure_png(fig, width: int, height: int, scale: float = 2) -> bytes | None:
    """PNG bytes of ``fig`` at ``scale`` x (width x height) pixels, or None if charts are off.

    Thread-safe (the app may export from several sessions): one export at a time. Identical
    figures are rendered once (:data:`CACHE_ENTRIES` kept).
    """
    with _lock:
        if _state["broken"]:
            return None
        try:
            if not _start():
                return None
            key = (fig.to_json(), width, height, scale)
            if key in _CACHE:
                _CACHE.move_to_end(key)
                return _CACHE[key]
            future = _pool.submit(_render, fig, width, height, scale)
            png = future.result(timeout=EXPORT_TIMEOUT_S)
            _CACHE[key] = png
            while len(_CACHE) > CACHE_ENTRIES:
                _CACHE.popitem(last=False)
            return png
        except FutureTimeout:
            _state["broken"] = f"no image within {EXPORT_TIMEOUT_S:.0f} s"
        except Exception as exc:  # noqa: BLE001 - the report goes on without the chart
            _state["broken"] = _why(exc)
        return None

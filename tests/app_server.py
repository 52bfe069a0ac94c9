"""Start the app with `streamlit run` on a free loopback port, for browser tests and benches.

One place for what every real-browser check needs: a free port, the server as a subprocess with
its own data folder, a health poll, and a stop by PID; plus the chromium flags this machine needs
(Debian's chromium; background networking off because the network is closed).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHOTS = ROOT / "test-output" / "screenshots"
CHROMIUM = shutil.which("chromium")
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip


#: Every browser wait is a ceiling, not a sleep: a passing run never reaches it, so it is scaled
#: up (x3 by default) for a loaded 2-core machine, where a 10 s wait once failed a correct test.
#: IA_BROWSER_WAIT_SCALE sets another factor.
WAIT_SCALE = float(os.environ.get("IA_BROWSER_WAIT_SCALE") or 3.0)


def wait_ms(ms: float) -> int:
    """A browser wait's ceiling in ms, scaled for the machine's load (WAIT_SCALE)."""
    return int(ms * WAIT_SCALE)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: Flags after the port: headless on loopback, no usage statistics.
DEFAULT_FLAGS = (
    "--server.headless", "true", "--server.address", "127.0.0.1",
    "--browser.gatherUsageStats", "false",
)  # fmt: skip


@contextlib.contextmanager
def running_app(
    data_dir: str | Path,
    port: int | None = None,
    timeout_s: float = 60.0,
    flags: Sequence[str] = DEFAULT_FLAGS,
) -> Iterator[str]:
    """Serve app.py on a free port until the block exits; yields the base URL.

    ``flags`` follow ``--server.port``; pass ``()`` to run on .streamlit/config.toml alone.
    """
    port = port or free_port()
    env = {**os.environ, "INFERENCE_ARCHITECT_DATA_DIR": str(data_dir)}
    streamlit = Path(sys.executable).with_name("streamlit")
    proc = subprocess.Popen(
        [str(streamlit), "run", "app.py", "--server.port", str(port), *flags],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                    if r.read() == b"ok":
                        break
            except OSError:
                pass
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"streamlit did not become healthy (exit code {proc.poll()})")
            time.sleep(0.25)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)

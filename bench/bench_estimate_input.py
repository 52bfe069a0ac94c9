"""Time ``advisor estimate --input`` on 100,000-line JSONL files; prints seconds and peak memory.

Target (issue 16): 100,000 lines in under 10 s with bounded memory. Printed, never asserted.
Files: the same line 100,000 times (the attack's 6.7 MB file), 100,000 lines cycling through
512 distinct deployments (a grid pasted many times), and 2,000 distinct lines (the per-line cost
of a real estimate, which no cache helps).
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _line(i: int) -> str:
    return json.dumps({"model": "llama-3.1-8b", "gpu": "h100-sxm", "isl": 64 + i, "osl": 16})


def _run(path: Path) -> tuple[float, float, int]:
    """(seconds, peak RSS of the child in MB, bytes of output) of one CLI run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as out:
        p = subprocess.run(
            [sys.executable, "-m", "advisor", "estimate", "--input", str(path), "--json"],
            stdout=out, stderr=subprocess.PIPE, cwd=ROOT, check=False,
        )  # fmt: skip
        size = out.tell()
    seconds = time.perf_counter() - t0
    if p.returncode != 0:
        raise SystemExit(f"exit {p.returncode}: {p.stderr.decode()[:300]}")
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    return seconds, max(peak, before) / 1024, size  # ru_maxrss is in kB on Linux


def main() -> None:
    cases = {
        "100,000 identical lines": [_line(0)] * 100_000,
        "100,000 lines, 512 distinct": [_line(i % 512) for i in range(100_000)],
        "2,000 distinct lines": [_line(i) for i in range(2_000)],
    }
    with tempfile.TemporaryDirectory() as tmp:
        for title, lines in cases.items():
            path = Path(tmp) / "in.jsonl"
            path.write_text("\n".join(lines) + "\n")
            seconds, peak_mb, out_bytes = _run(path)
            print(f"{title}: {path.stat().st_size / 1e6:.1f} MB in, {seconds:.1f} s "
                  f"({len(lines) / seconds:,.0f} lines/s), peak RSS {peak_mb:.0f} MB "
                  f"(max over the runs so far), {out_bytes / 1e6:.0f} MB out")  # fmt: skip


if __name__ == "__main__":
    main()

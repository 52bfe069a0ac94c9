"""How long `deploy` takes and how large its files are, from one GPU node to the 73,728-GPU
cluster of issue 34 (87 MB of Compose in 504 s before the size bound).

Per case: the seconds of ``deploy_bundle`` (the plan, the placement, every file) per engine,
the largest file in bytes and which files were refused (past 64 servers / 16 hosts no Compose).

    .venv/bin/python bench/bench_deploy.py
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from advisor.deploy.bundle import deploy_bundle  # noqa: E402
from advisor.scenario import Hardware, Scenario  # noqa: E402
from advisor.search.deployment_spec import parse_spec  # noqa: E402

CASES = [
    ("70B, 8 GPUs, TP4 x DP2", Scenario(), "h100-sxm.tp4.pp1.dp2.fp8.fp8"),
    ("70B disaggregated", Scenario(), "h100-sxm.tp4.pp1.dp1.ptp2.pdp2.fp8.fp8"),
    ("405B, 2 nodes, TP8 x PP2", Scenario(model="llama-3.1-405b", hardware=Hardware(nodes=2)),
     "h100-sxm.tp8.pp2.dp1.fp8.fp8"),
    ("8B on 73,728 GPUs", Scenario(model="llama-3.1-8b",
                                   hardware=Hardware(nodes=1024, gpus_per_node=72)),
     "h100-sxm.tp1.pp1.dp73728.fp8.fp8"),
]  # fmt: skip


def main() -> None:
    print(f"{'case':28} {'engine':7} {'seconds':>8} {'largest file':>13}  refused")
    for label, sc, text in CASES:
        for engine in ("vllm", "sglang", "trtllm"):
            t = time.perf_counter()
            b = deploy_bundle(sc, parse_spec(text), engine)
            s = time.perf_counter() - t
            big = max((len(v.encode()) for v in b.files.values()), default=0)
            print(f"{label:28} {engine:7} {s:8.2f} {big:13,}  {', '.join(b.refused) or '-'}")


if __name__ == "__main__":
    main()

"""``vllm bench throughput --output-json FILE``: offline throughput (all requests queued at once).

Layout (vllm-project/vllm vllm/benchmarks/throughput.py, ``main``): a flat JSON object
``{"elapsed_time": s, "num_requests": n, "total_num_tokens": prompt + output tokens,
"requests_per_second": n / s, "tokens_per_second": total_num_tokens / s}``. The file has no
input/output lengths: they come from the user (the --input-len / --output-len of the run).
Output tokens/s = num_requests x osl / elapsed_time. Checks: tokens_per_second = total_num_tokens /
elapsed_time and requests_per_second = num_requests / elapsed_time (identities).
"""

from __future__ import annotations

from advisor.perf.importers.cases import lengths, make_case
from advisor.perf.importers.common import (
    MAX_DURATION_S,
    MAX_REQUESTS,
    MAX_TOKENS_PER_S,
    BenchmarkFileError,
    Deployment,
    Read,
    field,
)
from advisor.perf.importers.consistency import TOL_IDENTITY, agree

FORMAT = "vllm bench throughput"
KEYS = {"elapsed_time", "num_requests", "total_num_tokens", "tokens_per_second"}


def recognise(doc: object) -> bool:
    return isinstance(doc, dict) and set(doc) >= KEYS


def read(doc: dict, name: str, dep: Deployment) -> Read:
    elapsed = field(doc, "elapsed_time", name, 1e-3, MAX_DURATION_S)
    n = field(doc, "num_requests", name, 1, MAX_REQUESTS)
    total = field(doc, "total_num_tokens", name, 1, MAX_REQUESTS * 4e6)
    tps = field(doc, "tokens_per_second", name, 1e-6, MAX_TOKENS_PER_S)
    rps = field(doc, "requests_per_second", name, 1e-9, 1e9, required=False)
    agree(name, "'tokens_per_second' and 'total_num_tokens' / 'elapsed_time'", tps,
          total / elapsed, TOL_IDENTITY, "")  # fmt: skip
    if rps is not None:
        agree(name, "'requests_per_second' and 'num_requests' / 'elapsed_time'", rps,
              n / elapsed, TOL_IDENTITY, "")  # fmt: skip
    isl, osl = lengths(dep, name, None, None)
    per_request = total / n
    # The stated lengths must be the file's: total_num_tokens counts prompt + output tokens.
    if abs(per_request / (isl + osl) - 1) > 0.10:
        raise BenchmarkFileError(
            f"{name}: field 'total_num_tokens' gives {per_request:,.0f} tokens per request, but "
            f"--isl + --osl = {isl + osl:,.0f}; state the run's input/output lengths"
        )
    tput = n * osl / elapsed
    case = make_case(dep, name, "output_tok_s", "offline", "offline throughput", isl=isl,
                     osl=osl, measured=tput, unit="output tok/s (all GPUs)")  # fmt: skip
    return Read(layout=FORMAT, cases=[case])

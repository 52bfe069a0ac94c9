"""Built-in example scenarios (pure data), one click away in the app.

Each is a plain :class:`~advisor.scenario.Scenario` plus the TP/PP the single-deployment pages
start with (``tp``, ``pp``): the recommendation searches the whole space regardless.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.scenario import SLA, Hardware, Options, Scenario, Workload


@dataclass(frozen=True)
class Example:
    key: str
    title: str
    description: str
    scenario: Scenario
    tp: int = 1
    pp: int = 1


_ARTICLE_NOTE = (
    "The article's headline: “sub-100 ms P99 latency for 70B models on a single node of 4x H100 "
    "with speculative decoding and continuous batching”. It does not say which latency; end to "
    "end cannot be meant (256 output tokens at 10 ms per token already take 2.5 s), so this "
    "example reads it as P99 TPOT ≤ 100 ms (time per output token). Set TTFT instead to test "
    "the other reading."
)

EXAMPLES: dict[str, Example] = {
    ex.key: ex
    for ex in (
        Example(
            key="70b-4xh100-tpot50",
            title="Llama 3.1 70B on 4× H100 NVLink, P99 TPOT 50 ms",
            description="One node of 4 H100 SXM joined by NVLink 4; 1,024 in / 256 out tokens at "
            "2 requests/s; P99 time per output token ≤ 50 ms.",
            scenario=Scenario(
                name="70B on 4x H100 NVLink, P99 TPOT 50 ms",
                model="llama-3.1-70b",
                hardware=Hardware(gpus=["h100-sxm"], gpus_per_node=4, intra_link="nvlink4"),
                workload=Workload(isl_tokens=1024, osl_tokens=256, arrival_rate_per_s=2.0),
                sla=SLA(percentile=99, ttft_ms=None, tpot_ms=50.0),
                options=Options(weight_dtypes=["fp8", "fp16", "int8", "int4"]),
            ),
            tp=4,
        ),
        Example(
            key="405b-2x8xh200",
            title="Llama 3.1 405B across two 8× H200 nodes",
            description="Two nodes of 8 H200 SXM (NVLink inside, InfiniBand NDR between); "
            "2,048 in / 512 out tokens at 1 request/s; P99 TTFT ≤ 3 s and TPOT ≤ 100 ms.",
            scenario=Scenario(
                name="405B on 2 nodes of 8x H200",
                model="llama-3.1-405b",
                hardware=Hardware(gpus=["h200-sxm"], gpus_per_node=8, nodes=2, inter_link="ib-ndr"),
                workload=Workload(isl_tokens=2048, osl_tokens=512, arrival_rate_per_s=1.0),
                sla=SLA(percentile=99, ttft_ms=3000.0, tpot_ms=100.0),
                options=Options(weight_dtypes=["fp8", "fp16"], kv_dtypes=["fp8", "fp16"]),
            ),
            tp=8,
            pp=2,
        ),
        Example(
            key="8b-1xl40s",
            title="Llama 3.1 8B on one L40S",
            description="A single L40S (48 GB, PCIe); 512 in / 256 out tokens at 1 request/s; "
            "P99 TPOT ≤ 50 ms.",
            scenario=Scenario(
                name="8B on one L40S",
                model="llama-3.1-8b",
                hardware=Hardware(gpus=["l40s"], gpus_per_node=1),
                workload=Workload(isl_tokens=512, osl_tokens=256, arrival_rate_per_s=1.0),
                sla=SLA(percentile=99, ttft_ms=None, tpot_ms=50.0),
                options=Options(weight_dtypes=["fp16", "fp8", "int8", "int4"], engine="vllm"),
            ),
            tp=1,
        ),
        Example(
            key="mixtral-mi300x",
            title="Mixtral 8x7B on 2× MI300X",
            description="Two MI300X (192 GB each, Infinity Fabric) served with vLLM; 1,024 in / "
            "256 out tokens at 4 requests/s; P99 TPOT ≤ 50 ms.",
            scenario=Scenario(
                name="Mixtral 8x7B on MI300X",
                model="mixtral-8x7b",
                hardware=Hardware(gpus=["mi300x"], gpus_per_node=2),
                workload=Workload(isl_tokens=1024, osl_tokens=256, arrival_rate_per_s=4.0),
                sla=SLA(percentile=99, ttft_ms=None, tpot_ms=50.0),
                options=Options(weight_dtypes=["fp16", "fp8"], engine="vllm"),
            ),
            tp=2,
        ),
        Example(
            key="article-70b-100ms",
            title="The article: 70B under 100 ms on 4× H100 (read as P99 TPOT)",
            description=_ARTICLE_NOTE,
            scenario=Scenario(
                name="Article: 70B under 100 ms on 4x H100 (P99 TPOT)",
                model="llama-2-70b",
                hardware=Hardware(gpus=["h100-sxm"], gpus_per_node=4, intra_link="nvlink4"),
                workload=Workload(isl_tokens=1024, osl_tokens=256, arrival_rate_per_s=2.0),
                sla=SLA(percentile=99, ttft_ms=None, tpot_ms=100.0),
                options=Options(weight_dtypes=["int4", "fp8", "fp16"], speculative=True),
            ),
            tp=4,
        ),
    )
}

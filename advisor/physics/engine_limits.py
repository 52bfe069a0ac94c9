"""Layouts an engine refuses when it starts, though memory and the model allow them.

Each rule is one function returning why (with the nearest layout the engine runs) or None; the
search leaves such shapes out for the scenario's engine (advisor/search/space.py) and the
launch generator refuses them for ``deploy --deployment`` (advisor/deploy/engines.py).
"""

from __future__ import annotations

from advisor.catalog.checkpoint_table import loadable_checkpoint
from advisor.catalog.drafts import MTP
from advisor.catalog.specs import Accelerator, ModelSpec
from advisor.physics.memory import expert_parallel_blocker

#: NVIDIA GPUs of compute capability 10.x (sm100/sm103: B200, B300, GB200, GB300; the RTX PRO
#: 6000 is 12.0), where SGLang 0.5.23 runs Qwen3-MoE FP8 experts on flashinfer_trtllm by default
#: (srt/arg_groups/model_overrides/qwen3_moe.py:78-86), which pads an expert's slice to a
#: multiple of 128 before the block check (layers/moe/fused_moe_triton/layer.py:514-522).
_SM100 = frozenset({"b200", "b300", "gb200", "gb300"})


def block_quantized_moe_tp_blocker(
    model: ModelSpec, gpu: Accelerator, tp: int, ep: bool, weights: str, engine: str
) -> str | None:
    """Why ``engine`` refuses to load ``model``'s block-quantized checkpoint with its experts
    split over ``tp`` GPUs; None if it loads it.

        refused when (moe_intermediate_size / MoE-TP) mod block != 0,  MoE-TP = 1 under EP, else TP

    A block-FP8 checkpoint scales each block x block tile of a weight; tensor parallel MoE gives
    each GPU moe_intermediate_size / MoE-TP columns of every expert (its gate/up outputs, its
    down inputs), which must hold whole blocks. Expert parallel keeps experts whole.
    Source: sglang 0.5.23 srt/layers/quantization/fp8.py:1578-1599 (Fp8MoEMethod.create_weights:
    "The output_size of gate's and up's weight = ... is not divisible by weight quantization
    block_n"), layers/moe/fused_moe_triton/layer.py:428 (intermediate_size_per_partition =
    intermediate_size // moe_tp_size). SGLang only: vLLM 0.34.0 refines the block grid
    (model_executor/layers/quantization/fp8.py); TensorRT-LLM is not checked (no pinned 1.1.0
    source here) and loads ModelOpt exports (data/checkpoints.yaml). Not refused where SGLang
    pads the slice: Qwen3-MoE FP8 on sm100 GPUs (``_SM100``). AMD: the check is skipped only
    with SGLANG_USE_AITER=1 (fp8.py:1584-1585, off by default; the launch does not set it).

    >>> from advisor.catalog import get_accelerator, get_model
    >>> h100, m = get_accelerator("h100-sxm"), get_model("minimax-m2")
    >>> # MiniMax-M2.5: 1536 / 8 = 192 columns per GPU, not a multiple of 128
    >>> block_quantized_moe_tp_blocker(m, h100, 8, False, "fp8", "sglang").split(":")[0]
    'SGLang refuses MiniMaxAI/MiniMax-M2.5 (FP8 in 128 x 128 blocks) with MoE tensor parallel 8'
    >>> # 1536 / 4 = 384 = 3 x 128; EP keeps the 1536 columns whole; vLLM refines the grid
    >>> [block_quantized_moe_tp_blocker(m, h100, t, e, "fp8", g) for t, e, g in (
    ...     (4, False, "sglang"), (8, True, "sglang"), (8, False, "vllm"))]
    [None, None, None]
    """
    if engine != "sglang" or not model.is_moe or not model.moe_intermediate_size:
        return None
    if model.family == "qwen3_moe" and gpu.id in _SM100:
        return None
    ck = loadable_checkpoint(model.id, weights, engine, gpu.vendor)
    block = ck.get("weight_block") if ck else None
    moe_tp = 1 if ep else tp
    inter = model.moe_intermediate_size
    if not block or (inter % moe_tp == 0 and (inter // moe_tp) % block == 0):
        return None
    nearest = []
    if not ep and inter % block == 0 and expert_parallel_blocker(model, tp) is None:
        nearest.append(f"EP={tp} on the same GPUs (expert parallel: whole experts per GPU)")
    fits = [t for t in (2, 4, 8, 16) if t < tp and inter % t == 0 and (inter // t) % block == 0]
    if fits and not ep:
        nearest.append(f"TP={max(fits)}")
    return (
        f"SGLang refuses {ck['repo']} (FP8 in {block} x {block} blocks) with MoE tensor parallel "
        f"{moe_tp}: each GPU would hold {inter}/{moe_tp} = {inter / moe_tp:g} columns of every "
        f"expert, not a multiple of {block} (sglang/srt/layers/quantization/fp8.py: 'not "
        f"divisible by weight quantization block_n'); nearest: {', '.join([*nearest, 'vLLM'])}"
    )


def draft_pipeline_blocker(engine: str, draft: str | None, tp: int, pp: int) -> str | None:
    """Why ``engine`` cannot run a separate draft model ``draft`` at TP ``tp`` x PP ``pp``;
    None if it can.

    TensorRT-LLM's PyExecutor refuses a drafter under its pipeline-parallel executor loop:
    ``NotImplementedError("Drafting is not supported for selected executor loop. Please disable
    disagg/pipeline parallelism scheduler.")``. Source: tensorrt_llm/_torch/pyexecutor/
    py_executor.py (the ``if self.drafter is not None`` check against ``_executor_loop_pp``),
    reported on 1.2.0rc2 in NVIDIA/TensorRT-LLM issue 9009 and present from 1.0; not read at
    the pinned 1.1.0 (no local wheel). One-model MTP builds no drafter, so it is not refused.

    >>> draft_pipeline_blocker("trtllm", "qwen3-8b", 4, 2).split("; ")[1]
    'nearest: TP=8, PP=1 on the same GPUs, no speculation at PP=2, or vLLM / SGLang with the draft model'
    >>> draft_pipeline_blocker("trtllm", "mtp", 4, 2), draft_pipeline_blocker("vllm", "qwen3-8b", 4, 2)
    (None, None)
    """
    if not engine.startswith("trtllm") or draft in (None, MTP) or pp <= 1:
        return None
    return (
        f"TensorRT-LLM runs a separate draft model ({draft}) only without pipeline parallelism "
        f"(its PyExecutor: 'Drafting is not supported for selected executor loop'); nearest: "
        f"TP={tp * pp}, PP=1 on the same GPUs, no speculation at PP={pp}, or vLLM / SGLang with "
        "the draft model"
    )

"""``advisor memory``: per-GPU memory budget and how many sequences fit."""

from __future__ import annotations

import argparse
from dataclasses import asdict

from advisor.cli import CliInputError, add_json_flag, choice_of, float_in, int_in
from advisor.cli.common import (
    add_deployment_args,
    check_context,
    check_tp,
    resolve_gpu,
    resolve_model,
)
from advisor.perf.model.profiles import ENGINES
from advisor.physics.memory import PAGED_BLOCK_SIZES, memory_budget, moe_spread_blocker
from advisor.scenario import DEFAULT_ENGINE


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("memory", help="memory budget per GPU and maximum concurrent sequences")
    add_deployment_args(p)
    p.add_argument(
        "--block-size", type=choice_of([str(b) for b in PAGED_BLOCK_SIZES], "block size"),
        default="16", help="paged KV block size in tokens (16, 32, 64)",
    )  # fmt: skip
    p.add_argument(
        "--gpu-memory-utilization", type=float_in(0.05, 1.0), default=0.90,
        help="fraction of GPU memory the server may use (vLLM default 0.90)",
    )  # fmt: skip
    p.add_argument(
        "--max-model-len", type=int_in(1, 10_000_000), default=None,
        help="tokens reserved per sequence by contiguous allocation (default: model maximum)",
    )  # fmt: skip
    p.add_argument(
        "--dp-attention", dest="dp_attention", action="store_true",
        help="MoE attention data parallel over the TP GPUs: whole attention weights per GPU "
        "(and, per --engine, more: vLLM all but the routed experts, SGLang the embedding too), "
        "each sequence's KV on one GPU (vLLM --data-parallel-size, SGLang --attn-dp-size, "
        "TensorRT-LLM enable_attention_dp)",
    )  # fmt: skip
    p.add_argument(
        "--engine", type=choice_of(ENGINES, "engine"), default=DEFAULT_ENGINE,
        help=f"the engine whose --dp-attention weight placement to count (default "
        f"{DEFAULT_ENGINE}, as estimate and deploy)",
    )  # fmt: skip
    add_json_flag(p)
    return p


def run(args: argparse.Namespace) -> dict:
    model = resolve_model(args.model)
    check_tp(model, args.tp)
    gpu = resolve_gpu(args.gpu)
    check_context(model, args.context, f"--context {args.context}")
    if args.max_model_len is not None and args.max_model_len < args.context:
        raise CliInputError(
            f"--context {args.context:,} exceeds --max-model-len {args.max_model_len:,}: a "
            "server started with that maximum refuses longer sequences (give --max-model-len "
            f"{args.context:,} or more, or a shorter --context)"
        )
    if args.pp > model.num_hidden_layers:
        raise CliInputError(
            f"--pp {args.pp} exceeds the model's {model.num_hidden_layers} layers "
            f"(allowed: 1..{model.num_hidden_layers})"
        )
    blocker = moe_spread_blocker(model, args.tp) if args.dp_attention else None
    if blocker:
        raise CliInputError(f"--dp-attention: {blocker} (it needs an MoE model and --tp > 1)")
    b = memory_budget(
        model, gpu, tp=args.tp, pp=args.pp, weights_dtype=args.weights, kv_dtype=args.kv,
        context_tokens=args.context, block_size=int(args.block_size),
        gpu_memory_utilization=args.gpu_memory_utilization, max_model_len=args.max_model_len,
        attention_dp=args.dp_attention, engine=args.engine,
    )  # fmt: skip
    out = {
        "model": model.id, "gpu": gpu.id, "tp": args.tp, "pp": args.pp,
        "weights": args.weights, "kv": args.kv, "context": args.context,
        "block_size": int(args.block_size), "attention_data_parallel": args.dp_attention,
        "engine": args.engine,
    }  # fmt: skip
    out.update(asdict(b))
    return out


def render(r: dict) -> str:
    gb = 1e9
    # what attention DP keeps whole per GPU is the engine's (physics.memory.weight_placement)
    dpa = f" (attention DP, {r['engine']})" if r.get("attention_data_parallel") else ""
    lines = [
        f"{r['model']} on {r['gpu']}  TP={r['tp']}{dpa} PP={r['pp']}  "
        f"weights {r['weights']}, "
        f"KV {r['kv']}, {r['context']} tokens/sequence",
        f"  parameters            {r['params'] / 1e9:.2f}B (active {r['active_params'] / 1e9:.2f}B)",
        f"  usable memory / GPU   {r['usable_bytes'] / gb:.1f} GB of {r['capacity_bytes'] / gb:.1f} GB",
        f"  weights / GPU         {r['weights_bytes_per_gpu'] / gb:.1f} GB",
        f"  activation reserve    {r['activation_reserve_bytes'] / gb:.1f} GB",
        "  KV budget / GPU       "
        + (
            f"{r['kv_budget_bytes_per_gpu'] / gb:.1f} GB"
            if r["kv_budget_bytes_per_gpu"] > 0
            else "none (see the reason below)"
        ),  # fmt: skip
        f"  KV / token (model)    {r['kv_bytes_per_token']:,.0f} bytes",
        f"  KV / sequence / GPU   {r['kv_bytes_per_sequence_per_gpu'] / gb:.3f} GB",
        f"  max sequences         {r['max_concurrent_sequences']} paged "
        f"(block {r['block_size']}, {r['paged_utilisation']:.0%} used), "
        f"{r['max_concurrent_sequences_contiguous']} contiguous "
        f"({r['contiguous_utilisation']:.0%} used)",
        f"  fits                  {'yes' if r['fits'] else 'NO'}",
    ]
    lines += [f"  reason: {x}" for x in r["reasons"]]
    lines += [f"  would fit with: {x}" for x in r["suggestions"]]
    return "\n".join(lines)

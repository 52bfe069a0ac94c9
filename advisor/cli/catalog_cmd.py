"""``advisor catalog``: list models, accelerators, interconnects and dtypes."""

from __future__ import annotations

import argparse

from advisor.catalog import KV_DTYPES, WEIGHT_DTYPES, accelerators, interconnects, models
from advisor.cli import add_json_flag
from advisor.physics.params import active_params_as_published, param_breakdown


def add_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    p = sub.add_parser("catalog", help="list models, accelerators, interconnects and dtypes")
    add_json_flag(p)
    return p


def run(args: argparse.Namespace) -> dict:
    out_models = []
    for m in models().values():
        b = param_breakdown(m)
        out_models.append(
            {
                "id": m.id,
                "name": m.name,
                "family": m.family,
                "params": b.total,
                "active_params": active_params_as_published(m),
                "layers": m.num_hidden_layers,
                "attention": m.attention_kind,
                "moe": m.is_moe,
                "max_context": m.max_position_embeddings,
            }  # fmt: skip
        )
    out_gpus = [
        {
            "id": a.id,
            "name": a.name,
            "vendor": a.vendor,
            "memory_bytes": a.memory_bytes,
            "memory_gb_datasheet": a.memory_gb_datasheet,
            "hbm_bandwidth_bytes_per_s": a.hbm_bandwidth_bytes_per_s,
            "peak_flops_per_s": a.peak_flops_per_s.model_dump(exclude_none=True),
            "scale_up_link": a.scale_up_link,
            "scale_up_domain": a.scale_up_domain,
        }  # fmt: skip
        for a in accelerators().values()
    ]
    out_links = [
        {
            "id": i.id,
            "name": i.name,
            "kind": i.kind,
            "scope": i.scope,
            "bandwidth_bytes_per_s_one_direction": i.bandwidth_bytes_per_s,
            "latency_s": i.latency_s,
        }  # fmt: skip
        for i in interconnects().values()
    ]
    ms = [m for m in models().values() if m.is_moe]
    return {
        "models": out_models,
        "active_note": "without the input embedding (a table lookup) for "
        + ", ".join(m.id for m in ms if m.published_active_excludes_embedding)
        + "; the output layer left out too for "
        + (", ".join(m.id for m in ms if m.published_active_excludes_lm_head) or "none")
        + "; the embeddings included for the others",
        "accelerators": out_gpus,
        "interconnects": out_links,
        "weight_dtypes": list(WEIGHT_DTYPES),
        "kv_dtypes": list(KV_DTYPES),
    }


def render(result: dict) -> str:
    lines = ["Models:"]
    lines += [
        f"  {m['id']:<16} {m['params'] / 1e9:7.1f}B  {m['attention']:<3} "
        f"{'MoE ' + format(m['active_params'] / 1e9, '.1f') + 'B active' if m['moe'] else ''}"
        for m in result["models"]
    ]
    lines.append(
        f"  (MoE active parameters as each publisher counts them: {result['active_note']})"
    )
    lines.append("Accelerators:")
    lines += [
        f"  {a['id']:<14} {a['memory_bytes'] / 1e9:6.1f} GB  "
        f"{a['hbm_bandwidth_bytes_per_s'] / 1e12:4.2f} TB/s  {a['name']}"
        for a in result["accelerators"]
    ]
    lines.append("Interconnects (bandwidth one direction, per GPU):")
    lines += [
        f"  {i['id']:<12} {i['bandwidth_bytes_per_s_one_direction'] / 1e9:7.1f} GB/s  "
        f"{i['latency_s'] * 1e6:5.1f} us  {i['name']}"
        for i in result["interconnects"]
    ]
    lines.append(f"Weight dtypes: {', '.join(result['weight_dtypes'])}")
    lines.append(f"KV dtypes: {', '.join(result['kv_dtypes'])}")
    return "\n".join(lines)

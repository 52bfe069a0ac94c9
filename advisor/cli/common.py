"""Argument helpers shared by subcommands: model/GPU/link resolution with clear errors."""

from __future__ import annotations

import argparse
from pathlib import Path

from advisor.catalog import (
    KV_DTYPES,
    WEIGHT_DTYPES,
    UnknownIdError,
    get_accelerator,
    get_interconnect,
    get_model,
    models,
)
from advisor.catalog.files import (
    FileReadError,
    FileWriteError,
    check_out_target,
    read_bounded,
    write_atomic,
)
from advisor.catalog.specs import Accelerator, Interconnect, ModelSpec
from advisor.cli import CliInputError, choice_of, int_in, shown


def resolve_model(value: str, flag: str = "--model") -> ModelSpec:
    """A catalog id, or a path to a Hugging Face config.json; errors name ``flag``."""
    if value in models():
        return get_model(value)
    path = Path(value)
    try:
        is_file = path.is_file()
    except OSError:  # e.g. a name longer than the file system allows
        is_file = False
    if value.endswith(".json") or is_file:
        from advisor.catalog.hf import (
            HFConfigError,
            load_hf_config_file,
            model_from_hf_config,
        )

        try:
            cfg = load_hf_config_file(path)
            return model_from_hf_config(cfg, source=f"config.json at {path.name}")
        except HFConfigError as exc:
            raise CliInputError(f"{flag} {shown(value)}: {exc}") from None
        except OSError as exc:
            raise CliInputError(
                f"{flag} {shown(value)}: cannot read file: {exc.strerror}"
            ) from None
    raise CliInputError(
        f"{flag}: unknown model {shown(value)} (allowed: {', '.join(sorted(models()))}, "
        "or a path to a config.json)"
    )


def resolve_gpu(value: str) -> Accelerator:
    try:
        return get_accelerator(value.strip().lower())
    except UnknownIdError as exc:
        raise CliInputError(f"--gpu: {exc}") from None


def resolve_link(value: str, flag: str = "--link") -> Interconnect:
    try:
        return get_interconnect(value.strip().lower())
    except UnknownIdError as exc:
        raise CliInputError(f"{flag}: {exc}") from None


def check_link(value: str, gpus: list[Accelerator], scope: str | None, flag: str) -> Interconnect:
    """The link ``value`` names, if it can connect every one of ``gpus`` in ``scope``
    (``Interconnect.mismatch``: inside or between nodes, the vendor's own links), or exit 2."""
    link = resolve_link(value, flag)
    for gpu in gpus:
        why = link.mismatch(gpu, scope)
        if why:
            raise CliInputError(f"{flag} {shown(value)}: {why}")
    return link


def add_deployment_args(p: argparse.ArgumentParser, *, context: bool = True) -> None:
    """--model --gpu --tp --pp --weights --kv (and --context), shared by memory and estimate."""
    p.add_argument("--model", required=True, help="catalog id or path to a config.json")
    p.add_argument("--gpu", required=True, help="accelerator id (see `advisor catalog`)")
    p.add_argument("--tp", type=int_in(1, 1024), default=1, help="tensor-parallel degree")
    p.add_argument("--pp", type=int_in(1, 1024), default=1, help="pipeline-parallel degree")
    p.add_argument(
        "--weights", type=choice_of(WEIGHT_DTYPES, "weights dtype"), default="fp16",
        help=f"weights dtype ({', '.join(WEIGHT_DTYPES)})",
    )  # fmt: skip
    p.add_argument(
        "--kv", type=choice_of(KV_DTYPES, "KV dtype"), default="fp16",
        help=f"KV-cache dtype ({', '.join(KV_DTYPES)})",
    )  # fmt: skip
    if context:
        p.add_argument(
            "--context", type=int_in(1, 10_000_000), default=4096,
            help="tokens per sequence (prompt + output)",
        )  # fmt: skip


def read_input_file(value: str, flag: str, max_bytes: int) -> bytes:
    """The bytes of a user-named input file (advisor.catalog.files.read_bounded), or exit 2."""
    try:
        return read_bounded(value, max_bytes)
    except FileReadError as exc:
        raise CliInputError(f"{flag} {shown(value)}: {exc}") from None


def writable_out_path(value: str, example: str) -> Path:
    """``--out``: a file (not a folder, FIFO or device) in an existing, writable folder; checked
    before any work (advisor.catalog.files.check_out_target)."""
    if not value.strip():
        raise CliInputError(f"--out {shown(value)}: empty; give a file name (e.g. --out {example})")
    try:
        check_out_target(value)
    except FileWriteError as exc:
        raise CliInputError(f"--out {shown(value)}: {exc} (e.g. --out {example})") from None
    return Path(value)


def write_out(path: Path, data: bytes) -> None:
    """Write ``--out`` atomically (temp file + rename; a symlink there is replaced, not followed)."""
    try:
        write_atomic(path, data)
    except FileWriteError as exc:
        raise CliInputError(f"--out {shown(str(path))}: {exc}") from None


def check_tp(model: ModelSpec, tp: int) -> str:
    """Refuse a TP that cannot split the model's attention heads (physics.memory.tp_head_split),
    as vLLM and TensorRT-LLM refuse it at start-up; else how the KV heads are laid out."""
    from advisor.physics.memory import tp_head_split

    why, layout = tp_head_split(model, tp)
    if why:
        raise CliInputError(f"--tp {tp}: {why} ({model.id})")
    return layout


def check_ep(model: ModelSpec, tp: int, ep: bool) -> None:
    """Refuse expert parallelism over TP GPUs that cannot each hold whole experts
    (physics.memory.expert_parallel_blocker: EP = TP must divide the expert count), as the
    engines refuse it at start-up. A dense model's --ep stays a note (nothing to spread)."""
    from advisor.physics.memory import expert_parallel_blocker

    why = expert_parallel_blocker(model, tp) if ep and model.is_moe and tp > 1 else None
    if why:
        raise CliInputError(f"--ep with --tp {tp}: {why} ({model.id})")


def check_context(model: ModelSpec, tokens: int, flags: str) -> None:
    """Refuse a sequence longer than the model's trained context (servers refuse such requests)."""
    limit = model.max_position_embeddings
    if tokens > limit:
        raise CliInputError(
            f"{flags} = {tokens:,} tokens exceeds {model.id}'s maximum context of {limit:,} "
            f"tokens (max_position_embeddings; allowed: 1..{limit:,})"
        )

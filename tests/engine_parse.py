"""Parse server command lines with an engine's own argument parser (run in the engine's venv).

Run by tests/test_engine_parsers.py inside .venv-engines/<engine> (make setup-engines), never
by the project's venv: it imports vLLM or SGLang, whatever the project's code does not.
stdin: ``{"engine": "vllm" | "sglang" | "sglang-router", "commands": [{"id": str, "argv":
[str, ...]}]}`` where ``argv`` is what follows ``vllm serve`` (the model first), ``python3 -m
sglang.launch_server`` or ``-m sglang_router.launch_router``. stdout: ``{"version", "results"}``,
per command ``{"id", "errors", "warnings"}``.

What runs, per engine (nothing is stubbed; no GPU, no model download):
- vLLM: ``make_arg_parser(FlexibleArgumentParser())`` as ``vllm serve`` builds it
  (vllm/entrypoints/cli/serve.py), ``parse_args``, ``validate_parsed_serve_args``, then
  ``AsyncEngineArgs.from_cli_args`` (the dataclass the server builds its configs from). The
  configs themselves (``create_engine_config``) need the model's config.json from the Hub,
  so they are not built.
- SGLang: ``ServerArgs.add_cli_args`` on an ``argparse.ArgumentParser`` and ``parse_args`` as
  ``prepare_server_args`` does (sglang/srt/server_args.py). ``ServerArgs.from_cli_args`` runs
  the struct's checks, which read the GPU and the model config; they are not run.
- sglang-router (in SGLang's venv): ``RouterArgs.add_cli_args`` and ``from_cli_args`` as
  ``launch_router.parse_router_args`` does (prefill URL + bootstrap port pairs included).
An argparse error (unknown flag, a value outside ``choices``, a value of the wrong type) is an
error; a line the parser prints or logs with "deprecat" in it is a warning.
"""

from __future__ import annotations

import contextlib
import io
import json
import logging
import os
import re
import sys
import warnings


def _vllm():
    from vllm.config import CacheConfig, KVTransferConfig, ParallelConfig
    from vllm.engine.arg_utils import AsyncEngineArgs
    from vllm.entrypoints.common.cli_args import make_arg_parser, validate_parsed_serve_args
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    def check(argv: list[str]) -> None:
        args = make_arg_parser(FlexibleArgumentParser(prog="vllm serve")).parse_args(argv)
        validate_parsed_serve_args(args)
        e = AsyncEngineArgs.from_cli_args(args)
        # the configs create_engine_config builds that need no model config.json
        CacheConfig(cache_dtype=e.kv_cache_dtype, gpu_memory_utilization=e.gpu_memory_utilization)
        if isinstance(e.kv_transfer_config, dict):  # else the parser built it already
            KVTransferConfig(**e.kv_transfer_config)
        ParallelConfig(
            tensor_parallel_size=e.tensor_parallel_size,
            pipeline_parallel_size=e.pipeline_parallel_size,
            data_parallel_size=e.data_parallel_size,
            enable_expert_parallel=e.enable_expert_parallel,
        )  # without distributed_executor_backend: "ray" imports Ray, not installed here

    return check


def _sglang():
    import argparse

    from sglang.srt.server_args import ServerArgs

    def check(argv: list[str]) -> None:
        parser = argparse.ArgumentParser(prog="sglang serve")
        ServerArgs.add_cli_args(parser)
        parser.parse_args(argv)

    return check


def _router():
    import argparse

    from sglang_router.router_args import RouterArgs

    def check(argv: list[str]) -> None:  # launch_router.parse_router_args, without its imports
        parser = argparse.ArgumentParser(prog="sglang_router.launch_router")
        RouterArgs.add_cli_args(parser, use_router_prefix=False)
        RouterArgs.from_cli_args(parser.parse_args(argv), use_router_prefix=False)

    return check


def _version(engine: str) -> str:
    from importlib.metadata import version

    return version(engine)


def main() -> None:
    os.environ.setdefault("VLLM_TARGET_DEVICE", "cpu")
    req = json.load(sys.stdin)
    check = {"vllm": _vllm, "sglang": _sglang, "sglang-router": _router}[req["engine"]]()
    log = io.StringIO()
    handler = logging.StreamHandler(log)
    logging.getLogger().addHandler(handler)
    for name in ("vllm", "sglang"):  # their loggers do not propagate to the root
        logging.getLogger(name).addHandler(handler)
    out = []
    for cmd in req["commands"]:
        errors, printed = [], io.StringIO()
        log.seek(0), log.truncate()
        with (
            contextlib.redirect_stderr(printed),
            contextlib.redirect_stdout(printed),
            warnings.catch_warnings(record=True) as caught,
        ):
            warnings.simplefilter("always")
            try:
                check(cmd["argv"])
            except SystemExit:  # argparse's error(): the message is on stderr
                errors.append(printed.getvalue().strip().splitlines()[-1])
            except Exception as exc:  # a check after parsing refused the values
                errors.append(f"{type(exc).__name__}: {exc}")
        text = printed.getvalue() + log.getvalue() + "".join(str(w.message) for w in caught)
        warned = list(dict.fromkeys(  # printed and logged: once each
            re.sub(r"\x1b\[[0-9;]*m", "", ln).strip()
            for ln in text.splitlines() if "deprecat" in ln.lower()))  # fmt: skip
        out.append({"id": cmd["id"], "errors": errors, "warnings": warned})
    json.dump({"version": _version(req["engine"]), "results": out}, sys.stdout)


if __name__ == "__main__":
    main()

"""Check generated commands and TensorRT-LLM option files against the engines' flag lists.

The lists (data/engine-flags/<engine>-<version>.yaml) are the argument definitions of each
engine release's server parser, read from that release's wheel (scripts/extract_engine_flags.py); a flag not in the list, or a value
outside the flag's choices, is a problem to report, never written silently.
"""

from __future__ import annotations

import yaml

from advisor.deploy.engines import Launch
from advisor.deploy.tables import engine_flags


def command_problems(
    engine: str, args: list[tuple[str, str | None]], version: str | None = None
) -> list[str]:
    """Flags of ``args`` the engine release does not define, or values outside their choices.

    >>> command_problems("vllm", [("--tensor-parallel-size", "4"), ("--tp", "4")], "0.34.0")
    ['vllm 0.34.0: flag --tp is not in data/engine-flags/vllm-0.34.0.yaml']
    >>> command_problems("vllm", [("--kv-cache-dtype", "int8")], "0.11.0")[0][:55]
    'vllm 0.11.0: --kv-cache-dtype int8 is not one of auto, '
    """
    fl = engine_flags(engine, version)
    known, version = fl["flags"], fl["version"]
    out = []
    for flag, value in args:
        if flag not in known:
            out.append(f"{engine} {version}: flag {flag} is not in "
                       f"data/engine-flags/{engine}-{version}.yaml")  # fmt: skip
            continue
        choices = (known[flag] or {}).get("choices")
        if choices and value is not None and value not in choices:
            out.append(f"{engine} {version}: {flag} {value} is not one of "
                       f"{', '.join(map(str, choices))}")  # fmt: skip
    return out


#: The SGLang PD router's parser (pip package sglang-router, newest on PyPI on 2026-12-03; its
#: flags in data/engine-flags/sglang-router-0.3.2.yaml, from sglang_router/router_args.py).
ROUTER = ("sglang-router", "0.3.2")


def router_problems(argv: list[str]) -> list[str]:
    """Flags of an sglang-router command line its parser does not define.

    >>> router_problems(["python3", "-m", "sglang_router.launch_router", "--pd-disaggregation",
    ...                  "--prefill", "http://p:8000", "8998", "--prefil", "http://q:8000"])
    ['sglang-router 0.3.2: flag --prefil is not in data/engine-flags/sglang-router-0.3.2.yaml']
    """
    engine, version = ROUTER
    known = engine_flags(engine, version)["flags"]
    return [f"{engine} {version}: flag {a} is not in data/engine-flags/{engine}-{version}.yaml"
            for a in argv if a.startswith("--") and a not in known]  # fmt: skip


def _option_problems(doc: dict, schema: dict, where: str) -> list[str]:
    out = []
    for key, value in doc.items():
        if key not in schema:
            out.append(f"trtllm: option {where}{key} is not in the release's flag list")
            continue
        spec = schema[key] or {}
        if isinstance(value, dict):
            out += _option_problems(value, spec, f"{where}{key}.")
        elif "choices" in spec and value not in spec["choices"]:
            out.append(f"trtllm: {where}{key} {value} is not one of {', '.join(spec['choices'])}")
    return out


def launch_problems(la: Launch) -> list[str]:
    """Every flag problem of a Launch: its engine commands and TensorRT-LLM option files."""
    out = []
    for s in la.servers:
        for c in s.commands:
            if c.engine_flags:
                out += command_problems(la.engine, c.args, la.version or None)
    if la.engine == "trtllm":
        schema = engine_flags("trtllm", la.version or None)["extra_options"]
        for name, text in la.files.items():
            if name.endswith("-options.yaml"):
                out += _option_problems(yaml.safe_load(text), schema, "")
    return out

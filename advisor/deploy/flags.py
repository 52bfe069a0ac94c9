"""Check generated commands and TensorRT-LLM option files against the engines' flag lists.

The lists (data/engine-flags/) are the argument definitions of each engine's server parser at
the version its image pins, copied from the engine's source; a flag not in the list, or a value
outside the flag's choices, is a problem to report, never written silently.
"""

from __future__ import annotations

import yaml

from advisor.deploy.engines import Launch
from advisor.deploy.tables import engine_flags


def command_problems(engine: str, args: list[tuple[str, str | None]]) -> list[str]:
    """Flags of ``args`` the engine does not define, or values outside their choices.

    >>> command_problems("vllm", [("--tensor-parallel-size", "4"), ("--tp", "4")])
    ['vllm: flag --tp is not in data/engine-flags/vllm.yaml']
    >>> command_problems("vllm", [("--kv-cache-dtype", "int8")])[0][:48]
    'vllm: --kv-cache-dtype int8 is not one of auto, '
    """
    known = engine_flags(engine)["flags"]
    out = []
    for flag, value in args:
        if flag not in known:
            out.append(f"{engine}: flag {flag} is not in data/engine-flags/{engine}.yaml")
            continue
        choices = (known[flag] or {}).get("choices")
        if choices and value is not None and value not in choices:
            out.append(f"{engine}: {flag} {value} is not one of {', '.join(map(str, choices))}")
    return out


def _option_problems(doc: dict, schema: dict, where: str) -> list[str]:
    out = []
    for key, value in doc.items():
        if key not in schema:
            out.append(f"trtllm: option {where}{key} is not in data/engine-flags/trtllm.yaml")
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
                out += command_problems(la.engine, c.args)
    if la.engine == "trtllm":
        schema = engine_flags("trtllm")["extra_options"]
        for name, text in la.files.items():
            if name.endswith("-options.yaml"):
                out += _option_problems(yaml.safe_load(text), schema, "")
    return out

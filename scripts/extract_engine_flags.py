"""Write data/engine-flags/{vllm,sglang}.yaml: every server flag an engine's argument parser
defines, read from the engine's released source (static ``ast`` walk; nothing is imported).

Usage (the wheels from PyPI, unpacked)::

    pip download --no-deps --only-binary :all: vllm==0.11.0 sglang==0.5.5 -d /tmp/w
    python scripts/extract_engine_flags.py vllm 0.11.0 /tmp/w/vllm-root
    python scripts/extract_engine_flags.py sglang 0.5.5 /tmp/w/sglang-root

Choices are recorded where the source states them as a literal list, a module-level list, or
(vLLM) a ``Literal`` type alias of the config dataclass the flag is generated from.
TensorRT-LLM (click options and its extra-options YAML keys) is written by hand from
``tensorrt_llm/commands/serve.py``: its wheel is not published for this Python.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import yaml

#: vLLM flags whose choices come from a config dataclass's Literal alias: (file, alias name).
VLLM_LITERALS = {
    "--kv-cache-dtype": ("vllm/config/cache.py", "CacheDType"),
    "--dtype": ("vllm/config/model.py", "ModelDType"),
    "--quantization": (
        "vllm/model_executor/layers/quantization/__init__.py",
        "QuantizationMethods",
    ),
    "--distributed-executor-backend": ("vllm/config/parallel.py", "DistributedExecutorBackend"),
}
FILES = {
    "vllm": ["vllm/engine/arg_utils.py", "vllm/entrypoints/openai/cli_args.py"],
    "sglang": ["sglang/srt/server_args.py"],
}


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data):  # the same choices list written out under each flag
        return True


def _module_lists(tree: ast.Module) -> dict[str, list]:
    out = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.List | ast.Tuple):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                continue
            for t in node.targets:
                if isinstance(t, ast.Name):
                    out[t.id] = list(value)
    return out


def _literal_alias(path: Path, name: str) -> list[str]:
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == name for t in node.targets
        ):
            sub = node.value
            if isinstance(sub, ast.Subscript):
                return [
                    ast.literal_eval(e) for e in ast.walk(sub.slice) if isinstance(e, ast.Constant)
                ]
    raise SystemExit(f"{name} not found in {path}")


def _flags(path: Path) -> dict[str, list | None]:
    tree = ast.parse(path.read_text())
    lists = _module_lists(tree)
    out: dict[str, list | None] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and getattr(node.func, "attr", "") == "add_argument"):
            continue
        names = [
            a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)
        ]
        choices = None
        for kw in node.keywords:
            if kw.arg == "choices":
                if isinstance(kw.value, ast.List | ast.Tuple):
                    try:
                        choices = list(ast.literal_eval(kw.value))
                    except ValueError:
                        choices = None
                elif isinstance(kw.value, ast.Name):
                    choices = lists.get(kw.value.id)
        for n in names:
            if n.startswith("-"):
                out[n] = choices
    # vLLM's frontend: one flag per FrontendArgs field (add_argument(f"--{key...}")).
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name == "FrontendArgs":
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    out["--" + item.target.id.replace("_", "-")] = None
    return out


def main(engine: str, version: str, root: str) -> None:
    base = Path(root)
    flags: dict[str, list | None] = {}
    for rel in FILES[engine]:
        flags.update(_flags(base / rel))
    if engine == "vllm":
        for flag, (rel, alias) in VLLM_LITERALS.items():
            flags[flag] = _literal_alias(base / rel, alias)
    doc = {
        "engine": engine,
        "version": version,
        "source": [f"PyPI {engine}=={version} wheel: {rel}" for rel in FILES[engine]],
        "flags": {k: ({"choices": v} if v else {}) for k, v in sorted(flags.items())},
    }
    out = Path(__file__).resolve().parent.parent / "data" / "engine-flags" / f"{engine}.yaml"
    out.write_text(yaml.dump(doc, Dumper=_NoAliases, sort_keys=False, width=100))
    print(out, len(flags), "flags")


if __name__ == "__main__":
    main(*sys.argv[1:4])

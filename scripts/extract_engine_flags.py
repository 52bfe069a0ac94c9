"""Write data/engine-flags/<engine>-<version>.yaml: every server flag an engine's argument
parser defines, read from the engine's released source (static ``ast`` walk; nothing is
imported, so neither torch nor a GPU is needed).

Usage (the wheels from PyPI, unpacked; how the lists in data/engine-flags/ were made)::

    pip download --no-deps --only-binary :all: --python-version 3.12 vllm==0.34.0 -d /tmp/w
    unzip -q /tmp/w/vllm-0.34.0-*.whl 'vllm/*.py' -d /tmp/w/vllm-root
    python scripts/extract_engine_flags.py vllm 0.34.0 /tmp/w/vllm-root
    (the same for vllm 0.11.0, sglang 0.5.5 / 0.5.18 / 0.5.23 with 'sglang/*.py', and
    sglang-router 0.3.2 with 'sglang_router/*.py': the PD router's flags)

SGLang from 0.5.1x declares most flags as annotated fields of the structs in
``sglang/srt/arg_groups/fields/*.py`` (``A[T, "help"]`` or ``A[T, Arg(...)]``, registered by
``add_cli_args_from_dataclass``: ``--field-name``, ``Arg(cli_name=..., aliases=[...])``,
choices from a ``Literal`` type or ``Arg(choices=...)``, ``--no-x`` for a
BooleanOptionalAction); those are read too. Choices are recorded where the source states them as a literal list, a module-level list, or
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
#: The parser's source files; the first that exists of each alternative (vLLM moved its
#: frontend arguments from entrypoints/openai/ to entrypoints/common/ after 0.11).
FILES = {
    "vllm": [
        ("vllm/engine/arg_utils.py",),
        ("vllm/entrypoints/openai/cli_args.py", "vllm/entrypoints/common/cli_args.py"),
    ],
    "sglang": [("sglang/srt/server_args.py",)],
    "sglang-router": [("sglang_router/router_args.py",)],
}
#: Dataclasses whose fields become one frontend flag each (vLLM: add_argument(f"--{key}")).
FRONTEND_CLASSES = ("FrontendArgs", "BaseFrontendArgs")


class _NoAliases(yaml.SafeDumper):
    def ignore_aliases(self, data):  # the same choices list written out under each flag
        return True


def _text(node: ast.AST) -> str | None:
    """A flag name: a string constant, or an f-string whose fields are empty (sglang-router's
    f"--{prefix}policy" with prefix "" as launch_router uses it)."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):  # f"--{key}" alone names no flag: read elsewhere
        text = "".join(v.value for v in node.values if isinstance(v, ast.Constant))
        return text if text.strip("-") else None
    return None


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
        names = [_text(a) for a in node.args]
        names = [n for n in names if n]
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
        if isinstance(node, ast.ClassDef) and node.name in FRONTEND_CLASSES:
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    out["--" + item.target.id.replace("_", "-")] = None
    return out


def _name_lists(paths: list[Path]) -> dict[str, list]:
    out: dict[str, list] = {}
    for path in paths:
        out.update(_module_lists(ast.parse(path.read_text())))
    return out


def _literal(node: ast.AST) -> list | None:
    """The values of a ``Literal[...]`` (possibly inside ``Optional[...]``), else None."""
    for sub in ast.walk(node):
        if isinstance(sub, ast.Subscript) and getattr(sub.value, "id", "") == "Literal":
            return [ast.literal_eval(e) for e in ast.walk(sub.slice) if isinstance(e, ast.Constant)]
    return None


def _annotated_fields(paths: list[Path], lists: dict[str, list]) -> dict[str, list | None]:
    """SGLang's ``A[T, "help"]`` / ``A[T, Arg(...)]`` struct fields as their CLI flags."""
    out: dict[str, list | None] = {}
    for path in paths:
        for cls in ast.walk(ast.parse(path.read_text())):
            if not isinstance(cls, ast.ClassDef) or cls.name in ("PortArgs",):
                continue
            for item in cls.body:
                ann = getattr(item, "annotation", None)
                if not (isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name)
                        and isinstance(ann, ast.Subscript) and getattr(ann.value, "id", "") == "A"
                        and isinstance(ann.slice, ast.Tuple) and len(ann.slice.elts) >= 2):  # fmt: skip
                    continue
                typ, meta = ann.slice.elts[:2]  # then, in 0.5.18, the namespace NS(...)
                kw = {}
                if isinstance(meta, ast.Call) and getattr(meta.func, "id", "") == "Arg":
                    kw = {k.arg: k.value for k in meta.keywords}
                elif not (isinstance(meta, ast.Constant) and isinstance(meta.value, str)):
                    continue
                if isinstance(kw.get("no_cli"), ast.Constant) and kw["no_cli"].value:
                    continue
                name = "--" + item.target.id.replace("_", "-")
                if "cli_name" in kw:
                    name = ast.literal_eval(kw["cli_name"])
                names = [name] + (ast.literal_eval(kw["aliases"]) if "aliases" in kw else [])
                choices = _literal(typ)
                if "choices" in kw:
                    c = kw["choices"]
                    choices = lists.get(c.id) if isinstance(c, ast.Name) else _safe_list(c)
                if "BooleanOptionalAction" in ast.dump(kw.get("action", ast.Constant(None))):
                    names.append("--no-" + name[2:])
                for n in names:
                    out[n] = choices
    return out


def _safe_list(node: ast.AST) -> list | None:
    try:
        return list(ast.literal_eval(node))
    except ValueError:
        return None


def main(engine: str, version: str, root: str) -> None:
    base = Path(root)
    flags: dict[str, list | None] = {}
    used = []
    for alternatives in FILES[engine]:
        rel = next(r for r in alternatives if (base / r).exists())
        used.append(rel)
        flags.update(_flags(base / rel))
    if engine == "sglang":  # 0.5.18: fields of ServerArgs itself; 0.5.2x: arg_groups/fields/
        fields = sorted((base / "sglang/srt/arg_groups/fields").glob("*.py"))
        declared = [base / "sglang/srt/server_args.py", *fields]
        choices = [p for p in [base / "sglang/srt/arg_groups/choices.py"] if p.exists()]
        flags.update(_annotated_fields(declared, _name_lists(choices + declared)))
        used += ["sglang/srt/arg_groups/fields/*.py"] if fields else []
    if engine == "vllm":
        for flag, (rel, alias) in VLLM_LITERALS.items():
            flags[flag] = _literal_alias(base / rel, alias)
    doc = {
        "engine": engine,
        "version": version,
        "source": [f"PyPI {engine}=={version} wheel: {rel}" for rel in used],
        "flags": {k: ({"choices": v} if v else {}) for k, v in sorted(flags.items())},
    }
    out = (
        Path(__file__).resolve().parent.parent
        / "data"
        / "engine-flags"
        / f"{engine}-{version}.yaml"
    )
    out.write_text(yaml.dump(doc, Dumper=_NoAliases, sort_keys=False, width=100))
    print(out, len(flags), "flags")


if __name__ == "__main__":
    main(*sys.argv[1:4])

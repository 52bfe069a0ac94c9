"""The package's layering (docs/CONVENTIONS.md): imports point down only; advisor never imports
streamlit. Read from the source with ast, so a violation fails here rather than in review."""

from __future__ import annotations

import ast
from pathlib import Path

ADVISOR = Path(__file__).resolve().parent.parent / "advisor"

#: Layer of each top-level part of advisor; a module may import only from lower or equal layers.
LAYER = {
    "catalog": 0,
    "scenario": 1,
    "physics": 2,
    "perf": 3,
    "store": 3,
    "examples": 3,
    "search": 4,
    "article_check": 4,
    "charts": 5,
    "report": 6,
    "cli": 7,
    "__main__": 8,
    "__init__": 8,
}


def _imports(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module:
            out.append(node.module)
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return out


def _part(path: Path) -> str:
    rel = path.relative_to(ADVISOR).parts
    return rel[0].removesuffix(".py")


def test_every_part_has_a_layer():
    parts = {_part(p) for p in ADVISOR.rglob("*.py")}
    assert parts <= set(LAYER), sorted(parts - set(LAYER))


def test_imports_point_down_and_never_to_streamlit():
    bad = []
    for path in ADVISOR.rglob("*.py"):
        src = _part(path)
        for mod in _imports(path):
            root = mod.split(".")[0]
            if root == "streamlit":
                bad.append(f"{path.name} imports streamlit")
            if root == "advisor" and "." in mod:
                dst = mod.split(".")[1]
                if dst in LAYER and LAYER[dst] > LAYER[src]:
                    bad.append(f"{path.relative_to(ADVISOR)} ({src}) imports {mod} ({dst})")
    assert not bad, bad

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
    "deploy": 5,
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


def _module_name(path: Path, root: Path) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")


def _module_graph(package: str) -> dict[str, set[str]]:
    """Module -> modules of the same package it imports at import time (top-level statements)."""
    root = ADVISOR.parent
    graph: dict[str, set[str]] = {}
    for path in (root / package).rglob("*.py"):
        deps = set()
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(package):
                deps.add(node.module)
                deps.update(f"{node.module}.{a.name}" for a in node.names)
            elif isinstance(node, ast.Import):
                deps.update(a.name for a in node.names if a.name.startswith(package))
        graph[_module_name(path, root)] = deps
    return {m: {d for d in deps if d in graph and d != m} for m, deps in graph.items()}


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(m: str) -> list[str] | None:
        state[m] = 1
        stack.append(m)
        for d in sorted(graph[m]):
            if state.get(d) == 1:
                return stack[stack.index(d) :] + [d]
            if d not in state and (found := visit(d)):
                return found
        stack.pop()
        state[m] = 2
        return None

    for m in sorted(graph):
        if m not in state and (found := visit(m)):
            return found
    return None


def test_cycle_finder_finds_a_planted_cycle():
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


def test_no_import_cycles_in_advisor_or_ui():
    """Top-level imports only: a function-level import is how a cycle used to be hidden, so the
    check reads module bodies, and a cycle through a package __init__ counts too."""
    for package in ("advisor", "ui"):
        assert _cycle(_module_graph(package)) is None, package

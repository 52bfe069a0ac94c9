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


#: Layer of each subpackage of advisor/perf, the same rule one level down: the model, the
#: validation that predicts measured cases with it, the importers that read a client's files into
#: such cases, the calibration that fits the model's constants to them.
PERF_LAYER = {"model": 0, "validation": 1, "importers": 2, "calibration": 3}


def _imports(path: Path, root: Path = ADVISOR, with_names: bool = False) -> list[str]:
    """Every module ``path`` imports, wherever the statement stands: at the top, inside a
    function (where a cycle used to hide), under ``if TYPE_CHECKING``. Relative imports are
    resolved against the module's package; ``with_names`` adds ``pkg.name`` for each name of a
    ``from pkg import name`` (a module when ``name`` is one)."""
    package = _module_name(path, root.parent).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            mod = ".".join(base + ([node.module] if node.module else []))
            out.append(mod)
            if with_names:
                out += [f"{mod}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            out += [a.name for a in node.names]
    return out


def _part(path: Path) -> str:
    rel = path.relative_to(ADVISOR).parts
    return rel[0].removesuffix(".py")


def _perf_room(module: str) -> str | None:
    """The perf subpackage of a dotted module name (``advisor.perf.model.step`` -> model)."""
    parts = module.split(".")
    if parts[:2] == ["advisor", "perf"] and len(parts) > 2:
        return parts[2]
    return None


def test_every_part_has_a_layer():
    parts = {_part(p) for p in ADVISOR.rglob("*.py")}
    assert parts <= set(LAYER), sorted(parts - set(LAYER))


def test_every_perf_subpackage_has_a_layer():
    rooms = {p.name for p in (ADVISOR / "perf").iterdir() if (p / "__init__.py").exists()}
    loose = sorted(p.name for p in (ADVISOR / "perf").glob("*.py") if p.name != "__init__.py")
    assert rooms == set(PERF_LAYER), sorted(rooms ^ set(PERF_LAYER))
    assert not loose, f"modules directly under perf/ (put each in a subpackage): {loose}"


def _upward(path: Path, root: Path = ADVISOR) -> list[str]:
    """The imports of ``path`` (a module under ``root``, the advisor folder) that point up (a
    higher part of advisor, a later perf subpackage) or to streamlit."""
    bad = []
    src = path.relative_to(root).parts[0].removesuffix(".py")
    src_room = _perf_room(_module_name(path, root.parent))
    for mod in _imports(path, root, with_names=True):
        top = mod.split(".")[0]
        if top == "streamlit":
            bad.append(f"{path.name} imports streamlit")
        if top == "advisor" and "." in mod:
            dst = mod.split(".")[1]
            if dst in LAYER and LAYER[dst] > LAYER[src]:
                bad.append(f"{path.relative_to(root)} ({src}) imports {mod} ({dst})")
            dst_room = _perf_room(mod)
            rooms = (src_room, dst_room)
            if all(r in PERF_LAYER for r in rooms) and PERF_LAYER[dst_room] > PERF_LAYER[src_room]:
                bad.append(f"{path.relative_to(root)} (perf/{src_room}) imports {mod}")
    return list(dict.fromkeys(bad))


def test_imports_point_down_and_never_to_streamlit():
    bad = [b for path in ADVISOR.rglob("*.py") for b in _upward(path)]
    assert not bad, bad


def test_an_upward_import_inside_a_function_is_caught(tmp_path):
    # A model module importing the validation inside a function body (as estimate did for
    # validate.service_for), a relative import of the calibration, and streamlit in a function.
    src = tmp_path / "advisor" / "perf" / "model" / "planted.py"
    src.parent.mkdir(parents=True)
    src.write_text(
        "import numpy\n\n\ndef f():\n"
        "    from advisor.perf.validation.validate import service_for\n"
        "    from ..calibration import calibrate\n"
        "    from advisor.perf.model import step\n"
        "    from advisor.search import recommend\n"
        "    import streamlit\n"
    )
    assert _upward(src, tmp_path / "advisor") == [
        "perf/model/planted.py (perf/model) imports advisor.perf.validation.validate",
        "perf/model/planted.py (perf/model) imports advisor.perf.validation.validate.service_for",
        "perf/model/planted.py (perf/model) imports advisor.perf.calibration",
        "perf/model/planted.py (perf/model) imports advisor.perf.calibration.calibrate",
        "perf/model/planted.py (perf) imports advisor.search (search)",
        "perf/model/planted.py (perf) imports advisor.search.recommend (search)",
        "planted.py imports streamlit",
    ]


def _module_name(path: Path, root: Path) -> str:
    return ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")


def _module_graph(package: str) -> dict[str, set[str]]:
    """Module -> modules of the same package it imports, at the top or inside a function: a
    function-level import defers a cycle to run time, it does not remove it."""
    root = ADVISOR.parent
    graph = {
        _module_name(path, root): {
            d for d in _imports(path, with_names=True) if d.startswith(package)
        }
        for path in (root / package).rglob("*.py")
    }
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
    """Every import counts, top-level or inside a function (where validation.trust <->
    validation.validate and model.estimate -> speculative_sweep -> sweeps -> estimate used to
    hide), and a cycle through a package __init__ counts too."""
    for package in ("advisor", "ui"):
        assert _cycle(_module_graph(package)) is None, package

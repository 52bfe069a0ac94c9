"""Test tiers: each collected test is marked ``app``, ``browser``, ``fuzz`` or ``subprocess`` from
what it does, so ``make test-fast`` (``-m fast``'s complement of those) runs the library tests and
doctests alone, and no one has to remember to mark a new test by hand.

- browser: the test uses the ``browser`` or ``server`` fixture (a real chromium and app server).
- app: the test's module drives the app through Streamlit's ``AppTest``.
- fuzz: the module is a fuzzing suite (``test_fuzz_*``): many random inputs through the CLI or app.
- subprocess: the test, a fixture it uses, or a module-level helper it calls (transitively) starts
  a process: ``subprocess``, ``Popen``, ``sys.executable``, or a PDF with charts (kaleido starts
  chromium for every report: ``build_report``, ``figure_png``, the CLI's ``report``). A static
  reading can miss one, so in the fast lane (``IA_TEST_TIER=fast``, set by ``make test-fast``)
  ``spawn_guard`` fails a test that started a process, naming it: the fast tier stays fast
  because the check can fail. The full suite is not affected.
"""

from __future__ import annotations

import ast
import functools
import inspect
import os
import subprocess
import textwrap
from pathlib import Path

import pytest

TIERS = ("app", "browser", "fuzz", "subprocess")
_SPAWN_WORDS = (
    "subprocess",
    "Popen",
    "sys.executable",
    "os.system",
    # a PDF with charts: kaleido starts chromium (advisor/report/images.py)
    "build_report",
    "build_comparison",
    "figure_png",
    '"report"',
)


@functools.cache
def _module_facts(path: str) -> tuple[bool, frozenset[str], frozenset[str]]:
    """(uses AppTest, module-level functions that use AppTest, module-level functions that start
    a process, transitively), from one parse of the module."""
    try:
        source = Path(path).read_text(encoding="utf-8")
    except OSError:
        return False, frozenset(), frozenset()
    tree = ast.parse(source)
    funcs = {
        node.name: node
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }
    text = {name: ast.get_source_segment(source, node) or "" for name, node in funcs.items()}
    called = {
        name: {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in funcs}
        for name, node in funcs.items()
    }
    spawning = {name for name, body in text.items() if any(w in body for w in _SPAWN_WORDS)}
    grew = True
    while grew:  # a helper calling a spawning helper spawns
        more = {name for name, calls in called.items() if calls & spawning} - spawning
        spawning |= more
        grew = bool(more)
    apptest = frozenset(name for name, body in text.items() if "AppTest" in body)
    return "AppTest" in source, apptest, frozenset(spawning)


def tiers_of(item: pytest.Item) -> set[str]:
    """The tiers a collected test belongs to (empty: the fast library tier)."""
    found: set[str] = set()
    names = set(getattr(item, "fixturenames", ()))
    if names & {"browser", "server"} or item.path.name.startswith("test_browser"):
        found.add("browser")
    if item.path.name.startswith("test_fuzz"):
        found.add("fuzz")
    if item.path.suffix != ".py" or not item.path.name.startswith("test_"):
        return found  # doctests and helper modules: the library tier
    uses_apptest, apptest_helpers, spawning = _module_facts(str(item.path))
    source = _test_source(item)
    names |= _names_in(source)  # fixtures and the names the test's body uses
    if uses_apptest and ("AppTest" in source or names & apptest_helpers):
        found.add("app")
    if names & spawning or any(w in source for w in _SPAWN_WORDS):
        found.add("subprocess")
    return found


def _test_source(item: pytest.Item) -> str:
    fn = getattr(item, "function", None)
    try:
        return inspect.getsource(fn) if fn is not None else ""
    except (OSError, TypeError):
        return ""


def _names_in(source: str) -> set[str]:
    try:
        tree = ast.parse(textwrap.dedent(source))
    except SyntaxError:
        return set()
    return {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}


def mark(items: list[pytest.Item]) -> None:
    for item in items:
        for tier in sorted(tiers_of(item)):
            item.add_marker(getattr(pytest.mark, tier))


@pytest.fixture(autouse=True)
def spawn_guard(request, monkeypatch):
    """In the fast lane, fail a test that started a process: its tier was misread (tiers_of)."""
    if os.environ.get("IA_TEST_TIER") != "fast":
        yield
        return
    started: list[str] = []
    real_init = subprocess.Popen.__init__

    def record(self, args, *rest, **kwargs):
        started.append(str(args if isinstance(args, str) else list(args)[:3]))
        real_init(self, args, *rest, **kwargs)

    monkeypatch.setattr(subprocess.Popen, "__init__", record)
    yield
    if started:
        pytest.fail(
            f"{request.node.nodeid} started {started[0]} but is in the fast tier: name the "
            "call that starts it in tests/tiers.py _SPAWN_WORDS, or mark the test "
            "@pytest.mark.subprocess (fixtures used: "
            f"{', '.join(sorted(request.fixturenames))})",
            pytrace=False,
        )

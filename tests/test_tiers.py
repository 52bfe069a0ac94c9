"""The test tiers (tests/tiers.py) read from what each test does: checked on tests whose tier is
known by reading them, so a change that misfiles them (and slows `make test-fast`) fails here."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tests.tiers import tiers_of

#: node id (prefix) -> the tiers it must have; each read by hand from the test's body.
KNOWN = {
    # runs `python -m advisor memory` with subprocess.run (its body names it)
    "tests/test_cli.py::test_module_entry_point_no_traceback": {"subprocess"},
    # AppTest.from_file of app.py (other tests in the file are plain functions)
    "tests/test_app_pages.py::test_app_runs_without_exception": {"app"},
    # a real chromium through the `browser` fixture
    "tests/test_browser.py::": {"browser"},
    # a fuzzing suite of random CLI argument lists
    "tests/test_fuzz_cli.py::": {"fuzz"},
    # the CLI's `report` builds a PDF: kaleido starts chromium
    "tests/test_client_profile.py::test_recommend_applies_the_profile_inside_its_range_only": {
        "subprocess"
    },
    # pure formulas
    "tests/test_memory.py::": set(),
}


def test_known_tests_fall_in_their_tiers(request):
    items = request.session.items
    for prefix, want in KNOWN.items():
        hits = [i for i in items if i.nodeid.startswith(prefix)]
        if not hits:
            continue  # not collected in this run (a -k or a single file)
        for item in hits:
            got = tiers_of(item) & set(want or {"app", "browser", "fuzz", "subprocess"})
            assert got == want, f"{item.nodeid}: tiers {sorted(tiers_of(item))}, want {want}"


def test_the_fast_lane_fails_a_test_that_starts_a_process(pytester):
    """A test with no spawning words that starts a process through an alias is caught."""
    pytester.makeconftest(
        "from tests.tiers import mark, spawn_guard  # noqa: F401\n"
        "def pytest_collection_modifyitems(config, items):\n"
        "    mark(items)\n"
    )
    pytester.makepyfile(
        test_hidden="import subprocess as _sp\n"
        "RUN = getattr(_sp, 'ru' + 'n')\n"
        "def test_hidden():\n"
        "    RUN(['true'])\n"
    )
    root = str(__import__("pathlib").Path(__file__).resolve().parent.parent)

    def run(tier: str) -> subprocess.CompletedProcess:
        env = {**os.environ, "IA_TEST_TIER": tier, "PYTHONPATH": root}
        argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-m", "not subprocess"]
        return subprocess.run(argv, cwd=pytester.path, env=env, capture_output=True, text=True)

    assert run("").returncode == 0  # outside the fast lane nothing changes
    out = run("fast")
    assert out.returncode == 1, out.stdout
    assert "test_hidden.py::test_hidden started" in out.stdout
    assert "is in the fast tier" in out.stdout


@pytest.mark.parametrize("word", ["subprocess", "build_report"])
def test_a_module_helper_that_spawns_marks_its_callers(pytester, word):
    from tests.tiers import _module_facts

    path = pytester.makepyfile(
        test_x=f"def _inner():\n    {word}\n\ndef _outer():\n    _inner()\n\ndef test_a():\n    _outer()\n"
    )
    _, _, spawning = _module_facts(str(path))
    assert spawning == {"_inner", "_outer", "test_a"}  # test_a through _outer through _inner

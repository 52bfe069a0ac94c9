"""The app's client profile (issue 14): the "Calibrate to your cluster" page fits or loads a
profile into the session; every page says when it is active; the Recommendation uses it.

The profile is fitted from tests/fixtures/client (see tests/test_client_profile.py)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from advisor.perf.calibration.client_profile import dump, fit_profile
from advisor.perf.importers import Deployment, load

ROOT = Path(__file__).resolve().parent.parent
APP = str(ROOT / "app.py")
FIX = ROOT / "tests" / "fixtures" / "client"
DEP = Deployment("llama-3.1-8b", "h100-sxm", 1, 1, "bf16", "bf16", "vllm", isl=1024, osl=512)


@pytest.fixture(scope="module")
def profile_text() -> str:
    files = ["vllm_bench_throughput.json", "vllm_bench_serve.json", "aiperf_profile_export.json"]
    # min_gain 1: the illustrative files beat the shipped calibration out of sample but not by
    # the default bar (client_profile.required_ratio; tests/test_client_profile.py).
    return dump(fit_profile([load(FIX / f, DEP) for f in files], DEP, "acme", min_gain=1.0).doc)


def _app(text: str | None = None, engine: str = "vllm") -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    if text is not None:
        at.session_state["client_profile.yaml"] = text
        at.session_state["client_profile.name"] = "acme.yaml"
    at.run()
    eng = next(w for w in at.selectbox if w.label == "Serving engine")
    eng.set_value(engine)
    return at.run()


def _sidebar_info(at: AppTest) -> list[str]:
    return [i.value for i in at.sidebar.info]


def test_calibrate_page_without_a_profile_says_the_shipped_calibration_is_used():
    at = _app()
    at.switch_page("ui/pages/calibrate.py").run()
    assert not at.exception, at.exception
    assert at.title[0].value == "Calibrate to your cluster"
    assert any("No client profile" in i.value for i in at.info)
    assert not any("Client profile" in s for s in _sidebar_info(at))


def test_a_session_profile_is_named_on_every_page_and_changes_the_recommendation(profile_text):
    plain = _app()
    with_profile = _app(profile_text)
    assert not with_profile.exception, with_profile.exception
    assert any("Client profile **acme** active" in s for s in _sidebar_info(with_profile))
    with_profile.switch_page("ui/pages/calibrate.py").run()
    assert not with_profile.exception
    assert any("acme" in s.value for s in with_profile.success)
    assert any("Client profile **acme** active" in s for s in _sidebar_info(with_profile))
    # The Recommendation page's numbers move with the profile (the fixtures' cluster is ~15%
    # slower than the shipped calibration predicts), on the same default scenario with vLLM.
    a = {m.label: m.value for m in plain.metric}
    b = {
        m.label: m.value
        for m in with_profile.switch_page("ui/pages/recommendation.py").run().metric
    }
    assert a and a != b


def test_a_tampered_profile_is_dropped_with_the_field_named(profile_text):
    at = AppTest.from_file(APP, default_timeout=120)
    # Any edit of a fitted value: the digest no longer matches.
    at.session_state["client_profile.yaml"] = re.sub(
        r"mem_factor: \S+", "mem_factor: 1.2345", profile_text, count=1
    )
    at.run()
    assert not at.exception
    errors = [e.value for e in at.sidebar.error]
    assert any("Client profile removed" in e and "digest" in e for e in errors), errors
    assert "client_profile.yaml" not in at.session_state


def test_fit_uploads_reads_bytes_and_names_a_bad_file():
    from importlib import util

    import ui.pages  # noqa: F401  (the page module is a script; its helpers are imported below)

    spec = util.spec_from_file_location("calib_page", ROOT / "ui" / "pages" / "calibrate.py")
    assert spec is not None
    src = (ROOT / "ui" / "pages" / "calibrate.py").read_text()
    ns: dict = {}
    exec(
        compile(src.split('\nst.title("Calibrate to your cluster")')[0], "calibrate.py", "exec"), ns
    )
    files = [("serve.json", (FIX / "vllm_bench_serve.json").read_bytes()), ("bad.json", b"{")]
    doc, problems = ns["fit_uploads"](files, DEP, "t")
    assert problems[0].startswith("bad.json: not valid JSON")
    # One run (its TTFT, TPOT, latency, throughput) left: checked out of sample point by point; a
    # profile that does not clear the bar is refused with the reason, not written.
    assert (doc is None and problems[1].startswith("No profile: serve.json:")) or (
        doc is not None and doc["summary"]["points"] == 4
    )


def test_calibrate_page_shows_before_after_and_the_leave_one_out_figure(profile_text):
    import yaml

    doc = yaml.safe_load(profile_text)
    at = _app(profile_text)
    at.switch_page("ui/pages/calibrate.py").run()
    assert not at.exception, at.exception
    (loo,) = [m for m in at.metric if m.label.startswith("Out of sample")]
    # The figure is the profile's own: each run predicted by the profile fitted to the others.
    assert loo.value == f"{doc['summary']['loo_median_ape_pct']:.1f}% median error"
    table = at.dataframe[0].value
    assert list(table.columns[3:6]) == [
        "error before % (shipped)", "error after % (profile)", "error % with its run left out"
    ]  # fmt: skip
    first = doc["points"][0]
    assert table.iloc[0]["error % with its run left out"] == first["loo_pct"]


def test_a_refused_fit_keeps_its_points_for_the_table():
    src = (ROOT / "ui" / "pages" / "calibrate.py").read_text()
    ns: dict = {}
    exec(
        compile(src.split('\nst.title("Calibrate to your cluster")')[0], "calibrate.py", "exec"), ns
    )
    # Runs 1 and 3 of the DataCrunch 405B sweep (tests/fixtures/client/README.md): refused with
    # two runs (bench/client_holdout.py), and the refusal's points kept for the page's table.
    # (Runs 1 and 2 pass the bar since issue 37's all-reduce refit by a hair: a 97 ms request
    # overhead, see tests/test_client_profile.py.)
    lines = (FIX / "sglang_bench_serving_dec2024_405b.jsonl").read_bytes().splitlines()
    dep = Deployment("llama-3.1-405b", "h200-sxm", 8, 1, "bf16", "bf16", "sglang")
    doc, problems = ns["fit_uploads"]([("r1.json", lines[0]), ("r3.json", lines[2])], dep, "t")
    assert doc is None and problems[-1].startswith("No profile: r1.json, r3.json: the profile")
    pts = ns["SS"][ns["REFUSED"]]
    assert [p["id"] for p in pts][:2] == ["r1.json:ttft", "r1.json:e2e"]
    assert all(p["loo_pct"] is not None and p["before_pct"] is not None for p in pts)
    # The page's "link between hosts" choices: inter-node links for that accelerator only.
    links = ns["inter_links"]("h100-sxm")
    assert "ib-ndr" in links and "nvlink4" not in links and "roce-gaudi3" not in links

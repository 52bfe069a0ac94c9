"""The Deploy page under AppTest: the files of the deployment in focus, per engine, with copy
buttons (st.code) and a zip download. Expected text comes from advisor.deploy.bundle called with
the same scenario and the recommended deployment (the default focus)."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from advisor.deploy.bundle import deploy_bundle
from advisor.scenario import Scenario
from advisor.search.recommend import recommend

APP = str(Path(__file__).resolve().parent.parent / "app.py")


def test_deploy_page_shows_the_bundle_of_the_deployment_in_focus():
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("ui/pages/deploy.py").run()
    assert not at.exception, at.exception
    spec = recommend(Scenario()).best.spec
    for engine in ("vllm", "trtllm"):
        if engine != "vllm":
            at.radio(key="deploy.engine").set_value(engine).run()
        want = deploy_bundle(Scenario(), spec, engine).files
        assert [c.value.rstrip() for c in at.code] == [t.rstrip() for t in want.values()]
        assert len(at.get("download_button")) == 1
    assert not at.exception and not at.error


def test_deploy_page_release_and_longest_request():
    """The release select pins the image and flag list; the longest-request input is the
    servers' max model length (issue 34)."""
    at = AppTest.from_file(APP, default_timeout=120).run()
    at.switch_page("ui/pages/deploy.py").run()
    assert at.selectbox(key="deploy.version.vllm").value == "0.34.0"  # the newest, by default
    at.selectbox(key="deploy.version.vllm").set_value("0.11.0").run()
    at.number_input(key="deploy.max_context").set_value(32768).run()
    text = "\n".join(c.value for c in at.code)
    assert "vllm/vllm-openai:v0.11.0" in text and "--max-model-len 32768" in text
    assert any("vLLM 0.11.0's server flags" in c.value for c in at.caption)
    assert not at.exception and not at.error

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

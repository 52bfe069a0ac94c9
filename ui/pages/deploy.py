"""Deploy: the launch commands, Compose and Kubernetes files of the deployment in focus."""

from __future__ import annotations

import streamlit as st

from advisor.deploy.bundle import deploy_bundle, zip_bytes
from advisor.deploy.settings import context_tokens
from advisor.deploy.tables import ENGINES, engine_flags, releases
from ui.focus import show_focus
from ui.format import md_escape
from ui.state import current, guarded

LABELS = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
LANGUAGE = {".sh": "bash", ".yaml": "yaml", ".md": "markdown"}


def _gpu(spec) -> tuple[str, str]:
    from advisor.catalog import accelerators

    return spec.gpu, accelerators()[spec.gpu].vendor


def section() -> None:
    scenario, _view = current()
    f = show_focus(scenario)
    own = scenario.options.engine
    engine = st.radio(
        "Engine", ENGINES, index=ENGINES.index(own) if own in ENGINES else 0,
        format_func=LABELS.get, horizontal=True, key="deploy.engine",
    )  # fmt: skip
    rel = releases()[engine]
    versions = list(rel.releases)
    version = st.selectbox(
        "Engine release", versions, index=versions.index(rel.version_for(*_gpu(f.spec))),
        key=f"deploy.version.{engine}",
        help="The release the flags are checked against and the image is pinned to; the "
        "default is the newest with an official image for the GPU.",
    )  # fmt: skip
    context, _why = context_tokens(scenario)
    longest = st.number_input(
        "Longest request (prompt + output tokens)", 1, 16_777_216, value=context,
        key="deploy.max_context",
        help="The servers refuse a longer request (max model length). Default: the workload's "
        "lengths at their 99.9th percentile (ISL + OSL when they are fixed).",
    )  # fmt: skip
    stated = int(longest) if int(longest) != context else None  # else the README says why
    b = deploy_bundle(scenario, f.spec, engine, version, stated)
    if b.reasons:
        for why in b.reasons:
            st.warning(f"{LABELS[engine]} cannot run {md_escape(str(f.spec))}: {md_escape(why)}")
        return
    for problem in b.problems:  # never expected: a flag outside the engine's list
        st.error(md_escape(problem))
    for name, why in b.refused.items():  # past the size bound, or a launch it cannot start
        st.warning(f"No {md_escape(name)}: {md_escape(why)}")
    fl = engine_flags(engine, version)
    st.caption(
        f"Every flag is checked against {LABELS[engine]} {fl['version']}'s server flags "
        f"(data/engine-flags/{engine}-{version}.yaml, from {md_escape('; '.join(fl['source']))}). Memory "
        "fraction, max sequences and max model length are the values the memory budget of the "
        "recommendation assumed."
    )
    st.download_button(
        "Download all files (zip)",
        zip_bytes(b.files, folder=f"deploy-{engine}"),
        file_name=f"deploy-{engine}-{f.spec}.zip",
        mime="application/zip",
        key="deploy.zip",
    )
    for name, text in b.files.items():
        st.markdown(f"**{md_escape(name)}**")
        st.code(text, language=LANGUAGE.get(name[name.rfind(".") :], "text"))


st.title("Deploy")
guarded("Deploy", section)

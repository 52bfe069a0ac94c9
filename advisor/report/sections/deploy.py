"""The PDF's appendix: the launch command of the deployment the report details.

The engine is the scenario's (vLLM when the scenario models a generic engine); the text is
advisor.deploy's launch.sh, so the PDF, the app's Deploy page and ``advisor deploy`` agree.
"""

from __future__ import annotations

from typing import Any

from fpdf.enums import XPos, YPos

from advisor.deploy.bundle import deploy_bundle
from advisor.deploy.tables import ENGINES
from advisor.report.text import clean, latin1
from advisor.scenario import Scenario
from advisor.search.results import Deployment

LABELS = {"vllm": "vLLM", "sglang": "SGLang", "trtllm": "TensorRT-LLM"}
#: Longest command line kept whole (a longer one, e.g. an imported model's path, is cut).
MAX_LINE = 400


def _spec(deployment: Any):
    try:
        d = deployment if isinstance(deployment, Deployment) else Deployment.model_validate(
            deployment)  # fmt: skip
    except (ValueError, TypeError):
        return None
    return d.spec


def deploy_appendix(doc: Any, scenario: Scenario, deployment: Any) -> None:
    """h1 "Appendix: launch command": the server command(s) in a monospace font, or why the
    engine cannot run the deployment."""
    spec = _spec(deployment)
    if spec is None:
        return
    own = scenario.options.engine
    engine = own if own in ENGINES else "vllm"
    b = deploy_bundle(scenario, spec, engine)
    doc.h1("Appendix: launch command")
    version = f" {b.launch.version}" if b.launch else ""
    doc.para(
        f"{LABELS[engine]} launch of {clean(str(spec), 200)}: the flags carry the memory fraction, "
        "maximum sequences and model length the memory budget above assumed; every flag is "
        f"checked against {LABELS[engine]}{version}'s server flags (data/engine-flags/). "
        "`python -m advisor deploy` writes these with Docker Compose and Kubernetes files, for "
        "vLLM, SGLang and TensorRT-LLM.",
        9,
    )
    if b.reasons:
        doc.bullets([clean(r, 600) for r in b.reasons], 8.5)
        return
    for s in b.launch.servers:
        what = f"{s.role}: {s.replicas} replica(s)" + (
            f", {s.gpus_per_replica} GPU(s) each" if s.gpus_per_replica else "")  # fmt: skip
        doc.para(what, 9, bold=True)
        for c in s.commands:
            lines = [latin1(clean(x, MAX_LINE)) for x in c.shell().splitlines()]
            doc.set_font("Courier", "", 7.5)
            doc.multi_cell(0, 3.6, "\n".join(lines), new_x=XPos.LMARGIN, new_y=YPos.NEXT)
            doc.ln(1.5)
    notes = [clean(n, 600) for n in b.launch.notes]
    doc.bullets(notes, 8.5)

"""Quality notes (data/quality.yaml, advisor/catalog/quality.py): the numbers as their sources
state them, "not measured for this model" elsewhere, and the one-click dtype exclusion."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from pydantic import ValidationError

from advisor.catalog import models
from advisor.catalog.quality import NOT_MEASURED, quality_for, quality_lines, quality_notes
from advisor.catalog.specs import QualityNote

ROOT = Path(__file__).resolve().parent.parent


def test_catalog_models_exist_and_every_note_has_a_source_and_date():
    for n in quality_notes().values():
        assert all(m == "*" or m in models() for m in n.models), n.id
        assert n.source and n.retrieved


def test_numbers_as_the_model_cards_state_them():
    notes = quality_notes()
    # neuralmagic/Meta-Llama-3.1-70B-Instruct-quantized.w4a16 card: 78.54 vs 78.67 (OpenLLM v1)
    n = notes["llama-3.1-70b-int4"]
    assert (n.quantized_score, n.baseline_score) == (78.54, 78.67)
    assert n.recovery == pytest.approx(0.99835, abs=1e-5)
    # RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8 card: 84.29 vs 84.40
    assert (notes["llama-3.1-70b-fp8"].quantized_score, notes["llama-3.1-70b-fp8"].baseline_score) == (84.29, 84.40)  # fmt: skip
    # neuralmagic/Meta-Llama-3.1-8B-Instruct-quantized.w4a16 card: 67.57 vs 69.32 (97.5%)
    assert notes["llama-3.1-8b-int4"].recovery == pytest.approx(67.57 / 69.32)


def test_not_measured_for_this_model():
    q = quality_for("mistral-7b", "int4", "fp8")
    assert {k: q[0][k] for k in ("tensor", "dtype", "measured", "finding")} == {
        "tensor": "weights", "dtype": "int4", "measured": False, "finding": NOT_MEASURED}  # fmt: skip
    # the only int4 notes for Mistral are studies of other models (a biomedical one): notes, not
    # a finding, and the unknown said plainly
    assert all("arXiv:2509.04534" in n for n in q[0]["notes"])
    assert (
        q[0]["unknown"] == "no published medical, code or legal evaluation at int4 for this model"
    )
    assert q[1]["measured"] is False and "vLLM" in q[1]["notes"][0]
    assert NOT_MEASURED in quality_lines("mistral-7b", "int4", "fp16")[0]
    assert quality_lines("llama-3.1-70b", "fp16", "fp16") == []  # the reference precision
    lines = quality_lines("llama-3.1-70b", "int4", "fp16")
    assert "78.54 vs 78.67" in lines[0] and "arXiv:2411.02355" in lines[0]


def test_the_models_own_release_is_the_reference_not_unmeasured(capsys):
    # deepseek-ai/DeepSeek-V3 config.json: quantization_config quant_method fp8 (block 128 x 128):
    # serving its FP8 weights is the released model; a further int4 quantization is not measured
    q = quality_for("deepseek-v3", "fp8", "fp8")
    assert q[0]["measured"] and "publisher's own fp8 release" in q[0]["finding"]
    assert q[1]["tensor"] == "kv" and q[1]["finding"] != q[0]["finding"]  # the KV is still fp8
    assert quality_for("deepseek-v3", "int4", "fp16")[0]["finding"] == NOT_MEASURED
    # gpt-oss's MXFP4 experts are its release too; Llama 3.1 70B's fp8 is a quantization
    assert "release" in quality_for("gpt-oss-120b", "mxfp4", "fp16")[0]["finding"]
    assert "release" not in quality_for("llama-3.1-70b", "fp8", "fp16")[0]["finding"]
    from advisor.cli import main

    assert main(["recommend", "--model", "minimax-m2", "--gpu", "h200-sxm", "--weights", "fp8",
                 "--kv", "fp16", "--no-disaggregated"]) == 0  # fmt: skip
    assert "quality, weights fp8: the publisher's own fp8 release" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        ({"extra": 1}, "Extra inputs"),
        ({"quantized_score": 70.0}, "together"),
        ({"summary": None}, "scores or a summary"),
        ({"kind": "kv", "dtype": "int4"}, "not int4"),
        ({"retrieved": "last year"}, "retrieved"),
    ],
)
def test_strict_spec_refuses_bad_entries(bad, match):
    good = {"id": "x-int4", "models": ["llama-3.1-8b"], "kind": "weights", "dtype": "int4",
            "scheme": "W4A16", "summary": "s", "source": "src", "retrieved": "2026-11"}  # fmt: skip
    QualityNote.model_validate(good)
    with pytest.raises(ValidationError, match=match):
        QualityNote.model_validate({**good, **bad})


def test_cli_json_has_quality(capsys):
    from advisor.cli import main

    assert main(["recommend", "--weights", "int4", "--kv", "fp16", "--no-disaggregated",
                 "--json"]) == 0  # fmt: skip
    r = json.loads(capsys.readouterr().out)
    assert r["best"]["weights"] == "int4"
    assert r["quality"][0]["measured"] and "78.54 vs 78.67" in r["quality"][0]["notes"][0]


def test_pdf_has_the_quality_notes():
    import io

    from pypdf import PdfReader

    from advisor.report.pdf import build_report
    from advisor.scenario import Options, Scenario

    s = Scenario(options=Options(weight_dtypes=["int4"], kv_dtypes=["fp16"], disaggregated=False))
    pdf = build_report(s, charts=False, sensitivities=False)
    text = " ".join(" ".join((p.extract_text() or "") for p in PdfReader(io.BytesIO(pdf)).pages).split())  # fmt: skip
    assert "Model quality at weights int4, KV fp16" in text
    assert "78.54 vs 78.67" in text


def test_exclude_int4_button_edits_the_sidebar_and_the_search():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params["wd"] = "int4,fp16"
    at.query_params["kd"] = "fp16"
    at = at.run().switch_page("ui/pages/recommendation.py").run()
    assert not at.exception, at.exception
    assert any("weights int4" in e.label for e in at.expander)
    from ui.format import md_escape

    shown = [m.value for m in at.markdown]
    assert md_escape("Quality: weights int4: 99.8% of the unquantized score") in " ".join(shown)
    at.button(key="quality.exclude.int4").click().run()
    assert not at.exception, at.exception
    wd = next(w for w in at.multiselect if w.key == "w.wd")
    assert wd.value == ["fp16"]
    assert not any("weights int4" in e.label for e in at.expander)


def test_issue_38_published_evaluations():
    """The models of the hospital workshop (issue 38), numbers as their sources state them."""
    notes = quality_notes()
    # ISTA-DASLab/DeepSeek-R1-GPTQ-4b-128g card: OpenLLM v1 80.93 vs 81.04 for the FP8 release;
    # AIME-24/MATH-500/GPQA-Diamond average 80.10 vs 82.99 (96.52%)
    r1 = notes["deepseek-r1-int4-gptq-reasoning"]
    assert (r1.quantized_score, r1.baseline_score) == (80.10, 82.99)
    assert round(r1.recovery * 100, 2) == 96.52 and r1.domain == "reasoning"
    lines = quality_lines("deepseek-r1", "int4", "fp16")
    assert "80.93 vs 81.04 for the FP8 release" in lines[0] and NOT_MEASURED not in lines[0]
    # gpt-oss-120b model card (arXiv 2508.10925): HealthBench 57.6 at high reasoning, MXFP4 release
    q = quality_for("gpt-oss-120b", "mxfp4", "fp16")[0]
    assert "release" in q["finding"] and any("HealthBench 57.6" in n for n in q["notes"])
    assert q["unknown"] == "no published code or legal evaluation of the mxfp4 release"
    # neuralmagic/Llama-3.3-70B-Instruct-quantized.w8a8 card: 100% on HumanEval (code)
    q = quality_for("llama-3.3-70b", "int8", "fp16")[0]
    assert q["measured"] and "99.4%" in q["finding"]
    assert q["unknown"] == "no published medical or legal evaluation at int8 for this model"
    # Qwen3-235B-A22B: no published evaluation at int4 found; said, not left blank
    line = quality_lines("qwen3-235b-a22b", "int4", "fp16")[0]
    assert NOT_MEASURED in line and "no published medical, code or legal evaluation" in line
    # ISTA-DASLab/Qwen3-8B-FPQuant-QAT-NVFP4 card: 76.5 vs 77.5
    assert notes["qwen3-8b-nvfp4-qat"].recovery == pytest.approx(76.5 / 77.5)


def test_a_domain_is_validated():
    with pytest.raises(ValidationError, match="domain"):
        QualityNote.model_validate({"id": "x", "models": ["*"], "kind": "weights", "dtype": "int4",
                                    "scheme": "s", "summary": "s", "source": "s",
                                    "retrieved": "2026-12", "domain": "astrology"})  # fmt: skip

"""Text a user typed or uploaded, at three boundaries the earlier rounds did not reach:

- the PDF: fpdf2 replaces its page-count alias ``{nb}`` wherever it appears in drawn text, so
  ``report --client "Acme {nb}"`` printed "Acme 8" (the page count) on the cover and in every
  page's header; the expected text is the client name as typed (the rule: user text is data);
- the deploy bundle's README.md: the "Before serving" step of a 16-bit deployment of an uploaded
  config.json quoted its model id in prose, so the id ``www.evil.example`` was a live autolink
  (tests/test_hardening_round4.py, the bf16 case, checks it with the other README lines);
- a config.json's ``architectures`` / ``model_type`` were echoed whole in the "unknown
  architecture" and "disagrees" messages: a 50,000-character architecture filled the CLI's
  1,000-character error line before the supported list (the allowed values) was said.
"""

from __future__ import annotations

import io
import json
import re
from pathlib import Path

import pytest

from advisor.catalog.hf import HFConfigError, model_from_hf_config
from advisor.scenario import Scenario

ROOT = Path(__file__).resolve().parents[1]
HF = ROOT / "tests" / "fixtures" / "hf"


def test_pdf_prints_a_client_name_with_the_page_alias_as_typed():
    from pypdf import PdfReader

    from advisor.report.pdf import build_report

    pdf = build_report(Scenario(model="llama-3.1-8b"), client="Acme {nb} Corp",
                       consultant="Bob {nb}", charts=False, sensitivities=False)  # fmt: skip
    pages = PdfReader(io.BytesIO(pdf)).pages
    text = "\n".join(p.extract_text() for p in pages)
    assert "Acme {nb} Corp" in text and "Bob {nb}" in text
    assert not re.search(r"Acme \d+ Corp|Bob \d+", text)
    # the footer still counts the pages
    assert f"Page 1 of {len(pages)}" in text


@pytest.mark.parametrize(
    "change",
    [
        {"model_type": "bert", "architectures": ["A" * 50_000]},  # unknown architecture
        {"model_type": "x" * 50_000, "architectures": ["BertModel"]},
        {"architectures": ["Qwen2ForCausalLM"] + ["B" * 100] * 300},  # disagrees with llama
    ],
)
def test_long_architectures_are_echoed_short(change, run_cli, tmp_path):
    cfg = {**json.loads((HF / "llama-3.1-8b.json").read_text()), **change}
    with pytest.raises(HFConfigError) as exc:
        model_from_hf_config(cfg)
    assert len(str(exc.value)) < 600, len(str(exc.value))
    path = tmp_path / "c.json"
    path.write_text(json.dumps(cfg))
    code, _, err = run_cli(["memory", "--model", str(path), "--gpu", "h100-sxm"])
    assert code == 2 and err.count("\n") == 1
    # the allowed values are still said (the unknown case) or the family it disagrees with
    assert "supported: llama" in err or "(qwen2)" in err, err

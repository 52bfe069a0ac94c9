"""Hostile input, round 4: what the earlier rounds (tests/test_hardening_*.py, test_hostile_files.py,
test_security.py) did not reach.

Found by hand (each case below failed on the code before its fix):
- A link's value inside the Scenario's range but below the sidebar widget's minimum was accepted
  by the URL parser, then silently raised to the minimum (``rate=0.0005`` -> 0.001,
  ``yrs=0.2`` -> 0.5, ``util=0.005`` -> 0.01) or dropped (``ttft=0.0005``, ``capex=0.5`` -> no
  target, no cap) by Streamlit, with no word to the user. The ranges are now one definition
  (advisor/scenario.py ``*_RANGE*``) read by the Scenario, the widgets and the CLI's flags.
- ``recommend --qps 1e-320`` answered "$inf per 1M output tokens" and a 309-digit headroom;
  ``--ttft-p99-ms 1e-320`` missed the target by "+inf%", with numpy overflow warnings on stderr.
- A 5,000-digit number was echoed whole in the one-line error; a link parameter named with
  50,000 characters was echoed whole in the page's warning.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ui.url import scenario_from_params

ROOT = Path(__file__).resolve().parents[1]
APP = str(ROOT / "app.py")

#: (URL key, value inside the old Scenario range but below the widget's minimum, the minimum).
BELOW_WIDGET_MIN = [
    ("rate", "0.0005", "0.001"),
    ("ttft", "0.0005", "0.001"),
    ("tpot", "1e-320", "0.001"),
    ("e2e", "0.0001", "0.001"),
    ("yrs", "0.2", "0.5"),
    ("util", "0.005", "0.01"),
    ("capex", "0.5", "1"),
]


@pytest.mark.parametrize(("key", "value", "least"), BELOW_WIDGET_MIN)
def test_link_value_below_the_widget_range_is_refused_naming_it(key, value, least):
    _, _, warnings = scenario_from_params({key: value})
    assert len(warnings) == 1, warnings
    assert f"{key}='{value}'" in warnings[0] and f"greater than or equal to {least}" in warnings[0]


@pytest.mark.parametrize(("key", "value", "least"), BELOW_WIDGET_MIN[::2])
def test_the_app_uses_what_the_link_parser_kept_and_says_so(
    key, value, least, tmp_path, monkeypatch
):
    """The scenario the app computes with is the one the link parser returned (before: the
    widget clamped or dropped the value silently)."""
    monkeypatch.setenv("INFERENCE_ARCHITECT_DATA_DIR", str(tmp_path))
    parsed, _, _ = scenario_from_params({key: value})
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params[key] = value
    at.run()
    assert not at.exception
    assert at.session_state["scenario"].model_dump(exclude={"name"}) == parsed.model_dump(
        exclude={"name"}
    )
    assert any(f"{key}='{value}'" in w.value.replace("\\", "") for w in at.warning)


def test_every_sidebar_number_accepts_exactly_the_scenario_range(tmp_path, monkeypatch):
    """Each sidebar number input's [min, max] is what the Scenario accepts: its ends validate, a
    value just outside does not (so a link or a file the Scenario accepts fits the widget)."""
    from pydantic import ValidationError

    from advisor.scenario import Scenario
    from ui.state import _K

    monkeypatch.setenv("INFERENCE_ARCHITECT_DATA_DIR", str(tmp_path))
    at = AppTest.from_file(APP, default_timeout=120).run()
    by_key = {w.key: w for w in at.sidebar.number_input}
    checked = 0
    for path, wkey in _K.items():
        w = by_key.get(wkey)
        if w is None or path.startswith("view.") or path.startswith("hardware."):
            continue
        section, field = path.split(".")
        base = Scenario().model_dump()
        if path == "workload.arrival_rate_per_s":
            base["workload"]["concurrent_users"] = None
        for inside in (w.min, w.max):
            base[section][field] = inside
            Scenario.model_validate(base)
        step = 1 if isinstance(w.min, int) else abs(w.min) * 1e-6 or 1e-9
        for outside in (w.min - step, w.max + max(step, abs(w.max) * 1e-6)):
            base[section][field] = outside
            with pytest.raises(ValidationError):
                Scenario.model_validate(base)
        checked += 1
    assert checked >= 12


@pytest.mark.parametrize(
    ("argv", "flag", "allowed"),
    [
        (["--qps", "1e-320"], "--qps", "[0.001, 1e+06]"),
        (["--ttft-p99-ms", "1e-320"], "--ttft-p99-ms", "[0.001, 3.6e+06]"),
        (["--tpot-p99-ms", "0.0001"], "--tpot-p99-ms", "[0.001, 60000]"),
        (["--max-capex-usd", "0.5"], "--max-capex-usd", "[1, 1e+10]"),
    ],
)
def test_recommend_refuses_vanishing_values_naming_flag_value_and_range(
    argv, flag, allowed, run_cli
):
    code, out, err = run_cli(["recommend", "--model", "llama-3.1-8b", *argv])
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and flag in err and argv[1] in err and allowed in err


@pytest.mark.parametrize("flag", ["--isl", "--qps"])
def test_a_5000_digit_number_is_echoed_short(flag, run_cli):
    code, _, err = run_cli(["recommend", "--model", "llama-3.1-8b", flag, "9" * 5000])
    assert code == 2 and flag in err and "(5,000 characters)" in err and len(err) < 300


def test_a_50000_character_link_parameter_name_is_echoed_short():
    _, _, warnings = scenario_from_params({"k" * 50_000: "1"})
    assert len(warnings) == 1 and "(50,000 characters)" in warnings[0]
    assert len(warnings[0]) < 1000


# -- plotly: LaTeX and hover-template placeholders --------------------------------------------
#: A scenario name that is plotly syntax beyond HTML: "$...$" is typeset by MathJax (kaleido
#: loads it for the PDF's charts), "%{y}" is a placeholder when a name is part of a hover template
#: (the Compare page's throughput chart put the name into it: the hover showed the throughput).
PLOTLY_NAME = "Acme $\\frac{a}{b}$ %{y} %{x:$.2f}"


def test_a_name_in_a_hover_template_is_no_placeholder():
    from advisor.catalog import get_accelerator, get_model
    from advisor.charts import compare_charts as cc
    from advisor.perf.model.estimate import EstimateInput

    model, gpu = get_model("llama-3.1-8b"), get_accelerator("l40s")
    rows = cc.batch_sweep(model, gpu, EstimateInput(tp=1), cc.powers_of_two(4))
    fig = cc.throughput_vs_batch_figure({PLOTLY_NAME: rows})
    for trace in fig.data:
        assert trace.hovertemplate.count("%{") == 2, trace.hovertemplate  # batch %{x}, %{y}
        assert "$" not in trace.hovertemplate and "$" not in trace.name


def test_user_text_never_reaches_a_figure_as_latex():
    import plotly.graph_objects as go

    from advisor.charts.theme import styled

    fig = styled(go.Figure(), f"Where the time goes: {PLOTLY_NAME}")
    assert "$" not in fig.layout.title.text and "%{" not in fig.layout.title.text
    assert "&#36;\\frac{a}{b}&#36;" in fig.layout.title.text  # shown as typed


def test_pdf_charts_are_exported_without_mathjax(monkeypatch):
    """kaleido loads MathJax from a CDN unless told not to: a request per export from the
    consultant's machine, and LaTeX typesetting of any "$...$" that reached a chart."""
    import kaleido

    from advisor.report import images

    seen: dict = {}
    monkeypatch.setattr(kaleido, "start_sync_server", lambda **kw: seen.update(kw))
    monkeypatch.setattr(images, "charts_status", lambda: (True, "test"))
    monkeypatch.setitem(images._state, "started", False)
    assert images._start()
    monkeypatch.setitem(images._state, "started", False)
    assert seen.get("mathjax") is False


# -- the deploy bundle's README.md: a markdown file we hand over ---------------------------------
@pytest.mark.parametrize(
    "name,weights",
    [("www.evil.example", None), ("https://evil.example/x", None), ("www.evil.example", "bf16")],
)
def test_bundle_readme_makes_no_link_of_an_uploaded_model_name(name, weights, tmp_path, run_cli):
    """An uploaded config.json named ``www.evil.example`` gives the model id
    ``www.evil.example``; the README said "vllm quantizes www.evil.example at load", a live link
    on GitHub or GitLab. Identifiers are code spans now (quoting.md_code). With 16-bit weights
    the README's "Before serving" step names the model too (round 5: it was still prose)."""
    import json

    from tests.test_hardening_escape import autolinks

    cfg = json.loads((ROOT / "tests/fixtures/hf/llama-3.1-8b.json").read_text())
    cfg["_name_or_path"] = name
    doc = {"schema_version": 1, "model": "www.evil.example", "model_config_json": cfg,
           "hardware": {"gpus": ["h100-sxm"], "gpus_per_node": 2}}  # fmt: skip
    if weights:
        doc["options"] = {"weight_dtypes": [weights]}
    (tmp_path / "s.json").write_text(json.dumps(doc))
    out = tmp_path / "d"
    out.mkdir()
    code, _, err = run_cli(["deploy", "--scenario", str(tmp_path / "s.json"), "--out", str(out)])
    assert code == 0, err
    readme = (out / "README.md").read_text()
    assert "evil" in readme
    if weights:
        assert "Before serving: download the 16-bit weights of `www.evil.example`" in readme
    prose = re.sub(r"(`+)(.+?)\1", "", readme)  # GFM makes no link inside a code span
    assert not autolinks(prose), autolinks(prose)


# -- the PDF: a character no font has is said once, plainly --------------------------------------
def test_a_glyph_no_font_has_leaves_no_library_warning_on_stderr(caplog):
    """``report --client "Acme 𠜎"`` printed fpdf2's "Font MPDFAA+DejaVuSansBook is missing the
    following glyphs: '𠜎' (\\U0002070e)" beside the report's own warning naming the character."""
    from fpdf import FPDF

    from advisor.report import fonts

    pdf = FPDF()
    pdf.add_page()
    family = fonts.register(pdf)
    if family == fonts.FALLBACK_FAMILY:
        pytest.skip("no DejaVu font installed")
    text = "Acme \U0002070e \U0001d518"  # a CJK Extension B ideograph, a Fraktur capital
    fonts.cover(pdf, text)
    pdf.set_font(family, size=12)
    pdf.cell(text=text)
    pdf.output()
    assert set(pdf.unprintable) >= {"\U0002070e"}  # the report's own warning names it
    # logged by fpdf2 (pytest collects the record; on the command line it reached stderr)
    assert not [r for r in caplog.records if "missing the following glyphs" in r.getMessage()]


# -- every number names its range, whatever is wrong with it --------------------------------------
@pytest.mark.parametrize(
    ("field", "value", "allowed"),
    [
        ('"workload": {"isl_tokens": NaN}', "nan", "1..2000000"),
        ('"workload": {"isl_tokens": 1e308}', "1e+308", "1..2000000"),
        ('"workload": {"arrival_rate_per_s": Infinity}', "inf", "[0.001, 1e+06]"),
        ('"hardware": {"gpus_per_node": 8.5}', "8.5", "1..72"),
        ('"cost": {"utilisation": -0.0}', "-0.0", "[0.01, 1]"),
    ],
)
def test_a_scenario_file_number_error_names_field_value_and_range(
    field, value, allowed, tmp_path, run_cli
):
    """A wrong type said "Input should be a valid integer (got nan)" with no range."""
    path = tmp_path / "s.json"
    path.write_text(f'{{"schema_version": 1, "model": "llama-3.1-8b", {field}}}')
    code, _, err = run_cli(["recommend", "--scenario", str(path)])
    assert code == 2 and f"(got {value}; allowed {allowed})" in err, err


@pytest.mark.parametrize(
    ("key", "value", "allowed"),
    [("in", "nan", "1..2000000"), ("rate", "inf", "[0.001, 1e+06]"), ("c", "x", "1..100000")],
)
def test_a_link_number_error_names_the_range(key, value, allowed):
    _, _, warnings = scenario_from_params({key: value})
    assert f"(allowed {allowed})" in warnings[0], warnings


# -- the terminal: a path we print is one line ----------------------------------------------------
def test_a_written_path_with_a_line_break_prints_on_one_line(tmp_path, run_cli):
    """``deploy --out $'d\\nFAKE LINE'`` printed "FAKE LINE" as a line of its own (the terminal
    filter keeps line breaks of the output itself); a path is now inert like any user text."""
    out = tmp_path / "d\nrecommended: FAKE"
    out.mkdir()
    code, stdout, err = run_cli(
        ["deploy", "--deployment", "h100-sxm.tp1.pp1.dp1.fp8.fp8", "--out", str(out)]
    )
    assert code == 0, err
    wrote = [line for line in stdout.splitlines() if "README.md" in line]
    assert (
        len(wrote) == 1 and wrote[0].startswith("wrote 4 files: ") and "d\\nrecommended" in wrote[0]
    )
    assert not any(line.startswith("recommended: FAKE") for line in stdout.splitlines())


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("h100-sxm.tp4.pp1.dp100000000.fp8.fp8", "dp = 100000000 is outside 1..100000"),
        (
            "h100-sxm.tp" + "9" * 5000 + ".pp1.dp1.fp8.fp8",
            "tp = 99999999999999999999... is outside 1..1024",
        ),
    ],
)
def test_a_deployment_number_too_long_is_out_of_range_not_a_non_number(text, says, run_cli):
    """ "dp100000000" was "not <field><whole number>"; now the range is named, on the CLI and
    in a link's ``dep``."""
    from ui.url import dep_from_params

    _, why = dep_from_params({"dep": text[:300]}) if len(text) <= 300 else (None, says)
    assert says in why
    code, _, err = run_cli(["recommend", "--model", "llama-3.1-8b", "--deployment", text])
    assert code == 2 and says in err and len(err) < 500, err


# -- the sidebar: a refused name is shown as text and costs nothing else -------------------------
def test_a_refused_scenario_name_is_plain_text_and_keeps_every_other_input(tmp_path, monkeypatch):
    """Typing ``x\\u202e [click](https://evil.example) www.evil.example`` as the scenario name:
    the sidebar's error echoed it as markdown (a live link, an autolink) and the whole scenario
    fell back to the defaults (4,096 input tokens from the link became 1,024)."""
    from tests.test_hardening_escape import autolinks

    monkeypatch.setenv("INFERENCE_ARCHITECT_DATA_DIR", str(tmp_path))
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["in"] = "4096"
    at.run()
    at.sidebar.text_input[0].input("x\u202e [click](https://evil.example) www.evil.example").run()
    assert not at.exception
    errors = [e.value for e in at.sidebar.error]
    assert any("U+202E" in e.replace("\\", "") for e in errors), errors
    for e in errors:
        assert not autolinks(e) and "[click](" not in e, e
    scenario = at.session_state["scenario"]
    assert scenario.workload.isl_tokens == 4096 and scenario.name == "Untitled scenario"


# -- the PDF: a character no font has beside shaped text ------------------------------------------
def _pdftotext(pdf: bytes, tmp_path: Path) -> str:
    import shutil
    import subprocess

    if shutil.which("pdftotext") is None:
        pytest.skip("pdftotext not installed (poppler-utils: make setup and .ci/run install it)")
    path = tmp_path / "r.pdf"
    path.write_bytes(pdf)
    return subprocess.run(["pdftotext", str(path), "-"], capture_output=True, text=True,
                          check=True).stdout  # fmt: skip


def test_a_glyph_no_font_has_does_not_space_apart_the_hebrew_beside_it(tmp_path):
    """``report --client "Acme 𠜎 עברית 中文"`` printed "עברי ת" in the page header and on the cover
    (seen in the page image too): fpdf2 laid out the shaped Hebrew out of step after the .notdef
    glyph of U+2070E. pypdf's text reads the word whole either way; pdftotext keeps the gap."""
    from advisor.report import fonts
    from advisor.report.pdf import build_report, last_build_info
    from advisor.scenario import Scenario

    if fonts.find_dejavu() is None:
        pytest.skip("no DejaVu font installed")
    pdf = build_report(Scenario(), client="Acme \U0002070e עברית 中文", sensitivities=False,
                       charts=False)  # fmt: skip
    text = _pdftotext(pdf, tmp_path)
    assert "עברי ת" not in text and "中 文" not in text
    assert text.count("עברית") >= 2 and text.count("中文") >= 2  # header and cover
    assert last_build_info()["unprintable"] == ["\U0002070e"]  # still named on stderr / in the app


# -- report --client: what the PDF drops is said, on the CLI as in the app -----------------------
HIDDEN = "Acme\x1b]0;pwned\x07\r\x00 \u202eCorp"


def test_cli_report_says_which_client_characters_the_pdf_drops(tmp_path, run_cli):
    """``--client`` with an escape sequence, a carriage return, a NUL and a bidi override was
    accepted without a word (the PDF dropped them); now one stderr line names the flag, the
    value inert and each character, and the PDF is the app's (the same text.clean)."""
    out = tmp_path / "r.pdf"
    code, _, err = run_cli(["report", "--out", str(out), "--client", HIDDEN, "--isl", "256",
                            "--osl", "32", "--no-sensitivities", "--no-disaggregated"])  # fmt: skip
    assert code == 0 and out.read_bytes().startswith(b"%PDF")
    warning = [line for line in err.splitlines() if "--client" in line]
    assert len(warning) == 1, err
    for said in ("\\x1b", "\\r", "\\x00", "\\u202e", "U+202E RIGHT-TO-LEFT OVERRIDE", "U+001B"):
        assert said in warning[0], (said, warning[0])
    assert "\x1b" not in err and "\u202e" not in err
    assert "Acme]0;pwned Corp" in _pdftotext(out.read_bytes(), tmp_path)


def test_app_says_which_client_characters_the_pdf_drops(tmp_path, monkeypatch):
    """The same words as the CLI's (one helper, text.dropped_note), under the field's label."""
    monkeypatch.setenv("INFERENCE_ARCHITECT_DATA_DIR", str(tmp_path))
    at = AppTest.from_file(APP, default_timeout=120).run()  # the Recommendation page
    at.text_input(key="pdf_client").input(HIDDEN).run()
    assert not at.exception
    said = [w.value for w in at.warning if "U+202E" in w.value.replace("\\", "")]
    assert len(said) == 1, [w.value for w in at.warning]

    from advisor.report.text import dropped_note
    from ui.format import md_escape

    assert said[0] == md_escape(dropped_note("Client / engagement", HIDDEN))


@pytest.mark.parametrize(("raw", "kept"), [("0.555", 0.56), ("0.5049", 0.5)])
def test_a_link_confidence_between_percents_is_rounded_and_said(raw, kept):
    """The sidebar's confidence control takes whole percents: ``?conf=0.555`` became 56% without
    a word (the round-4 review). The value is rounded where the link is read, and said."""
    from ui.url import scenario_from_params

    scenario, _, warnings = scenario_from_params({"conf": raw})
    assert scenario.sla.confidence == kept
    assert warnings == [
        f"sla.confidence (conf='{raw}'): rounded to {kept:g}, since the confidence control "
        "takes whole percents"
    ]
    # a whole percent whose float times 100 is not whole (0.57 * 100 = 56.99...) is no warning
    assert scenario_from_params({"conf": "0.57"})[2] == []

"""Client profiles (advisor/perf/calibration/client_profile.py) through the CLI: calibrate from the fixtures
in tests/fixtures/client, then estimate / recommend / report with --profile.

Measured values are read by hand from the fixture files (quoted at each use); the predictions
are the CLI's own output, so each error below is (CLI prediction / hand-read measurement - 1)."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest
import yaml

from advisor.cli import main
from advisor.perf.importers import Deployment, load_bytes

FIX = Path(__file__).parent / "fixtures" / "client"
DEPLOYMENT = ["--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm",
              "--weights", "bf16", "--kv", "bf16"]  # fmt: skip
FILES = ["vllm_bench_throughput.json", "vllm_bench_serve.json", "genai_perf_profile_export.json",
         "aiperf_profile_export.json", "nccl_all_reduce_perf.txt"]  # fmt: skip


def run_json(argv: list[str], capsys) -> tuple[int, dict, str]:
    code = main([*argv, "--json"])
    out, err = capsys.readouterr()
    return code, (json.loads(out) if code == 0 else {}), err


@pytest.fixture(scope="module")
def profile(tmp_path_factory) -> Path:
    """A profile of the illustrative fixture files. Held out they do not bring the shipped error
    below the bar and the GenAI-Perf run gets worse (the CLI refuses them:
    test_illustrative_files_are_refused_by_the_cli), so the profile the estimate/recommend/
    report/store tests use is fitted with both bars lifted (min_gain 1, tolerance 100 pp)."""
    from advisor.perf.calibration.client_profile import dump, fit_profile
    from advisor.perf.importers import Deployment, load

    dep = Deployment("llama-3.1-8b", "h100-sxm", 1, 1, "bf16", "bf16", "vllm", isl=1024, osl=512)
    path = tmp_path_factory.mktemp("prof") / "acme-h100.yaml"
    fit = fit_profile([load(FIX / f, dep) for f in FILES], dep, "acme-h100", min_gain=1.0,
                      tolerance_pp=100.0)  # fmt: skip
    path.write_text(dump(fit.doc))
    return path


def test_illustrative_files_are_refused_by_the_cli(tmp_path, capsys):
    out = tmp_path / "p.yaml"
    froms = [x for f in FILES for x in ("--from", str(FIX / f))]
    code = main(["calibrate", *froms, *DEPLOYMENT, "--isl", "1024", "--osl", "512",
                 "--out", str(out)])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 2 and not out.exists() and err.count("\n") == 1
    # 4 runs: the out-of-sample median must be at most 1 - 0.5 sqrt(2/4) = 65% of the shipped one.
    assert (
        "held out, the profile does not bring the shipped calibration's error below 65% of it"
        in err
    )
    # Each run's held-out figures are in the one line (shipped -> profile fitted without it).
    assert "genai_perf_profile_export.json " in err and " pp)" in err


def test_calibrate_writes_a_profile_with_digests_deployment_and_residuals(profile):
    doc = yaml.safe_load(profile.read_text())
    assert doc["schema"] == "inference-architect/client-profile/1"
    assert doc["name"] == "acme-h100"
    assert doc["deployment"]["gpu"] == "h100-sxm" and doc["deployment"]["engine"] == "vllm"
    import hashlib

    want = hashlib.sha256((FIX / "vllm_bench_serve.json").read_bytes()).hexdigest()
    assert {f["name"]: f["sha256"] for f in doc["files"]}["vllm_bench_serve.json"] == want
    # 11 serving points (1 + 4 + 3 + 3: TTFT, TPOT, throughput, and vllm_bench_serve.json's mean
    # request latency) from the four serving files; the 8 nccl rows are checked, not fitted.
    assert doc["summary"]["points"] == 11
    assert doc["collectives"]["rows"] == 8
    assert set(doc["fitted"]) | set(doc["held"]) == {
        "mem_factor", "compute_factor", "step_overhead_s", "request_overhead_s"
    }  # fmt: skip
    assert all(doc["held"].values())
    s = doc["summary"]
    # Out of sample (each of the 4 runs predicted by the profile fitted to the other 3) the
    # profile beats the shipped calibration's median error (the bar this fixture was fitted at).
    assert s["loo_median_ape_pct"] < s["median_ape_before_pct"]
    assert all(p["loo_pct"] is not None for p in doc["points"])
    # One held-out row per file (each file is one run), and the range: one length class per
    # concurrency run (GenAI-Perf 550/150 at 16, vllm bench serve 1024/256 at 32, AIPerf
    # 2000/300 at 64) and the offline one (1024/512).
    assert [r["run"] for r in doc["holdout"]["runs"]] == FILES[:4]
    assert [(m["mode"], m["isl"][0], m["load"]) for m in doc["range"]] == [
        ("concurrency", 550.0, [16.0, 16.0]), ("concurrency", 1024.0, [32.0, 32.0]),
        ("concurrency", 2000.0, [64.0, 64.0]), ("offline", 1024.0, [0.0, 0.0]),
    ]  # fmt: skip


def test_round_trip_estimate_with_the_profile_is_closer_to_the_fixture(profile, capsys):
    # vllm_bench_serve.json: max_concurrency 32, 327,680 / 81,920 tokens over 320 requests
    # (1024 in, 256 out), output_throughput 2249.951 tok/s, mean_tpot_ms 14.1.
    argv = ["estimate", *DEPLOYMENT, "--isl", "1024", "--osl", "256", "--concurrency", "32"]
    code, before, _ = run_json(argv, capsys)
    assert code == 0
    code, after, _ = run_json([*argv, "--profile", str(profile)], capsys)
    assert code == 0
    err_before = before["throughput_tok_s"] / 2249.951 - 1
    err_after = after["throughput_tok_s"] / 2249.951 - 1
    print(f"throughput error before {err_before:+.1%}, after {err_after:+.1%}")
    assert abs(err_after) < abs(err_before) and abs(err_after) < 0.05
    tpot_before = before["tpot_ms"] / 14.1 - 1
    tpot_after = after["tpot_ms"] / 14.1 - 1
    print(f"TPOT error before {tpot_before:+.1%}, after {tpot_after:+.1%}")
    assert abs(tpot_after) < abs(tpot_before) and abs(tpot_after) < 0.05
    # The profile recorded the same before-error for this point as the estimate shows.
    doc = yaml.safe_load(profile.read_text())
    point = {p["id"]: p for p in doc["points"]}["vllm_bench_serve.json:output_tok_s"]
    assert point["before_pct"] == pytest.approx(err_before * 100, abs=0.05)
    cp = after["client_profile"]
    assert cp["name"] == "acme-h100" and cp["median_ape_after_pct"] is not None
    assert "client_profile" not in before


def test_estimate_input_lines_use_the_profile(profile, tmp_path, capsys):
    lines = tmp_path / "in.jsonl"
    lines.write_text(
        json.dumps({"model": "llama-3.1-8b", "gpu": "h100-sxm", "engine": "vllm", "isl": 1024,
                    "osl": 256, "concurrency": 32, "weights": "bf16", "kv": "bf16"}) + "\n"
        + json.dumps({"model": "llama-3.1-8b", "gpu": "a100-sxm-80gb", "engine": "vllm",
                      "isl": 1024, "osl": 256}) + "\n"
    )  # fmt: skip
    code, out, _ = run_json(["estimate", "--input", str(lines), "--profile", str(profile)], capsys)
    assert code == 0
    first, second = out["results"]
    assert first["client_profile"]["name"] == "acme-h100"
    assert "fitted on h100-sxm with vllm" in second["error"]


def test_profile_on_another_accelerator_or_engine_is_refused(profile, capsys):
    argv = ["estimate", "--model", "llama-3.1-8b", "--isl", "128", "--osl", "128"]
    assert (
        main([*argv, "--gpu", "a100-sxm-80gb", "--engine", "vllm", "--profile", str(profile)]) == 2
    )
    assert "fitted on h100-sxm with vllm" in capsys.readouterr().err
    assert main([*argv, "--gpu", "h100-sxm", "--engine", "trtllm", "--profile", str(profile)]) == 2
    assert "this run is on h100-sxm with trtllm" in capsys.readouterr().err
    rec = ["recommend", "--model", "llama-3.1-8b", "--gpu", "a100-sxm-80gb", "--engine", "vllm"]
    assert main([*rec, "--profile", str(profile)]) == 2
    assert "fitted on h100-sxm with vllm" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (lambda d: d["constants"].update(mem_factor=0.95), "'digest'"),  # tampered value
        (lambda d: d["constants"].update(mem_factor=40.0), "'constants.mem_factor'"),
        (lambda d: d.update(schema="other/2"), "'schema'"),
        (lambda d: d["deployment"].update(engine="tgi"), "'deployment.engine'"),
        (lambda d: d.update(extra_key=1), "'extra_key'"),
        (lambda d: d.pop("files"), "'files'"),
        (lambda d: d.pop("holdout"), "'holdout' is missing: the profile was written before"),
        (lambda d: d["range"][0].update(mode="burst"), "'range.0.mode'"),
        (lambda d: d["points"][0].update(measured=float("nan")), "'points.0.measured'"),
    ],
)
def test_tampered_or_wrong_schema_profile_exits_2_naming_the_field(
    profile, tmp_path, capsys, edit, field
):
    doc = yaml.safe_load(profile.read_text())
    edit(doc)
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(doc))
    argv = ["estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm",
            "--isl", "128", "--osl", "128", "--profile", str(bad)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"field {field}" in err and err.count("\n") == 1


def test_non_profile_files_refused(tmp_path, capsys):
    for name, data in [("empty.yaml", b""), ("list.yaml", b"- 1\n"), ("bin.yaml", b"\xff\x00")]:
        p = tmp_path / name
        p.write_bytes(data)
        argv = ["estimate", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--isl", "128",
                "--osl", "128", "--profile", str(p)]  # fmt: skip
        assert main(argv) == 2
        assert name in capsys.readouterr().err


def test_one_point_is_refused_and_nothing_is_written(tmp_path, capsys):
    out = tmp_path / "one.yaml"
    argv = ["calibrate", "--from", str(FIX / "vllm_bench_throughput.json"), *DEPLOYMENT,
            "--isl", "1024", "--osl", "512", "--out", str(out)]  # fmt: skip
    assert main(argv) == 2
    err = capsys.readouterr().err
    # A fit always meets its only point: nothing out of sample to check it against.
    assert "vllm_bench_throughput.json: one serving point" in err and err.count("\n") == 1
    assert not out.exists()


def test_the_same_file_twice_counts_once(tmp_path, capsys):
    # Two copies of one file (same SHA-256) are one run, not a 2-point "exact" fit: refused.
    a = tmp_path / "a.json"
    a.write_bytes((FIX / "vllm_bench_throughput.json").read_bytes())
    out = tmp_path / "dup.yaml"
    argv = ["calibrate", "--from", str(FIX / "vllm_bench_throughput.json"), "--from", str(a),
            *DEPLOYMENT, "--isl", "1024", "--osl", "512", "--out", str(out)]  # fmt: skip
    assert main(argv) == 2
    assert "one serving point" in capsys.readouterr().err and not out.exists()


def test_constant_at_its_bound_is_refused():
    from advisor.perf.calibration.client_profile import at_bound
    from advisor.perf.model.overlay import Overlay

    # compute_factor's bounds are 0.25..4.0 (client_profile.BOUNDS), step_overhead_s 0..0.05 s.
    assert at_bound(Overlay(1.0, 4.0, 0.005, 0.1), ["compute_factor"]) == (
        "compute_factor = 4 is at its upper bound 4"
    )
    assert at_bound(Overlay(1.0, 1.0, 0.05, 0.1), ["step_overhead_s"]) == (
        "step_overhead_s = 0.05 is at its upper bound 0.05"
    )
    assert at_bound(Overlay(0.25, 1.0, 0.005, 0.1), ["mem_factor"]) == (
        "mem_factor = 0.25 is at its lower bound 0.25"
    )
    # No overhead at all is a physical value, not a bound the search ran into.
    assert at_bound(Overlay(1.2, 1.0, 0.0, 0.1), ["mem_factor", "step_overhead_s"]) is None


def test_render_never_prints_none_percent():
    from advisor.cli.calibrate_client import render

    r = {"out": "p.yaml", "name": "p", "digest": "0" * 12,
         "deployment": dict(model="m", gpu="g", tp=1, pp=1, weights="bf16", kv="bf16", engine="vllm"),
         "files": [], "fitted": [], "held": {}, "constants": {},
         "summary": dict(points=2, median_ape_before_pct=None, median_ape_after_pct=None,
                         max_ape_after_pct=None, loo_median_ape_pct=None),
         "points": [], "collectives": dict(rows=3, median_ape_pct=None, note="n"), "notes": []}  # fmt: skip
    text = render(r)
    assert "None" not in text and "n/a (a prediction failed)" in text


def test_physically_impossible_point_is_flagged_not_fitted():
    # 1000 requests x 512 output tokens in 1 s = 512,000 tok/s from one H100 running an 8B model
    # in bf16: decode alone reads the 16 GB of weights per step at most 3.35 TB/s (datasheet),
    # i.e. ~210 steps/s, and the KV cache holds a few hundred sequences: far below that.
    doc = json.loads((FIX / "vllm_bench_throughput.json").read_text())
    doc.update(elapsed_time=1.0, requests_per_second=1000.0, tokens_per_second=1_536_000.0)
    from advisor.perf.calibration.client_profile import ProfileRefused, fit_profile
    from advisor.perf.importers import Deployment, load, load_bytes

    dep = Deployment("llama-3.1-8b", "h100-sxm", 1, 1, "bf16", "bf16", "vllm", isl=1024, osl=512)
    fast = load_bytes(json.dumps(doc).encode(), "fast.json", dep)
    serve = load_bytes((FIX / "vllm_bench_serve.json").read_bytes(), "vllm_bench_serve.json", dep)
    others = [
        load(FIX / f, dep) for f in ("genai_perf_profile_export.json", "aiperf_profile_export.json")
    ]
    # The flag is what this test is about, not the held-out verdict (which moves with every
    # recalibration): a refusal carries the same points.
    try:
        points = fit_profile(
            [fast, serve, *others], dep, "p", min_gain=1.0, tolerance_pp=100.0
        ).doc["points"]
    except ProfileRefused as exc:
        points = exc.points
    flagged = {p["id"]: p["flagged"] for p in points}
    assert "above the roofline bound" in flagged["fast.json:output_tok_s"]
    assert not flagged["vllm_bench_serve.json:tpot"]
    # vllm_bench_serve.json: TTFT, TPOT, latency, throughput; GenAI-Perf and AIPerf: TTFT, ITL,
    # throughput each: 10 fitted, the flagged one beside them
    assert len(points) == 11 and sum(not p["flagged"] for p in points) == 10
    assert {p["id"]: p["loo_pct"] for p in points}["fast.json:output_tok_s"] is None


def test_calibrate_from_needs_the_deployment_and_names_bad_files(tmp_path, capsys):
    argv = [
        "calibrate",
        "--from",
        str(FIX / "vllm_bench_serve.json"),
        "--out",
        str(tmp_path / "p.yaml"),
    ]
    assert main([*argv, "--gpu", "h100-sxm", "--engine", "vllm"]) == 2
    assert "--model is required with --from" in capsys.readouterr().err
    bad = tmp_path / "cut.json"
    bad.write_bytes((FIX / "vllm_bench_serve.json").read_bytes()[:200])
    assert (
        main(["calibrate", "--from", str(bad), *DEPLOYMENT, "--out", str(tmp_path / "p.yaml")]) == 2
    )
    assert "cut.json" in capsys.readouterr().err
    assert main(["calibrate", "--model", "llama-3.1-8b"]) == 2
    assert "--model only applies with --from" in capsys.readouterr().err


def test_recommend_applies_the_profile_inside_its_range_only(profile, tmp_path, capsys):
    # Inside: TP=1 bf16/bf16 (one GPU per node), 32 users without think time on one replica =
    # concurrency 32, inside the files' 16-64 (GenAI-Perf 16, vllm bench serve 32, AIPerf 64).
    rec = ["recommend", "--model", "llama-3.1-8b", "--gpu", "h100-sxm", "--engine", "vllm"]
    inside = [*rec, "--weights", "bf16", "--kv", "bf16", "--users", "32", "--think-time-s", "0",
              "--gpus-per-node", "1", "--no-disaggregated"]  # fmt: skip
    code, r, _ = run_json([*inside, "--profile", str(profile)], capsys)
    assert code == 0 and r["best"]["tp"] == 1 and r["best"]["dp"] == 1
    assert r["client_profile"]["name"] == "acme-h100" and "applied" not in r["client_profile"]
    assert "Client profile 'acme-h100'" in r["best"]["intervals"]["basis"]
    # Outside: the default load, 2 req/s (a request rate; the files hold concurrency and offline
    # runs only): searched with the shipped calibration, and the answer and the PDF say why.
    code, r, _ = run_json([*rec, "--profile", str(profile)], capsys)
    cp = r["client_profile"]
    assert code == 0 and cp["applied"] is False and cp["fallback"]
    assert "Client profile" not in r["best"]["intervals"]["basis"]
    code, plain, _ = run_json(rec, capsys)
    assert plain["best"]["description"] == r["best"]["description"]
    pdf = tmp_path / "r.pdf"
    code, out, _ = run_json(["report", *rec[1:], "--profile", str(profile), "--out", str(pdf),
                             "--no-sensitivities"], capsys)  # fmt: skip
    assert code == 0 and out["client_profile"]["applied"] is False
    import pypdf

    text = " ".join(p.extract_text() for p in pypdf.PdfReader(pdf).pages)
    text = " ".join(text.split())
    assert "Client calibration profile" in text and "was NOT applied" in text
    assert "shipped calibration" in text


def test_pdf_section_of_an_applied_profile_states_verdict_and_range(profile):
    from advisor.perf.calibration.client_profile import describe, read_profile
    from advisor.report.sections.client_profile import client_profile_lines

    lines = client_profile_lines(describe(read_profile(profile)))
    assert any(
        x.startswith("Acceptance, judged on runs held out: accepted: each of the 4") for x in lines
    )
    assert any(
        "It applies over llama-3.1-8b TP=1 PP=1 bf16/bf16; concurrency 16, input 550, "
        "output 150 tokens; concurrency 32, input 1024" in x
        for x in lines
    )


def test_estimate_outside_the_profiles_range_uses_the_shipped_calibration(profile, capsys):
    # The files' lengths: 550/150, 1024/256, 2000/300 (concurrency runs); 8,192 input tokens is
    # none of them. And at 1024/256 a concurrency of 128 is outside the 32 measured there.
    argv = ["estimate", *DEPLOYMENT, "--isl", "8192", "--osl", "256", "--concurrency", "32"]
    code, plain, _ = run_json(argv, capsys)
    code2, with_p, _ = run_json([*argv, "--profile", str(profile)], capsys)
    assert code == code2 == 0
    assert with_p["throughput_tok_s"] == plain["throughput_tok_s"]
    assert with_p["client_profile_fallback"] == (
        "input 8192, output 256 tokens: no concurrency run at these lengths (input 550, output "
        "150; input 1024, output 256; input 2000, output 300 tokens)"
    )
    assert with_p["client_profile"]["applied"] is False
    assert with_p["intervals"] == plain["intervals"]
    main([*argv, "--profile", str(profile)])
    text = capsys.readouterr().out
    assert (
        "CLIENT PROFILE acme-h100 NOT APPLIED: input 8192, output 256 tokens: no concurrency"
        in text
    )
    argv2 = ["estimate", *DEPLOYMENT, "--isl", "1024", "--osl", "256", "--concurrency", "128"]
    code, hi, _ = run_json([*argv2, "--profile", str(profile)], capsys)
    assert code == 0 and hi["client_profile_fallback"] == (
        "concurrency 128 is outside 32, what its runs at these lengths (input 1024, output 256 "
        "tokens) cover"
    )
    # Another TP: the replica itself is outside the profile's deployment.
    code, tp2, _ = run_json([*argv[:-6], "--tp", "2", "--isl", "1024", "--osl", "256",
                             "--concurrency", "32", "--profile", str(profile)], capsys)  # fmt: skip
    assert code == 0 and tp2["client_profile_fallback"].startswith("TP=2 (the profile was fitted")


def test_narrowing_rule_by_hand():
    from advisor.perf.calibration.client_profile import narrow

    # Interval 80..125 around 100 (log half-widths 0.223, 0.223), f = 0.5: e^(+-0.1116).
    assert narrow([80.0, 125.0], 100.0, 0.5, 0.0) == [89.44, 111.8]
    # Floor ln(1.2) = 0.182 above f x 0.223 = 0.112: the floor wins, e^(+-0.182) = 83.33 / 120.
    assert narrow([80.0, 125.0], 100.0, 0.5, 0.18232) == [83.33, 120.0]
    # Never widened: a floor above the original width keeps the original.
    assert narrow([95.0, 105.0], 100.0, 0.5, 0.3) == [95.0, 105.0]


def test_profile_round_trips_through_the_store_and_its_export(profile, tmp_path):
    from advisor.perf.calibration.client_profile import parse_profile
    from advisor.store import Store, StoreError

    st = Store(tmp_path / "s.sqlite3")
    text = profile.read_text()
    assert st.save_profile("Acme", text) == "acme-h100"
    assert st.profiles("Acme") == ["acme-h100"] and st.profiles("Globex") == []
    back = st.load_profile("Acme", "acme-h100")
    assert parse_profile(back, "x").digest == parse_profile(text, "y").digest
    exported = json.loads(json.dumps(st.export_all()))["client_profiles"]["Acme"]
    assert exported == [{"name": "acme-h100", "yaml": text}]
    with pytest.raises(StoreError, match="field 'digest'"):
        st.save_profile("Acme", re.sub(r"mem_factor: \S+", "mem_factor: 1.2345", text, count=1))


def test_the_roofline_bound_is_above_every_published_row_of_the_h100_sweep():
    """The bound a client's point must not beat runs every kernel at its datasheet rate: with
    the attention kernels' fitted fraction (0.74 since late 2026-12-06) left in it, TensorRT-LLM's
    own Llama-3.1-8B FP8 offline row E0660 on one H100 (13,850 tok/s, 1000/2000 tokens) read as
    "above the roofline bound 13,450" and was dropped from a fit. No row of that published
    sweep (E0650..E0670) can be faster than the hardware."""
    from advisor.perf.calibration.client_profile import impossible
    from advisor.perf.validation.measurements import cases

    items, _ = cases()
    sweep = [c for c in items if c.id in {f"E06{n}" for n in range(50, 71, 2)}]
    assert len(sweep) == 11 and {c.kind for c in sweep} == {"offline"}
    first = sweep[0].config
    dep = Deployment("llama-3.1-8b", "h100-sxm", 1, 1, first.weights, first.kv, first.engine)
    assert impossible(sweep, dep) == {}


def test_three_points_of_a_published_sweep_are_judged_held_out():
    """TensorRT-LLM 0.19 perf-overview, Llama-3.1-8B FP8 on one H100 (rows E0650..E0670 of
    data/measurements-engine-perf-pages.csv): the sweep's two ends and its middle as the client's
    three runs. Each held out, the profile fitted to the other two is off by a median 11.5%
    against the shipped calibration's 17.6% (measured, 2026-12-07 night calibration: in-engine
    collectives slow their bytes, not their latencies; 11.7% against 17.8% with the evening one,
    closed-loop throughputs replayed; 11.6% against 17.8% with the routing draw exponent's prior
    at 0.85,
    11.7% against 17.7% before it, with the NVFP4
    rows' FP8 KV cache, an fp4 GEMM efficiency and EP's all-gather; 11.1% against 12.5% with the 2026-12-06 night
    one, where rows E0650 and E0670 came out 0.6 and 1.0 pp worse): two runs better and E0650
    within the 2 pp tolerance (1.8% -> 3.4%), but not under the 3-run bar of 59% (10.4%).
    Refused with each run's figures; the other rows keep
    the shipped calibration (which saw all of them). None of the three is flagged as faster
    than the hardware: they are TensorRT-LLM's own measurements (``impossible``)."""
    from advisor.perf.calibration.client_profile import ProfileRefused, fit_profile
    from advisor.perf.importers import Imported
    from advisor.perf.validation.measurements import cases

    items, _ = cases()
    first = {c.id: c for c in items}["E0650"]
    key = (first.source, first.config.gpu.id, first.config.engine, first.config.model.id,
           first.config.tp, first.config.weights, first.kind)  # fmt: skip
    sweep = sorted(
        (c for c in items if (c.source, c.config.gpu.id, c.config.engine, c.config.model.id,
                              c.config.tp, c.config.weights, c.kind) == key),
        key=lambda c: (c.batch, c.qps, c.isl, c.osl),
    )  # fmt: skip
    assert len(sweep) >= 5
    train = [sweep[0], sweep[len(sweep) // 2], sweep[-1]]
    dep = Deployment("llama-3.1-8b", "h100-sxm", 1, 1, first.config.weights, first.config.kv,
                     first.config.engine)  # fmt: skip
    with pytest.raises(ProfileRefused) as exc:
        fit_profile([Imported("sweep", "measurements.csv", "0" * 64, cases=train)], dep, "s")
    msg = str(exc.value)
    assert msg.startswith("sweep: held out, the profile does not bring the shipped calibration's "
                          "error below 59% of it")  # fmt: skip
    assert "off by 11.5% (median), the shipped calibration by 17.6%" in msg
    assert "E0660 25.1% -> 11.5% (-13.6 pp)" in msg
    assert [r["verdict"] for r in exc.value.runs] == ["within tolerance", "better", "better"]


def test_a_profile_that_trades_one_of_its_own_runs_for_the_others_is_refused():
    """TensorRT-LLM's Llama-3.3-70B NVFP4 sweep on one B200 (perf-overview rows E0594, E0614,
    E0634: 128/128, 1000/2000 and 20000/2000 tokens, offline) as the client's three runs. With the
    2026-12-07 night calibration (in-engine collectives slow their bytes only) held out it reads
    10.0% against the shipped 13.6%, each run better but above the 3-run bar (59%): refused
    there. With that bar lifted (``min_gain`` 1: any held-out gain passes) the profile fitted to
    all three pulls the long run by taking the middle one from 6.7% to 10.4%: refused by the
    in-sample rule (client_holdout rule 4), its figures said. (The evening calibration reached
    rule 4 without lifting the bar: 3.5% against 6.2% held out, the middle run 3.7% -> 10.8%;
    the sweep's near-repeat of that run, E0618, would have read 10.0% instead of 4.8%.)"""
    from advisor.perf.calibration.client_profile import ProfileRefused, fit_profile
    from advisor.perf.importers import Imported
    from advisor.perf.validation.measurements import cases

    by_id = {c.id: c for c in cases()[0]}
    train = [by_id[i] for i in ("E0594", "E0614", "E0634")]
    cfg = train[0].config
    dep = Deployment("llama-3.3-70b", "b200", 1, 1, cfg.weights, cfg.kv, cfg.engine)
    files = [Imported("sweep", "measurements.csv", "0" * 64, cases=train)]
    with pytest.raises(ProfileRefused) as exc:
        fit_profile(files, dep, "s")
    assert "off by 10.0% (median), the shipped calibration by 13.6%" in str(exc.value)
    with pytest.raises(ProfileRefused) as exc:
        fit_profile(files, dep, "s", min_gain=1.0)
    msg = str(exc.value)
    assert msg.startswith("sweep: in sample, the profile fitted to all 3 runs predicts 1 of them "
                          "worse than the shipped calibration by more than 2 pp")  # fmt: skip
    assert "(E0614 6.7% -> 10.4% (+3.7 pp))" in msg and msg.endswith("no profile written")


SWEEP_405B = Deployment("llama-3.1-405b", "h200-sxm", 8, 1, "bf16", "bf16", "sglang")


def _405b_runs() -> list:
    """datacrunch-research/h200-benchmarks llama_405b_online_output.jsonl (SGLang, Llama-3.1-405B
    bf16 TP 8 on 8x H200; tests/fixtures/client/README.md): six runs, random 1024/1024 (mean
    lengths about 510 / 520 recorded) at 1, 2, 4, 8 req/s, then ShareGPT (about 224 / 189) at 4
    and 8 req/s, each imported as one client file."""
    lines = (FIX / "sglang_bench_serving_dec2024_405b.jsonl").read_bytes().splitlines()
    return [load_bytes(line, f"run{i}.json", SWEEP_405B) for i, line in enumerate(lines, start=1)]


def test_runs_1_and_2_of_the_405b_sweep_are_refused_as_too_few_to_judge():
    """Last session's flaw: fitted on runs 1-2 (1 and 2 req/s) the profile passed a bar that
    looked only at those runs, then made the other four worse (25.0% -> 25.4%). Two runs cannot
    be judged held out (client_holdout.MIN_RUNS = 3): refused, nothing fitted, the reason said."""
    from advisor.perf.calibration.client_profile import ProfileRefused, fit_profile

    with pytest.raises(ProfileRefused) as exc:
        fit_profile(_405b_runs()[:2], SWEEP_405B, "s")
    assert str(exc.value) == (
        "run1.json, run2.json: 2 runs (6 points) are too few to judge a profile out of sample: "
        "at least 3 are needed (each left out in turn and predicted by the profile fitted to the "
        "others; e.g. three load levels); no profile written"
    )


def test_which_subsets_of_the_405b_sweep_a_profile_is_written_for_held_out():
    """Measured with the 2026-12-07 night calibration (in-engine collectives slow their bytes,
    not their latencies; bench/client_holdout.py prints every subset). The shipped calibration
    now predicts runs 1-4 within 13.8-18.4% except run 3 (4 req/s, 46.7%), so a profile has less
    to win and the held-out rule decides differently from the evening calibration's stories:

    - runs 1, 3, 4 (1, 4, 8 req/s random): refused, run 3 predicted by the profile fitted to the
      two ends is worse (46.7% -> 64.2%): fitted to the two ends the compute factor can put
      4 req/s at the edge of saturation, where the queue's TTFT grows without bound while the
      run measured 0.60 s. A run next to saturation is a knife edge (the evening calibration
      accepted the three, 46.9% -> 15.5%; the 2026-12-05 one refused them at 27311%), and the
      refusal rule is what guards it.
    - runs 1-4 (1-8 req/s random): refused, median 14.3% against the shipped 19.8%, above the
      4-run bar of 65% (12.9%; accepted by the evening calibration, 9.9% against 21.5%).
    - runs 1, 2, 3, 5 (random at 1, 2, 4 req/s and ShareGPT at 4): written, 8.8% against 18.8%,
      each run better (run 2 18.4% -> 8.1%); run 4 (random at 8 req/s) lies outside the rates
      its runs at those lengths cover, so the estimate keeps the shipped calibration there and
      says so.
    - runs 1-5: refused, though each run's mean |error| is better held out (10.4% against
      16.0%): run 4's median TTFT goes from 2.0% to 17.6% (test_runs_1_to_5_are_refused_...).
    Measured values are the fixture's (run 2: median TTFT 244.3 ms, median E2E 29.97 s,
    911.1 tok/s)."""
    from advisor.perf.calibration.client_profile import (
        ProfileDoc,
        ProfileRefused,
        _load,
        fit_profile,
    )

    runs = _405b_runs()
    with pytest.raises(ProfileRefused) as exc:
        fit_profile([runs[0], runs[2], runs[3]], SWEEP_405B, "dc-134")
    assert "run3.json 46.7% -> 64.2% (+17.4 pp)" in str(exc.value)
    assert [r["verdict"] for r in exc.value.runs] == ["better", "worse", "better"]
    with pytest.raises(ProfileRefused) as exc:
        fit_profile(runs[:4], SWEEP_405B, "dc-1-4")
    assert ("does not bring the shipped calibration's error below 65% of it: each of the 4 runs "
            "predicted by the profile fitted to the others is off by 14.3% (median), the shipped "
            "calibration by 19.8%") in str(exc.value)  # fmt: skip

    assert [c.measured for c in runs[1].cases] == pytest.approx([0.2443, 29.97, 911.1], rel=1e-3)
    fit = fit_profile([runs[0], runs[1], runs[2], runs[4]], SWEEP_405B, "dc-1235")
    h = fit.doc["holdout"]
    assert h["verdict"].startswith("accepted: each of the 4 runs predicted by the profile fitted "
                                   "to the others is off by 8.8% (median), the shipped "
                                   "calibration by 18.8%")  # fmt: skip
    assert [r["verdict"] for r in h["runs"]] == ["better"] * 4
    # every figure judged too, held out and in sample (client_holdout.worse_figures)
    assert h["verdict"].endswith("; no figure of a run worse by more than 2 pp, held out or in "
                                 "sample")  # fmt: skip
    run2 = next(r for r in h["runs"] if r["run"] == "run2.json")
    assert (run2["shipped_pct"], run2["held_out_pct"]) == pytest.approx((18.45, 8.14), abs=0.05)
    s = fit.doc["summary"]
    assert s["loo_median_ape_pct"] == pytest.approx(8.79, abs=0.3)
    assert s["median_ape_before_pct"] == pytest.approx(18.84, abs=0.3)
    dom = ProfileDoc.model_validate(fit.doc).domain()
    for c in runs[3].cases:
        why = dom.workload_problem(c.isl, c.osl, "request rate", _load(c))
        assert why is not None and why.startswith("request rate 8 req/s is outside 1-4 req/s")


def test_all_six_405b_runs_are_refused_because_run_6_gets_worse_held_out():
    """All six runs: run 6 (ShareGPT at 8 req/s, near capacity) predicted by the profile fitted to
    the other five is 436.7 pp worse than shipped (14.0% -> 450.7%, 2026-12-07 night
    calibration), which also holds the held-out median (12.6%) above the 6-run bar (71% of the
    shipped 14.7%), though the other five are each 1.8-7.8 pp better. The evening calibration
    refused it on run 6 alone (23.7% -> 73.9%, the median under the bar); 24.1% -> 56.3% with the
    routing draw exponent's prior at 0.85, 24.3% -> 60.8% before it, 25.0% -> 57.2% with the
    2026-12-06 night one, 24.7% -> 61.7% earlier that day, 26.1% -> 55.1% the day before: a
    profile that hurts a run is refused."""
    from advisor.perf.calibration.client_profile import ProfileRefused, fit_profile

    with pytest.raises(ProfileRefused) as exc:
        fit_profile(_405b_runs(), SWEEP_405B, "s")
    msg = str(exc.value)
    print(msg)
    assert "held out, the profile does not bring the shipped calibration's error below 71%" in msg
    assert "run6.json 14.0% -> 450.7% (+436.7 pp)" in msg and "\n" not in msg
    assert [r["run"] for r in exc.value.runs if r["verdict"] == "worse"] == ["run6.json"]


def test_inter_link_flag_is_checked(tmp_path, capsys):
    argv = ["calibrate", "--from", str(FIX / "nccl_all_reduce_perf_2hosts.txt"), *DEPLOYMENT,
            "--tp", "8", "--out", str(tmp_path / "p.yaml")]  # fmt: skip
    assert main([*argv, "--inter-link", "nvlink4"]) == 2
    err = capsys.readouterr().err
    assert "--inter-link: 'nvlink4' is not an inter-node interconnect for h100-sxm" in err
    assert "ib-ndr" in err
    # An all-reduce file alone fits nothing: refused, one line, nothing written.
    assert main([*argv, "--inter-link", "roce-400g"]) == 2
    err = capsys.readouterr().err
    # The comparison is still said: 31 rows (8 B .. 8 GiB) against the model over the stated link.
    assert "only all-reduce rows (31 rows, median error " in err and "over roce-400g)" in err
    assert err.count("\n") == 1
    assert not (tmp_path / "p.yaml").exists()


def test_calibrate_cli_prints_the_verdict_each_held_out_run_and_the_range(tmp_path, capsys):
    # Runs 1, 2, 3 and 5 of the DataCrunch 405B sweep, one file each (a set written held out:
    # test_which_subsets_of_the_405b_sweep_a_profile_is_written_for_held_out).
    lines = (FIX / "sglang_bench_serving_dec2024_405b.jsonl").read_bytes().splitlines()
    froms = []
    for i in (0, 1, 2, 4):
        (tmp_path / f"run{i + 1}.json").write_bytes(lines[i])
        froms += ["--from", str(tmp_path / f"run{i + 1}.json")]
    out = tmp_path / "dc.yaml"
    argv = ["calibrate", *froms, "--model", "llama-3.1-405b", "--gpu", "h200-sxm", "--tp", "8",
            "--engine", "sglang", "--weights", "bf16", "--kv", "bf16", "--out", str(out)]  # fmt: skip
    assert main(argv) == 0
    text = capsys.readouterr().out
    print(text)
    assert "verdict, judged on runs held out: accepted: each of the 4 runs" in text
    # Each run: mean |error| of its 3 figures, shipped and with the profile fitted without it
    # (run 3 at 4 req/s: 46.7% -> 42.7% when measured with the 2026-12-07 night calibration).
    assert re.search(r"held out run3\.json: 46\.7% shipped, 42\.7% with the profile fitted "
                     r"without it \(-4\.1 pp, better\)", text), text  # fmt: skip
    # two length classes, each with the rates its runs measured (ShareGPT only at 4 req/s)
    assert ("applies over llama-3.1-405b TP=8 PP=1 bf16/bf16; request rate 4 req/s, input 224.2, "
            "output 189.1 tokens; request rate 1-4 req/s, input 508.7-514.6") in text  # fmt: skip
    assert out.exists()


def test_runs_1_to_5_are_refused_because_run_4_ttft_gets_worse_held_out():
    """Runs 1-5 pass the rules that judge a run by the mean |error| of its figures (held out
    10.4% against the shipped 16.0%, each run better), but
    run 4's median TTFT, predicted by the profile fitted to runs 1, 2, 3, 5, is 17.6% off where
    the shipped calibration is 2.0% off (its request latency 16.0% -> 3.6% and throughput 23.6%
    -> 13.4% outweighed it in the mean). Run 4 (8 req/s, random lengths) lies inside the range of
    runs 1-5 (1-8 req/s at those lengths), so a user would have read that TTFT. Refused, naming
    the figure (helperC audit; values measured with the 2026-12-07 night calibration). Run 5's
    mean request latency (0.4% -> 4.0%) is named with it."""
    from advisor.perf.calibration.client_profile import ProfileRefused, fit_profile

    with pytest.raises(ProfileRefused) as exc:
        fit_profile(_405b_runs()[:5], SWEEP_405B, "dc-1-5")
    msg = str(exc.value)
    assert msg.startswith("run1.json, run2.json, run3.json, run4.json, run5.json: held out, 2 "
                          "figures are predicted worse than by the shipped calibration by more "
                          "than 2 pp (run4.json:ttft (median) 2.0% -> 17.6% (+15.6 pp); "
                          "run5.json:e2e (mean) 0.4% -> 4.0% (+3.6 pp))"), msg  # fmt: skip
    assert msg.endswith("no profile written") and "\n" not in msg
    # Every run is better by its mean: the run-level rules alone would have written it.
    assert [r["verdict"] for r in exc.value.runs] == ["better"] * 5


def test_a_figure_the_profile_written_makes_worse_is_refused_in_sample(monkeypatch):
    """Rule 4 per figure: the profile fitted to runs 1-5 predicts run 4's median TTFT 17.5% off
    (shipped 2.0%) though run 4's mean |error| improves (13.8% -> 11.3%; measured with the
    2026-12-07 night calibration, as calibrate's per-point lines print). The held-out rules are
    set aside here so that rule 4 is what decides: each run "held out" is predicted as shipped
    (no change; the bar min_gain=1 then passes), which leaves the profile written to be judged."""
    from advisor.perf.calibration import client_profile as cp

    def as_shipped(usable, dep, base, start=None):
        return cp._predict(usable, dep.gpu, dep.engine, None)

    monkeypatch.setattr(cp, "leave_one_out", as_shipped)
    with pytest.raises(cp.ProfileRefused) as exc:
        cp.fit_profile(_405b_runs()[:5], SWEEP_405B, "dc-1-5", min_gain=1.0)
    msg = str(exc.value)
    assert (
        ": in sample, 1 figure is predicted worse than by the shipped calibration by more than 2 pp"
        in msg
    )
    assert "(run4.json:ttft (median) 2.0% -> 17.5% (+15.6 pp))" in msg, msg


def test_runs_1_2_3_5_are_accepted_and_run_6_is_outside_their_range():
    """Runs 1, 2, 3, 5 as the client's files: accepted held out, every figure too
    (test_which_subsets_of_the_405b_sweep_a_profile_is_written_for_held_out). Run 6, ShareGPT at
    8 req/s, has the lengths of run 5 (ShareGPT, 4 req/s) but no run measured that rate at them:
    outside the range (a load is judged within its length class), so it keeps the shipped
    calibration. With the profile it would have been predicted far worse (median of its 3
    figures 13.4% shipped, 94.6% profile with the 2026-12-07 night calibration; with the runs
    1-5 profile 25.7% and 71.8% with the 2026-12-07 evening calibration, 87.7% with the
    2026-12-06 night one; 29.6% and 148.2% before)."""
    import numpy as np

    from advisor.perf.calibration.client_profile import (
        ProfileDoc,
        _predict,
        fit_profile,
        predict_within,
    )

    runs = _405b_runs()
    doc = ProfileDoc.model_validate(fit_profile([runs[i] for i in (0, 1, 2, 4)], SWEEP_405B,
                                                "dc-1235").doc)  # fmt: skip
    rest = runs[5].cases
    pred, outside = predict_within(rest, doc)
    assert all(w == outside[0] for w in outside) and outside[0] == (
        "request rate 8 req/s is outside 4 req/s, what its runs at these lengths (input 224.2, "
        "output 189.1 tokens) cover"
    )
    meas = np.array([c.measured for c in rest])
    shipped = _predict(rest, "h200-sxm", "sglang", None)
    assert list(pred) == list(shipped)
    # the profile's constants at run 6 itself: its overlay without the range
    with_profile = _predict(rest, "h200-sxm", "sglang", replace(doc.overlay(), domain=None))
    err = float(np.median(np.abs(with_profile / meas - 1))) * 100
    print(
        f"run 6 with the profile: {err:.1f}% (shipped {np.median(np.abs(shipped / meas - 1)) * 100:.1f}%)"
    )
    shipped_err = float(np.median(np.abs(shipped / meas - 1))) * 100
    assert err > 2.5 * shipped_err

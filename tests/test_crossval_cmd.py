"""``python -m advisor crossval`` (issue 39): regenerates data/crossval.yaml, data/crossval_ranges.json
and data/crossval_percentiles.yaml, validating its flags like every subcommand (exit 2, one line
naming the flag). The refit itself takes ~31 minutes (bench/crossval.py prints its figures); here
the folds are replaced by a fixed result so that what is written, and where, is checked."""

from __future__ import annotations

import json

import pytest
import yaml
from test_cli import run  # main() in process: (exit code, stdout, stderr)

from advisor.catalog.loader import DATA_DIR
from advisor.perf.calibration import crossval


@pytest.mark.parametrize(
    "argv, flag, words",
    [
        (["--schemes", "engine"], "--schemes", "source must be among them"),
        (["--schemes", "sources"], "--schemes", "allowed: source, accelerator_family"),
        (["--schemes", "source,source"], "--schemes", "names a scheme twice"),
        (["--schemes", ""], "--schemes", "unknown scheme ''"),
        (["--all", "--schemes", "source"], "--all", "not both"),
        (["--warm"], "--warm", "only with --percentiles --schemes source"),
        (["--warm", "--percentiles"], "--warm", "only with --percentiles --schemes source"),
        (["--ranges", "--jobs", "2"], "--jobs", "--ranges refits nothing"),
        (["--ranges", "--percentiles"], "--percentiles", "--ranges refits nothing"),
        (["--max-evals", "0"], "--max-evals", "allowed: 1..10000"),
        (["--max-evals", "x"], "--max-evals", "not an integer"),
        (["--jobs", "65"], "--jobs", "allowed: 1..64"),
        (["--max-evals", "3", "--max-evals", "4"], "--max-evals", "more than once"),
        (["--write"], "--write", "unrecognized"),
    ],
)
def test_bad_flags_exit_2_naming_the_flag(capsys, monkeypatch, argv, flag, words):
    def no_refit(*a, **k):
        raise AssertionError("a refit started on bad input")

    monkeypatch.setattr(crossval, "cross_validate", no_refit)
    code, out, err = run(capsys, "crossval", *argv)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and flag in err and words in err, err


def _fake_result(schemes, max_evals, jobs, warm=False, percentiles=False, log=print, **kw):
    """What cross_validate returns, for two held-out rows and one percentile row."""
    loso = [
        {"id": "A1", "source": "s1", "kind": "ttft", "family": "TTFT", "engine": "vllm",
         "accelerator_family": "hopper", "calibrated": True, "measured": 0.1, "predicted": 0.11},
        {"id": "A2", "source": "s2", "kind": "tpot", "family": "TTFT/ITL under load",
         "engine": "sglang", "accelerator_family": "cdna3", "calibrated": False,
         "measured": 0.02, "predicted": float("inf")},
    ]  # fmt: skip
    pct = [{"id": "P1", "source": "s1", "metric": "ttft", "quantile": 0.99, "engine": "vllm",
            "accelerator_family": "hopper", "calibrated": True, "moe": False,
            "attention_dp": False, "closed_loop": True, "utilisation": 0.5, "measured": 0.3,
            "predicted": 0.25}] if percentiles else []  # fmt: skip
    log(f"  fake folds of {','.join(schemes)}")
    return {"tables": {s: crossval.table(loso) for s in schemes}, "loso_rows": loso,
            "percentile_rows": pct, "seconds": dict.fromkeys(schemes, 1.0), "total_s": 3.04}  # fmt: skip


@pytest.fixture()
def files(tmp_path, monkeypatch):
    """The three output files redirected to tmp_path; the folds faked; the ranges counted."""
    paths = {"yaml": tmp_path / "crossval.yaml", "pct": tmp_path / "crossval_percentiles.yaml",
             "json": tmp_path / "crossval_ranges.json"}  # fmt: skip
    monkeypatch.setattr(crossval, "CROSSVAL_PATH", paths["yaml"])
    monkeypatch.setattr(crossval, "PERCENTILES_PATH", paths["pct"])
    monkeypatch.setattr(crossval, "RANGES_PATH", paths["json"])
    monkeypatch.setattr(crossval, "cross_validate", _fake_result)
    return paths


def test_a_run_writes_the_table_and_the_ranges_naming_the_command(capsys, files):
    code, out, err = run(capsys, "crossval", "--max-evals", "5", "--jobs", "1", "--json")
    assert code == 0, err
    r = json.loads(out)
    assert r["generated_by"] == "python -m advisor crossval --max-evals 5"
    assert r["wrote"] == {"data/crossval.yaml": 2, "data/crossval_ranges.json": 2}
    assert "fake folds of source,accelerator_family,engine" in err  # progress on stderr
    doc = yaml.safe_load(files["yaml"].read_text())
    assert doc["generated_by"] == "python -m advisor crossval --max-evals 5"
    assert [r["id"] for r in doc["loso_rows"]] == ["A1", "A2"]
    # the failure (predicted inf) is counted in the table, never dropped
    assert doc["held_out"]["source"]["TTFT/ITL under load"]["failures"] == 1
    assert doc["seconds"] == {"source": 1.0, "accelerator_family": 1.0, "engine": 1.0,
                              "total": 3.0}  # fmt: skip
    ranges = json.loads(files["json"].read_text())
    assert ranges["generated_from"].startswith("python -m advisor crossval --ranges from")
    assert not files["pct"].exists()


def test_warm_percentiles_leave_the_table_alone(capsys, files):
    files["yaml"].write_text(yaml.safe_dump({"generated_on": "2026-12-02", "loso_rows": []}))
    before = files["yaml"].read_text()
    code, out, err = run(capsys, "crossval", "--schemes", "source", "--percentiles", "--warm",
                         "--max-evals", "12", "--jobs", "1")  # fmt: skip
    assert code == 0, err
    assert files["yaml"].read_text() == before
    pct = yaml.safe_load(files["pct"].read_text())
    assert pct["generated_by"] == (
        "python -m advisor crossval --max-evals 12 --schemes source --percentiles --warm"
    )
    assert "--warm" in pct["meaning"] and [r["id"] for r in pct["rows"]] == ["P1"]
    assert "wrote data/crossval_percentiles.yaml (1 rows)" in out
    assert "data/crossval.yaml" not in out


def test_ranges_alone_rebuilds_the_shipped_compact_table(capsys, monkeypatch, tmp_path):
    """--ranges reads data/crossval.yaml and data/crossval_percentiles.yaml (no refit) and gives
    the rows data/crossval_ranges.json ships (what the answers' ranges read)."""
    out_path = tmp_path / "ranges.json"
    monkeypatch.setattr(crossval, "RANGES_PATH", out_path)
    monkeypatch.setattr(crossval, "cross_validate", _fake_result)
    code, out, err = run(capsys, "crossval", "--ranges", "--json")
    assert code == 0, err
    new = json.loads(out_path.read_text())
    shipped = json.loads((DATA_DIR / "crossval_ranges.json").read_text())
    assert json.loads(out)["wrote"] == {"data/crossval_ranges.json": len(shipped["rows"])}
    assert new["rows"] == shipped["rows"] and new["columns"] == shipped["columns"]

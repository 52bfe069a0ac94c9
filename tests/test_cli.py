"""CLI: good input gives exit 0 and one JSON object; bad input exit 2 with one line naming the flag."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from advisor.cli import main


def run(capsys, *argv):
    try:
        code = main(list(argv))
    except SystemExit as exc:  # argparse errors
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_memory_done_when_tp1_does_not_fit(capsys):
    code, out, err = run(
        capsys,
        "memory",
        "--model",
        "llama-2-70b",
        "--gpu",
        "h100-sxm",
        "--weights",
        "fp16",
        "--json",
    )
    assert code == 0 and err == ""
    r = json.loads(out)
    assert r["fits"] is False and "weights need" in r["reasons"][0]
    for key in ("params", "weights_bytes_per_gpu", "kv_bytes_per_token", "kv_bytes_per_sequence",
                "kv_budget_bytes_per_gpu", "max_concurrent_sequences", "max_concurrent_sequences_contiguous"):  # fmt: skip
        assert key in r


def test_memory_tp4_counts_sequences(capsys):
    code, out, _ = run(
        capsys, "memory", "--model", "llama-2-70b", "--gpu", "h100-sxm", "--tp", "4", "--json"
    )
    r = json.loads(out)
    assert code == 0 and r["fits"] and r["max_concurrent_sequences"] == 121
    assert r["kv_bytes_per_token"] == 327680


@pytest.mark.parametrize(
    "argv, flag",
    [
        (["memory", "--model", "nope", "--gpu", "h100-sxm"], "--model"),
        (["memory", "--model", "llama-2-7b", "--gpu", "h999"], "--gpu"),
        (["memory", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--tp", "0"], "--tp"),
        (["memory", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--tp", "x"], "--tp"),
        (
            ["memory", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--weights", "int3"],
            "--weights",
        ),
        (
            [
                "memory",
                "--model",
                "llama-2-7b",
                "--gpu",
                "h100-sxm",
                "--gpu-memory-utilization",
                "nan",
            ],
            "--gpu-memory-utilization",
        ),
        (
            ["memory", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--block-size", "17"],
            "--block-size",
        ),
        (["memory", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--pp", "33"], "--pp"),
        (["memory", "--gpu", "h100-sxm"], "--model"),
        (["estimate", "--model", "llama-2-7b", "--gpu", "h100-sxm", "--isl", "10"], "--osl"),
        (
            [
                "estimate",
                "--model",
                "llama-2-7b",
                "--gpu",
                "h100-sxm",
                "--isl",
                "10",
                "--osl",
                "10",
                "--qps",
                "-1",
            ],
            "--qps",
        ),
        (
            [
                "estimate",
                "--model",
                "llama-2-7b",
                "--gpu",
                "h100-sxm",
                "--isl",
                "10",
                "--osl",
                "10",
                "--qps",
                "1",
                "--concurrency",
                "2",
            ],
            "--concurrency",
        ),
        (
            [
                "estimate",
                "--model",
                "llama-2-7b",
                "--gpu",
                "h100-sxm",
                "--isl",
                "10",
                "--osl",
                "10",
                "--link",
                "warp",
            ],
            "--link",
        ),
        (
            ["collective", "--op", "allreduce", "--gpu", "h100-sxm", "--n", "0", "--bytes", "1"],
            "--n",
        ),
    ],
)
def test_bad_input_exit_2_one_line(capsys, argv, flag):
    code, out, err = run(capsys, *argv)
    assert code == 2, (code, out, err)
    assert err.count("\n") == 1 and flag in err and "Traceback" not in err


def test_model_path_to_config_json(capsys, tmp_path):
    code, out, _ = run(
        capsys,
        "memory",
        "--model",
        "tests/fixtures/hf/llama-2-70b.json",
        "--gpu",
        "h100-sxm",
        "--tp",
        "4",
        "--json",
    )
    assert code == 0 and json.loads(out)["kv_bytes_per_token"] == 327680
    bad = tmp_path / "config.json"
    bad.write_text('{"model_type": "gpt_neox"}')
    code, _, err = run(capsys, "memory", "--model", str(bad), "--gpu", "h100-sxm")
    assert code == 2 and "gpt_neox" in err


def test_catalog_lists_everything(capsys):
    code, out, _ = run(capsys, "catalog", "--json")
    r = json.loads(out)
    assert code == 0 and {"llama-2-70b", "deepseek-v3"} <= {m["id"] for m in r["models"]}
    assert {"h100-sxm", "mi300x"} <= {a["id"] for a in r["accelerators"]}
    assert "int4" in r["weight_dtypes"]


def test_estimate_json_keys(capsys):
    code, out, _ = run(
        capsys,
        "estimate",
        "--model",
        "llama-3.1-8b",
        "--gpu",
        "h100-sxm",
        "--isl",
        "512",
        "--osl",
        "128",
        "--json",
    )
    r = json.loads(out)
    assert code == 0
    for k in (
        "ttft_ms",
        "tpot_ms",
        "e2e_ms",
        "throughput_tok_s",
        "throughput_tok_s_per_gpu",
        "concurrency",
        "fits",
        "reasons",
        "breakdown",
    ):
        assert k in r
    assert r["e2e_ms"] == pytest.approx(r["ttft_ms"] + 127 * r["tpot_ms"])


def test_estimate_jsonl_bad_line_does_not_stop_others(capsys, tmp_path):
    f = tmp_path / "in.jsonl"
    f.write_text(
        '{"model": "llama-3.1-8b", "gpu": "h100-sxm", "isl": 128, "osl": 64}\n'
        '{"model": "llama-3.1-8b", "gpu": "h100-sxm", "isl": -5, "osl": 64}\n'
        "not json\n"
        '{"model": "llama-2-70b", "gpu": "h100-sxm", "isl": 128, "osl": 64, "tp": 4, "concurrency": "max"}\n'
    )
    code, out, _ = run(capsys, "estimate", "--input", str(f), "--json")
    res = json.loads(out)["results"]
    assert code == 0 and len(res) == 4
    assert "ttft_ms" in res[0] and "error" in res[1] and "isl" in res[1]["error"]
    assert "error" in res[2] and res[3]["fits"] is True


def test_module_entry_point_no_traceback():
    p = subprocess.run([sys.executable, "-m", "advisor", "memory", "--model", "x", "--gpu", "y"],
                       capture_output=True, text=True, timeout=60)  # fmt: skip
    assert p.returncode == 2 and "Traceback" not in p.stderr


def test_every_subcommand_prints_its_help(capsys):
    # Found 2026-12-06: `recommend --help` raised "TypeError: %o format" because the --osl-cv help
    # said "within 5% of the project's simulator" and argparse %-formats every help text. A user
    # asking for help must get it, for every subcommand.
    import argparse

    from advisor.cli import build_parser

    subs = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    for name in subs.choices:
        with pytest.raises(SystemExit) as exc:
            main([name, "--help"])
        assert exc.value.code == 0, name
        out = capsys.readouterr().out
        assert out.startswith(f"usage: advisor {name}"), name

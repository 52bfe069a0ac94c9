"""Importers of client benchmark files (advisor/perf/importers): each on its fixture under
tests/fixtures/client (values read by hand from the files, quoted below), and hostile files
refused with a message naming the file and the field."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.perf.importers import BenchmarkFileError, Deployment, load, load_bytes

FIX = Path(__file__).parent / "fixtures" / "client"
VLLM = Deployment("llama-3.1-8b", "h100-sxm", 1, 1, "bf16", "bf16", "vllm", isl=1024, osl=512)


def by_kind(imported):
    return {c.kind: c for c in imported.cases}


def test_vllm_bench_throughput():
    got = load(FIX / "vllm_bench_throughput.json", VLLM)
    assert got.format == "vllm bench throughput"
    (case,) = got.cases
    # File: num_requests 1000, elapsed_time 94.81 s; stated osl 512 -> 1000 x 512 / 94.81.
    assert case.kind == "offline"
    assert case.measured == pytest.approx(5400.274, rel=1e-6)
    assert (case.isl, case.osl) == (1024, 512)
    assert len(got.sha256) == 64


def test_vllm_bench_throughput_needs_lengths_that_match_the_file():
    no_len = Deployment("llama-3.1-8b", "h100-sxm", engine="vllm")
    with pytest.raises(BenchmarkFileError, match="vllm_bench_throughput.json.*--isl and --osl"):
        load(FIX / "vllm_bench_throughput.json", no_len)
    # total_num_tokens 1,536,000 / 1000 requests = 1536 per request, not 128 + 128.
    wrong = Deployment("llama-3.1-8b", "h100-sxm", engine="vllm", isl=128, osl=128)
    with pytest.raises(BenchmarkFileError, match="'total_num_tokens'.*1,536"):
        load(FIX / "vllm_bench_throughput.json", wrong)


def test_vllm_bench_serve_at_a_concurrency():
    got = load(FIX / "vllm_bench_serve.json", VLLM)
    assert got.format == "vllm bench serve"
    k = by_kind(got)
    # File: request_rate "inf", max_concurrency 32, mean_tpot_ms 14.1, output_throughput 2249.951,
    # total tokens 327,680 in / 81,920 out over 320 completed -> 1024 / 256 per request.
    assert k["conc_tpot"].measured == pytest.approx(0.0141)
    assert k["conc_tpot"].batch == 32
    assert k["conc_tput"].measured == pytest.approx(2249.951)
    assert (k["conc_tput"].isl, k["conc_tput"].osl) == (1024, 256)


def test_sglang_bench_serving_jsonl_one_run_per_line():
    dep = Deployment("llama-3.1-8b", "h100-sxm", engine="sglang")
    got = load(FIX / "sglang_bench_serving.jsonl", dep)
    assert got.format == "sglang bench_serving"
    ttft = [c for c in got.cases if c.kind == "load_ttft"]
    # Line 1: completed 400 in duration 100.9 s (3.964 req/s), mean_ttft_ms 62.3;
    # line 2: 800 in 101.3 s (7.897 req/s), mean_ttft_ms 78.5. 1000 / 200 tokens per request.
    assert [round(c.qps, 3) for c in ttft] == [3.964, 7.897]
    assert [c.measured for c in ttft] == pytest.approx([0.0623, 0.0785])
    assert {(c.isl, c.osl) for c in got.cases} == {(1000, 200)}
    assert [c.measured for c in got.cases if c.kind == "load_itl"] == pytest.approx(
        [0.0099, 0.0132]
    )


def test_genai_perf_and_aiperf_exports():
    g = by_kind(load(FIX / "genai_perf_profile_export.json", VLLM))
    # input_config.concurrency 16; inter_token_latency avg 10.2 ms; output_token_throughput 1560;
    # input/output_sequence_length avg 550 / 150.
    assert g["conc_tpot"].batch == 16 and g["conc_tpot"].measured == pytest.approx(0.0102)
    assert g["conc_tput"].measured == 1560.0 and (g["conc_tput"].isl, g["conc_tput"].osl) == (
        550,
        150,
    )
    a = load(FIX / "aiperf_profile_export.json", VLLM)
    assert a.format == "AIPerf profile export"
    k = by_kind(a)
    # input_config.loadgen.concurrency 64; records.inter_token_latency avg 30.1 ms; 2090 tok/s.
    assert k["conc_tpot"].batch == 64 and k["conc_tpot"].measured == pytest.approx(0.0301)
    assert k["conc_tput"].measured == 2090.0 and (k["conc_tput"].isl, k["conc_tput"].osl) == (
        2000,
        300,
    )


def test_trtllm_bench_report():
    dep = Deployment("llama-3.1-8b", "h100-sxm", 1, 1, "fp8", "fp8", "trtllm")
    (case,) = load(FIX / "trtllm_bench_report.json", dep).cases
    # performance.system_output_throughput_tok_s 10950; request_info avg lengths 1024 / 1024.
    assert case.kind == "offline" and case.measured == 10950.0
    assert (case.isl, case.osl) == (1024, 1024)
    with pytest.raises(
        BenchmarkFileError, match="trtllm_bench_report.json: field 'world_info.tp_size' is 1"
    ):
        load(
            FIX / "trtllm_bench_report.json",
            Deployment("llama-3.1-8b", "h100-sxm", tp=2, engine="trtllm"),
        )


def test_trtllm_bench_backend_must_match_the_stated_engine():
    # engine.backend "Pytorch" in the fixture: TensorRT-LLM's PyTorch backend is profile trtllm.
    dep = Deployment("llama-3.1-8b", "h100-sxm", 1, 1, "fp8", "fp8", "trtllm-trt")
    with pytest.raises(
        BenchmarkFileError, match="field 'engine.backend' is 'Pytorch': state --engine trtllm"
    ):
        load(FIX / "trtllm_bench_report.json", dep)


def test_nccl_tests_all_reduce_perf():
    dep = Deployment("llama-3.1-8b", "h100-sxm", tp=8)
    got = load(FIX / "nccl_all_reduce_perf.txt", dep)
    assert got.format == "nccl-tests all_reduce_perf" and not got.cases
    rows = got.collectives
    # 8 result rows, 1 MiB .. 8 GiB; 8 "#  Rank" lines; first row out-of-place time 31.8 us.
    assert len(rows) == 8 and {r.n_gpus for r in rows} == {8}
    assert rows[0].message_bytes == 1048576 and rows[0].measured == 31.8
    assert rows[-1].message_bytes == 8589934592 and rows[-1].measured == 31190.0
    assert {r.link_id for r in rows} == {"nvlink4"}


# --- hostile files -------------------------------------------------------------------------


def _bytes(name: str) -> bytes:
    return (FIX / name).read_bytes()


@pytest.mark.parametrize(
    ("data", "name", "match"),
    [
        (_bytes("vllm_bench_serve.json")[:300], "cut.json", "cut.json.*not valid JSON.*truncated"),
        (b"", "empty.json", "empty.json: empty file"),
        (b"hello world\n", "notes.txt", "notes.txt: not a recognised benchmark file"),
        (b'{"foo": 1}', "other.json", "other.json: not a recognised benchmark file"),
        (b"\xff\xfe\x00garbage", "bin.json", "bin.json: not UTF-8"),
        (b"[" * 5000 + b"]" * 5000, "deep.json", "deep.json: JSON nested deeper"),
        (
            _bytes("vllm_bench_throughput.json").replace(b"94.81", b"NaN"),
            "nan.json",
            "nan.json: field 'elapsed_time' is nan",
        ),
        (
            _bytes("vllm_bench_throughput.json").replace(b"94.81", b"1e300"),
            "huge.json",
            "huge.json: field 'elapsed_time' is 1e[+]300",
        ),
        (
            _bytes("vllm_bench_throughput.json").replace(
                b'"num_requests": 1000', b'"num_requests": "x"'
            ),
            "str.json",
            "str.json: field 'num_requests' is 'x', not a number",
        ),
        (
            _bytes("vllm_bench_serve.json").replace(b'"mean_tpot_ms": 14.1', b'"mean_tpot_ms": -3'),
            "neg.json",
            "neg.json: field 'mean_tpot_ms' is -3",
        ),
        (
            _bytes("vllm_bench_serve.json").replace(
                b'"output_throughput": 2249.951', b'"output_throughput": 9999.0'
            ),
            "lie.json",
            "lie.json: field 'output_throughput'",
        ),
        (
            _bytes("genai_perf_profile_export.json").replace(
                b'"unit": "ms", "avg": 10.2', b'"unit": "furlongs", "avg": 10.2'
            ),
            "unit.json",
            "unit.json.*inter_token_latency.unit",
        ),
        (
            _bytes("sglang_bench_serving.jsonl").replace(
                b'"completed": 800', b'"completed": Infinity'
            ),
            "inf.jsonl",
            "inf.jsonl line 2: field 'completed' is inf",
        ),
        (
            _bytes("nccl_all_reduce_perf.txt").replace(b"  273.77  479.10", b"  273.77  900.10"),
            "bus.txt",
            "bus.txt line 22: column 'busbw'",
        ),
        (
            _bytes("nccl_all_reduce_perf.txt").replace(b"   31.8   32.97", b"    nan   32.97"),
            "nan.txt",
            "nan.txt line 16: column 'time' is nan",
        ),
        (
            b"\n".join(_bytes("nccl_all_reduce_perf.txt").splitlines()[:15]),
            "short.txt",
            "short.txt: no result rows",
        ),
        (
            json.dumps({"elapsed_time": 1, "elapsed_time ": 2})
            .encode()
            .replace(b"elapsed_time ", b"elapsed_time"),
            "dup.json",
            "dup.json: key 'elapsed_time' given twice",
        ),
    ],
)
def test_hostile_files_refused_naming_file_and_field(data, name, match):
    with pytest.raises(BenchmarkFileError, match=match):
        load_bytes(data, name, VLLM)


def test_huge_and_special_files_refused(tmp_path):
    big = tmp_path / "big.json"
    with big.open("wb") as f:
        f.seek(33 * 2**20)
        f.write(b"}")
    with pytest.raises(
        BenchmarkFileError, match="big.json: file is 34,603,009 bytes; the limit is"
    ):
        load(big, VLLM)
    with pytest.raises(BenchmarkFileError, match="zero: not a regular file"):
        load("/dev/zero", VLLM)

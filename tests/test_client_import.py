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
SGLANG = Deployment("llama-3.1-8b", "h100-sxm", engine="sglang")


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
    # Line 1: request_rate 4.0 (completed 400 in 100.9 s), mean_ttft_ms 62.3; line 2:
    # request_rate 8.0 (800 in 101.3 s), mean_ttft_ms 78.5. 1000 / 200 tokens per request. The
    # load is the rate the run offered, not the rate it achieved (an output).
    assert [c.qps for c in ttft] == [4.0, 8.0]
    assert [c.requests for c in ttft] == [400, 800]
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
            "lie.json: 'output_throughput' x 'duration' and 'total_output_tokens' disagree: "
            "3.641e[+]05 vs 8.192e[+]04",
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
    dep = SGLANG if name.endswith(".jsonl") else VLLM
    with pytest.raises(BenchmarkFileError, match=match):
        load_bytes(data, name, dep)


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


# --- real files from public repositories (tests/fixtures/client/README.md gives each source) ----

H200_405B = Deployment("llama-3.1-405b", "h200-sxm", 8, 1, "bf16", "bf16", "sglang")


def test_sglang_late_2024_layout_real_sweep():
    # datacrunch-research/h200-benchmarks llama_405b_online_output.jsonl: six runs, keys
    # median_ttft_ms / median_itl_ms / mean_e2e_latency_ms and no mean_ttft_ms / mean_tpot_ms.
    got = load(FIX / "sglang_bench_serving_dec2024_405b.jsonl", H200_405B)
    assert got.format == "sglang bench_serving (late-2024 layout)"
    ttft = [c for c in got.cases if c.kind == "load_ttft"]
    # Line 1: request_rate 1.0, completed 300, median_ttft_ms 218.808...; line 4: rate 8.0,
    # median_ttft_ms 123718.6 (the run is above capacity: the backlog is in TTFT).
    assert [c.qps for c in ttft] == [1.0, 2.0, 4.0, 8.0, 4.0, 8.0]
    assert {c.statistic for c in ttft} == {"median"}
    assert ttft[0].measured == pytest.approx(0.21880842198152095)
    assert ttft[3].measured == pytest.approx(123.71862683666404)
    # total_input_tokens 152612 / completed 300 = 508.7 input tokens per request (random, range 0).
    assert ttft[0].isl == pytest.approx(152612 / 300) and ttft[0].requests == 300
    # A median ITL is not a request's TPOT: left out of every run, and said why.
    assert len(got.left_out) == 6 and "median ITL" in got.left_out[0][1]
    assert not [c for c in got.cases if c.kind == "load_itl"]


def test_sglang_file_with_another_engine_or_model_is_refused():
    f = FIX / "sglang_bench_serving_dec2024_405b.jsonl"
    vllm = Deployment("llama-3.1-405b", "h200-sxm", 8, 1, "bf16", "bf16", "vllm")
    with pytest.raises(BenchmarkFileError, match="line 1: field 'backend' is 'sglang': the file "
                       "measured sglang, but --engine is vllm"):  # fmt: skip
        load(f, vllm)
    doc = json.loads((FIX / "vllm_bench_serve.json").read_text())
    with pytest.raises(BenchmarkFileError, match=r"field 'model_id' is 'meta-llama/Llama-3.1-8B-"
                       r"Instruct' \(llama-3.1-8b\), but --model is llama-3.1-70b"):  # fmt: skip
        load_bytes(json.dumps(doc).encode(), "serve.json",
                   Deployment("llama-3.1-70b", "h100-sxm", 4, engine="vllm"))  # fmt: skip


def test_a_missing_key_is_named_with_the_layout_it_looks_like():
    line = json.loads((FIX / "sglang_bench_serving.jsonl").read_text().splitlines()[0])
    del line["mean_tpot_ms"]
    data = (json.dumps(line) + "\n" + json.dumps(line) + "\n").encode()
    with pytest.raises(BenchmarkFileError, match=r"x.jsonl line 1: key 'mean_tpot_ms' is missing "
                       r"\(the file looks like SGLang bench_serving --output-file \(2025 layout\)\)"):  # fmt: skip
        load_bytes(data, "x.jsonl", SGLANG)


def test_self_consistent_rescaled_run_is_refused():
    # Durations x1000 and throughputs / 1000 (self-consistent accounting), latencies unchanged:
    # 400 requests offered at 4/s cannot take 100,900 s ((400 + 4 x 20) / 4 + 3 x 1.6 s).
    line = json.loads((FIX / "sglang_bench_serving.jsonl").read_text().splitlines()[0])
    line.update(duration=line["duration"] * 1000,
                **{k: line[k] / 1000 for k in ("request_throughput", "input_throughput",
                                               "output_throughput")})  # fmt: skip
    data = (json.dumps(line) + "\n" + json.dumps(line) + "\n").encode()
    with pytest.raises(BenchmarkFileError, match=r"x.jsonl line 1: 'duration' 1.009e\+05 s is "
                       "longer than 400 requests arriving at 'request_rate' 4/s can take"):  # fmt: skip
        load_bytes(data, "x.jsonl", SGLANG)
    # At a concurrency cap, Little's law: 320 / 36,408 s x 3.717 s = 0.033 requests in flight,
    # not the 32 of max_concurrency.
    doc = json.loads((FIX / "vllm_bench_serve.json").read_text())
    doc.update(duration=doc["duration"] * 1000,
               **{k: doc[k] / 1000 for k in ("request_throughput", "output_throughput",
                                             "total_token_throughput")})  # fmt: skip
    with pytest.raises(BenchmarkFileError, match="serve.json: Little's law gives 0.0327 requests"):
        load_bytes(json.dumps(doc).encode(), "serve.json", VLLM)


def test_burst_is_left_out_with_a_note():
    # request_rate inf and no max_concurrency: every prompt at once, a transient.
    doc = json.loads((FIX / "vllm_bench_serve.json").read_text())
    doc["max_concurrency"] = None
    got = load_bytes(json.dumps(doc).encode(), "burst.json", VLLM)
    assert not got.cases
    assert got.left_out[0][0] == "burst.json:run" and "a burst: 320 requests" in got.left_out[0][1]


def test_genai_perf_units_are_honoured():
    doc = json.loads((FIX / "genai_perf_profile_export.json").read_text())
    # The same run written in seconds and tokens/ms: 10.2 ms = 0.0102 s; 1560 tok/s = 1.56 tok/ms.
    doc["inter_token_latency"] = {"unit": "s", "avg": 0.0102}
    doc["output_token_throughput"] = {"unit": "tokens/ms", "avg": 1.56}
    k = by_kind(load_bytes(json.dumps(doc).encode(), "units.json", VLLM))
    assert k["conc_tpot"].measured == pytest.approx(0.0102)
    assert k["conc_tput"].measured == pytest.approx(1560.0)
    # Read as ms and tokens/sec, the figures disagree with request_throughput x OSL.
    doc["output_token_throughput"] = {"unit": "tokens/sec", "avg": 1.56}
    with pytest.raises(BenchmarkFileError, match="units.json: 'output_token_throughput' and "
                       "request_throughput x output_sequence_length disagree"):  # fmt: skip
        load_bytes(json.dumps(doc).encode(), "units.json", VLLM)


def test_reasoning_model_hidden_tokens_are_refused():
    doc = json.loads((FIX / "genai_perf_profile_export.json").read_text())
    # A model that thinks 2,000 tokens before answering: TTFT = 2,000 x 10.2 ms = 20.4 s, all
    # before the first visible token; OSL and throughput count the 150 visible tokens only.
    doc["time_to_first_token"] = {"unit": "ms", "avg": 20400.0}
    doc["request_latency"] = {"unit": "ms", "avg": 20400.0 + 149 * 10.2}
    doc["request_throughput"] = {"unit": "requests/sec", "avg": 16 / 21.92}
    doc["output_token_throughput"] = {"unit": "tokens/sec", "avg": 16 / 21.92 * 150}
    with pytest.raises(BenchmarkFileError, match="'time_to_first_token' 2.04e[+]04 ms is 2000 "
                       "inter-token latencies.*reasoning"):  # fmt: skip
        load_bytes(json.dumps(doc).encode(), "think.json", VLLM)
    doc = json.loads((FIX / "aiperf_profile_export.json").read_text())
    doc["records"]["reasoning_token_count"] = {"unit": "tokens", "avg": 1830.0}
    with pytest.raises(
        BenchmarkFileError,
        match=r"field 'records.reasoning_token_count' is 1830 "
        r"per request but 'records.output_sequence_length' \(300.0\) does not count",
    ):
        load_bytes(json.dumps(doc).encode(), "think2.json", VLLM)


def test_aiperf_2026_layout_is_not_misread_as_genai_perf():
    # AIPerf 2026: metric objects at the top level, the settings under input_config.loadgen.
    doc = json.loads((FIX / "aiperf_profile_export.json").read_text())
    flat = {**doc.pop("records"), **doc}
    got = load_bytes(json.dumps(flat).encode(), "aiperf26.json", VLLM)
    assert got.format == "AIPerf profile export (2026 layout)"
    assert by_kind(got)["conc_tpot"].batch == 64


def test_trtllm_bench_console_reports():
    # NVIDIA/TensorRT-LLM docs/source/performance/perf-benchmarking.md (0.17 console report):
    # Llama-3.1-8B, TP 1, 3000 requests 128/128, Token Throughput 28390.4265 tok/s (FP8 engine).
    dep = Deployment("llama-3.1-8b", "h100-sxm", 1, 1, "fp8", "fp8", "trtllm-trt")
    got = load(FIX / "trtllm_bench_console_0.17.txt", dep)
    assert got.format == "trtllm-bench console report"
    (case,) = got.cases
    assert case.measured == pytest.approx(28390.4265) and (case.isl, case.osl) == (128, 128)
    with pytest.raises(BenchmarkFileError, match="'= ENGINE DETAILS' section.*state --engine "
                       "trtllm-trt"):  # fmt: skip
        load(FIX / "trtllm_bench_console_0.17.txt",
             Deployment("llama-3.1-8b", "h100-sxm", engine="trtllm"))  # fmt: skip
    # The 1.x layout (same page, PyTorch backend sample): Total Output Throughput 185.8351 tok/s,
    # 10 requests of 411.6 / 128.7 tokens.
    got = load(FIX / "trtllm_bench_console_1.x.txt",
               Deployment("llama-3.1-8b", "h100-sxm", engine="trtllm"))  # fmt: skip
    assert got.format == "trtllm-bench console report (1.x layout)"
    assert got.cases[0].measured == pytest.approx(185.8351)
    assert (got.cases[0].isl, got.cases[0].osl) == (411.6, 128.7)


def test_nccl_tests_across_two_hosts_uses_the_inter_node_model():
    # lessizzmore/create-a3mega-ztan-fork ztan-NCCL-test-result: 16 ranks on ztan-mig-235z and
    # ztan-mig-gq73 (8 x "NVIDIA H100 80GB HBM3" each); 8 B .. 8 GiB, 31 rows.
    dep = Deployment("llama-3.1-8b", "h100-sxm", tp=8)
    got = load(FIX / "nccl_all_reduce_perf_2hosts.txt", dep)
    rows = got.collectives
    assert len(rows) == 31 and {r.n_gpus for r in rows} == {16}
    assert {r.link_id for r in rows} == {"ib-ndr"}
    assert rows[-1].message_bytes == 8589934592 and rows[-1].measured == 47535.0
    assert "span 2 hosts" in got.notes[0] and "assumed, state --inter-link" in got.notes[0]
    stated = load(FIX / "nccl_all_reduce_perf_2hosts.txt",
                  Deployment("llama-3.1-8b", "h100-sxm", tp=8, inter_link="roce-400g"))  # fmt: skip
    assert {r.link_id for r in stated.collectives} == {"roce-400g"}
    with pytest.raises(BenchmarkFileError, match="the ranks' device is 'NVIDIA H100 80GB HBM3', "
                       "but --gpu is mi300x"):  # fmt: skip
        load(FIX / "nccl_all_reduce_perf_2hosts.txt", Deployment("llama-3.1-8b", "mi300x", tp=8))


def test_rccl_tests_one_process_launch_is_read_from_the_shared_pid():
    # prasad-nair-amd/alibaba README.md @ 5410faae (Test 5): `all_reduce_perf -f 2 -g 8 -b 4 -e 1G`
    # in a container; the 8 rank lines all print "Pid      1" and the device "AMD Radeon Graphics"
    # (MI355X per the same README); 29 rows, 4 B (42.02 us) .. 1 GiB (4667.81 us).
    got = load(FIX / "rccl_all_reduce_perf_one_process_mi355x.txt",
               Deployment("llama-3.1-8b", "mi355x", tp=8))  # fmt: skip
    rows = got.collectives
    assert len(rows) == 29 and {r.n_gpus for r in rows} == {8}
    assert {r.harness for r in rows} == {"nccl-tests -g (one process, HIP)"}
    assert {r.link_id for r in rows} == {"xgmi-mi350"}
    assert (rows[0].message_bytes, rows[0].measured) == (4, 42.02)
    assert (rows[-1].message_bytes, rows[-1].measured) == (2**30, 4667.81)
    assert "'AMD Radeon Graphics', not an accelerator the catalog names" in got.notes[0]
    assert "the 8 ranks share one process (Pid 1" in got.notes[1]


def test_rccl_tests_one_process_per_gpu_keeps_the_plain_harness():
    # hisohara/ai-scripts training/01_rccl-smoketest/README.md @ 7b8b1ec2 (AAC8 Kubernetes):
    # `mpirun -np 8 ... all_reduce_perf -b 8 -e 8G -f 2 -g 1`, Pids 7085-7092 on one host, 8 x
    # "AMD Instinct MI300X"; 31 rows, 8 B (19.28 us) .. 8 GiB (47617 us).
    got = load(FIX / "rccl_all_reduce_perf_mpirun_mi300x.txt",
               Deployment("llama-3.1-8b", "mi300x", tp=8))  # fmt: skip
    rows = got.collectives
    assert len(rows) == 31 and {r.n_gpus for r in rows} == {8}
    assert {r.harness for r in rows} == {"nccl-tests"} and {r.link_id for r in rows} == {"xgmi"}
    assert (rows[0].measured, rows[-1].measured) == (19.28, 47617.0)
    assert got.notes == []


def test_rccl_tests_rank_lines_without_the_group_column():
    # The same README's AAC10 Slurm run (rccl-tests develop:448c4c7): "#   Rank  0 Pid 3844613 on
    # gpu-53 device  0 [0000:05:00.0] AMD Instinct MI300X", no Group column, 16 ranks on gpu-53 and
    # gpu-56, RCCL banner lines between the ranks and the table; 32 rows, 8 B (256.5 us) .. 16 GiB
    # (90115 us). Read as 8 ranks in one node, its busbw (algbw x 2 x 15/16) would be refused.
    got = load(FIX / "rccl_all_reduce_perf_2nodes_old_format.txt",
               Deployment("llama-3.1-8b", "mi300x", tp=8))  # fmt: skip
    rows = got.collectives
    assert len(rows) == 32 and {r.n_gpus for r in rows} == {16}
    assert {r.link_id for r in rows} == {"ib-ndr"} and {r.harness for r in rows} == {"nccl-tests"}
    assert (rows[0].measured, rows[-1].measured) == (256.5, 90115.0)
    assert "the 16 ranks span 2 hosts (gpu-53, gpu-56)" in got.notes[0]


def test_aiperf_real_export_of_a_reasoning_model():
    # ai-dynamo/aiperf examples/artifacts/run1/profile_export_aiperf.json: openai/gpt-oss-20b,
    # concurrency 100, request_count 100, --request-cancellation-rate 10: 89 completed, 11
    # cancelled (records.error_request_count 11.0); reasoning_token_count avg 222.38, OSL avg
    # 242.97 (AIPerf counts the thinking tokens in OSL: total_osl 21624 = 1832 + 19792).
    gpt = Deployment("gpt-oss-20b", "h100-sxm", engine="vllm")
    with pytest.raises(BenchmarkFileError, match=r"'input_config model' is 'openai/gpt-oss-20b' "
                       r"\(gpt-oss-20b\), but --model is llama-3.1-8b"):  # fmt: skip
        load(FIX / "aiperf_gpt_oss_20b_reasoning.json", VLLM)
    data = (FIX / "aiperf_gpt_oss_20b_reasoning.json").read_bytes()
    with pytest.raises(BenchmarkFileError, match=r"field 'records.error_request_count' is 11 of "
                       r"100 requests \(more than 5%\)"):  # fmt: skip
        load_bytes(data, "run1.json", gpt)
    doc = json.loads(data)
    doc["records"]["error_request_count"]["avg"] = 0.0
    # Without the cancellations: 100 requests at concurrency 100 are one burst, left out.
    got = load_bytes(json.dumps(doc).encode(), "run1.json", gpt)
    assert got.format == "AIPerf profile export" and not got.cases
    assert "a burst: 100 requests at concurrency 100" in got.left_out[0][1]
    # The thinking tokens left out of OSL (as GenAI-Perf's TTFT hides them): refused.
    doc["records"]["output_sequence_length"]["avg"] = 61.07
    with pytest.raises(BenchmarkFileError, match="'records.reasoning_token_count' is 222.382"):
        load_bytes(json.dumps(doc).encode(), "run1.json", gpt)


def test_layout_versions_are_told_by_their_own_keys():
    # vLLM benchmarks/benchmark_serving.py wrote 'backend' where vllm bench serve writes
    # 'endpoint_type' (vllm-project/vllm vllm/benchmarks/serve.py vs benchmarks/benchmark_serving.py).
    doc = json.loads((FIX / "vllm_bench_serve.json").read_text())
    del doc["endpoint_type"]
    assert (
        load_bytes(json.dumps(doc).encode(), "s.json", VLLM).format == "vllm benchmark_serving.py"
    )
    del doc["mean_tpot_ms"]
    with pytest.raises(BenchmarkFileError, match=r"s.json: key 'mean_tpot_ms' is missing \(the "
                       r"file looks like vLLM benchmark_serving.py --save-result"):  # fmt: skip
        load_bytes(json.dumps(doc).encode(), "s.json", VLLM)
    # GenAI-Perf's configuration-file releases put the load under perf_analyzer.stimulus
    # (triton-inference-server/perf_analyzer genai-perf config/input/config_command.py
    # _process_stimulus @263c5f6e): {"concurrency": 16}.
    g = json.loads((FIX / "genai_perf_profile_export.json").read_text())
    g["input_config"] = {"model_names": ["meta-llama/Llama-3.1-8B-Instruct"],
                         "perf_analyzer": {"stimulus": {"concurrency": 16}}}  # fmt: skip
    got = load_bytes(json.dumps(g).encode(), "g.json", VLLM)
    assert got.format == "GenAI-Perf profile export (2025 layout)"
    assert by_kind(got)["conc_tpot"].batch == 16
    # SGLang's bench_serving pointed at a vLLM server says backend "vllm": that is --engine vllm.
    lines = (FIX / "sglang_bench_serving.jsonl").read_text().replace('"backend": "sglang"',
                                                                    '"backend": "vllm"')  # fmt: skip
    got = load_bytes(lines.encode(), "x.jsonl", Deployment("llama-3.1-8b", "h100-sxm"))
    assert got.format == "sglang bench_serving" and len(got.cases) == 8


def test_the_gpu_a_file_records_must_be_the_stated_one():
    # trtllm_bench_report.json: machine.name "NVIDIA H100 80GB HBM3".
    dep = Deployment("llama-3.1-8b", "h200-sxm", 1, 1, "fp8", "fp8", "trtllm")
    with pytest.raises(BenchmarkFileError, match="field 'machine.name' is 'NVIDIA H100 80GB HBM3', "
                       "but --gpu is h200-sxm"):  # fmt: skip
        load(FIX / "trtllm_bench_report.json", dep)
    # AIPerf telemetry (docs/reference example layout): telemetry_data.endpoints.<host>.gpus.
    doc = json.loads((FIX / "aiperf_profile_export.json").read_text())
    doc["telemetry_data"] = {"endpoints": {"localhost:9400": {"gpus": {"gpu_0": {
        "gpu_index": 0, "gpu_name": "NVIDIA L40S"}}}}}  # fmt: skip
    with pytest.raises(BenchmarkFileError, match="gpu_0.gpu_name' is 'NVIDIA L40S', but --gpu is "
                       "h100-sxm"):  # fmt: skip
        load_bytes(json.dumps(doc).encode(), "tel.json", VLLM)
    # A device the catalog does not name is a note, not a refusal.
    doc["telemetry_data"]["endpoints"]["localhost:9400"]["gpus"]["gpu_0"]["gpu_name"] = (
        "NVIDIA RTX 6000 Ada Generation"
    )
    got = load_bytes(json.dumps(doc).encode(), "tel.json", VLLM)
    assert "not an accelerator the catalog names: taken as --gpu h100-sxm" in got.notes[0]


def _one_client_run(mean_ttft_ms: float) -> dict:
    """A vllm bench serve result of 10 prompts of 1024 / 512 tokens from one client whose TTFTs
    are the sgl-cookbook Qwen3-235B-A22B B200 run's (median 65.22 ms, P99 359.71 ms; mean
    ``mean_ttft_ms``), TPOT 10 ms; the totals, duration and latencies agree as a client's do."""
    e2e_ms = mean_ttft_ms + 10.0 * 511
    dur = 10 * e2e_ms / 1e3
    return {"backend": "vllm", "model_id": "meta-llama/Llama-3.1-8B-Instruct",
            "request_rate": "inf", "max_concurrency": 1, "duration": dur, "completed": 10,
            "total_input_tokens": 10240, "total_output_tokens": 5120,
            "request_throughput": 10 / dur, "output_throughput": 5120 / dur,
            "mean_ttft_ms": mean_ttft_ms, "median_ttft_ms": 65.22, "p99_ttft_ms": 359.71,
            "mean_tpot_ms": 10.0, "median_tpot_ms": 10.0, "p99_tpot_ms": 10.2,
            "mean_itl_ms": 10.0, "mean_e2el_ms": e2e_ms}  # fmt: skip


def test_one_clients_slow_request_does_not_reach_the_fit():
    """One client: nothing queues, so a mean TTFT 1.48x its median (the published run's 96.27 vs
    65.22 ms: one ~380 ms request among nine) is carried by a slow request; the fit takes the
    median and leaves out the mean request latency and throughput, which carry it too."""
    dep = Deployment("llama-3.1-8b", "h100-sxm", 1, 1, "bf16", "bf16", "vllm", isl=1024, osl=512)
    got = load_bytes(json.dumps(_one_client_run(96.27)).encode(), "run.json", dep)
    k = by_kind(got)
    assert k["conc_ttft"].measured == pytest.approx(0.06522)
    assert k["conc_ttft"].statistic == "median"
    assert "conc_e2e" not in k and "conc_tput" not in k and k["conc_tpot"].measured == 0.010
    assert any("1.48x its median 65.2 ms, P99 359.7 ms" in n for n in got.notes)
    # a mean within 1.25x of the median (the 8k-token run: 1.08x) is the run's own
    got = load_bytes(json.dumps(_one_client_run(70.0)).encode(), "run.json", dep)
    k = by_kind(got)
    assert k["conc_ttft"].measured == pytest.approx(0.070) and k["conc_ttft"].statistic == "mean"
    assert "conc_e2e" in k and "conc_tput" in k


def test_aiperf_one_client_slow_request_likewise():
    """The same rule for an AIPerf export (its TTFT avg / p50 / p99): one client, avg 1.48x p50
    (the published Qwen3 B200 figures) -> the p50 is fitted, the throughput left out."""
    doc = json.loads((FIX / "aiperf_profile_export.json").read_text())
    ttft, itl = 96.27, 30.1
    lat_ms = ttft + itl * 299
    doc["records"]["time_to_first_token"].update(avg=ttft, p50=65.22, p99=359.71)
    doc["records"]["request_throughput"]["avg"] = 1e3 / lat_ms  # one request in flight
    doc["records"]["output_token_throughput"]["avg"] = 1e3 / lat_ms * 300
    doc["input_config"]["loadgen"] = {"concurrency": 1, "request_count": 10}
    dep = Deployment("llama-3.1-8b", "h100-sxm", 1, 1, "bf16", "bf16", "vllm")
    got = load_bytes(json.dumps(doc).encode(), "aiperf.json", dep)
    k = by_kind(got)
    assert k["conc_ttft"].measured == pytest.approx(0.06522)
    assert k["conc_ttft"].statistic == "median" and "conc_tput" not in k
    assert any("1.48x its median 65.2 ms, P99 359.7 ms" in n for n in got.notes)


def _serve(**changes) -> bytes:
    """tests/fixtures/client/vllm_bench_serve.json (completed 320, num_prompts 320,
    max_concurrency 32, model_id meta-llama/Llama-3.1-8B-Instruct, median_ttft_ms 104.33,
    p99_ttft_ms 356.71) with ``changes``."""
    doc = json.loads((FIX / "vllm_bench_serve.json").read_text())
    doc.update(changes)
    return json.dumps(doc).encode()


def test_serving_run_with_more_than_5_percent_failed_requests_is_refused():
    # docs/calibration.md: more than 5% failed requests is refused (consistency.check_failed,
    # shared with GenAI-Perf's error_request_count). 17 failed beside 320 completed: 17 of 337,
    # above 5% (16.85); 16 of 336 is at the limit (16.8) and read.
    with pytest.raises(BenchmarkFileError, match=r"^f.json: field 'failed' is 17 of 337 requests "
                       r"\(more than 5%\); allowed at most 16: failed or cancelled"):  # fmt: skip
        load_bytes(_serve(failed=17), "f.json", VLLM)
    assert load_bytes(_serve(failed=16), "f.json", VLLM).cases
    # Without 'failed', num_prompts says how many were sent: 340 sent, 320 completed, 20 failed
    # (above 5% of 340 = 17); 336 sent leaves 16 failed (5% of 336 = 16.8).
    with pytest.raises(BenchmarkFileError, match=r"^f.json: 'num_prompts' - 'completed' is 20 of "
                       r"340 requests \(more than 5%\); allowed at most 17"):  # fmt: skip
        load_bytes(_serve(num_prompts=340), "f.json", VLLM)
    assert load_bytes(_serve(num_prompts=336), "f.json", VLLM).cases


def test_serving_run_that_completes_more_than_it_sent_is_refused():
    with pytest.raises(BenchmarkFileError, match=r"^f.json: field 'completed' is 320, more than "
                       r"'num_prompts' 300: a run cannot complete more requests than it sends "
                       r"\(allowed: 1..300\)$"):  # fmt: skip
        load_bytes(_serve(num_prompts=300), "f.json", VLLM)


def test_serving_max_concurrency_must_be_a_whole_number():
    with pytest.raises(BenchmarkFileError, match=r"^f.json: field 'max_concurrency' is 31.5; "
                       r"expected a whole number of requests in \[1, 1e\+06\]$"):  # fmt: skip
        load_bytes(_serve(max_concurrency=31.5), "f.json", VLLM)
    # 32.0 is the fixture's 32 written as a float: the same run.
    assert (
        by_kind(load_bytes(_serve(max_concurrency=32.0), "f.json", VLLM))["conc_tpot"].batch == 32
    )


def test_serving_statistics_of_one_latency_must_be_in_order():
    # A median above the P99 of the same requests: 500 ms against the fixture's P99 356.71 ms.
    with pytest.raises(BenchmarkFileError, match=r"^f.json: field 'median_ttft_ms' is 500 ms, "
                       r"above 'p99_ttft_ms' 356.71 ms of the same requests \(allowed: at most "
                       r"356.71 ms\)"):  # fmt: skip
        load_bytes(_serve(median_ttft_ms=500.0), "f.json", VLLM)
    # A mean above the max: the fixture's mean 121.84 ms against a max of 110 ms (its median and
    # P99, which would be named first, dropped: the check compares what the file gives).
    with pytest.raises(BenchmarkFileError, match=r"^f.json: field 'mean_ttft_ms' is 121.84 ms, "
                       r"above 'max_ttft_ms' 110 ms of the same requests"):  # fmt: skip
        load_bytes(_serve(max_ttft_ms=110.0, median_ttft_ms=None, p99_ttft_ms=None), "f.json",
                   VLLM)  # fmt: skip
    # A mean above the P99 is possible (one request far slower than the rest): not refused.
    assert load_bytes(_serve(p99_ttft_ms=110.0), "f.json", VLLM).cases
    # The fixture itself (median 104.33 <= P99 356.71 for TTFT, likewise TPOT, ITL, E2EL).
    assert load_bytes(_serve(), "f.json", VLLM).cases


def test_serving_file_of_another_model_is_refused_where_the_catalog_can_tell():
    # A family the catalog knows, not --model's (the helperC audit's file: Qwen against a llama).
    with pytest.raises(BenchmarkFileError, match=r"^f.json: field 'model_id' is 'Qwen/Qwen2.5-7B-"
                       r"Instruct' \(a qwen model by its name\), but --model is llama-3.1-8b "
                       r"\(allowed: a llama model\)"):  # fmt: skip
        load_bytes(_serve(model_id="Qwen/Qwen2.5-7B-Instruct"), "f.json", VLLM)
    # --model's family at another size: 70B against Llama 3.1 8B's 8.0e9 parameters (models.yaml).
    with pytest.raises(BenchmarkFileError, match=r"\(a 70B model by its name\), but --model is "
                       r"llama-3.1-8b \(allowed: 8B parameters, within 1.5x\)"):  # fmt: skip
        load_bytes(_serve(model_id="acme/Meta-Llama-3-70B-support-ft"), "f.json", VLLM)
    # A name the catalog marks as another architecture (measurements.MODEL_NOT_SAME).
    dsv3 = Deployment("deepseek-v3", "h200-sxm", 8, engine="vllm", isl=1024, osl=256)
    with pytest.raises(BenchmarkFileError, match=r"'deepseek-ai/DeepSeek-V3.2' \(DeepSeek sparse "
                       r"attention \(DSA\), not DeepSeek-V3's dense MLA\), but --model is "
                       r"deepseek-v3"):  # fmt: skip
        load_bytes(_serve(model_id="deepseek-ai/DeepSeek-V3.2"), "f.json", dsv3)
    # Names it cannot judge stay a note: a fine-tune of --model's family and size, a private name.
    for name in (
        "acme/llama-3-8b-support-ft",
        "prod-chat",
        "deepseek-ai/DeepSeek-R1-Distill-Llama-8B",
    ):
        got = load_bytes(_serve(model_id=name), "f.json", VLLM)
        assert got.cases and any("not a catalog model: taken as --model llama-3.1-8b" in n
                                 for n in got.notes), name  # fmt: skip

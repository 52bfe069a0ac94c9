"""The measurement row schema (issue 39): every row of data/measurements*.csv validated at load by
a strict, frozen pydantic model whose engine, load, metric and unit come from closed sets; a bad
row is a catalog error naming the file, line, row id, field and value. Expected readings are the
rows' own published texts (quoted in each case)."""

from __future__ import annotations

import collections
import csv

import pytest
from pydantic import ValidationError
from test_perf import _row  # a valid row: Llama-3.1-8B BF16 on one H100, id T0001

from advisor.catalog.loader import (
    DATA_DIR,
    MEASUREMENT_FILES,
    CatalogError,
    measurement_paths,
    measurement_records,
    measurement_rows,
    read_measurements,
)
from advisor.catalog.measurement_row import (
    COLUMNS,
    ENGINES,
    LOAD_KINDS,
    METRICS,
    UNITS,
    MeasurementRow,
)


def _by_id() -> dict[str, MeasurementRow]:
    return {r.id: r for r in measurement_records()}


def test_every_shipped_row_validates_and_every_file_is_listed():
    files = sorted(p.name for p in DATA_DIR.glob("measurements*.csv"))
    assert files == sorted(MEASUREMENT_FILES)
    records = measurement_records()
    # 12 community rows added 2026-12-04 (K0188-K0199); 2026-12-06: 27 RTX PRO 6000 rows
    # (E0807-E0833), 16 vLLM PR baselines (L0001-L0016)
    assert len(records) == len(measurement_rows()) == 2868
    for path in measurement_paths():  # one 17-column header everywhere
        with path.open(newline="", encoding="utf-8") as fh:
            assert tuple(next(csv.reader(fh))) == COLUMNS, path.name
    # the closed sets are the ones the rows use: no value kept for nothing
    used = {f: {getattr(r, f) for r in records}
            for f in ("engine_name", "load_kind", "metric", "unit_symbol")}  # fmt: skip
    assert used["engine_name"] == set(ENGINES)
    assert used["load_kind"] == set(LOAD_KINDS)
    assert used["metric"] == set(METRICS)
    assert used["unit_symbol"] == set(UNITS)


def test_the_rows_are_read_in_the_files_order():
    # the fit and the folds see the rows in MEASUREMENT_FILES order (the order the files had by
    # name before they were named for what they hold): M, A, R, E, S, C, N, V, then K and L
    letters = [r.id[0] for r in measurement_records()]
    firsts = [k for k, _ in collections.Counter(letters).items()]
    assert firsts == list("MARESCNVKL")
    assert letters == sorted(letters, key=firsts.index)


def test_loads_engines_and_metrics_read_from_their_texts():
    rows = measurement_records()
    rate = next(
        r for r in rows if r.batch_or_concurrency == "request rate QPS=32 (measured 16 req/s)"
    )
    assert (rate.load_kind, rate.load_value, rate.achieved_rate_per_s) == (
        "request_rate",
        32.0,
        16.0,
    )
    burst = next(r for r in rows if r.batch_or_concurrency.startswith("request rate QPS=INF"))
    assert (burst.load_kind, burst.load_value) == ("burst", None)
    trt = next(r for r in rows if r.batch_or_concurrency.startswith("concurrency 1024 (trtllm"))
    assert (trt.load_kind, trt.load_value, trt.requests) == ("concurrency", 1024.0, 5120)
    msg = next(r for r in rows if r.batch_or_concurrency == "message 128KiB")
    assert (msg.load_kind, msg.load_value) == ("message_size", 131072.0)
    sg = next(r for r in rows if r.engine == "SGLang 0.5.6.post1")
    assert (sg.engine_name, sg.engine_version) == ("sglang", "0.5.6.post1")
    unstated = next(r for r in rows if r.engine.startswith("TensorRT-LLM (version not stated"))
    assert (unstated.engine_name, unstated.engine_version) == ("tensorrt-llm", None)
    e2e = next(r for r in rows if r.metric == "e2e_s_mean")
    assert (e2e.quantity, e2e.unit_symbol, e2e.statistic) == ("e2e", "s", "mean")
    per_gpu = next(r for r in rows if r.unit == "output tok/s per GPU")
    assert (per_gpu.throughput_scope, per_gpu.tokens_counted) == ("per_gpu", "output")
    vague = next(r for r in rows if "not stated" in r.unit)
    assert vague.tokens_counted == "not stated"
    spread = _by_id()["M0969"]  # EAGLE-2: "3.05-4.26", unit "x (range)"
    assert (spread.value, spread.value_high, spread.unit_symbol) == (3.05, 4.26, "x")


@pytest.mark.parametrize(
    "change, words",
    [
        ({"engine": "FasterTransformer 5.3"}, "engine_name 'FasterTransformer 5.3'"),
        ({"metric": "ttft_minutes"}, "metric 'ttft_minutes'"),
        ({"unit": "s"}, "unit 's' disagrees with metric 'ttft_ms_median' (in ms)"),
        ({"value": "fast"}, "value 'fast' is not a number"),
        ({"value": "-3"}, "value -3.0"),
        ({"tp": "eight"}, "tp 'eight' is not a whole number"),
        ({"tp": "0"}, "tp 0"),
        ({"id": "row-1"}, "id 'row-1'"),
        ({"batch_or_concurrency": "max concurrency 0"}, "load_value 0.0"),
        ({"model": ""}, "model: empty for a ttft_ms_median row"),
    ],
)
def test_a_bad_row_names_file_line_id_field_and_value(tmp_path, change, words):
    path = tmp_path / "measurements-test.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        w.writerow(_row(id="T0001"))
        w.writerow(_row(**{"id": "T0002", **change}))
    with pytest.raises(CatalogError) as exc:
        read_measurements([path])
    msg = str(exc.value)
    rid = change.get("id", "T0002")
    assert msg.startswith(f"measurements-test.csv line 3: row {rid!r}: "), msg
    assert words in msg, msg


def test_a_duplicate_id_or_an_unlisted_file_is_refused(tmp_path):
    path = tmp_path / "measurements.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=COLUMNS)
        w.writeheader()
        w.writerow(_row())
        w.writerow(_row())
    with pytest.raises(CatalogError, match="id 'T0001' already in measurements.csv"):
        read_measurements([path])
    (tmp_path / "measurements-round4.csv").write_text(",".join(COLUMNS) + "\n")
    with pytest.raises(CatalogError, match="measurements-round4.csv: measurement file not in"):
        measurement_paths(tmp_path)


def test_the_model_is_strict_and_frozen():
    r = MeasurementRow.from_csv(_row())
    with pytest.raises(ValidationError):
        r.value = 1.0  # frozen
    with pytest.raises(ValidationError):  # extra keys refused, no coercion of "50"
        MeasurementRow(**{**r.model_dump(), "value": "50"})
    with pytest.raises(ValidationError):
        MeasurementRow(**{**r.model_dump(), "colour": "red"})
    with pytest.raises(ValueError, match="columns: missing \\['notes'\\]"):
        MeasurementRow.from_csv({k: v for k, v in _row().items() if k != "notes"})


def test_nvfp4_perf_overview_rows_are_read_with_the_fp8_cache_their_checkpoints_carry():
    # Audit of 2026-12-06 (data/measurements-engine-perf-pages.md): NVIDIA's ModelOpt exports its
    # NVFP4 checkpoints with an FP8 KV cache by default (hf_ptq.py: "Always turn on FP8 kv cache",
    # --kv_cache_qformat default "fp8") and TensorRT-LLM's kv_cache_dtype "auto" takes it; the
    # perf-overview pages never state it. Read as bf16, the page's Llama-3.3-70B rows on one B200
    # ran from 0.60x to 1.45x of measured with the output length.
    from advisor.perf.validation.measurements import cases

    by_id = {c.id: c for c in cases()[0]}
    for rid in ("E0193", "E0549", "E0807", "E0824"):  # B200 Llama 70B, RTX PRO 6000 Llama/Qwen3
        assert (by_id[rid].config.weights, by_id[rid].config.kv) == ("nvfp4", "fp8"), rid

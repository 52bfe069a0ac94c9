"""advisor.article_check: each recomputed value against its hand calculation or source.

Sources: data/article-claims.md (the claims), Llama-2-70B config (80 layers, hidden 8192, 8 KV
heads x 128), H100 SXM datasheet, PCIe 5.0 spec (32 GT/s x 16 lanes, 128b/130b: 63 GB/s per
direction), NVIDIA H100 NVLink 4 (900 GB/s bidirectional = 450 GB/s per direction).
"""

from __future__ import annotations

import pytest

from advisor.article_check import DECISION_MATRIX, claims


@pytest.fixture(scope="module")
def by_id():
    return {c.id: c for c in claims()}


def test_every_claim_is_complete_and_has_a_known_verdict():
    for c in claims():
        assert c.verdict in ("holds", "wrong", "holds only if"), c.id
        assert c.claim and c.article_value and c.recomputed and c.assumption and c.function


def test_kv_per_sequence_is_gqa_not_the_article_formula(by_id):
    c = by_id["kv"]
    # 2 x 4096 x 8 x 128 x 80 x 2 bytes = 1,342,177,280 bytes (hand calculation)
    assert c.value == 2 * 4096 * 8 * 128 * 80 * 2
    assert "10.74 GB" in c.recomputed  # 2 x 4096 x 8192 x 80 x 2 = 10.737e9
    assert c.verdict == "wrong"
    assert "1,602" in c.assumption  # 2.1e9 / (2 x 4096 x 80 x 2) = 1602.2


def test_38_sequences_ignore_the_weights(by_id):
    c = by_id["38-sequences"]
    assert c.value == 0  # 138 GB of fp16 weights do not fit one 80 GB H100
    assert "138 GB" in c.recomputed
    assert "38.1" in c.assumption  # 80 / 2.1


def test_layers_and_compute_per_layer(by_id):
    assert by_id["layers"].value == 80
    assert "160 all-reduces" in by_id["layers"].recomputed  # 2 per layer (Megatron-LM)
    c = by_id["compute-per-layer"]
    assert "2.0 s per token" in c.assumption  # 25 ms x 80
    assert 20e-6 < c.value < 1e-3  # a 70B decode step on 8 x H100 is ~10 ms: ~0.1 ms per layer


def test_message_sizes_that_reproduce_15_and_380_us(by_id):
    # d = (T - 2 alpha) N B / (2 log2 N): (15 - 2.4) us x 8 x 450e9 / 6 = 7.56 MB;
    # (380 - 10) us x 8 x 32e9 / 6 = 15.79 MB
    assert by_id["nvlink-15us"].value == pytest.approx(12.6e-6 * 8 * 450e9 / 6)
    assert by_id["pcie-380us"].value == pytest.approx(370e-6 * 8 * 32e9 / 6)
    assert "16 KiB" in by_id["nvlink-15us"].recomputed  # 1 token x 8192 x 2 bytes


def test_link_bandwidths(by_id):
    assert by_id["pcie-bw"].value == pytest.approx(63e9)
    assert by_id["pcie-bw"].verdict == "wrong"
    assert by_id["nvlink-bw"].value == pytest.approx(450e9)


def test_int4_weights_and_dequant(by_id):
    c = by_id["int4-35gb"]
    # 68.98e9 params: linear layers at 0.5 + 2.5/128 bytes, embeddings + lm_head in fp16: 36.6 GB
    assert c.value / 1e9 == pytest.approx(36.6, abs=0.05)
    assert c.verdict == "holds"
    # Batch-1 decode is memory-bound: dequantization overlaps the weight reads (0 on the path).
    assert by_id["int4-dequant"].value == 0.0


def test_paged_ratio_and_headline(by_id):
    assert by_id["paged-4.2x"].value == pytest.approx(87 / 35)
    c = by_id["sub-100ms"]
    assert c.value > 1.0  # end to end over 256 tokens is seconds, not < 100 ms
    assert "2.56 s" in c.assumption  # 256 x 10 ms


def test_decision_matrix_is_the_articles():
    assert DECISION_MATRIX[0] == ("7B-13B", "1 GPU, FP16, continuous batching")
    assert len(DECISION_MATRIX) == 4

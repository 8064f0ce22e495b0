# SPDX-License-Identifier: BSD-2-Clause
"""The check value of a frozen copy (host_sw.contracts.check_value) against docs/SPEC.md
§4.4's test vectors, recomputed from the section's text, and its bit-serial form."""

import random
import re
import zlib
from pathlib import Path

import numpy as np

from host_sw.contracts.check_value import (CRC32_INIT, CRC32_XOROUT, check_bytes, check_value,
                                           count_total, crc32_bits)
from host_sw.contracts.config import LdaConfig, RdaConfig
from host_sw.contracts.synopsis import Synopsis

ROOT = Path(__file__).resolve().parents[2]


def _section():
    spec = (ROOT / "docs" / "SPEC.md").read_text()
    return spec.split("### §4.4")[1].split("## §5")[0]


def test_spec_vectors():
    text = _section()
    lda = LdaConfig(banks=2, rows=2, thresholds=(0, 1))
    syn = Synopsis(lda, {
        "count": np.array([[1, 0], [3, 0xFFFFFFFF]], dtype=np.uint64),
        "ts_sum": np.array([[100, 0], [0x123456789A, 0xFFFFFFFFFF]], dtype=np.uint64)})
    words = syn.words()
    block = text.split("```")[1]
    printed_words = [int(w, 16) for w in re.findall(r"0x[0-9a-f]+", block.splitlines()[1])]
    assert printed_words == words
    printed_bytes = bytes.fromhex(" ".join(re.findall(r"(?:[0-9a-f]{2} ){8}[0-9a-f]{2}", block)))
    assert printed_bytes == check_bytes(lda, words)
    assert f"check value           {check_value(lda, words):#010x}" in block
    assert f"count total           {count_total(lda, syn.count)} " in block
    rda = RdaConfig(banks=2, buckets_per_bank=1)
    rda_words = Synopsis(rda, {
        "count": np.array([[2], [2]], dtype=np.uint64),
        "ts_sum": np.array([[10], [10]], dtype=np.uint64),
        "id_xor": np.array([[0x0123456789ABCDEF], [0]], dtype=np.uint64)}).words()
    assert f"check value `{check_value(rda, rda_words):#010x}`" in text
    assert check_bytes(rda, rda_words).hex(" ") in " ".join(
        re.findall(r"`([0-9a-f ]+)`", text))
    zero = LdaConfig(banks=1, rows=4, thresholds=(0,))
    assert f"`{check_value(zero, [0] * 4):#010x}`" in text
    assert check_value(zero, [0] * 4) == zlib.crc32(bytes(36))


def test_bit_serial_form_is_zlib():
    rng = random.Random(1)
    for n in (1, 9, 17, 40):
        data = bytes(rng.randrange(256) for _ in range(n))
        bits = [(b >> i) & 1 for b in data for i in range(8)]
        assert crc32_bits(CRC32_INIT, bits) ^ CRC32_XOROUT == zlib.crc32(data)

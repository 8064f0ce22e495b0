# SPDX-License-Identifier: BSD-2-Clause
"""The check value of a frozen interval record (host_sw.contracts.check_value) against
docs/SPEC.md §4.4's test vectors — the block is the one bench.make_test_vectors generates,
and each printed check value is recomputed with zlib from the printed bytes — and its
bit-serial form."""

import random
import re
import zlib
from pathlib import Path

from bench.make_test_vectors import CHECK_BEGIN, CHECK_END, check_records, check_value_markdown
import pytest

from host_sw.contracts.check_value import (CRC32_INIT, CRC32_XOROUT, HEADER_BITS,
                                           RLI_HEADER_FIELDS, RecordHeader, check_bytes,
                                           check_value, crc32_bits, extend_check, header_bits,
                                           header_bytes, header_fields, words_check)
from host_sw.contracts.config import LdaConfig, RliConfig

ROOT = Path(__file__).resolve().parents[2]


def _section():
    spec = (ROOT / "docs" / "SPEC.md").read_text()
    return spec.split("### §4.4")[1].split("## §5")[0]


def test_spec_vectors_are_the_generated_ones():
    text = _section()
    assert check_value_markdown() in text, (
        "docs/SPEC.md §4.4 check-value vectors are stale: run python -m "
        "bench.make_test_vectors --write")


def test_spec_vectors_recompute_from_the_printed_bytes():
    """Each printed block: its bytes are the record's (words then header), zlib.crc32 of
    the printed bytes is the printed check value, and of the word bytes the words' CRC."""
    block_text = _section().split(CHECK_BEGIN)[1].split(CHECK_END)[0]
    blocks = block_text.split("```")[1::2]
    records = check_records()
    assert len(blocks) == len(records) == 4
    for block, (_, config, words, header) in zip(blocks, records):
        lines = block.strip("\n").splitlines()
        printed_words = [int(w, 16) for w in re.findall(r"0x[0-9a-f]+", lines[0])]
        assert printed_words == words
        word_lines = [ln for ln in lines if re.fullmatch(r"(word bytes)? *([0-9a-f]{2} ?)+", ln)]
        word_bytes = bytes.fromhex(" ".join(ln.replace("word bytes", "") for ln in word_lines))
        head_line = next(ln for ln in lines if ln.startswith("header bytes"))
        head = bytes.fromhex(head_line.removeprefix("header bytes").replace("|", " "))
        assert len(head) == header_bits(config) // 8 == (44 if config.kind == "rli" else 28)
        assert head == header_bytes(header)
        assert word_bytes + head == check_bytes(config, words, header)
        value = dict(re.findall(r"^(words CRC|check value) +(0x[0-9a-f]{8})$", block, re.M))
        assert int(value["check value"], 16) == zlib.crc32(word_bytes + head)
        assert int(value["words CRC"], 16) == zlib.crc32(word_bytes)
        assert int(value["check value"], 16) == check_value(config, words, header)
        assert extend_check(words_check(config, words), header) == check_value(config, words,
                                                                               header)


def test_header_byte_order_is_little_endian_fields_in_order():
    header = RecordHeader(seq=0x04030201, flags=0x05, packets=0x09080706,
                          config_id=0x0D0C0B0A, timestamp=0x1514131211100F0E, role=0x16,
                          src_mac=0x1C1B1A191817)
    assert HEADER_BITS == 28 * 8
    assert header_bytes(header) == bytes(range(1, 29))
    rli = RecordHeader(**{**header.__dict__, "rli_references": 0x201F1E1D,
                          "rli_overflowed": 0x24232221, "rli_unreferenced": 0x28272625,
                          "rli_refused": 0x2C2B2A29})
    assert header_bytes(rli) == bytes(range(1, 45))


def test_header_fields_of_each_kind_and_refused_mismatches():
    """RLI's frozen counts follow the common header on RLI cores only; a header of the
    other kind's fields, or with some of the RLI counts, is refused (not checked wrongly)."""
    assert header_fields("lda") == header_fields(LdaConfig()) == header_fields("opa")
    assert header_fields(RliConfig()) == header_fields("lda") + RLI_HEADER_FIELDS
    plain = RecordHeader(seq=1, flags=0, packets=2, config_id=3, timestamp=4, role=1,
                         src_mac=5)
    with pytest.raises(ValueError, match="rli core's header has the fields"):
        check_value(RliConfig(cells=2), [0, 0], plain)
    with pytest.raises(ValueError, match="all four rli_"):
        RecordHeader(**{**plain.__dict__, "rli_references": 1})


def test_bit_serial_form_is_zlib():
    rng = random.Random(1)
    for n in (1, 9, 17, 40):
        data = bytes(rng.randrange(256) for _ in range(n))
        bits = [(b >> i) & 1 for b in data for i in range(8)]
        assert crc32_bits(CRC32_INIT, bits) ^ CRC32_XOROUT == zlib.crc32(data)

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
from host_sw.contracts.check_value import (CRC32_INIT, CRC32_XOROUT, HEADER_BITS, RecordHeader,
                                           check_bytes, check_value, crc32_bits, extend_check,
                                           header_bytes, words_check)

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
    assert len(blocks) == len(records) == 3
    for block, (_, config, words, header) in zip(blocks, records):
        lines = block.strip("\n").splitlines()
        printed_words = [int(w, 16) for w in re.findall(r"0x[0-9a-f]+", lines[0])]
        assert printed_words == words
        word_lines = [ln for ln in lines if re.fullmatch(r"(word bytes)? *([0-9a-f]{2} ?)+", ln)]
        word_bytes = bytes.fromhex(" ".join(ln.replace("word bytes", "") for ln in word_lines))
        head_line = next(ln for ln in lines if ln.startswith("header bytes"))
        head = bytes.fromhex(head_line.removeprefix("header bytes").replace("|", " "))
        assert len(head) == HEADER_BITS // 8 == 21
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
                          config_id=0x0D0C0B0A, timestamp=0x1514131211100F0E)
    assert header_bytes(header) == bytes(range(1, 22))


def test_bit_serial_form_is_zlib():
    rng = random.Random(1)
    for n in (1, 9, 17, 40):
        data = bytes(rng.randrange(256) for _ in range(n))
        bits = [(b >> i) & 1 for b in data for i in range(8)]
        assert crc32_bits(CRC32_INIT, bits) ^ CRC32_XOROUT == zlib.crc32(data)

# SPDX-License-Identifier: BSD-2-Clause
"""The freeze check's CRC unit (hw.counters.freeze_check) against zlib.crc32, word for word, on
Amaranth's simulator; the sweep's read order and completion; and the record check (the
header folded into the words' CRC) against the contract's ``check_value`` over the whole
record, with ``ready`` held back until the value is the record's."""

import random
import zlib

import pytest
from amaranth.sim import Simulator

from host_sw.contracts.check_value import (RecordHeader, check_value, extend_check,
                                           header_bits, header_fields, words_check)
from host_sw.contracts.config import LdaConfig, RliConfig
from hw.counters.freeze_check import Crc32Words, FreezeCheck, RecordCheck, crc32_matrix


def _zlib_words(width, words):
    n = (width + 7) // 8
    return zlib.crc32(b"".join(w.to_bytes(n, "little") for w in words))


def _simulate(dut, tb):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(tb)
    sim.run()


@pytest.mark.parametrize("width", [8, 13, 72, 136])
def test_crc_unit_matches_zlib(width):
    rng = random.Random(width)
    runs = [[rng.getrandbits(width) for _ in range(n)] for n in (1, 5, 17)]
    runs.append([(1 << width) - 1, 0, 1 << (width - 1)])
    dut = Crc32Words(width=width)

    async def tb(ctx):
        for words in runs:
            ctx.set(dut.start, 1)
            ctx.set(dut.valid, 1)              # ignored in the start cycle
            ctx.set(dut.data, 0x5A)
            await ctx.tick()
            ctx.set(dut.start, 0)
            for i, w in enumerate(words):
                ctx.set(dut.valid, 1)
                ctx.set(dut.data, w)
                await ctx.tick()
                if i % 3 == 2:                   # gaps between words change nothing
                    ctx.set(dut.valid, 0)
                    await ctx.tick()
            ctx.set(dut.valid, 0)
            await ctx.tick().repeat(Crc32Words.LATENCY)
            assert ctx.get(dut.value) == _zlib_words(width, words), (width, words)

    _simulate(dut, tb)


def test_matrix_rejects_partial_bytes():
    with pytest.raises(ValueError, match="whole bytes"):
        crc32_matrix(12)
    with pytest.raises(ValueError, match="positive"):
        Crc32Words(width=0)
    with pytest.raises(ValueError, match="words must be"):
        FreezeCheck(words=0, width=8)


def test_sweep_reads_every_word_in_order_and_signals_done():
    """A memory answering 3 cycles after each request: the sweep reads 0..n-1 in a row,
    ``done`` comes once, with the CRC of the whole memory; a second sweep starts over."""
    width, n, latency = 40, 11, 3
    rng = random.Random(7)
    memory = [rng.getrandbits(width) for _ in range(n)]
    dut = FreezeCheck(words=n, width=width)

    async def tb(ctx):
        for sweep in range(2):
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            pending, asked, done_at = [], [], []
            for cycle in range(n + latency + 10):
                if ctx.get(dut.en):
                    asked.append(ctx.get(dut.addr))
                    pending.append((cycle + latency, memory[ctx.get(dut.addr)]))
                due = [p for p in pending if p[0] == cycle]
                ctx.set(dut.word_valid, bool(due))
                ctx.set(dut.word, due[0][1] if due else 0)
                if ctx.get(dut.done):
                    done_at.append(cycle)
                    assert ctx.get(dut.value) == _zlib_words(width, memory)
                await ctx.tick()
            assert asked == list(range(n)) and len(done_at) == 1, (asked, done_at)
            memory[sweep] ^= 1

    _simulate(dut, tb)


@pytest.mark.parametrize("config", [LdaConfig(banks=1, rows=4, thresholds=(0,)),
                                    RliConfig(cells=4)], ids=lambda c: c.kind)
def test_record_check_is_the_contracts_check_value_over_the_whole_record(config):
    """Random words' CRCs and headers (and every header bit alone: the role, the source
    MAC and on RLI the four frozen counts too): ``value`` equals ``check_value`` of the
    record (words then header), ``latency`` cycles after ``frozen_ready`` rose (a step per
    header byte); ``ready`` rises exactly then and falls with ``frozen_ready``, also when it
    falls before the value is in (the next rise starts over)."""
    fields = header_fields(config)
    rng = random.Random(11)
    cases = []
    for k in range(12):
        words = [rng.getrandbits(config.layout.width) for _ in range(4)]
        header = RecordHeader(**{name: rng.getrandbits(bits) for name, bits in fields})
        cases.append((words, header))
    words = [0, 1, 2, 3]
    base = {name: 0 for name, _ in fields}
    for name, bits in fields:                              # one bit at a time
        for bit in (0, bits - 1):
            cases.append((words, RecordHeader(**{**base, name: 1 << bit})))
    dut = RecordCheck(header_bits=header_bits(config))

    async def tb(ctx):
        assert ctx.get(dut.value) == 0                     # FROZEN_CHECK's reset
        ctx.set(dut.words_check, 0x1234)                   # not frozen: not loaded
        await ctx.tick().repeat(dut.latency + 2)
        assert ctx.get(dut.value) == 0 and not ctx.get(dut.ready)
        # frozen, then released half-way (a copy released early): nothing loaded
        ctx.set(dut.frozen_ready, 1)
        await ctx.tick().repeat(dut.latency // 2)
        ctx.set(dut.frozen_ready, 0)
        await ctx.tick()
        assert ctx.get(dut.value) == 0 and not ctx.get(dut.ready)
        for words, header in cases:
            ctx.set(dut.frozen_ready, 0)
            await ctx.tick()
            assert not ctx.get(dut.ready)
            ctx.set(dut.words_check, words_check(config, words))
            ctx.set(dut.header, header.as_int())
            ctx.set(dut.frozen_ready, 1)
            for _ in range(dut.latency):
                assert not ctx.get(dut.ready)
                await ctx.tick()
            assert ctx.get(dut.ready)
            want = check_value(config, words, header)
            assert want == extend_check(words_check(config, words), header)
            assert ctx.get(dut.value) == want, (header, hex(ctx.get(dut.value)), hex(want))
            ctx.set(dut.frozen_ready, 0)                   # released: the value is held
            ctx.set(dut.words_check, 0)
            await ctx.tick().repeat(dut.latency + 1)
            assert ctx.get(dut.value) == want and not ctx.get(dut.ready)

    _simulate(dut, tb)

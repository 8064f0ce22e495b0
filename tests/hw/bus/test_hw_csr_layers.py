# SPDX-License-Identifier: BSD-2-Clause
"""The CSR bank's layers on their own, on Amaranth's simulator: the address decoder, the
registered read multiplexer and the counter window (``hw.bus.csr_decode``,
``hw.bus.counter_window``). ``tests/hw/bus/test_hw_csr.py`` tests the bank they compose."""

import pytest
from amaranth.hdl import Value
from amaranth.sim import Simulator

from host_sw.contracts.config import LdaConfig, LdsConfig
from host_sw.contracts.regmap import register_map
from hw.bus.counter_window import CounterWindowReader
from hw.bus.csr_decode import CsrDecoder, CsrReadMux, register_slots, wide_registers

CONFIG = LdaConfig(banks=2, rows=8, thresholds=(1, 7))
RMAP = register_map(CONFIG, data_width=64)           # 72-bit words: 3 chunks (division)
SLOTS = register_slots(RMAP)
WIDE = wide_registers(RMAP)


def simulate(dut, testbench):
    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(testbench)
    sim.run()


def slot_of(name, word=0):
    return SLOTS.index((RMAP[name], word))


# -- CsrDecoder ---------------------------------------------------------------------------

async def decode(ctx, dut, addr, write=0):
    """Present ``addr``, strobe the two decode steps; return the outputs of the cycle after
    ``decode`` and of the one after that."""
    ctx.set(dut.addr, addr)
    ctx.set(dut.write, write)
    ctx.set(dut.predecode, 1)
    await ctx.tick()
    ctx.set(dut.predecode, 0)
    ctx.set(dut.decode, 1)
    await ctx.tick()
    ctx.set(dut.decode, 0)
    outputs = []
    for _ in range(2):
        outputs.append({name: ctx.get(getattr(dut, name)) for name in (
            "select", "write_select", "capture", "capture_select", "window",
            "window_offset")})
        await ctx.tick()
    return outputs


def test_decoder_register_words_are_one_hot():
    dut = CsrDecoder(regmap=RMAP)

    async def tb(ctx):
        first, second = await decode(ctx, dut, RMAP["frames_seen"].address)
        assert first["select"] == 1 << slot_of("frames_seen")
        assert first["write_select"] == 0 and first["capture"] == 0
        assert first["window"] == 0
        assert second["select"] == first["select"]          # held until the next decode
        # A write: `write_select` for exactly one cycle.
        first, second = await decode(ctx, dut, RMAP["config_id"].address, write=1)
        assert first["select"] == first["write_select"] == 1 << slot_of("config_id")
        assert second["write_select"] == 0 and second["select"] == first["select"]
        # The second word of a wide register: its slot, no capture.
        first, _ = await decode(ctx, dut, RMAP["masks"].address + 1)
        assert first["select"] == 1 << slot_of("masks", 1) and first["capture"] == 0
    simulate(dut, tb)


def test_decoder_captures_wide_registers_on_their_first_word():
    dut = CsrDecoder(regmap=RMAP)

    async def tb(ctx):
        for j, reg in enumerate(WIDE):
            first, second = await decode(ctx, dut, reg.address)
            assert first["capture"] == 1 and second["capture"] == 0
            assert first["capture_select"] == 1 << j
            assert first["select"] == 1 << slot_of(reg.name)
        # Writing a first word captures nothing.
        first, _ = await decode(ctx, dut, RMAP["timebase"].address, write=1)
        assert first["capture"] == 0
    simulate(dut, tb)


def test_decoder_window_and_unmapped_addresses():
    dut = CsrDecoder(regmap=RMAP)
    win = RMAP.window

    async def tb(ctx):
        first, _ = await decode(ctx, dut, win.address_of(5, 2))
        assert first["window"] == 1 and first["select"] == 0
        assert first["window_offset"] == 5 * win.chunks + 2
        last = RMAP.registers[-1]
        for addr in (last.address + last.words, win.address + win.words, 0xFFFF_FFFF,
                     RMAP["id"].address + (1 << 20)):
            first, _ = await decode(ctx, dut, addr)
            assert first["select"] == 0 and first["window"] == 0 and first["capture"] == 0
    simulate(dut, tb)


# -- CsrReadMux ---------------------------------------------------------------------------

@pytest.mark.parametrize("compact", [False, True])
def test_read_mux_answers_three_cycles_after_the_select(compact):
    """Three registered levels; compact, two (the bank's sequencer answers at the third
    clock either way)."""
    dut = CsrReadMux(regmap=RMAP, compact=compact)
    levels = 2 if compact else 3

    async def tb(ctx):
        ctx.set(dut.sources.frames_seen, 0xFEDCBA98)
        ctx.set(dut.sources.config_id, 0x12345678)
        ctx.set(dut.select, 1 << slot_of("frames_seen"))
        for _ in range(levels - 1):
            await ctx.tick()
            assert ctx.get(dut.r_data) == 0
        await ctx.tick()
        assert ctx.get(dut.r_data) == 0xFEDCBA98
        ctx.set(dut.select, 1 << slot_of("id"))           # a constant register
        await ctx.tick().repeat(3)
        assert ctx.get(dut.r_data) == RMAP.id_value
        ctx.set(dut.select, 0)                            # nothing selected: 0
        await ctx.tick().repeat(3)
        assert ctx.get(dut.r_data) == 0
    simulate(dut, tb)


@pytest.mark.parametrize("compact", [False, True])
def test_read_mux_wide_register_reads_are_atomic(compact):
    dut = CsrReadMux(regmap=RMAP, compact=compact)
    masks = RMAP["masks"]
    value = masks.encode(packet_ipv4=0x0123456789ABCDEF, packet_ipv6=0xFFFF,
                         flow_ipv4=1 << 63, flow_ipv6=0x5555_0000_AAAA)
    words = masks.to_words(value)

    async def tb(ctx):
        ctx.set(Value.cast(dut.sources.masks), value)
        ctx.set(dut.select, 1 << slot_of("masks"))
        ctx.set(dut.capture_select, 1 << WIDE.index(masks))
        ctx.set(dut.capture, 1)
        await ctx.tick()
        ctx.set(dut.capture, 0)
        ctx.set(Value.cast(dut.sources.masks), 0)         # the source changes meanwhile
        await ctx.tick().repeat(2)
        assert ctx.get(dut.r_data) == words[0]
        for k in range(1, masks.words):                   # the other words: the capture
            ctx.set(dut.select, 1 << slot_of("masks", k))
            await ctx.tick().repeat(3)
            assert ctx.get(dut.r_data) == words[k]
    simulate(dut, tb)


@pytest.mark.parametrize("compact", [False, True])
def test_read_mux_window_answer_takes_precedence(compact):
    dut = CsrReadMux(regmap=RMAP, compact=compact)

    async def tb(ctx):
        ctx.set(dut.sources.frames_seen, 7)
        ctx.set(dut.select, 1 << slot_of("frames_seen"))
        await ctx.tick().repeat(3)
        ctx.set(dut.window_answer, 1)
        ctx.set(dut.window_word, 0xA5A5_5A5A)
        await ctx.tick()
        assert ctx.get(dut.r_data) == 0xA5A5_5A5A
        ctx.set(dut.window_answer, 0)
        await ctx.tick()
        assert ctx.get(dut.r_data) == 7
    simulate(dut, tb)


# -- CounterWindowReader ------------------------------------------------------------------------

def word_of(index, width):
    return (index * 0x0102_0304_0506_0708_090A_0B0C_0D0E_0F10 + index) % (1 << width)


def run_window(rmap, reads, *, answers=lambda index: True, latency=2):
    """Read ``(index, chunk)`` pairs through a CounterWindowReader with a fake read port;
    return ``[(word, cycles from start to answer)]`` and the port's read log."""
    win = rmap.window
    dut = CounterWindowReader(window=win, addr_bits=max(1, (win.buckets - 1).bit_length()),
                        timeout=20)
    results, log = [], []

    async def port(ctx):
        pending = []
        while True:
            await ctx.tick()
            ctx.set(dut.counters.valid, 0)
            pending = [(t - 1, a) for t, a in pending]
            if pending and pending[0][0] == 0:
                _, a = pending.pop(0)
                ctx.set(dut.counters.valid, 1)
                ctx.set(dut.counters.data, word_of(a, win.layout.width))
            if ctx.get(dut.counters.en):
                a = ctx.get(dut.counters.addr)
                log.append(a)
                if answers(a):
                    pending.append((latency, a))

    async def tb(ctx):
        for index, chunk in reads:
            ctx.set(dut.offset, index * win.chunks + chunk)
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, 0)
            cycles = 1
            while not ctx.get(dut.answer):
                await ctx.tick()
                cycles += 1
            results.append((ctx.get(dut.word), cycles))
            await ctx.tick()

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(port, background=True)
    sim.add_testbench(tb)
    sim.run()
    return results, log


def test_window_reads_chunks_through_a_shift():
    rmap = register_map(LdsConfig(rows=2, cells=5, row_thresholds=(0, 0)))
    win = rmap.window
    assert win.chunks == 4
    reads = [(7, 0), (7, 1), (7, 3), (2, 0), (2, 2)]
    results, log = run_window(rmap, reads, latency=2)
    for (index, chunk), (word, _) in zip(reads, results):
        assert word == (word_of(index, win.layout.width) >> (32 * chunk)) & 0xFFFF_FFFF
    assert log == [7, 2]
    # 2 cycles for chunks 1.., 4 plus the port's latency for chunk 0
    assert [cycles for _, cycles in results] == [6, 2, 2, 6, 2]


def test_window_divides_by_three_chunks():
    win = RMAP.window
    assert win.chunks == 3
    reads = [(index, chunk) for index in (0, 5, 15) for chunk in range(3)]
    results, log = run_window(RMAP, reads)
    for (index, chunk), (word, _) in zip(reads, results):
        assert word == (word_of(index, win.layout.width) >> (32 * chunk)) & 0xFFFF_FFFF
    assert log == [0, 5, 15]
    q_bits = (win.buckets - 1).bit_length()
    assert results[1][1] == 2 + 2 * q_bits + 1


def test_window_timeout_answers_zero_and_drops_the_capture():
    results, log = run_window(RMAP, [(2, 0), (2, 1), (3, 0), (3, 1)],
                              answers=lambda index: index != 3)
    width = RMAP.window.layout.width
    assert [word for word, _ in results] == [
        word_of(2, width) & 0xFFFF_FFFF, (word_of(2, width) >> 32) & 0xFFFF_FFFF, 0, 0]
    assert log == [2, 3]


def test_compact_read_mux_has_no_first_level_registers(tmp_path):
    """``compact`` drops level 1's flip-flops, one per readable register bit, and keeps
    the rest (the groups' words, the answer, the shadow) as they were."""
    from tests.hw.ecp5_netlist import synthesized

    def flip_flops(compact):
        module = synthesized(CsrReadMux(regmap=RMAP, compact=compact),
                             tmp_path / str(compact))
        return sum(cell["type"] == "TRELLIS_FF" for cell in module["cells"].values())
    (tmp_path / "False").mkdir()
    (tmp_path / "True").mkdir()
    parts = sum(reg.width for reg in RMAP if not reg.constant)
    registered, compact = flip_flops(False), flip_flops(True)
    assert registered - compact >= parts - 32, (registered, compact, parts)


def test_read_mux_compact_must_be_a_bool():
    with pytest.raises(ValueError, match="compact must be a bool"):
        CsrReadMux(regmap=RMAP, compact=1)

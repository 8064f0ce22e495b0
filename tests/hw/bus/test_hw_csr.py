# SPDX-License-Identifier: BSD-2-Clause
"""CsrBank on Amaranth's simulator: rw/ro/pulse registers, atomic wide reads and writes,
counter-window reads through a fake read port, unmapped/ro access rules."""

import gc
import warnings

import pytest
from amaranth.hdl import UnusedElaboratable
from amaranth.hdl import Value
from amaranth.sim import Simulator

from host_sw.contracts.config import LdaConfig, LdsConfig, RdaConfig
from host_sw.contracts.regmap import register_map
from hw.bus.csr import CsrBank

CONFIG = LdaConfig(banks=2, rows=8, thresholds=(1, 7))
RMAP = register_map(CONFIG, data_width=64)


def fake_word(index):
    """Counter word the fake read port answers for flat index ``index`` (72 bits)."""
    return ((index + 1) * 0x0123_4567_89AB_CDEF_1 + index) & ((1 << CONFIG.layout.width) - 1)


async def bus_read(ctx, bus, addr, max_cycles=400):
    ctx.set(bus.addr, addr)
    ctx.set(bus.r_stb, 1)
    for _ in range(max_cycles):
        ack, data = ctx.get(bus.ack), ctx.get(bus.r_data)
        await ctx.tick()
        if ack:
            ctx.set(bus.r_stb, 0)
            return data
    raise AssertionError(f"no ack for read of {addr:#x}")


async def bus_write(ctx, bus, addr, value, max_cycles=400):
    ctx.set(bus.addr, addr)
    ctx.set(bus.w_data, value)
    ctx.set(bus.w_stb, 1)
    for _ in range(max_cycles):
        ack = ctx.get(bus.ack)
        await ctx.tick()
        if ack:
            ctx.set(bus.w_stb, 0)
            return
    raise AssertionError(f"no ack for write of {addr:#x}")


async def read_reg(ctx, bank, name):
    reg = RMAP[name]
    words = [await bus_read(ctx, bank.bus, reg.address + k) for k in range(reg.words)]
    return reg.from_words(words)


async def write_reg(ctx, bank, name, value):
    reg = RMAP[name]
    for k, w in enumerate(reg.to_words(value)):
        await bus_write(ctx, bank.bus, reg.address + k, w)


def run(testbench, *, port_latency=2, port_answers=True, processes=(), watch=(), rmap=RMAP,
        word=fake_word, compact_reads=False):
    """Run ``testbench(ctx, bank)``; return a log of counter-port reads (``en``) and, for
    each register in ``watch``, the values present in the cycles its ``written`` was 1."""
    bank = CsrBank(regmap=rmap, window_timeout=50, compact_reads=compact_reads)
    log = {"en": [], "pulses": []}
    for name in watch:
        log[name] = []

    async def watcher(ctx):
        while True:
            for name in watch:
                port = getattr(bank, name)
                if ctx.get(port.written):
                    log[name].append(ctx.get(Value.cast(port.value)))
            if "control" in watch and (ctx.get(bank.control.value.swap)
                                       or ctx.get(bank.control.value.release)):
                log["pulses"].append((ctx.get(bank.control.value.swap),
                                      ctx.get(bank.control.value.release)))
            await ctx.tick()

    async def read_port(ctx):
        pending = []
        while True:
            await ctx.tick()
            ctx.set(bank.counters.valid, 0)
            ctx.set(bank.counters.data, 0)
            pending = [(t - 1, a) for t, a in pending]
            if pending and pending[0][0] == 0:
                _, a = pending.pop(0)
                ctx.set(bank.counters.valid, 1)
                ctx.set(bank.counters.data, word(a))
            if ctx.get(bank.counters.en):
                a = ctx.get(bank.counters.addr)
                log["en"].append(a)
                if port_answers(a) if callable(port_answers) else port_answers:
                    pending.append((port_latency, a))

    sim = Simulator(bank)
    sim.add_clock(1e-8)
    sim.add_testbench(read_port, background=True)
    sim.add_testbench(watcher, background=True)
    for p in processes:
        sim.add_testbench(p(bank), background=True)
    async def main(ctx):
        await testbench(ctx, bank)
    sim.add_testbench(main)
    sim.run()
    return log


@pytest.mark.parametrize("compact_reads", [False, True])
def test_constant_registers_serve_id_version_config(compact_reads):
    async def tb(ctx, bank):
        assert await read_reg(ctx, bank, "id") == RMAP.id_value
        assert await read_reg(ctx, bank, "version") == RMAP["version"].reset
        cfg = RMAP["config"].decode(await read_reg(ctx, bank, "config"))
        assert cfg["kind"] == 1 and cfg["dim0"] == 2 and cfg["dim1"] == 8
        assert cfg["chunks"] == 3 and cfg["data_width"] == 64 and cfg["window_bytes"] == 64
    run(tb, compact_reads=compact_reads)


@pytest.mark.parametrize("compact_reads", [False, True])
def test_rw_register_value_strobe_and_readback(compact_reads):
    async def tb(ctx, bank):
        assert ctx.get(bank.config_id.value) == 0
        await bus_write(ctx, bank.bus, RMAP["config_id"].address, 0xCAFEF00D)
        assert ctx.get(bank.config_id.value) == 0xCAFEF00D
        assert await read_reg(ctx, bank, "config_id") == 0xCAFEF00D
    log = run(tb, watch=("config_id",), compact_reads=compact_reads)
    # `written` is 1 for exactly one cycle, the one in which the new value first appears.
    assert log["config_id"] == [0xCAFEF00D]


def test_wide_rw_register_resets_to_config_and_commits_on_last_word():
    async def tb(ctx, bank):
        masks = RMAP["masks"]
        assert ctx.get(bank.masks.value.packet_ipv4) == CONFIG.mask_packet_ipv4
        assert ctx.get(bank.masks.value.flow_ipv6) == CONFIG.mask_flow_ipv6
        assert ctx.get(bank.thresholds.value.bank0) == 1
        assert ctx.get(bank.thresholds.value.bank1) == 7
        new = masks.encode(packet_ipv4=0x0123456789ABCDEF, packet_ipv6=0xFFFF,
                           flow_ipv4=1 << 63, flow_ipv6=0x5555_0000_AAAA)
        words = masks.to_words(new)
        for k, w in enumerate(words[:-1]):
            await bus_write(ctx, bank.bus, masks.address + k, w)
        # Nothing committed before the last (least significant) word.
        assert ctx.get(bank.masks.value.packet_ipv4) == CONFIG.mask_packet_ipv4
        assert ctx.get(bank.masks.value.flow_ipv6) == CONFIG.mask_flow_ipv6
        await bus_write(ctx, bank.bus, masks.address + masks.words - 1, words[-1])
        assert ctx.get(bank.masks.value.packet_ipv4) == 0x0123456789ABCDEF
        assert ctx.get(bank.masks.value.packet_ipv6) == 0xFFFF
        assert ctx.get(bank.masks.value.flow_ipv4) == 1 << 63
        assert ctx.get(bank.masks.value.flow_ipv6) == 0x5555_0000_AAAA
        assert await read_reg(ctx, bank, "masks") == new
        log_new.append(new)
    log_new = []
    log = run(tb, watch=("masks",))
    assert log["masks"] == log_new


def test_pulse_fields_strobe_one_cycle_and_read_zero():
    async def tb(ctx, bank):
        control = RMAP["control"]
        await bus_write(ctx, bank.bus, control.address, control.encode(swap=1))
        await ctx.tick().repeat(5)
        await bus_write(ctx, bank.bus, control.address, control.encode(release=1))
        await ctx.tick().repeat(5)
        assert await read_reg(ctx, bank, "control") == 0
    log = run(tb, watch=("control",))
    # Each write strobes its pulse field for exactly one cycle, with `written`.
    assert log["pulses"] == [(1, 0), (0, 1)]
    assert log["control"] == [1, 2]


@pytest.mark.parametrize("compact_reads", [False, True])
def test_ro_registers_read_core_values_and_ignore_writes(compact_reads):
    async def tb(ctx, bank):
        ctx.set(bank.status.value.active_copy, 1)
        ctx.set(bank.status.value.frozen_overrun, 1)
        ctx.set(bank.frames_seen.value, 0xFEDCBA98)
        status = RMAP["status"]
        assert status.decode(await read_reg(ctx, bank, "status")) == {
            "active_copy": 1, "frozen_ready": 0, "clearing": 0, "frozen_overrun": 1,
            "other_clean": 0}
        assert await read_reg(ctx, bank, "frames_seen") == 0xFEDCBA98
        # Writes to ro and constant registers are acknowledged and ignored.
        await bus_write(ctx, bank.bus, RMAP["frames_seen"].address, 0)
        await bus_write(ctx, bank.bus, RMAP["id"].address, 0)
        assert await read_reg(ctx, bank, "frames_seen") == 0xFEDCBA98
        assert await read_reg(ctx, bank, "id") == RMAP.id_value
    run(tb, compact_reads=compact_reads)


def test_unmapped_reads_return_zero_and_ack():
    async def tb(ctx, bank):
        last = RMAP.registers[-1]
        for addr in (last.address + last.words, RMAP.window.address - 1,
                     RMAP.window.address + RMAP.window.words, 0xFFFF_FFFF):
            assert RMAP.at(addr) is None
            assert await bus_read(ctx, bank.bus, addr) == 0
            await bus_write(ctx, bank.bus, addr, 0x12345678)
    run(tb)


@pytest.mark.parametrize("compact_reads", [False, True])
def test_timebase_read_is_atomic_and_write_sets_it(compact_reads):
    def ticking(bank):
        async def proc(ctx):
            n = 0
            while True:
                # A live value whose high and low words change every cycle together.
                ctx.set(bank.timebase.current.ticks, (n << 32) | n)
                n += 1
                await ctx.tick()
        return proc

    async def tb(ctx, bank):
        for _ in range(3):
            value = await read_reg(ctx, bank, "timebase")
            assert value >> 32 == value & 0xFFFFFFFF and value > 0
            await ctx.tick().repeat(3)
        await write_reg(ctx, bank, "timebase", 0x0000_0123_4567_89AB)
        assert ctx.get(bank.timebase.value.ticks) == 0x0000_0123_4567_89AB
    log = run(tb, processes=(ticking,), watch=("timebase",), compact_reads=compact_reads)
    assert log["timebase"] == [0x0000_0123_4567_89AB]


def test_counter_window_reads_whole_words_atomically():
    async def tb(ctx, bank):
        win = RMAP.window
        bus_words = []
        for a in range(win.address, win.address + win.words):
            bus_words.append(await bus_read(ctx, bank.bus, a))
        assert win.words_from_bus(bus_words) == [fake_word(i) for i in range(win.buckets)]
        # A chunk other than 0 reads the capture of the last chunk-0 read.
        assert await bus_read(ctx, bank.bus, win.address_of(5, 0)) == fake_word(5) & 0xFFFFFFFF
        assert await bus_read(ctx, bank.bus, win.address_of(9, 2)) == fake_word(5) >> 64
    log = run(tb, port_latency=3)
    # One port read per counter word (chunk 0 only).
    assert log["en"] == list(range(RMAP.window.buckets)) + [5]


def test_counter_window_read_times_out_to_zero():
    async def tb(ctx, bank):
        assert await bus_read(ctx, bank.bus, RMAP.window.address_of(3, 0)) == 0
        assert await bus_read(ctx, bank.bus, RMAP.window.address_of(3, 1)) == 0
    log = run(tb, port_answers=False)
    assert log["en"] == [3]


def test_window_timeout_clears_the_previous_capture():
    """A timed-out chunk-0 read must not leave the previous word's upper chunks readable."""
    async def tb(ctx, bank):
        assert await bus_read(ctx, bank.bus, RMAP.window.address_of(2, 0)) \
            == fake_word(2) & 0xFFFF_FFFF
        assert await bus_read(ctx, bank.bus, RMAP.window.address_of(2, 1)) \
            == (fake_word(2) >> 32) & 0xFFFF_FFFF
        assert await bus_read(ctx, bank.bus, RMAP.window.address_of(3, 0)) == 0
        assert await bus_read(ctx, bank.bus, RMAP.window.address_of(3, 1)) == 0
    log = run(tb, port_answers=lambda a: a != 3)
    assert log["en"] == [2, 3]


@pytest.mark.parametrize("config", [RdaConfig(banks=3, buckets_per_bank=5),
                                    LdaConfig(banks=3, rows=4, thresholds=(0, 2, 4)),
                                    LdsConfig(rows=2, cells=5, row_thresholds=(0, 0))],
                         ids=["rda-5-chunks", "lda-3-chunks", "lds-4-chunks"])
def test_window_offset_to_word_and_chunk(config):
    """5-, 3- and 4-chunk words: the bank's division (or shift) of the window offset must be
    exact."""
    rmap = register_map(config)
    win = rmap.window

    def word(i):
        return (i * 0x0102_0304_0506_0708_090A_0B0C_0D0E_0F10 + i) % (1 << config.layout.width)

    async def tb(ctx, bank):
        bus_words = [await bus_read(ctx, bank.bus, a)
                     for a in range(win.address, win.address + win.words)]
        assert win.words_from_bus(bus_words) == [word(i) for i in range(win.buckets)]
    log = run(tb, rmap=rmap, word=word)
    assert log["en"] == list(range(win.buckets))


def test_bank_rejects_small_counter_address():
    with warnings.catch_warnings():  # the rejected object is never elaborated
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="counter_addr_bits"):
            CsrBank(regmap=RMAP, counter_addr_bits=2)
        gc.collect()

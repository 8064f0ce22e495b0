# SPDX-License-Identifier: BSD-2-Clause
"""UARTBone bridge on Amaranth's simulator: bytes in → bus operations → reply bytes, exact.

The bytes come from host_sw.contracts.uartbone (the host's encoder); a fake CSR slave records every
bus operation and answers reads with a function of the address.
"""

import gc
import random
import warnings

import pytest
from amaranth.hdl import UnusedElaboratable
from amaranth.sim import Simulator

from host_sw.contracts import uartbone as ub
from host_sw.contracts.config import LdaConfig
from hw import lda_pipeline, verilog_export
from hw.lda_pipeline import MeasurementCore
from hw.bus.uartbone import (DEFAULT_TIMEOUT, UARTBoneBridge, check_timeout_cycles,
                         timeout_to_cycles)
from sim_tb.lib.amaranth_streams import stream_put


def slave_value(addr):
    return (addr * 0x9E3779B1 + 0x1234567) & 0xFFFFFFFF


def run_bridge(pieces, *, timeout_cycles=40, tx_ready=lambda cycle: True, slave_latency=1,
               expect_bytes=None, max_cycles=20000):
    """Feed ``pieces`` (bytes, or an int = idle cycles) into the bridge; return
    (bus operations, reply bytes)."""
    dut = UARTBoneBridge(timeout_cycles=timeout_cycles)
    ops, reply = [], bytearray()
    state = {"feeding": True}

    async def feeder(ctx):
        for piece in pieces:
            if isinstance(piece, int):
                await ctx.tick().repeat(piece)
                continue
            for b in piece:
                await stream_put(ctx, dut.rx, b)
        state["feeding"] = False

    async def slave(ctx):
        while True:
            await ctx.tick()
            r, w = ctx.get(dut.bus.r_stb), ctx.get(dut.bus.w_stb)
            assert not (r and w)
            if not (r or w):
                continue
            addr = ctx.get(dut.bus.addr)
            if w:
                ops.append(("w", addr, ctx.get(dut.bus.w_data)))
            else:
                ops.append(("r", addr))
            await ctx.tick().repeat(slave_latency - 1) if slave_latency > 1 else None
            ctx.set(dut.bus.ack, 1)
            ctx.set(dut.bus.r_data, slave_value(addr) if r else 0)
            await ctx.tick()
            ctx.set(dut.bus.ack, 0)
            ctx.set(dut.bus.r_data, 0)

    async def sink(ctx):
        cycle = 0
        idle_after_feed = 0
        while cycle < max_cycles:
            rdy = tx_ready(cycle)
            ctx.set(dut.tx.ready, rdy)
            valid, payload = ctx.get(dut.tx.valid), ctx.get(dut.tx.payload)
            await ctx.tick()
            cycle += 1
            if valid and rdy:
                reply.append(payload)
            if not state["feeding"]:
                idle_after_feed += 1
                if expect_bytes is not None and len(reply) >= expect_bytes \
                        and idle_after_feed > 50:
                    break
                if expect_bytes is None and idle_after_feed > 200:
                    break

    sim = Simulator(dut)
    sim.add_clock(1e-8)
    sim.add_testbench(feeder, background=True)
    sim.add_testbench(slave, background=True)
    sim.add_testbench(sink)
    sim.run()
    return ops, bytes(reply)


def test_write_incrementing_then_read_back_exact_bytes():
    words = [0xDEADBEEF, 0x00000001, 0x80402010]
    cmd = ub.encode_write(0x10, words)
    assert cmd == bytes([0x01, 3, 0, 0, 0, 0x10, 0xDE, 0xAD, 0xBE, 0xEF, 0, 0, 0, 1,
                         0x80, 0x40, 0x20, 0x10])
    ops, reply = run_bridge([cmd], expect_bytes=0)
    assert ops == [("w", 0x10, 0xDEADBEEF), ("w", 0x11, 1), ("w", 0x12, 0x80402010)]
    assert reply == b""


def test_read_incrementing_answers_length_times_4_bytes_big_endian():
    cmd = ub.encode_read(0x1234_5678, 3)
    assert cmd == bytes([0x02, 3, 0x12, 0x34, 0x56, 0x78])
    ops, reply = run_bridge([cmd], expect_bytes=12)
    assert ops == [("r", 0x12345678), ("r", 0x12345679), ("r", 0x1234567A)]
    expected = b"".join(slave_value(a).to_bytes(4, "big")
                        for a in (0x12345678, 0x12345679, 0x1234567A))
    assert reply == expected
    assert ub.decode_read_reply(reply, 3) == [slave_value(a) for a in
                                              (0x12345678, 0x12345679, 0x1234567A)]


def test_fixed_address_commands():
    cmd = ub.encode_write(7, [1, 2], incrementing=False) + ub.encode_read(9, 2,
                                                                         incrementing=False)
    assert cmd[0] == 0x03 and cmd[14] == 0x04
    ops, reply = run_bridge([cmd], expect_bytes=8)
    assert ops == [("w", 7, 1), ("w", 7, 2), ("r", 9), ("r", 9)]
    assert reply == slave_value(9).to_bytes(4, "big") * 2


def test_timeout_drops_a_half_received_command():
    partial = ub.encode_write(0x40, [0x11111111])[:9]  # cmd, len, address, 3 data bytes
    full = ub.encode_read(0x41, 1)
    # A pause longer than the timeout drops the partial write: nothing is written and the
    # next bytes are a fresh command.
    ops, reply = run_bridge([partial, 60, full], timeout_cycles=40, expect_bytes=4)
    assert ops == [("r", 0x41)]
    assert reply == slave_value(0x41).to_bytes(4, "big")


def test_pause_shorter_than_timeout_keeps_the_command():
    cmd = ub.encode_write(0x40, [0x11223344])
    ops, _ = run_bridge([cmd[:3], 30, cmd[3:]], timeout_cycles=40, expect_bytes=0)
    assert ops == [("w", 0x40, 0x11223344)]


def test_unknown_command_bytes_are_dropped():
    ops, reply = run_bridge([bytes([0x00, 0x55, 0xFF]), ub.encode_read(3, 1)],
                            expect_bytes=4)
    assert ops == [("r", 3)]
    assert reply == slave_value(3).to_bytes(4, "big")


def test_length_zero_is_a_no_op():
    ops, reply = run_bridge([bytes([0x02, 0, 0, 0, 0, 5]), ub.encode_read(6, 1)],
                            expect_bytes=4)
    assert ops == [("r", 6)]
    assert reply == slave_value(6).to_bytes(4, "big")


@pytest.mark.parametrize("pattern", ["alternate", "random"])
def test_tx_backpressure_keeps_reply_exact(pattern):
    rng = random.Random(5)
    table = [rng.random() < 0.3 for _ in range(20000)]
    ready = (lambda c: c % 2 == 0) if pattern == "alternate" else (lambda c: table[c])
    cmd = ub.encode_read(0x100, 5) + ub.encode_read(0x200, 2, incrementing=False)
    ops, reply = run_bridge([cmd], tx_ready=ready, slave_latency=3, expect_bytes=28)
    addrs = [0x100 + k for k in range(5)] + [0x200, 0x200]
    assert ops == [("r", a) for a in addrs]
    assert reply == b"".join(slave_value(a).to_bytes(4, "big") for a in addrs)


def test_bridge_rejects_bad_timeout():
    with warnings.catch_warnings():  # the rejected object is never elaborated
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="timeout_cycles"):
            UARTBoneBridge(timeout_cycles=0)
        gc.collect()


def test_bridge_with_csr_bank_end_to_end():
    """Host bytes → bridge → CsrBank → reply bytes: the two halves of the bus agree."""
    from amaranth.hdl import Module
    from amaranth.lib import wiring

    from host_sw.contracts.config import LdaConfig
    from host_sw.contracts.regmap import register_map
    from hw.bus.csr import CsrBank

    rmap = register_map(LdaConfig(banks=2, rows=4, thresholds=(0, 3)))
    bridge = UARTBoneBridge(timeout_cycles=100)
    bank = CsrBank(regmap=rmap)
    m = Module()
    m.submodules.bridge, m.submodules.bank = bridge, bank
    wiring.connect(m, bridge.bus, bank.bus)

    tb_reg = rmap["timebase"]
    script = [
        (ub.encode_read(rmap["id"].address, 3), 12),  # id, version, config word 0
        (ub.encode_write(tb_reg.address, tb_reg.to_words(0x0000_00AB_0000_1234)), 0),
        (ub.encode_write(rmap["config_id"].address, [0x600DC0DE]), 0),
        (ub.encode_read(rmap["config_id"].address, 1), 4),
        (ub.encode_read(rmap["config_id"].address, 2, incrementing=False), 8),
    ]
    replies = []

    async def host(ctx):
        ctx.set(bridge.tx.ready, 1)
        for data, n_reply in script:
            for b in data:
                await stream_put(ctx, bridge.rx, b)
            reply = bytearray()
            for _ in range(400):
                if len(reply) == n_reply and ctx.get(bridge.rx.ready):
                    break
                if ctx.get(bridge.tx.valid):
                    reply.append(ctx.get(bridge.tx.payload))
                await ctx.tick()
            replies.append(bytes(reply))
        assert ctx.get(bank.timebase.value.ticks) == 0x0000_00AB_0000_1234
        assert ctx.get(bank.config_id.value) == 0x600DC0DE

    sim = Simulator(m)
    sim.add_clock(1e-8)
    sim.add_testbench(host)
    sim.run()
    assert ub.decode_read_reply(replies[0]) == [rmap.id_value, rmap["version"].reset,
                                                rmap["config"].to_words(
                                                    rmap["config"].reset)[0]]
    assert replies[1:3] == [b"", b""]
    assert replies[3] == bytes.fromhex("600DC0DE")
    assert replies[4] == bytes.fromhex("600DC0DE") * 2


def test_longest_command_255_words():
    cmd = ub.encode_write(0x300, list(range(255)))
    assert cmd[:2] == bytes([0x01, 255])
    cmd += ub.encode_read(0x300, 255, incrementing=False)
    ops, reply = run_bridge([cmd], expect_bytes=1020)
    assert ops[:255] == [("w", 0x300 + k, k) for k in range(255)]
    assert ops[255:] == [("r", 0x300)] * 255
    assert reply == slave_value(0x300).to_bytes(4, "big") * 255


def test_timeout_is_litex_uartbone_100_ms_of_the_clock():
    """The half-command timeout: 100 ms as LiteX's UARTBone (Stream2Wishbone's
    ``WaitTimer(100e-3*clk_freq)``), in clocks of the core's clock."""
    assert DEFAULT_TIMEOUT == pytest.approx(0.1)
    assert timeout_to_cycles(100e6) == 10_000_000
    assert timeout_to_cycles(25e6) == 2_500_000
    assert timeout_to_cycles(125e6, 1e-3) == 125_000
    assert timeout_to_cycles(1.0, 1e-3) == 1          # at least one clock
    for bad in (0, -1, float("nan")):
        with pytest.raises(ValueError, match="clk_freq"):
            timeout_to_cycles(bad)
        with pytest.raises(ValueError, match="timeout"):
            timeout_to_cycles(100e6, bad)
    for bad in (0, -5, 1.5, True, "10"):
        with pytest.raises(ValueError, match="timeout_cycles"):
            check_timeout_cycles(bad)


class _Board:
    default_clk_frequency = 25e6


def test_core_bridge_timeout_defaults_to_100_ms_of_its_clock():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        config = LdaConfig(banks=2, rows=16, thresholds=(0, 2))
        core = MeasurementCore(config=config, data_width=8)
        assert core.bridge_timeout_for(None) == 10_000_000     # DEFAULT_CLK_FREQ 100 MHz
        assert core.bridge_timeout_for(_Board()) == 2_500_000  # the board's clock
        core = MeasurementCore(config=config, data_width=8, clk_freq=50e6)
        assert core.bridge_timeout_for(_Board()) == 5_000_000
        core = MeasurementCore(config=config, data_width=8, bridge_timeout_cycles=1234,
                       clk_freq=50e6)
        assert core.bridge_timeout_for(_Board()) == 1234       # cycles win
        with pytest.raises(ValueError, match="timeout_cycles"):
            MeasurementCore(config=config, data_width=8, bridge_timeout_cycles=0)
        with pytest.raises(ValueError, match="clk_freq"):
            MeasurementCore(config=config, data_width=8, clk_freq=-1)
        del core
        gc.collect()


def test_export_command_line_timeout_options(tmp_path, capsys, monkeypatch):
    """``--uart-timeout CYCLES`` still sets the bridge's timeout; without it the timeout is
    100 ms at ``--clk-freq`` (default 100 MHz); the timer's width shows in the Verilog.
    The Verilog is written for one case (an export takes seconds); the other two check
    the timeout the command line gives the core it would export."""
    args = ["--synopsis", "lda", "--banks", "2", "--rows", "16", "--thresholds", "0,2",
            "--data-width", "8", "--window-bytes", "16"]
    cases = [([], 10_000_000), (["--clk-freq", "25e6"], 2_500_000),
             (["--uart-timeout", "1000"], 1000)]
    exported = []
    real_export = verilog_export.export_verilog

    def keep_core(core, *args, **kwargs):
        exported.append(core)
        return []

    for k, (extra, cycles) in enumerate(cases):
        write = k == 1
        monkeypatch.setattr(verilog_export, "export_verilog", real_export if write else keep_core)
        out = tmp_path / f"c{k}" / "core.v"
        assert lda_pipeline.main([*args, *extra, "-o", str(out)]) == 0
        assert f"bus bridge timeout {cycles} clocks" in capsys.readouterr().out
        if write:
            # the bridge's timer compares with timeout - 1
            assert f"'h{cycles - 1:x};" in out.read_text()
        else:
            assert exported.pop().bridge_timeout_for() == cycles
    with warnings.catch_warnings():  # the cores not written are never elaborated
        warnings.simplefilter("ignore", UnusedElaboratable)
        gc.collect()


# -- the checked framing (host_sw.contracts.uartbone, docs/SPEC.md §7) --------------------

def test_checked_read_answers_tag_words_and_crc():
    cmd = ub.encode_checked_read(0x0002_3456, 3, 0xA7) + \
        ub.encode_checked_read(0x9, 2, 0x08, incrementing=False)
    assert cmd[:7] == bytes([0x65, 3, 0x00, 0x02, 0x34, 0x56, 0xA7])
    ops, reply = run_bridge([cmd], expect_bytes=2 * 5 + 20)
    addrs = [0x23456, 0x23457, 0x23458]
    assert ops == [("r", a) for a in addrs] + [("r", 9), ("r", 9)]
    first = ub.encode_checked_reply(0xA7, [slave_value(a) for a in addrs])
    assert reply == first + ub.encode_checked_reply(0x08, [slave_value(9)] * 2)
    assert ub.decode_checked_reply(reply[:len(first)], 0xA7, 3) == \
        [slave_value(a) for a in addrs]


def test_checked_write_is_acknowledged_after_the_bus_write():
    cmd = ub.encode_checked_write(0x10, 0xDEADBEEF, 0x3C)
    ops, reply = run_bridge([cmd], expect_bytes=5)
    assert ops == [("w", 0x10, 0xDEADBEEF)]
    assert reply == ub.encode_checked_ack(0x3C) == bytes([0x3C]) + ub.crc_bytes(b"\x3c")


def test_checked_commands_ignore_the_router_select_bits():
    core2 = 2 * ub.ROUTER_CORE_STRIDE
    ops, reply = run_bridge([ub.encode_checked_read(core2 + 5, 1, 1),
                             ub.encode_checked_write(core2 + 6, 7, 2)], expect_bytes=14)
    assert ops == [("r", 5), ("w", 6, 7)]
    assert reply == ub.encode_checked_reply(1, [slave_value(5)]) + ub.encode_checked_ack(2)


@pytest.mark.parametrize("index", [0, 1, 4, 6, 9, 13, 15 + 3, 15 + 7])
def test_a_garbled_checked_request_is_ignored(index):
    """One bit wrong in a checked write (command, length, address, tag, data, CRC) or a
    read: not executed, not answered; after the host's pause (a wrong length leaves the
    bridge waiting for bytes that do not come) the next request is served."""
    write = bytearray(ub.encode_checked_write(0x20, 0x11223344, 9))
    read = bytearray(ub.encode_checked_read(0x30, 2, 10))
    bad = write if index < len(write) else read
    bad[index % len(bad)] ^= 1 << (index % 8)
    if index == 0:
        bad[0] = ub.CMD_CHECKED_READ_FIXED    # a checked command, another kind, bad CRC
    good = ub.encode_checked_read(0x40, 1, 11)
    ops, reply = run_bridge([bytes(bad), 60, good], expect_bytes=9)
    assert ops == [("r", 0x40)]
    assert reply == ub.encode_checked_reply(11, [slave_value(0x40)])


def test_checked_write_of_other_lengths_is_consumed_and_ignored():
    body = bytes([ub.CMD_CHECKED_WRITE, 2, 0, 0, 0, 0x50, 4]) + bytes(range(8))
    two = body + ub.crc_bytes(body)
    body0 = bytes([ub.CMD_CHECKED_WRITE, 0, 0, 0, 0, 0x50, 5])
    zero = body0 + ub.crc_bytes(body0)
    good = ub.encode_checked_read(0x41, 1, 6)
    ops, reply = run_bridge([two, zero, good], expect_bytes=9)
    assert ops == [("r", 0x41)]
    assert reply == ub.encode_checked_reply(6, [slave_value(0x41)])


def test_bridge_equals_the_contract_model_on_a_random_mix():
    """Plain and checked commands, some with a bit flipped, back to back: the bus
    operations and reply bytes are those the contract's parser
    (``take_command``/``Command.reply``, what the fake device runs) predicts."""
    rng = random.Random(23)
    stream = bytearray()
    for k in range(24):
        kind = rng.randrange(5)
        a = rng.randrange(1 << 24)
        if kind == 0:
            c = ub.encode_read(a, rng.randint(1, 3), incrementing=rng.random() < 0.5)
        elif kind == 1:
            c = ub.encode_write(a, [rng.randrange(1 << 32)])
        elif kind == 2:
            c = ub.encode_checked_write(a, rng.randrange(1 << 32), k)
        else:
            c = ub.encode_checked_read(a, rng.randint(1, 3), k, incrementing=kind == 3)
        c = bytearray(c)
        if c[0] in ub.CHECKED_COMMANDS and rng.random() < 0.3:
            c[rng.randrange(2, len(c))] ^= 1 << rng.randrange(8)   # not cmd/length
        stream += c
    buffer, want_ops, want_reply = bytearray(stream), [], bytearray()
    ignored = 0
    while (command := ub.take_command(buffer)) is not None:
        if not command.executes:
            ignored += 1
            continue
        if command.writing:
            want_ops += [("w", a, w) for a, w in zip(command.addresses, command.words)]
            want_reply += command.reply([])
        else:
            want_ops += [("r", a) for a in command.addresses]
            want_reply += command.reply([slave_value(a) for a in command.addresses])
    assert buffer == bytearray()
    ops, reply = run_bridge([bytes(stream)], expect_bytes=len(want_reply), max_cycles=60000)
    assert ops == want_ops
    assert reply == bytes(want_reply)
    assert any(c for c in want_ops if c[0] == "w") and len(want_reply) > 60 and ignored

# SPDX-License-Identifier: BSD-2-Clause
"""The in-memory CSR bank walked from the register map (host_sw.device.register_file), and
the bridge's command framing (host_sw.contracts.uartbone.take_command)."""

import pytest

from host_sw.contracts import uartbone
from host_sw.contracts.config import LdaConfig, RdaConfig
from host_sw.contracts.regmap import register_map
from host_sw.device.register_file import RegisterFile

CONFIG = LdaConfig(banks=2, rows=64, thresholds=(0, 5))


def test_resets_constants_and_unmapped():
    rmap = register_map(CONFIG)
    regs = RegisterFile(rmap)
    assert regs.read(rmap["id"].address) == rmap.id_value
    for r in rmap:
        assert regs.value(r.name) == r.reset
    hole = rmap.window.address - 1
    assert rmap.at(hole) is None and regs.read(hole) == 0
    regs.write(rmap["id"].address, 5)                  # ro: ignored
    assert regs.value("id") == rmap.id_value


def test_wide_register_capture_and_commit():
    rmap = register_map(CONFIG)
    regs = RegisterFile(rmap)
    tb = rmap["timebase"]
    regs.set("timebase", 0x11111111_22222222)
    assert regs.read(tb.address) == 0x11111111         # captures the whole value
    regs.set("timebase", 0x33333333_44444444)
    assert regs.read(tb.address + 1) == 0x22222222     # reads the capture
    regs.write(tb.address, 0xAAAA)                     # shadow only
    assert regs.value("timebase") == 0x33333333_44444444
    regs.write(tb.address + 1, 0xBBBB)                 # last word commits
    assert regs.value("timebase") == 0xAAAA_0000BBBB


def test_pulse_fields_act_and_read_zero():
    rmap = register_map(CONFIG)
    seen = []
    regs = RegisterFile(rmap, on_write={"control": seen.append})
    control = rmap["control"]
    regs.write(control.address, control.encode(swap=1, release=1))
    assert seen == [control.encode(swap=1, release=1)]
    assert regs.read(control.address) == 0 and regs.value("control") == 0


def test_sources_and_counter_window():
    config = RdaConfig(buckets_per_bank=8)
    rmap = register_map(config)
    words = [(k << 100) | (k << 40) | k for k in range(config.buckets)]
    regs = RegisterFile(rmap, window_word=lambda i: words[i], sources={"status": lambda: 3})
    assert regs.read(rmap["status"].address) == 3 and regs.value("status") == 3
    w = rmap.window
    for index in (0, 5):
        bus = [regs.read(w.address_of(index, c)) for c in range(w.chunks)]
        assert w.words_from_bus(bus) == [words[index]]
    regs.write(w.address, 1)                           # the window is read only
    assert regs.read(w.address) == w.layout.to_chunks(words[0])[0]


def test_take_command():
    buffer = bytearray(b"\x77" + uartbone.encode_write(0x10, [1, 2])
                       + uartbone.encode_read(0x20, 3, incrementing=False))
    first = uartbone.take_command(buffer)
    assert (first.cmd, first.length, first.address) == (uartbone.CMD_WRITE_INCR, 2, 0x10)
    assert first.writing and first.addresses == [0x10, 0x11] and first.words == [1, 2]
    second = uartbone.take_command(buffer)
    assert not second.writing and second.addresses == [0x20] * 3 and second.data == b""
    assert uartbone.take_command(buffer) is None and buffer == bytearray()
    buffer += uartbone.encode_write(0, [9])[:8]
    assert uartbone.take_command(buffer) is None and len(buffer) == 8   # waits for data


def test_router_constants():
    assert uartbone.ROUTER_CORE_STRIDE == 1 << uartbone.ROUTER_SELECT_BIT == 0x100000
    with pytest.raises(ValueError):
        uartbone.encode_read(0, 0)

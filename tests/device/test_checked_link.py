# SPDX-License-Identifier: BSD-2-Clause
"""The checked bus link (issue 23, item 1): tagged, CRC-checked requests and replies.

Property: under any sequence of in-model faults (late, split, lost replies, junk bytes,
half-sent commands, all in order) and bit flips, a read returns the device's words or
raises, and a write that returns has landed. The fake device runs the contract's parser,
which ``tests/hw/bus/test_hw_uartbone.py`` holds the gateware bridge equal to."""

import pytest

from bench.transport_faults import run_multi
from host_sw.contracts import uartbone as ub
from host_sw.contracts.config import LdaConfig
from host_sw.device.driver import Device
from host_sw.device.fake_device import FakeDevice
from host_sw.device.fake_transport import FakeTransport, ReplyPlan, ScriptedLine
from host_sw.device.transport_base import GarbledReply, WriteUncertain

CONFIG = LdaConfig(banks=2, rows=64, thresholds=(0, 5))


def test_multi_fault_scripts_never_read_wrong():
    """The bench's multi-fault mode, small: 2 000 scripts of 2..6 faults each."""
    f = run_multi(2000, seed=23)
    assert f["wrong_and_valid"] == f["crashed"] == f["failed_without_message"] == 0
    assert f["correct"] > 1000 and f["failed_clearly"] > 100
    assert f["correct"] + f["failed_clearly"] == 2000


def test_the_same_scripts_over_plain_uartbone_do_read_wrong():
    """The control: plain UARTBone (fence, settle, probes, but no tag or CRC) returns wrong
    words as valid under the same kind of scripts (the bench can see them)."""
    f = run_multi(1000, seed=23, framing="plain")
    assert f["wrong_and_valid"] > 0


def test_discovery_reads_are_checked():
    """The driver's first read (ID, VERSION, CONFIG, before any probe exists) is a checked
    read: a stray byte and a late piece are caught, not decoded."""
    device = FakeDevice(CONFIG)
    line = ScriptedLine([ReplyPlan(junk_before=b"\x01", cuts=((3, 0.3),))])
    link = FakeTransport(device, line=line)
    dev = Device(link, config=CONFIG)
    assert link.sent[0] == ub.CMD_CHECKED_READ_INCR
    assert device.commands and all(c[0] in ub.CHECKED_READ_COMMANDS for c in device.commands)
    assert dev.id_value == device.map.id_value
    assert link.stats["rejected"] + link.stats["resyncs"] >= 1
    line.plans[:] = [ReplyPlan(junk_before=b"\x01")] * 3
    with pytest.raises(GarbledReply):
        Device(FakeTransport(device, line=ScriptedLine(list(line.plans)), retries=2),
               config=CONFIG)


def test_lost_write_ack_is_read_back_never_repeated():
    device = FakeDevice(CONFIG)
    line = ScriptedLine()
    dev = Device(FakeTransport(device, line=line), config=CONFIG)
    address = dev.map["config_id"].address
    line.plans[:] = [ReplyPlan(drop=True)]              # the write lands, its ack is lost
    dev.transport.write_words(address, [0x12345678])
    assert device.get("config_id") == 0x12345678
    writes = [c for c in device.commands if c[0] == ub.CMD_CHECKED_WRITE]
    assert writes == [(ub.CMD_CHECKED_WRITE, 1, address)]     # once, not repeated
    # A pulse register cannot be read back: a lost ack is said so, not repeated.
    device.swap()
    line.plans[:] = [ReplyPlan(drop=True)]
    with pytest.raises(WriteUncertain, match="effect is unknown"):
        dev.release()
    assert device.frozen is None                        # it had landed, once
    assert sum(c[0] == ub.CMD_CHECKED_WRITE for c in device.commands) == 2


def test_a_garbled_request_is_not_executed():
    """One bit wrong anywhere in a checked request: the bridge (the fake, the contract's
    parser) ignores it; nothing written, nothing answered."""
    device = FakeDevice(CONFIG)
    address = device.map["config_id"].address
    request = ub.encode_checked_write(address, 0xCAFEF00D, 5)
    for k in range(len(request)):
        for bit in (0, 7):
            bad = bytearray(request)
            bad[k] ^= 1 << bit
            device.reset_bridge()
            device.feed(bytes(bad))
            assert device.take() == b"" and device.get("config_id") == 0, (k, bit)
    device.reset_bridge()
    device.feed(request)
    assert device.take() == ub.encode_checked_ack(5)
    assert device.get("config_id") == 0xCAFEF00D

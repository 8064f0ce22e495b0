# SPDX-License-Identifier: BSD-2-Clause
"""Host transports: exact UARTBone bytes, bursts, timeouts, garbled replies and retries,
URL parsing; serial (loop://) and TCP against an in-memory device."""

import socket

import pytest

from host_sw.contracts import uartbone as ub
from host_sw.contracts.config import LdaConfig
from host_sw.device.fake_device import DeviceServer, FakeDevice
from host_sw.device.fake_transport import FakeDevices, FakeTransport
from host_sw.device.serial_transport import SerialTransport
from host_sw.device.socket_transport import SocketTransport
from host_sw.device.transport import open_transport
from host_sw.device.transport_base import GarbledReply, TransportError, TransportTimeout
from host_sw.device.url import parse_options


@pytest.fixture
def device():
    return FakeDevice(LdaConfig(banks=1, rows=256, thresholds=(0,)))


def test_read_exact_bytes_and_values(device):
    t = FakeTransport(device, framing="plain")
    rmap = device.map
    words = t.read_words(0, 3)
    assert bytes(t.sent) == bytes.fromhex("02 03 00000000")
    assert words[0] == rmap.id_value and words[1] == 0x00020000          # REGMAP 2.0
    t.sent.clear()
    t.write_words(rmap["config_id"].address, [0xA1B2C3D4])
    assert bytes(t.sent) == bytes.fromhex("01 01 00000007 a1b2c3d4")
    assert device.get("config_id") == 0xA1B2C3D4
    t.sent.clear()
    assert t.read_words(rmap["config_id"].address, 2, incrementing=False) == [0xA1B2C3D4] * 2
    assert bytes(t.sent) == bytes.fromhex("04 02 00000007")


def test_checked_read_and_write_exact_bytes(device):
    """The default framing: a new tag per request, CRC-32 over request and reply, one
    acknowledged command per written word."""
    t = FakeTransport(device)
    rmap = device.map
    words = t.read_words(0, 3)
    assert bytes(t.sent) == ub.encode_checked_read(0, 3, 1) == \
        bytes.fromhex("65 03 00000000 01") + ub.crc_bytes(bytes.fromhex("65030000000001"))
    assert words[0] == rmap.id_value and words[1] == 0x00020000          # REGMAP 2.0
    t.sent.clear()
    a = rmap["config_id"].address
    t.write_words(a, [0xA1B2C3D4, 5])
    assert bytes(t.sent) == ub.encode_checked_write(a, 0xA1B2C3D4, 2) + \
        ub.encode_checked_write(a + 1, 5, 3)
    assert device.get("config_id") == 0xA1B2C3D4
    t.sent.clear()
    assert t.read_words(a, 2, incrementing=False) == [0xA1B2C3D4] * 2
    assert bytes(t.sent) == ub.encode_checked_read(a, 2, 4, incrementing=False)
    assert t.stats["bytes_received"] == 17 + 2 * 5 + 13


@pytest.mark.parametrize("fault, error, message", [
    ("drop", TransportTimeout, "got 0 of 17 reply bytes"),
    ("short", TransportTimeout, "got 14 of 17 reply bytes"),
    ("extra", GarbledReply, "2 unexpected byte"),
    ("flip", GarbledReply, "CRC is wrong"),
])
def test_checked_fault_retried_then_clear_error(device, fault, error, message):
    t = FakeTransport(device, retries=2)
    device.inject(fault, times=1)
    assert t.read_words(0, 3)[0] == device.map.id_value     # one retry fixes it
    assert t.stats["retries"] == 1
    device.inject(fault, times=3)
    with pytest.raises(error, match=message) as exc:
        t.read_words(0, 3)
    assert "failed after 3 attempts" in str(exc.value)


def test_checked_reply_with_another_tag_is_rejected(device):
    """A reply that is right but not this request's (its tag) is never taken."""
    t = FakeTransport(device, retries=0)
    t._tag = 0x41                          # the next request's tag is 0x42
    real = device.feed
    device.feed = lambda data: real(data[:6] + b"\x07" + ub.crc_bytes(data[:6] + b"\x07"))
    with pytest.raises(GarbledReply, match="tag 0x07, not its request's 0x42"):
        t.read_words(0, 1)
    assert t.stats["rejected"] == 1


def test_long_reads_split_in_bursts(device):
    t = FakeTransport(device, max_burst=100, framing="plain")
    w = device.map.window
    t.read_words(w.address, 250)
    assert [(c, n) for c, n, _ in device.commands] == [(2, 100), (2, 100), (2, 50)]
    assert [a for *_, a in device.commands] == [w.address, w.address + 100, w.address + 200]


@pytest.mark.parametrize("fault, error, message", [
    ("drop", TransportTimeout, "got 0 of 12 reply bytes"),
    ("short", TransportTimeout, "got 9 of 12 reply bytes"),
    ("extra", GarbledReply, "2 unexpected byte"),
])
def test_fault_retried_then_clear_error(device, fault, error, message):
    t = FakeTransport(device, retries=2, framing="plain")
    device.inject(fault, times=1)
    assert t.read_words(0, 3)[0] == device.map.id_value     # one retry fixes it
    assert t.stats["retries"] == 1
    device.inject(fault, times=3)
    with pytest.raises(error, match=message) as exc:
        t.read_words(0, 3)
    assert "failed after 3 attempts" in str(exc.value)
    assert isinstance(exc.value, TransportError)


def test_flipped_bit_needs_verify(device):
    t = FakeTransport(device, retries=0, framing="plain")
    device.inject("flip")
    assert t.read_words(0, 1) != [device.map.id_value]      # the protocol cannot see it
    t = FakeTransport(device, retries=1, verify=True, framing="plain")
    device.inject("flip")
    assert t.read_words(0, 1) == [device.map.id_value]      # caught and retried
    for _ in range(2):   # every first read of a verified pair flipped
        device.inject("flip")
        device.inject("none")
    with pytest.raises(GarbledReply, match="two reads disagree"):
        t.read_words(0, 1)


def test_loop_serial_exact_bytes_and_echo_is_garbled():
    t = SerialTransport("loop://", timeout=0.05, retries=0, framing="plain")
    t.write_words(0x10, [1, 2])
    assert t.port.read(14) == bytes.fromhex("01 02 00000010 00000001 00000002")
    # A loopback echoes the 6 command bytes: 4 are taken as the reply, 2 are left over.
    with pytest.raises(GarbledReply, match="2 unexpected byte"):
        t.read_words(0, 1)
    # Two words: the 6-byte echo is short of 8 bytes: a timeout.
    with pytest.raises(TransportTimeout, match="got 6 of 8"):
        t.read_words(0, 2)
    t.close()


def test_socket_transport_against_a_device(device):
    server = DeviceServer(device)
    try:
        t = open_transport(f"{server.url}?timeout=0.5&retries=1")
        assert isinstance(t, SocketTransport) and t.retries == 1
        assert t.read_words(0, 1) == [device.map.id_value]
        w = device.map.window
        assert t.read_words(w.address, 600) == [0] * 600
        device.inject("drop")
        assert t.read_words(0, 1) == [device.map.id_value]
        assert t.stats["retries"] == 1
        t.close()
        t = open_transport(server.url)              # the server takes a new connection
        assert t.read_words(0, 1) == [device.map.id_value]
        t.close()
    finally:
        server.close()


def test_socket_connection_refused():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    with pytest.raises(TransportError, match="cannot connect"):
        open_transport(f"tcp://127.0.0.1:{port}")


def test_urls(device):
    assert parse_options("baud=921600&timeout=0.5&verify=1&foo=bar") == (
        {"baudrate": 921600, "timeout": 0.5, "verify": True}, [("foo", "bar")])
    with pytest.raises(ValueError, match="bad baud rate"):
        parse_options("baud=fast")
    t = open_transport("loop://?baud=9600&retries=0")
    assert isinstance(t, SerialTransport) and t.port.baudrate == 9600 and t.retries == 0
    t.close()
    fakes = FakeDevices(unit=device)
    t = open_transport("fake://unit?retries=5", fakes=fakes)
    assert isinstance(t, FakeTransport) and t.device is device and t.retries == 5
    with pytest.raises(TransportError, match="no fake device 'nope'"):
        open_transport("fake://nope", fakes=fakes)
    assert open_transport("fake://?synopsis=rda").device.config.kind == "rda"
    with pytest.raises(ValueError, match="tcp://HOST:PORT"):
        open_transport("tcp://localhost")
    with pytest.raises(TransportError, match="cannot open serial port"):
        open_transport("/dev/does-not-exist-J")
    with pytest.raises(ValueError, match=r"'0' for the timeout option \(must be above 0 "):
        open_transport("loop://?timeout=0")


def test_framing_url_option():
    assert parse_options("framing=plain&timeout=2")[0] == {"framing": "plain", "timeout": 2.0}
    with pytest.raises(ValueError, match="bad value 'crc' for the framing option"):
        parse_options("framing=crc")
    assert open_transport("loop://").framing == "checked"
    t = open_transport("loop://?framing=plain")
    assert t.framing == "plain"
    t.write_words(0x10, [1])
    assert t.port.read(10) == bytes.fromhex("01 01 00000010 00000001")
    with pytest.raises(ValueError, match="framing must be one of checked, plain"):
        FakeTransport(FakeDevice(LdaConfig()), framing="crc")

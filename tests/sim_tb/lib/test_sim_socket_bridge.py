# SPDX-License-Identifier: BSD-2-Clause
"""The simulator-side socket bridge (sim_tb.lib.socket_bridge) without a simulator: command
framing, replies, stale half commands, and the host's SocketTransport through it."""

import socket
import threading
import time

import pytest

from host_sw.contracts import uartbone
from host_sw.device.transport import open_transport
from sim_tb.lib.socket_bridge import CommandFramer, SocketBridge


def test_framer_splits_whole_commands():
    f = CommandFramer(stale_s=10)
    read = uartbone.encode_read(0x10, 3)
    write = uartbone.encode_write(0x20, [1, 2])
    stream = read + write + bytes([0x77])
    f.feed(stream[:4], now=0.0)
    assert f.pop(now=0.1) is None          # half a read command waits
    f.feed(stream[4:9], now=0.1)
    cmd = f.pop(now=0.2)
    assert cmd.data == read and cmd.reply_bytes == 12
    assert f.pop(now=0.2) is None          # the write is not complete yet
    f.feed(stream[9:], now=0.3)
    cmd = f.pop(now=0.3)
    assert cmd.data == write and cmd.reply_bytes == 0
    stray = f.pop(now=0.3)
    assert stray.data == b"\x77" and stray.reply_bytes == 0
    assert f.pop(now=0.3) is None and f.pending() == 0


def test_framer_gives_out_a_stale_half_command():
    f = CommandFramer(stale_s=0.5)
    f.feed(uartbone.encode_write(0x20, [5])[:7], now=1.0)
    assert f.pop(now=1.2) is None
    cmd = f.pop(now=1.6)
    assert len(cmd.data) == 7 and cmd.reply_bytes == 0
    with pytest.raises(ValueError, match="stale_s"):
        CommandFramer(stale_s=0)


def _fake_core(bridge, memory, stop):
    """What the cocotb coroutine does: pop commands, answer them (plain or checked, as
    the contract's parser says the bridge does)."""
    while not stop.is_set():
        cmd = bridge.pop_command()
        if cmd is None:
            time.sleep(0.001)
            continue
        command = uartbone.take_command(bytearray(cmd.data))
        if command is None or not command.executes:
            continue
        if command.writing:
            for address, word in zip(command.addresses, command.words):
                memory[address] = word
            bridge.send(command.reply([]))
        else:
            bridge.send(command.reply([memory.get(a, 0) for a in command.addresses]))


@pytest.mark.parametrize("framing, bytes_out", [("plain", 4 * (1 + 3 + 5)),
                                                ("checked", 9 + 3 * 5 + 17 + 25)])
def test_socket_transport_through_the_bridge(framing, bytes_out):
    memory = {7: 0xDEADBEEF}
    stop = threading.Event()
    with SocketBridge(name="test", stale_s=0.2) as bridge:
        assert bridge.url.startswith("tcp://127.0.0.1:") and bridge.port > 0
        worker = threading.Thread(target=_fake_core, args=(bridge, memory, stop),
                                  daemon=True)
        worker.start()
        try:
            with open_transport(f"{bridge.url}?framing={framing}", timeout=2.0) as t:
                assert t.read_words(7, 1) == [0xDEADBEEF]
                t.write_words(100, [1, 2, 3])
                assert t.read_words(100, 3) == [1, 2, 3]
                assert t.read_words(99, 5) == [0, 1, 2, 3, 0]
            assert bridge.connections == 1 and bridge.bytes_out == bytes_out
        finally:
            stop.set()
            worker.join(2)


def test_bridge_listens_on_loopback_only_and_drops_replies_without_a_host():
    with SocketBridge(name="lo") as bridge:
        assert bridge._listener.getsockname()[0] == "127.0.0.1"
        bridge.send(b"\x01\x02")            # nobody connected: dropped, no error
        assert bridge.bytes_out == 0
        with socket.create_connection(("127.0.0.1", bridge.port), timeout=2) as s:
            s.sendall(uartbone.encode_read(3, 2))
            deadline = time.monotonic() + 2
            cmd = None
            while cmd is None and time.monotonic() < deadline:
                cmd = bridge.pop_command()
                time.sleep(0.005)
            assert cmd is not None and cmd.reply_bytes == 8
            bridge.send(bytes(range(8)))
            assert s.recv(8) == bytes(range(8))
    with pytest.raises(ValueError, match="port"):
        SocketBridge(port=70000)

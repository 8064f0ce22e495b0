# SPDX-License-Identifier: BSD-2-Clause
"""The transport against a scripted misbehaving line (issue 11, item 2): late replies,
replies in pieces, junk before / inside / after a reply, stalls, half-sent commands,
closed connections. Property: every read returns exactly the device's words or raises a
TransportError with a message. Simulated time (no sleeping), except the real-socket cases.
These are the plain framing's defences (fence, settle, quiet wait, probes; ``connect``
defaults to ``framing="plain"``); the checked framing's are in test_checked_link.py, and
the property test runs in both."""

import random
import socket
import threading
import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from bench.transport_faults import run
from host_sw.contracts.config import LdaConfig
from host_sw.contracts.synopsis import Synopsis
from host_sw.device.driver import Device
from host_sw.device.fake_device import FakeDevice
from host_sw.device.fake_transport import (FakeTransport, ReplyPlan, ScriptedLine, random_reply_plan)
from host_sw.device.socket_transport import SocketTransport
from host_sw.device.transport_base import (GarbledReply, LinkClosed, TransportError,
                                           TransportTimeout, WriteUncertain)

CONFIG = LdaConfig(banks=2, rows=64, thresholds=(0, 5))


def random_synopsis(seed: int) -> Synopsis:
    rng = np.random.default_rng(seed)
    return Synopsis(CONFIG, {f.name: rng.integers(0, 1 << f.width, size=CONFIG.shape,
                                                   dtype=np.uint64)
                             for f in CONFIG.layout.fields})


def frozen_device(seed: int = 1) -> FakeDevice:
    device = FakeDevice(CONFIG)
    device.set_active(random_synopsis(seed))
    device.swap()
    return device


def connect(device, plans=(), **options):
    options.setdefault("framing", "plain")
    line = ScriptedLine()
    dev = Device(FakeTransport(device, line=line, **options), config=CONFIG)
    line.plans[:] = list(plans)
    return dev, line


def window_truth(device):
    w = device.map.window
    return [device.bus_read(w.address + k) for k in range(w.buckets * w.chunks)]


def test_late_reply_is_never_taken_as_the_next_reply():
    """The issue's case: the first counter burst answers 1.1 s late (timeout 1 s)."""
    device = frozen_device()
    dev, line = connect(device, [ReplyPlan(delay=1.1)])
    w = device.map.window
    t = dev.transport
    assert t.read_words(w.address, 255) == window_truth(device)[:255]
    assert t.stats["resyncs"] == 1 and t.stats["discarded"] == 255 * 4 + 4
    assert t.clock.now() > 1.1 + t.quiet_time       # waited for the late reply to pass
    words = device.frozen.words()
    assert dev.read_snapshot().synopsis.words() == words


def test_a_reply_far_beyond_the_quiet_time_lands_on_a_probe():
    """A reply 3 s late arrives after the quiet wait: the probes catch it (one times out,
    the next is drowned in the late bytes), the third finds the line in step."""
    device = frozen_device()
    dev, line = connect(device, [ReplyPlan(delay=3.0)], retries=1)
    w = device.map.window
    assert dev.transport.read_words(w.address, 255) == window_truth(device)[:255]
    assert dev.transport.stats["resyncs"] == 1 and dev.transport.clock.now() > 3.0
    line.plans[:] = [ReplyPlan(delay=3.0)] + [ReplyPlan(drop=True)] * 3
    with pytest.raises(TransportTimeout, match="resynchronising: got 0 of"):
        dev.transport.read_words(w.address, 255)


def test_stray_byte_before_a_reply_in_pieces_is_caught_by_the_fence():
    """The issue's other case: one stray byte before a reply that arrives in pieces."""
    device = frozen_device()
    plan = ReplyPlan(junk_before=b"\x00", cuts=((300, 0.016), (1023, 0.3)))
    dev, line = connect(device, [plan], retries=0)
    w = device.map.window
    with pytest.raises(GarbledReply, match="fence word .* misaligned"):
        dev.transport.read_words(w.address, 255)
    line.plans[:] = [plan]
    dev.transport.retries = 1
    assert dev.transport.read_words(w.address, 255) == window_truth(device)[:255]


@pytest.mark.parametrize("plan, error, message", [
    (ReplyPlan(junk_inside=(10, b"\xff")), GarbledReply, "1 unexpected byte"),
    (ReplyPlan(junk_inside=(10, b"\xff"), cuts=((1024, 0.5),)), GarbledReply,
     "misaligned"),
    (ReplyPlan(junk_after=b"\x5a"), GarbledReply, "1 unexpected byte"),
    (ReplyPlan(drop=True), TransportTimeout, "got 0 of 1024"),
    (ReplyPlan(cuts=((500, 1.5),)), TransportTimeout, "got 500 of 1024"),
    (ReplyPlan(send_cut=3), TransportError, "cannot send 12 bytes"),
])
def test_each_fault_alone_is_a_clear_error_or_retried(plan, error, message):
    device = frozen_device()
    dev, line = connect(device, [plan], retries=0)
    w = device.map.window
    with pytest.raises(error, match=message):
        dev.transport.read_words(w.address, 255)
    line.plans[:] = [plan]
    dev.transport.retries = 1
    assert dev.transport.read_words(w.address, 255) == window_truth(device)[:255]


def test_junk_after_a_quiet_gap_resyncs_before_the_next_command():
    device = frozen_device()
    dev, line = connect(device, [ReplyPlan(junk_after=b"\x02\x01", junk_after_delay=0.5)])
    t = dev.transport
    assert t.read_words(0, 1) == [device.map.id_value]   # the reply itself was right
    t.clock.sleep(1.0)                                   # the junk has arrived by now
    assert t.read_words(0, 2) == [device.map.id_value, device.bus_read(1)]
    assert t.stats["resyncs"] == 1


def test_a_device_that_never_goes_quiet_is_an_error():
    device = frozen_device()
    trickle = ReplyPlan(cuts=tuple((k, 0.05) for k in range(4, 1024, 4)))   # ~13 s long
    dev, line = connect(device, [trickle], retries=0)
    t = dev.transport
    with pytest.raises(TransportTimeout, match="got 80 of 1024"):
        t.read_words(dev.map.window.address, 255)
    with pytest.raises(GarbledReply, match="did not stay quiet for 0.15 s within 2 s"):
        t.read_words(0, 1)          # the resync before it: bytes keep coming
    t.clock.sleep(20)
    assert t.read_words(0, 1) == [device.map.id_value]


def test_closed_connection_fails_at_once():
    device = frozen_device()
    dev, line = connect(device, [ReplyPlan(close=True)], retries=5)
    with pytest.raises(LinkClosed, match="closed the connection"):
        dev.read_snapshot()
    with pytest.raises(LinkClosed):
        dev.transport.read_words(0, 1)


def test_half_sent_write_is_read_back_never_repeated():
    device = frozen_device()
    dev, line = connect(device)
    address = dev.map["config_id"].address
    line.plans[:] = [ReplyPlan(send_cut=4)]          # the bridge gets half the command
    with pytest.raises(WriteUncertain, match="reads back 0x00000000, not the written "
                                             "0x12345678"):
        dev.transport.write_words(address, [0x12345678])
    writes = [c for c in device.commands if c[0] == 0x01 and c[2] == address]
    assert writes == []                              # not executed, and not repeated
    # All bytes went out but the link reported an error: the read-back confirms it.
    line.plans[:] = [ReplyPlan(send_cut=10)]
    dev.transport.write_words(address, [0x12345678])
    assert device.get("config_id") == 0x12345678
    # A pulse register cannot be confirmed: said so, not repeated.
    line.plans[:] = [ReplyPlan(send_cut=3)]
    with pytest.raises(WriteUncertain, match="effect is unknown"):
        dev.release()
    assert device.frozen is not None


def test_half_command_does_not_swallow_the_next_one():
    """A read whose command is cut: the host waits out the bridge timeout before sending
    anything else, so the next command is never taken as the rest of the old one."""
    device = frozen_device()
    dev, line = connect(device, [ReplyPlan(send_cut=2)], retries=1)
    before = device.get("config_id")
    assert dev.transport.read_words(0, 3) == [device.bus_read(k) for k in range(3)]
    dev.write("config_id", before ^ 1)
    assert device.get("config_id") == before ^ 1
    assert all(c[0] in (1, 2, 4) for c in device.commands)


plans = st.builds(
    ReplyPlan,
    delay=st.sampled_from([0.0, 0.0005, 0.5, 0.99, 1.01, 1.1, 1.3, 3.0]),
    cuts=st.lists(st.tuples(st.integers(0, 1100),
                            st.sampled_from([0.0005, 0.005, 0.016, 0.3, 1.1])),
                  max_size=3).map(tuple),
    junk_before=st.binary(max_size=3),
    junk_inside=st.none() | st.tuples(st.integers(0, 1100), st.binary(min_size=1, max_size=3)),
    junk_after=st.binary(max_size=3),
    junk_after_delay=st.sampled_from([0.0, 0.001, 0.016, 0.5, 2.0]),
    drop=st.booleans(),
    send_cut=st.none() | st.integers(0, 20))


@pytest.mark.parametrize("framing", ["plain", "checked"])
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(script=st.lists(st.one_of(st.just(ReplyPlan()), plans), max_size=30),
       seed=st.integers(0, 2 ** 16))
def test_every_read_is_exact_or_a_clear_error(framing, script, seed):
    device = frozen_device(seed)
    dev, line = connect(device, script, framing=framing)
    w = device.map.window
    truth = window_truth(device)
    rng = random.Random(seed)
    for _ in range(8):
        first = rng.randrange(len(truth))
        n = rng.randint(1, min(300, len(truth) - first))
        try:
            got = dev.transport.read_words(w.address + first, n)
        except TransportError as e:
            assert str(e)
            continue
        assert got == truth[first:first + n]
    try:
        snap = dev.read_snapshot(release=False, timeout=0.0)
    except TransportError as e:
        assert str(e)
    else:
        assert snap.synopsis.words() == device.frozen.words()


def test_random_plans_snapshot_reads():
    """The bench's loop, small: many snapshot reads, none wrong."""
    figures = run(150, seed=5, fault_rate=0.3, close_rate=0.01, timeout=1.0)
    assert figures["wrong"] == figures["crashed"] == figures["failed_without_message"] == 0
    assert figures["correct"] > 0 and figures["failed_clearly"] > 0


def test_random_reply_plan_is_deterministic():
    a = [random_reply_plan(random.Random(1)) for _ in range(3)]
    b = [random_reply_plan(random.Random(1)) for _ in range(3)]
    assert a == b


class ScriptedServer:
    """A device on a real TCP socket whose replies follow a script of ReplyPlans in wall
    time (sleeping in the server thread)."""

    def __init__(self, device, plans):
        self.device, self.plans = device, list(plans)
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(1)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        conn, _ = self.sock.accept()
        with conn:
            while data := conn.recv(4096):
                self.device.feed(data)
                reply = self.device.take()
                plan = self.plans.pop(0) if self.plans else ReplyPlan()
                if plan.close:
                    return
                start = time.monotonic()
                for when, piece in ScriptedLine.schedule(plan, reply, start):
                    time.sleep(max(0.0, when - time.monotonic()))
                    conn.sendall(piece)

    def close(self):
        self.sock.close()


def test_real_socket_late_reply_junk_and_close():
    device = frozen_device()
    server = ScriptedServer(device, [ReplyPlan(), ReplyPlan(delay=0.35),
                                     ReplyPlan(junk_before=b"\x07"), ReplyPlan(), ReplyPlan(),
                                     ReplyPlan(close=True)])
    try:
        t = SocketTransport("127.0.0.1", server.port, timeout=0.2, bridge_timeout=0.05,
                            resync_delay=0.01, retries=2)
        t.set_resync_probe(0, [device.bus_read(k) for k in range(7)])
        assert t.read_words(0, 1) == [device.map.id_value]          # plain
        w = device.map.window
        start = time.monotonic()
        # late (0.35 s > 0.2 s): timeout, quiet wait eats the late reply, probe, retry
        # (a stray byte before the probe's reply: caught, probed again, retry)
        assert t.read_words(w.address, 100) == window_truth(device)[:100]
        assert t.stats["resyncs"] == 1 and time.monotonic() - start < 3
        with pytest.raises(LinkClosed, match="closed the connection"):
            t.read_words(0, 1)
        t.close()
    finally:
        server.close()

# SPDX-License-Identifier: BSD-2-Clause
"""Device driver against the in-memory device: ID check and discovery, programming,
consistent snapshots (overrun, sequence gaps, changes during the read), bus faults."""

import json

import pytest

from host_sw.model.channel import simulate_interval
from host_sw.contracts.config import LdaConfig, LdsConfig, OpaConfig, RdaConfig, RliConfig
from host_sw.contracts.frames.frame_format import IntervalFlags
from host_sw.device.driver import (
    Device, DeviceError, DeviceMismatch, SnapshotError, counter_deltas,
)
from host_sw.device.snapshot import Snapshot
from host_sw.device.fake_device import FakeDevice
from host_sw.estimators.measure import estimate_pair
from host_sw.estimators.lda import estimate_lda
from host_sw.device.fake_transport import FakeTransport
from host_sw.device.transport_base import TransportTimeout

CONFIG = LdaConfig(banks=2, rows=256, thresholds=(0, 5))


@pytest.fixture(scope="module")
def pair():
    iv = simulate_interval(packets=20000, loss=0.01, seed=4)
    return iv.synopses(CONFIG)


def connect(device, **kw):
    return Device(FakeTransport(device, **kw.pop("transport", {})), **kw)


def test_connect_checks_id_and_discovers():
    dev = FakeDevice(CONFIG)
    d = connect(dev, config=CONFIG)
    assert d.kind == "lda" and d.data_width == 64 and d.config is CONFIG
    # Discovery: static part from CONFIG, run-time part from THRESHOLDS/MASKS.
    d2 = connect(dev)
    assert d2.config == CONFIG and d2.config.config_id == CONFIG.config_id
    assert d2.info()["id"] == f"{dev.map.id_value:#010x}"


@pytest.mark.parametrize("config", [OpaConfig(groups=64, rows=5),
                                    RliConfig(cells=256, digest_bits=24),
                                    LdsConfig(rows=2, cells=64, digest_bits=16,
                                              row_thresholds=(0, 0))],
                         ids=lambda c: c.kind)
def test_discovery_of_every_kind_with_non_default_parameters(config):
    """The CONFIG register carries what tells the kind's configurations apart, so a device
    is discovered without ``--config`` (RLI's digest width included)."""
    d = connect(FakeDevice(config))
    assert d.config == config


def test_id_mismatch_is_clear():
    dev = FakeDevice(CONFIG)
    with pytest.raises(DeviceMismatch, match=r"differing parameters: rows \(device 256, "
                                             r"expected 1024\)"):
        connect(dev, config=LdaConfig())
    with pytest.raises(DeviceMismatch, match="is an LDA core, the expected configuration "
                                             "is RDA"):
        connect(dev, config=RdaConfig())
    with pytest.raises(DeviceMismatch, match="seed"):
        connect(dev, config=CONFIG.replace(seed=5))
    other = FakeDevice(CONFIG, id_value=0x12345678)
    with pytest.raises(DeviceMismatch, match="device ID 0x12345678"):
        connect(other)
    connect(other, check_id=False)   # an explicit override


def test_program_writes_runtime_and_config_id():
    dev = FakeDevice(CONFIG)
    d = connect(dev, config=CONFIG)
    tuned = CONFIG.replace(thresholds=(2, 9), mask_packet_ipv4=0xFFFF0000)
    d.program(tuned)
    assert dev.map["thresholds"].decode(dev.get("thresholds")) == {"bank0": 2, "bank1": 9}
    assert dev.map["masks"].decode(dev.get("masks"))["packet_ipv4"] == 0xFFFF0000
    assert dev.get("config_id") == tuned.config_id
    assert connect(dev).config == tuned      # rediscovered from the registers
    d.set_intervals(mode="marker-receive", ticks=1000, marker_src_mac="02:00:00:00:00:01")
    assert dev.map["interval_mode"].decode(dev.get("interval_mode"))["mode"] == 3
    assert dev.get("marker_src_mac") == 0x020000000001
    with pytest.raises(ValueError, match="time mode needs"):
        d.set_intervals(mode="time")


def test_snapshot_read_release_and_json(pair):
    sender, _ = pair
    dev = FakeDevice(CONFIG)
    d = connect(dev, config=CONFIG)
    d.program()
    dev.set_active(sender)
    dev.set("frames_seen", 12345)
    dev.swap(timestamp=777)
    snap = d.read_snapshot()
    assert snap.synopsis == sender and snap.seq == 0 and snap.valid and not snap.overrun
    assert snap.timestamp == 777 and snap.status["frames_seen"] == 12345
    assert snap.packets == int(sender.count.sum())
    assert dev.frozen is None                       # released
    # Counter window read in bursts of whole words (255 // 3 = 85 words = 255 bus words).
    window_reads = [n for c, n, a in dev.commands if a >= dev.map.window.address]
    assert max(window_reads) == 255 and sum(window_reads) == CONFIG.buckets * 3
    back = Snapshot.from_json(json.loads(json.dumps(snap.to_json())))
    assert back.synopsis == sender and back.seq == snap.seq and back.valid


def test_overrun_and_sequence_gap_mark_invalid(pair):
    sender, _ = pair
    dev = FakeDevice(CONFIG)
    d = connect(dev, config=CONFIG)
    d.program()
    dev.set_active(sender)
    dev.swap()
    assert d.read_snapshot().valid
    dev.swap()          # seq 1 frozen
    dev.swap()          # boundary while 1 is unreleased: overrun, interval 2 continues
    d.release()
    dev.swap()          # freezes the merged interval, seq 3
    snap = d.read_snapshot()
    assert snap.seq == 3 and snap.overrun and not snap.valid
    assert snap.flags & IntervalFlags.SEQUENCE_GAP
    assert any("overrun" in n for n in snap.notes)
    assert any("sequence gap: 2 interval(s)" in n for n in snap.notes)


def test_config_id_of_interval_checked(pair):
    dev = FakeDevice(CONFIG)
    d = connect(dev, config=CONFIG)      # CONFIG_ID never written
    dev.swap()
    snap = d.read_snapshot()
    assert not snap.valid and "not the configuration's" in snap.notes[0]


def test_change_during_read_is_rejected(pair):
    dev = FakeDevice(CONFIG)
    d = connect(dev, config=CONFIG)
    d.program()
    dev.swap()
    window = dev.map.window.address

    def swap_mid_read(device, cmd, n, address):
        if address >= window and device.frozen is not None:
            device.hooks.clear()
            device.release()
            device.swap()
    dev.hooks.append(swap_mid_read)
    with pytest.raises(SnapshotError, match="changed during the read"):
        d.read_snapshot()


def test_wait_for_frozen_times_out():
    d = connect(FakeDevice(CONFIG), config=CONFIG)
    with pytest.raises(SnapshotError, match="no frozen interval within"):
        d.read_snapshot(timeout=0.05, poll=0.01)


def test_bus_timeout_retried_then_error(pair):
    dev = FakeDevice(CONFIG)
    d = connect(dev, config=CONFIG, transport={"retries": 1})
    d.program()
    dev.set_active(pair[0])
    dev.swap()
    dev.inject("drop")
    snap = d.read_snapshot(release=False)        # one retry suffices
    assert snap.synopsis == pair[0]
    dev.inject("drop", times=1 + 3)   # the read, then every probe of its resynchronisation
    with pytest.raises(TransportTimeout, match="failed after 2 attempts"):
        d.read_snapshot()
    assert dev.frozen is not None                # nothing released on failure


def test_lost_write_detected():
    dev = FakeDevice(CONFIG)
    d = connect(dev, config=CONFIG)
    orig = dev.bus_write
    dev.bus_write = lambda a, v: None           # writes vanish
    with pytest.raises(DeviceError, match="reads back"):
        d.write("config_id", 5)
    dev.bus_write = orig


def test_counter_deltas_wrap():
    assert counter_deltas({"a": 5, "b": 10}, {"a": 0xFFFFFFFE, "b": 3}) == {"a": 7, "b": 7}


@pytest.mark.parametrize("config", [RdaConfig(buckets_per_bank=64),
                                    LdsConfig(rows=2, cells=64, row_thresholds=(0, 0))],
                         ids=lambda c: c.kind)
def test_other_kinds_round_trip(config):
    iv = simulate_interval(packets=3000, loss=0.0, seed=2)
    sender, receiver = iv.synopses(config)
    dev = FakeDevice(config)
    d = connect(dev)
    assert d.config == config
    d.program()
    dev.set_active(receiver)
    dev.swap()
    assert d.read_snapshot().synopsis == receiver


def test_estimate_pair_is_the_estimator(pair):
    sender, receiver = pair
    e = estimate_lda(sender, receiver)
    rec = estimate_pair(sender, receiver)
    assert rec["mean"] == e.mean_ns and rec["std"] == e.std_ns
    assert rec["ci"] == [e.ci_low_ns, e.ci_high_ns] and rec["samples"] == e.samples
    assert rec["lost"] == e.lost and rec["lost"] > 0


# -- issue 23, item 2: discovery reads fenced and checked before use ----------------------

def _garble(dev, name, bit, reads):
    """Flip ``bit`` of register ``name``'s first word in the reads numbered ``reads``
    (0-based) at the bus, where no framing sees it; returns the read counter."""
    address = dev.map[name].address
    original, calls = dev.bus_read, {"n": 0}

    def bus_read(a):
        word = original(a)
        if a == address:
            calls["n"] += 1
            if calls["n"] - 1 in reads:
                return word ^ (1 << bit)
        return word
    dev.bus_read = bus_read
    return calls


@pytest.mark.parametrize("name, bit", [("thresholds", 0), ("masks", 3)])
def test_discovered_register_garbled_once_is_not_taken(name, bit):
    """A discovered THRESHOLDS or MASKS read garbled once (as a late or flipped reply
    would be, below any framing): the driver takes the register only from two reads that
    agree, so the configuration is the device's. Before issue 23 the single read was
    taken and saved with every snapshot."""
    dev = FakeDevice(CONFIG)
    calls = _garble(dev, name, bit, reads={0})
    d = connect(dev)
    assert d.config == CONFIG and calls["n"] == 4          # a pair that disagreed, a pair


def test_discovered_register_that_never_reads_the_same_is_an_error():
    dev = FakeDevice(CONFIG)
    _garble(dev, "thresholds", 0, reads=set(range(0, 100, 2)))
    with pytest.raises(DeviceError, match="THRESHOLDS read differently every time"):
        connect(dev)


def test_discovery_reads_are_fenced_in_plain_framing():
    """Plain UARTBone: ID/VERSION/CONFIG are read again behind the fence they install, and
    every discovery read carries the fence word (a read of the probe address)."""
    dev = FakeDevice(CONFIG)
    connect(dev, transport={"framing": "plain"})
    head = (dev.commands[0][1], dev.commands[0][2])
    assert dev.commands[1][1:] == head                     # the head, read again
    reads = dev.commands[1:]
    assert len(reads) % 2 == 0
    for request, fence in zip(reads[::2], reads[1::2]):
        assert fence[1:] == (1, head[1]), (request, fence)   # one word at the probe


def test_head_garbled_before_the_fence_is_an_error_not_a_device():
    """The first ID/VERSION/CONFIG read garbled (plain framing, no tag): the fenced second
    read differs, and the driver refuses to connect rather than discover from it."""
    dev = FakeDevice(CONFIG)
    _garble(dev, "config", 4, reads={0})
    with pytest.raises(DeviceError):
        connect(dev, transport={"framing": "plain", "retries": 1})

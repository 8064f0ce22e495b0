# SPDX-License-Identifier: BSD-2-Clause
"""End-to-end integrity of a snapshot (issue 11, item 1): the driver accepts the counter
words only when they match the device's check value (FROZEN_CHECK) and update count
(FROZEN_UPDATES), re-reads a garbled or shifted window, gives a clear error when the
words never match, and a snapshot (also one loaded from JSON) is valid only when every
word is covered by a passing check. Issue 23, item 2: the check value covers the whole
interval record — a bit flipped in the flags, sequence number, packets, config ID or
timestamp (on the bus or in a snapshot file) is refused as a flipped word is."""

import json
import zlib

import numpy as np
import pytest

from host_sw.contracts.check_value import (HEADER_FIELDS, RecordHeader, check_bytes,
                                           check_value, count_total, counter_bytes,
                                           header_bytes, plausibility_problem)
from host_sw.contracts.frames.frame_format import IntervalFlags
from host_sw.contracts.config import LdaConfig, LdsConfig, RdaConfig, RliConfig
from host_sw.contracts.synopsis import Synopsis
from host_sw.device.driver import (
    READ_ATTEMPTS, Device, SnapshotError, SnapshotIntegrityError,
)
from host_sw.device.snapshot import Snapshot
from host_sw.device.fake_device import FakeDevice
from host_sw.device.fake_transport import FakeTransport
from host_sw.model.channel import simulate_interval

CONFIG = LdaConfig(banks=2, rows=64, thresholds=(0, 5))


@pytest.fixture(scope="module")
def synopsis():
    return simulate_interval(packets=3000, loss=0.0, seed=3).synopses(CONFIG)[0]


def frozen_device(synopsis, corrupt=None):
    """A fake device with ``synopsis`` frozen; ``corrupt(index, word, read_number)``
    returns the word the bus answers for counter word ``index`` chunk 0 (the counter
    window's n-th full pass is ``read_number``)."""
    dev = FakeDevice(CONFIG)
    dev.set("config_id", CONFIG.config_id)
    dev.set_active(synopsis)
    dev.swap()
    window = dev.map.window
    passes = {"n": -1}
    original = dev.bus_read

    def bus_read(address):
        word = original(address)
        if corrupt is None or not window.address <= address < window.address + window.words:
            return word
        index, chunk = window.locate(address)
        if index == 0 and chunk == 0:
            passes["n"] += 1
        return corrupt(index, chunk, word, passes["n"])

    dev.bus_read = bus_read
    return dev


def window_passes(dev):
    w = dev.map.window
    return sum(n for c, n, a in dev.commands if a >= w.address) // w.words


def test_check_value_definition_is_zlib_over_little_endian_words_then_header():
    config = LdaConfig(banks=1, rows=2, thresholds=(0,))        # 72-bit words: 9 bytes
    words = [0x0102030405060708AB, (1 << 72) - 1]
    header = RecordHeader(seq=0x11223344, flags=0x05, packets=0x55667788,
                          config_id=0x99AABBCC, timestamp=0x0102030405060708, role=2,
                          src_mac=0x020000000001)
    raw = check_bytes(config, words, header)
    assert raw == (bytes.fromhex("ab0807060504030201") + b"\xff" * 9
                   + bytes.fromhex("44332211" "05" "88776655" "ccbbaa99" "0807060504030201"
                                   "02" "010000000002"))
    assert raw == counter_bytes(config, words) + header_bytes(header)
    assert check_value(config, words, header) == zlib.crc32(raw)
    assert check_value(config, [0, 0], header) != check_value(config, [0, 1 << 71], header)


def test_count_total_and_plausibility_wrap_with_the_counters():
    narrow = LdaConfig(banks=1, rows=4, thresholds=(0,), count_bits=8, ts_bits=16)
    counts = np.array([255, 255, 3, 0], dtype=np.uint64)        # 513 updates, wrapped
    assert count_total(narrow, counts) == 513 % 256
    assert plausibility_problem(narrow, counts, 513) is None
    assert plausibility_problem(narrow, counts, 513 + (1 << 32)) is None
    assert "FROZEN_UPDATES" in plausibility_problem(narrow, counts, 512)


@pytest.mark.parametrize("config", [CONFIG, RdaConfig(buckets_per_bank=32),
                                    LdsConfig(rows=2, cells=32, row_thresholds=(0, 0))],
                         ids=lambda c: c.kind)
def test_fake_device_check_registers_match_the_driver(config):
    receiver = simulate_interval(packets=800, loss=0.0, seed=5).synopses(config)[1]
    dev = FakeDevice(config)
    dev.set("config_id", config.config_id)
    dev.set_active(receiver)
    dev.swap()
    assert dev.get("frozen_check") == check_value(config, receiver.words(),
                                                  dev.frozen_header())
    snap = Device(FakeTransport(dev), config=config).read_snapshot()
    assert snap.synopsis == receiver and snap.valid and snap.integrity_problem is None
    assert snap.check_value == dev.get("frozen_check")


def test_garbled_word_is_detected_and_reread(synopsis):
    def garble(index, chunk, word, n):
        return word ^ 0x10 if (n == 0 and index == 17 and chunk == 1) else word
    dev = frozen_device(synopsis, garble)
    snap = Device(FakeTransport(dev), config=CONFIG).read_snapshot()
    assert snap.synopsis == synopsis and snap.valid
    assert window_passes(dev) == 2                      # the first pass was rejected


def test_shifted_window_is_detected_and_reread(synopsis):
    """Every word one bus word late (as after a stray byte): all words wrong, same way."""
    w = CONFIG.layout.chunks
    words = [c for word in synopsis.words() for c in CONFIG.layout.to_chunks(word)]

    def shift(index, chunk, word, n):
        k = index * w + chunk
        return words[k - 1] if (n == 0 and k > 0) else word
    dev = frozen_device(synopsis, shift)
    snap = Device(FakeTransport(dev), config=CONFIG).read_snapshot()
    assert snap.synopsis == synopsis and window_passes(dev) == 2


def test_persistent_mismatch_is_a_clear_error_and_nothing_is_released(synopsis):
    dev = frozen_device(synopsis, lambda index, chunk, word, n:
                        word ^ (index == 5 and chunk == 0))
    with pytest.raises(SnapshotIntegrityError, match=r"never matched the device's check "
                       rf"\({READ_ATTEMPTS} reads\); last: check value mismatch"):
        Device(FakeTransport(dev), config=CONFIG).read_snapshot()
    assert window_passes(dev) == READ_ATTEMPTS and dev.frozen is not None
    assert issubclass(SnapshotIntegrityError, SnapshotError)    # watch: invalid, goes on


def test_plausibility_failure_is_detected(synopsis):
    """Words that match their CRC but not the device's count of updates (an update
    engine that lost counts) are refused too."""
    dev = frozen_device(synopsis)
    dev.set("frozen_updates", count_total(CONFIG, synopsis.count) + 1)
    with pytest.raises(SnapshotIntegrityError, match=r"the counts sum to \d+ \(mod 2\^32\) "
                       r"but the device applied \d+ updates"):
        Device(FakeTransport(dev), config=CONFIG).read_snapshot()


def test_garbled_check_register_is_reread(synopsis):
    dev = frozen_device(synopsis)
    address = dev.map["frozen_check"].address
    original, calls = dev.bus_read, {"n": 0}

    def bus_read(a):
        word = original(a)
        if a == address:
            calls["n"] += 1
            return word ^ (1 << 31) if calls["n"] == 1 else word
        return word
    dev.bus_read = bus_read
    assert Device(FakeTransport(dev), config=CONFIG).read_snapshot().valid
    assert calls["n"] == 2


def test_snapshot_json_keeps_the_check_and_refuses_edits(synopsis):
    dev = frozen_device(synopsis)
    doc = json.loads(json.dumps(Device(FakeTransport(dev), config=CONFIG)
                                .read_snapshot().to_json()))
    assert doc["valid"] and doc["check_value"] == f"{dev.get('frozen_check'):#010x}"
    assert Snapshot.from_json(doc).valid
    edited = json.loads(json.dumps(doc))
    edited["fields"]["ts_sum"][3] += 1                     # a plausible-looking edit
    back = Snapshot.from_json(edited)
    assert not back.valid and back.integrity_problem.startswith("check value mismatch")
    assert back.to_json()["notes"][-1].startswith("check value mismatch")
    unchecked = {k: v for k, v in doc.items() if k not in ("check_value", "updates")}
    assert not Snapshot.from_json(unchecked).valid


@pytest.mark.parametrize("path, value, message", [
    (("fields", "count", 0), 6.7, "integers"),
    (("fields", "count", 0), 6.0, "integers"),
    (("fields", "count", 0), True, "integers"),
    (("fields", "count", 0), -1, "integers"),
    (("fields", "count", 0), 1 << 32, "integers"),
    (("seq",), 1.5, "seq must be an integer"),
    (("packets",), "12", "packets must be an integer"),
    (("flags",), 2.0, "flags must be an integer"),
    (("flags",), 0x40, "bits no interval flag"),
    (("timestamp",), float("nan"), "timestamp must be an integer"),
    (("updates",), 3.5, "updates must be an integer"),
    (("check_value",), "0xzz", "check_value must be a 32-bit"),
    (("config_id",), 1.0, "config_id must be a 32-bit"),
    (("read_time",), "now", "read_time must be a finite number"),
    (("status", "frames_seen"), 1.5, "status must map"),
    (("notes",), [1], "notes must be a list of strings"),
    (("fields", "count"), [0] * 3, "has 3 values"),
])
def test_snapshot_from_json_rejects_wrong_types(synopsis, path, value, message):
    doc = json.loads(json.dumps(Device(FakeTransport(frozen_device(synopsis)), config=CONFIG)
                                .read_snapshot().to_json()))
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ValueError, match=message):
        Snapshot.from_json(doc)


def test_snapshot_from_json_rejects_non_documents():
    for bad in ([], "x", {"seq": 0}):
        with pytest.raises(ValueError, match="snapshot"):
            Snapshot.from_json(bad)


def test_synopsis_words_round_trip_through_the_check(synopsis):
    words = synopsis.words()
    assert Synopsis.from_words(CONFIG, words) == synopsis
    header = RecordHeader(seq=1, flags=0, packets=2, config_id=3, timestamp=4, role=1,
                          src_mac=5)
    assert check_value(CONFIG, words, header) == zlib.crc32(check_bytes(CONFIG, words, header))


# -- issue 23, item 2: one check value over the whole interval record --------------------

#: The header registers and a bit of each (every field, both ends of the wide ones).
HEADER_BITS_FLIPPED = [("frozen_seq", 0), ("frozen_seq", 31), ("frozen_packets", 0),
                       ("frozen_packets", 17), ("frozen_config_id", 4),
                       ("frozen_config_id", 31), ("frozen_timestamp", 0),
                       ("frozen_timestamp", 63),
                       ("frozen_flags", IntervalFlags.CONFIG_CHANGED.value.bit_length() - 1),
                       ("frozen_flags", IntervalFlags.SEQUENCE_GAP.value.bit_length() - 1),
                       ("frozen_flags", IntervalFlags.OVERRUN.value.bit_length() - 1),
                       ("frozen_role", 0), ("frozen_role", 1), ("frozen_src_mac", 0),
                       ("frozen_src_mac", 47)]

#: RLI's frozen counts (inside the check on RLI cores), a bit of each.
RLI_BITS_FLIPPED = [("rli_frozen_references", 0), ("rli_frozen_overflowed", 5),
                    ("rli_frozen_unreferenced", 31), ("rli_frozen_refused", 12)]


def flagged_device(synopsis, flags=IntervalFlags.CONFIG_CHANGED | IntervalFlags.SEQUENCE_GAP):
    """A fake device with ``synopsis`` frozen in an interval it flagged, at a timestamp
    whose two words are both non-zero."""
    dev = FakeDevice(CONFIG)
    dev.set("config_id", CONFIG.config_id)
    dev.set("local_mac", 0x0200_0000_0001)
    dev.set("role", 1)                                     # sender
    dev.set_active(synopsis, flags=int(flags))
    dev.swap(timestamp=0x0000_0123_4567_89AB)
    assert dev.get("frozen_role") == 1 and dev.get("frozen_src_mac") == 0x0200_0000_0001
    return dev


def rli_device():
    """A fake RLI receiver with an interval frozen, its four frozen counts non-zero."""
    config = RliConfig(cells=16)
    dev = FakeDevice(config)
    dev.set("config_id", config.config_id)
    dev.set("local_mac", 0x0200_0000_0002)
    dev.set("interval_mode", 3)                            # marker receiver: role implied
    for k, (name, _) in enumerate(RLI_BITS_FLIPPED):
        dev.set(name, 0x0101_0101 * (k + 1))
    dev.swap(timestamp=77)
    assert dev.get("frozen_role") == 2
    return dev


def header_flipper(dev, name, bit, reads):
    """Flip ``bit`` of register ``name`` in its first ``reads`` reads over the bus."""
    reg = dev.map[name]
    address = reg.address + bit // 32
    original, calls = dev.bus_read, {"n": 0}

    def bus_read(a):
        word = original(a)
        if a == address:
            calls["n"] += 1
            if calls["n"] <= reads:
                return word ^ (1 << (bit % 32))
        return word
    dev.bus_read = bus_read
    return calls


@pytest.mark.parametrize("name, bit", HEADER_BITS_FLIPPED)
def test_flipped_header_bit_is_refused_by_the_driver(synopsis, name, bit):
    """A bit flipped in any header register on every read (a flag cleared, say): the
    check value over the record never matches, the snapshot is refused and nothing is
    released. Before issue 23 the header was outside the check: a cleared CONFIG_CHANGED
    or SEQUENCE_GAP read as a valid interval."""
    dev = flagged_device(synopsis)
    header_flipper(dev, name, bit, reads=10**6)
    device = Device(FakeTransport(dev), config=CONFIG)
    with pytest.raises(SnapshotError):
        device.read_snapshot()
    assert dev.frozen is not None                          # not released


@pytest.mark.parametrize("name, bit", HEADER_BITS_FLIPPED)
def test_flipped_header_bit_once_is_reread_and_the_true_record_returned(synopsis, name, bit):
    dev = flagged_device(synopsis)
    truth = dev.frozen_header()
    calls = header_flipper(dev, name, bit, reads=1)
    snap = Device(FakeTransport(dev), config=CONFIG).read_snapshot()
    assert snap.header == truth and snap.synopsis == synopsis and calls["n"] >= 2
    assert snap.flags & IntervalFlags.CONFIG_CHANGED and not snap.valid    # flagged: invalid
    assert snap.integrity_problem is None


@pytest.mark.parametrize("name, bit", RLI_BITS_FLIPPED)
def test_flipped_rli_count_bit_is_refused_by_the_driver(name, bit):
    """RLI's frozen counts are inside the check value on RLI cores: a bit flipped in one
    on every read is refused (nothing released); flipped once, it is read again and the
    true counts come back in the snapshot."""
    dev = rli_device()
    header_flipper(dev, name, bit, reads=10**6)
    with pytest.raises(SnapshotError):
        Device(FakeTransport(dev), config=dev.config).read_snapshot()
    assert dev.frozen is not None
    dev = rli_device()
    header_flipper(dev, name, bit, reads=1)
    snap = Device(FakeTransport(dev), config=dev.config).read_snapshot()
    assert snap.rli == {n[len("rli_frozen_"):]: 0x0101_0101 * (k + 1)
                        for k, (n, _) in enumerate(RLI_BITS_FLIPPED)}
    assert snap.integrity_problem is None and snap.role == 2


@pytest.mark.parametrize("name, bit", RLI_BITS_FLIPPED)
def test_flipped_rli_count_bit_in_a_snapshot_file_is_refused(name, bit):
    dev = rli_device()
    doc = json.loads(json.dumps(Device(FakeTransport(dev), config=dev.config)
                                .read_snapshot().to_json()))
    assert Snapshot.from_json(doc).integrity_problem is None
    short = name[len("rli_frozen_"):]
    doc["rli"][short] ^= 1 << bit
    back = Snapshot.from_json(doc)
    assert back.integrity_problem.startswith("check value mismatch") and not back.valid


@pytest.mark.parametrize("key, bit", [("seq", 0), ("seq", 31), ("packets", 3),
                                      ("config_id", 9), ("timestamp", 0), ("timestamp", 40),
                                      ("device_flags", 0), ("device_flags", 2),
                                      ("flags", 0), ("flags", 2), ("role", 0), ("role", 1),
                                      ("src_mac", 0), ("src_mac", 47)])
def test_flipped_header_bit_in_a_snapshot_file_is_refused(synopsis, key, bit):
    """A snapshot file with one header bit flipped (the device's flags too, or a flag of
    the shown flags cleared) is invalid when loaded: the check value is recomputed over
    the whole record."""
    dev = flagged_device(synopsis, flags=IntervalFlags.CONFIG_CHANGED | IntervalFlags.OVERRUN)
    doc = json.loads(json.dumps(Device(FakeTransport(dev), config=CONFIG)
                                .read_snapshot().to_json()))
    assert Snapshot.from_json(doc).integrity_problem is None
    assert doc["device_flags"] == int(IntervalFlags.CONFIG_CHANGED | IntervalFlags.OVERRUN)
    edited = json.loads(json.dumps(doc))
    if key == "config_id":
        edited[key] = f"{int(doc[key], 16) ^ (1 << bit):#010x}"
    elif key == "src_mac":
        assert doc[key] == "02:00:00:00:00:01"
        mac = int(doc[key].replace(":", ""), 16) ^ (1 << bit)
        edited[key] = ":".join(f"{b:02x}" for b in mac.to_bytes(6, "big"))
    else:
        edited[key] = doc[key] ^ (1 << bit)
    back = Snapshot.from_json(edited)
    assert back.integrity_problem is not None and not back.valid, back.integrity_problem


def test_clean_interval_with_a_flag_cleared_in_the_file_is_refused(synopsis):
    """The attack of issue 23: a flagged interval whose flags byte is cleared in the file
    (shown flags and device flags alike) must not load as valid."""
    dev = flagged_device(synopsis, flags=IntervalFlags.CONFIG_CHANGED)
    doc = Device(FakeTransport(dev), config=CONFIG).read_snapshot().to_json()
    doc = json.loads(json.dumps(doc))
    doc["flags"] = doc["device_flags"] = 0
    back = Snapshot.from_json(doc)
    assert not back.valid and back.integrity_problem.startswith("check value mismatch")


def test_host_flag_beside_the_device_flags_keeps_the_check(synopsis):
    """SEQUENCE_GAP added by the host (a skipped interval) is not the device's: the check
    covers the device's byte, kept apart, so the snapshot stays checked."""
    dev = FakeDevice(CONFIG)
    dev.set("config_id", CONFIG.config_id)
    device = Device(FakeTransport(dev), config=CONFIG)
    for _ in range(3):
        dev.set_active(synopsis)
        dev.swap()
        if _ != 1:                                         # the second is never read
            snap = device.read_snapshot()
        else:
            dev.release()
    assert snap.flags == IntervalFlags.SEQUENCE_GAP and snap.device_flags == 0
    assert snap.integrity_problem is None
    back = Snapshot.from_json(json.loads(json.dumps(snap.to_json())))
    assert back.integrity_problem is None and back.flags == IntervalFlags.SEQUENCE_GAP


def test_record_header_fields_and_ranges():
    assert [n for n, _ in HEADER_FIELDS] == ["seq", "flags", "packets", "config_id",
                                             "timestamp", "role", "src_mac"]
    with pytest.raises(ValueError, match="flags"):
        RecordHeader(seq=0, flags=256, packets=0, config_id=0, timestamp=0, role=0,
                     src_mac=0)
    with pytest.raises(ValueError, match="timestamp"):
        RecordHeader(seq=0, flags=0, packets=0, config_id=0, timestamp=-1, role=0,
                     src_mac=0)
    with pytest.raises(ValueError, match="src_mac"):
        RecordHeader(seq=0, flags=0, packets=0, config_id=0, timestamp=0, role=0,
                     src_mac=1 << 48)


def test_snapshot_check_faults_bench_garbles_every_header_register_and_reads_none_wrong():
    """``python -m bench.snapshot_check_faults`` garbles every register the check value's
    header is read from (the role, the source MAC, RLI's frozen counts among them), any bit
    of its bus words; a short run returns no wrong snapshot."""
    from bench.snapshot_check_faults import header_registers, run
    assert header_registers(LdaConfig()) == (
        "frozen_seq", "frozen_flags", "frozen_packets", "frozen_config_id",
        "frozen_timestamp", "frozen_role", "frozen_src_mac")
    assert header_registers(RliConfig()) == header_registers(LdaConfig()) + (
        "rli_frozen_references", "rli_frozen_overflowed", "rli_frozen_unreferenced",
        "rli_frozen_refused")
    table = run(120, seed=3)
    assert sum(table.values()) == 120
    assert sum(n for (_, outcome), n in table.items() if outcome == "wrong") == 0
    assert table["header", "refused"] > 0

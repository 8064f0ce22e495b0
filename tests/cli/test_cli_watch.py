# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl watch`` keeps going (issue 11, item 5): against in-memory devices with faults
injected per read, every sequence number gets exactly one row — valid, or invalid with its
reason — both points' copies are read before either is released, transient failures are
retried within the interval, and only a permanent failure ends the run (exit 1, one error
line, after the rows read so far).

The devices answer at once and ``?retries=0`` hands every bus fault to ``watch``; back-off
pauses are 1 ms (``--retry-delay``), so no test sleeps.
"""

import json

import pytest

from host_sw.cli import main
from host_sw.contracts.config import LdaConfig
from host_sw.cli.watch_reads import PointReader, RetryPolicy
from host_sw.device.driver import Device
from host_sw.device.fake_transport import FakeTransport, register_fake_device
from host_sw.model.channel import simulate_interval

CONFIG = LdaConfig(banks=2, rows=64, thresholds=(0, 5))
CONTROL = 8     # the CONTROL register's word address (swap, release)


@pytest.fixture(scope="module")
def pairs():
    return [simulate_interval(packets=2000, loss=0.01, seed=seed).synopses(CONFIG)
            for seed in range(1, 6)]


@pytest.fixture
def make_pair(pairs, scripted_device):
    """``make_pair(sender_faults, receiver_faults, skip=())``: a sender and a receiver
    registered as fake://ws and fake://wr; ``faults`` maps an interval number to the fault
    kinds of the read replies that follow the boundary freezing it (``"late"``: the reply
    arrives with the next one); ``skip`` the interval numbers whose boundary comes twice
    (the second finds the copy unreleased: an overrun, the number is skipped)."""

    class FaultyDevice(scripted_device):
        def __init__(self, synopses, faults, skip):
            super().__init__(CONFIG, synopses)
            self.set("config_id", CONFIG.config_id)
            self.plan, self.skip, self.late = dict(faults), set(skip), b""
            self.log = []

        def swap(self, timestamp=None):
            frozen_before = self.frozen is not None
            super().swap(timestamp)
            seq = self.get("frozen_seq")
            if not frozen_before and seq in self.skip:
                super().swap(timestamp)
            if not frozen_before:
                self.faults += list(self.plan.pop(seq, []))

        def feed(self, data):
            held, self.late = self.late, b""
            self._tx += held
            super().feed(data)

        def _fault(self, reply):
            if self.faults and self.faults[0] == "late":
                self.faults.pop(0)
                self.late = reply
                return b""
            return super()._fault(reply)

    def make(sender_faults=None, receiver_faults=None, skip=()):
        s = FaultyDevice([p[0] for p in pairs], sender_faults or {}, skip)
        r = FaultyDevice([p[1] for p in pairs], receiver_faults or {}, skip)
        for name, dev in (("ws", s), ("wr", r)):
            register_fake_device(name, dev)
            dev.hooks.append(lambda d, cmd, n, a, name=name: log.append((name, cmd, a)))
        return s, r

    log = []
    make.log = log
    yield make
    register_fake_device("ws", None)
    register_fake_device("wr", None)


def watch(capsys, tmp_path, intervals, *extra):
    """Run watch --json (and -o): (exit code, rows, stderr); the rows of stdout and of the
    records file must be the same."""
    records = tmp_path / "rows.jsonl"
    code = main(["watch", "--sender", "fake://ws?retries=0", "--receiver",
                 "fake://wr?retries=0", "--swap", "--period", "0", "--intervals",
                 str(intervals), "--retry-delay", "0.001", "--wait", "5", "--json",
                 "-o", str(records), *extra])
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines()]
    assert rows == [json.loads(line) for line in records.read_text().splitlines()]
    return code, rows, err


def summary(rows):
    return [(r["interval"], r["valid"]) for r in rows]


# A late reply fails the read it belongs to (timeout); the transport's resynchronisation
# (quiet line, discard, probe) drains it before the next attempt.
@pytest.mark.parametrize("fault, errors", [("drop", ["TransportTimeout"]),
                                           ("short", ["TransportTimeout"]),
                                           ("extra", ["GarbledReply"]),
                                           ("late", ["TransportTimeout"])])
def test_transient_fault_is_retried_within_the_interval(capsys, tmp_path, make_pair, fault,
                                                        errors):
    make_pair({1: [fault]}, {2: [fault]})
    code, rows, err = watch(capsys, tmp_path, 3)
    assert code == 0, err
    assert summary(rows) == [(0, True), (1, True), (2, True)]
    assert all(r["estimate"] is not None for r in rows)
    tries = 1 + len(errors)
    assert [r["sender"]["attempts"] for r in rows] == [1, tries, 1]
    assert [r["receiver"]["attempts"] for r in rows] == [1, 1, tries]
    for got in (rows[1]["sender"]["errors"], rows[2]["receiver"]["errors"]):
        assert [e.split(":")[0] for e in got] == errors
    assert all(r["sender"]["release"] == r["receiver"]["release"] == "released"
               for r in rows)


def test_interval_that_cannot_be_read_is_a_row_and_the_run_goes_on(capsys, tmp_path,
                                                                   make_pair):
    # Every attempt after the first resynchronises first, probing up to 3 times: 1 + 3 + 3
    # dropped replies fail all three attempts.
    s, r = make_pair({1: ["drop"] * 7})
    code, rows, err = watch(capsys, tmp_path, 3)
    assert code == 0, err
    assert summary(rows) == [(0, True), (1, False), (2, True)]
    bad = rows[1]
    assert bad["estimate"] is None
    assert bad["notes"] == ["sender: could not be read (3 attempts): TransportTimeout: "
                            + bad["sender"]["errors"][-1].split(": ", 1)[1]
                            + " (frozen copy: interval 1 released unread)"]
    assert bad["sender"] | {"errors": None} == {
        "read": "failed", "attempts": 3, "errors": None, "seq": 1,
        "release": "interval 1 released unread"}
    assert bad["receiver"]["read"] == "ok" and bad["receiver"]["seq"] == 1
    assert bad["receiver"]["release"] == "released"
    # The interval after the failed one is whole: its counters are this interval's.
    assert rows[2]["notes"] == [] or all("gap" not in n for n in rows[2]["notes"])
    assert s.frozen is None and r.frozen is None


def test_table_rows_name_the_reason(capsys, make_pair):
    make_pair({}, {1: ["drop"] * 4})      # 1 read, then 3 resynchronisation probes
    code = main(["watch", "--sender", "fake://ws?retries=0", "--receiver",
                 "fake://wr?retries=0", "--swap", "--period", "0", "--intervals", "3",
                 "--retry-delay", "0.001", "--attempts", "2"])
    out, err = capsys.readouterr()
    assert code == 0, err
    lines = out.splitlines()
    assert len(lines) == 4 and "%" in lines[1] and "%" in lines[3]
    assert lines[2].split()[:4] == ["1", "invalid:", "receiver:", "could"]
    assert "(2 attempts)" in lines[2]
    assert "(frozen copy: interval 1 released unread)" in lines[2]


def test_both_copies_are_read_before_either_is_released(capsys, tmp_path, make_pair):
    make_pair({}, {0: ["drop"]})
    code, rows, err = watch(capsys, tmp_path, 1)
    assert code == 0 and summary(rows) == [(0, True)]
    log = make_pair.log
    releases = [k for k, (name, cmd, a) in enumerate(log) if a == CONTROL]
    # swap (ws), swap (wr), then the reads, then release (ws), release (wr).
    assert [log[k][0] for k in releases] == ["ws", "wr", "ws", "wr"]
    last_receiver_read = max(k for k, (name, cmd, a) in enumerate(log)
                             if name == "wr" and k < releases[3] and a != CONTROL
                             and a != 9 and a != 13 and a > 6)   # 0..6: probes, fences
    assert last_receiver_read < releases[2]


def test_sequence_gap_rows_are_not_seen(capsys, tmp_path, make_pair):
    make_pair(skip={2})     # the boundary after interval 2 comes twice: 3 is never frozen
    code, rows, err = watch(capsys, tmp_path, 4)
    assert code == 0, err
    assert summary(rows) == [(0, True), (1, True), (2, True), (3, False), (4, False)]
    assert rows[3]["notes"][0].startswith("not seen:")
    assert rows[3]["sender"] == rows[3]["receiver"] == {}
    # The interval after the skip spans it: invalid, from the devices' own gap mark.
    assert rows[4]["notes"] == [f"{side}: sequence gap: 1 interval(s) between 2 and 4 were "
                                f"not read" for side in ("sender", "receiver")]


def test_device_that_stays_down_ends_the_run_after_max_failures(capsys, tmp_path,
                                                                make_pair):
    make_pair({}, {1: ["drop"] * 10_000})
    code, rows, err = watch(capsys, tmp_path, 10, "--max-failures", "3")
    assert code == 1
    assert summary(rows) == [(0, True), (1, False), (2, False), (3, False)]
    assert err.count("error:") == 1 and err.count("\n") == 1
    assert "the receiver (fake://wr?retries=0) could not be read for 3 interval(s) in a " \
           "row" in err
    assert rows[1]["notes"][0].startswith("receiver: could not be read (3 attempts)")
    # Once the receiver is down it cannot even be told to end an interval.
    for row in rows[2:]:
        assert row["notes"][0].startswith("receiver: could not end the interval")
        assert row["sender"]["read"] == "ok" and row["sender"]["release"] == "released"


def test_no_interval_frozen_uses_up_no_number(capsys, tmp_path, make_pair):
    make_pair()
    records = tmp_path / "rows.jsonl"
    code = main(["watch", "--sender", "fake://ws", "--receiver", "fake://wr", "--wait",
                 "0.01", "--retry-delay", "0.001", "--max-failures", "2", "--json", "-o",
                 str(records)])
    out, err = capsys.readouterr()
    rows = [json.loads(line) for line in out.splitlines()]
    assert code == 1 and summary(rows) == [(None, False), (None, False)]
    assert all(r["notes"][0].startswith("sender: could not be read (1 attempt): "
                                        "SnapshotError: no frozen interval within")
               for r in rows)
    assert rows[0]["notes"][1].endswith("no time left to retry before the --wait ends "
                                        "(frozen copy: nothing frozen)")
    assert "the sender (fake://ws) could not be read for 2 interval(s) in a row" in err


def test_no_row_is_skipped_under_random_faults(capsys, tmp_path, make_pair):
    kinds = ["drop", "short", "extra", "late", "none"]
    plan = {k: [kinds[(k * 7 + j) % 5] for j in range(k % 4)] for k in range(5)}
    make_pair(plan, {k: v[::-1] for k, v in plan.items()})
    code, rows, err = watch(capsys, tmp_path, 5, "--attempts", "2")
    assert code == 0, err
    assert [r["interval"] for r in rows] == [0, 1, 2, 3, 4]
    # Interval 3's plan outlasts two attempts; its copies are released unread, so
    # interval 4 is read fresh (no stale copy, no gap).
    assert summary(rows) == [(0, True), (1, True), (2, True), (3, False), (4, True)]
    assert rows[3]["sender"]["read"] == "failed" or rows[3]["receiver"]["read"] == "failed"
    assert "stale" not in (rows[4]["sender"]["read"], rows[4]["receiver"]["read"])
    for r in rows:
        assert r["valid"] == (r["estimate"] is not None)
        assert r["valid"] or r["notes"]


def test_retries_stop_before_the_next_boundary(scripted_device, pairs):
    dev = scripted_device(CONFIG, [pairs[0][0]])
    dev.set("config_id", CONFIG.config_id)
    device = Device(FakeTransport(dev, retries=0))
    device.set_intervals(mode="time", ticks=100_000_000)      # 0.1 s at 1 ns per tick
    now = [0.0]
    pauses = []

    def sleep(s):
        pauses.append(s)
        now[0] += s

    reader = PointReader(device, RetryPolicy(attempts=8, delay=0.03, wait=10,
                                             sleep=sleep, clock=lambda: now[0]))
    assert reader.interval_s == pytest.approx(0.1)
    dev.swap()
    dev.inject("drop", 100)
    out = reader.read()
    assert not out.ok and out.attempts == 2 and pauses == [0.03]
    assert out.reason.endswith("; no time left to retry before the next boundary")


def test_device_reprogrammed_mid_run_ends_the_run(capsys, tmp_path, make_pair):
    _, r = make_pair()
    r.hooks.append(lambda d, cmd, n, a: d.set("config_id", 0)
                   if d.get("frozen_seq") == 1 else None)
    code, rows, err = watch(capsys, tmp_path, 5)
    assert code == 1 and summary(rows) == [(0, True), (1, True), (2, False)]
    assert rows[2]["notes"] == ["receiver: the interval's config ID 0x00000000 is not the "
                                f"configuration's {CONFIG.config_id:#010x}"]
    assert err.count("\n") == 1 and "the receiver (fake://wr?retries=0) runs another " \
                                    "configuration: interval 2 has config ID 0x00000000" in err

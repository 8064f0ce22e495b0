# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl watch --records`` on two OPA devices: fake devices hold the golden OPA words
of simulated intervals, and the record frames of the same intervals (built by the
contract) arrive in captures — one file for both points, two files, standard input, a
file that grows while watch runs. Every recovered delay equals the true one (ticks),
the percentiles are numpy's of those delays, the loss is exact; a tampered frame, a
missing last chunk, a replayed interval, a second source make just their interval
invalid, and the records feed ``export`` and ``plot`` as estimate's do."""

import argparse
import csv
import dataclasses
import io
import json
import os
import sys
import threading
import time

import numpy as np
import pytest

from host_sw.cli.main import main
from host_sw.cli.opa.output import DELAY_COLUMNS, DelayWriter, delay_rows
from host_sw.cli.opa.record_source import SourceEvent
from host_sw.cli.opa.watch import (MAX_NOTES, MAX_PENDING, OpaRecordWatch, _capped,
                                   add_opa_watch_options)
from host_sw.contracts.config import OpaConfig
from host_sw.contracts.opa.records import build_record_frames
from host_sw.device.fake_transport import register_fake_device
from host_sw.estimators.opa.recovery import PERCENTILES
from host_sw.estimators.opa.run import opa_records
from host_sw.estimators.simulate import run_scenario
from host_sw.model.channel import Scenario
from host_sw.model.golden_lda_rda_lds import Hashers
from host_sw.model.golden_opa import opa_synopsis
from host_sw.model.pcap import write_pcap

CONFIG = OpaConfig()
S_MAC, R_MAC, OTHER_MAC, HOST = 0x020000000001, 0x020000000002, 0x020000000009, 0x0200000000ff
WATCH = ["watch", "--sender", "fake://opa_rs", "--receiver", "fake://opa_rr", "--swap",
         "--period", "0", "--wait", "5", "--json"]


def _interval(seed):
    """(sender records, receiver records, true delay of each receiver record, lost)."""
    iv = Scenario(packets=2000, flows=30, loss=0.003, delay="exponential:mean=2us",
                  seed=seed).run().intervals[0]
    s, r = opa_records(CONFIG, iv, Hashers(CONFIG))
    assert len(s.packet) == len(iv.sender.packet_ids)       # every packet counted
    assert len(r.packet) == len(iv.receiver.packet_ids)
    sent_at = dict(zip(iv.sender.packet_ids.tolist(), s.timestamps.tolist()))
    true = np.array([t - sent_at[i] for i, t in zip(iv.receiver.packet_ids.tolist(),
                                                     r.timestamps.tolist())], np.int64)
    return s, r, true, int(iv.truth.lost)


@pytest.fixture(scope="module")
def intervals():
    return [_interval(seed) for seed in (11, 12, 13)]


@pytest.fixture
def devices(scripted_device, intervals):
    for name, side in (("opa_rs", 0), ("opa_rr", 1)):
        dev = scripted_device(CONFIG, [opa_synopsis(CONFIG, iv[side].packet)
                                       for iv in intervals])
        dev.set("config_id", CONFIG.config_id)
        register_fake_device(name, dev)
    yield intervals
    for name in ("opa_rs", "opa_rr"):
        register_fake_device(name, None)


def _frames(iv, seq, point, mac=None, key=None, skip=0, groups=0):
    """The record frames of ``iv`` at ``point`` as interval ``seq`` (its first ``skip``
    packets left out; ``groups``: the sampling, 0 for all)."""
    rec = iv[0] if point == "sender" else iv[1]
    return build_record_frames(CONFIG, point, seq=seq, packet=rec.packet[skip:],
                               timestamps=rec.timestamps[skip:], dst_mac=HOST, key=key,
                               src_mac=mac or (S_MAC if point == "sender" else R_MAC),
                               record_groups=groups)


def _both(iv, seq, key=None):
    return _frames(iv, seq, "sender", key=key) + _frames(iv, seq, "receiver", key=key)


def _pcap(path, frames):
    write_pcap(path, frames, 10 ** 9 + np.arange(len(frames)))
    return str(path)


def _watch(capsys, *extra):
    code = main([*WATCH, *extra])
    out, err = capsys.readouterr()
    return code, [json.loads(x) for x in out.splitlines()], err


def _check_exact(row, iv, delays):
    """The row's figures against the truth: every delay, the percentiles, the loss."""
    s, r, true, lost = iv
    e = row["estimate"]
    assert row["valid"] and (e["sent"], e["received"], e["lost"]) == (len(s.packet),
                                                                      len(r.packet), lost)
    assert e["unrecovered_groups"] == 0
    if delays is None:
        return
    mine = [d for d in delays if d["interval"] == row["interval"]]
    assert len(mine) == e["samples"] > 0.95 * len(r.packet)
    idx = np.array([d["packet"] for d in mine])
    assert [d["delay_ns"] for d in mine] == (true[idx] * CONFIG.tick_ns).tolist()
    ns = true[idx].astype(np.float64) * CONFIG.tick_ns
    assert [e[f"p{q:g}"] for q in PERCENTILES] == np.percentile(ns, PERCENTILES).tolist()
    assert e["max"] == ns.max()


def test_one_capture_of_both_points_gives_exact_delays(capsys, tmp_path, devices):
    cap = _pcap(tmp_path / "tap.pcap", _both(devices[0], 0) + _both(devices[1], 1))
    delays, out = tmp_path / "d.jsonl", tmp_path / "run.jsonl"
    code, rows, err = _watch(capsys, "--intervals", "2", "--records", cap, "--delays-out",
                             str(delays), "--histogram", str(tmp_path / "h.csv"),
                             "--output", str(out))
    assert code == 0, err
    assert [r["interval"] for r in rows] == [0, 1]
    written = [json.loads(x) for x in delays.read_text().splitlines()]
    for row, iv in zip(rows, devices):
        _check_exact(row, iv, written)
    hist = (tmp_path / "h.csv").read_text().splitlines()
    assert hist[-1] == f"+Inf,{len(written)}"
    # export and plot read watch's records as estimate's
    assert main(["export", "-i", str(out), "-f", "prometheus"]) == 0
    prom = capsys.readouterr().out.splitlines()
    last = rows[-1]["estimate"]["samples"]
    bucket = [x for x in prom if x.startswith("ldactl_delay_seconds_bucket{")]
    assert bucket[-1].endswith(f'le="+Inf"}} {last}')
    assert any(x.startswith("ldactl_delay_seconds_count{") and x.endswith(f" {last}")
               for x in prom)
    sum_s = [float(x.split()[-1]) for x in prom if x.startswith("ldactl_delay_seconds_sum{")]
    assert sum_s == [pytest.approx(rows[-1]["estimate"]["mean"] * last * 1e-9)]
    assert main(["plot", "-i", str(out), "-o", str(tmp_path / "p.png")]) == 0
    assert (tmp_path / "p.png").read_bytes()[:4] == b"\x89PNG"


def test_tampered_frame_invalidates_only_its_interval(capsys, tmp_path, devices):
    first = _both(devices[0], 0)
    bad = bytearray(first[1])
    bad[60] ^= 0x01                        # one record byte of the sender's chunk 1
    first[1] = bytes(bad)
    cap = _pcap(tmp_path / "tap.pcap", first + _both(devices[1], 1))
    code, rows, err = _watch(capsys, "--intervals", "2", "--records", cap,
                             "--records-wait", "0.5")
    assert code == 0, err
    assert not rows[0]["valid"] and rows[0]["estimate"] is None
    assert any("interval 0" in n and "tag" in n for n in rows[0]["notes"]), rows[0]["notes"]
    assert rows[1]["valid"] and rows[1]["estimate"]["p50"] is not None


def test_missing_last_chunk_is_incomplete_within_the_wait(capsys, tmp_path, devices):
    s_cap = _pcap(tmp_path / "s.pcap", _frames(devices[0], 0, "sender")
                  + _frames(devices[1], 1, "sender"))
    r_cap = _pcap(tmp_path / "r.pcap", _frames(devices[0], 0, "receiver")[:-1]
                  + _frames(devices[1], 1, "receiver"))
    t0 = time.monotonic()
    code, rows, err = _watch(capsys, "--intervals", "2", "--records", s_cap, "--records",
                             r_cap, "--records-wait", "0.4")
    assert code == 0, err
    assert time.monotonic() - t0 < 4
    assert not rows[0]["valid"]
    assert any("receiver's records of interval 0 are incomplete after 0.4 s" in n
               and "no last chunk" in n for n in rows[0]["notes"]), rows[0]["notes"]
    assert rows[1]["valid"]


def _staged(f, out, stages, tmp_path):
    """A thread writing ``stages`` (lists of frames) as one growing pcap stream to the
    binary file ``f`` (or a named pipe's path, opened in the thread): stage k once
    ``out`` (watch's --output) holds k rows."""
    def run():
        nonlocal f
        if isinstance(f, os.PathLike):
            f = open(f, "wb")          # waits for watch to open the pipe
        written, frames = 0, []
        for k, stage in enumerate(stages):
            deadline = time.monotonic() + 10
            while k and time.monotonic() < deadline and (
                    not out.exists() or len(out.read_text().splitlines()) < k):
                time.sleep(0.02)
            frames += stage
            whole = open(_pcap(tmp_path / "whole.pcap", frames), "rb").read()
            f.write(whole[written:])       # the records tcpdump adds
            f.flush()
            written = len(whole)
        f.close()
    t = threading.Thread(target=run, daemon=True)   # never holds up the run
    t.start()
    return t


def test_stdin_pipe_replay_and_second_source(capsys, monkeypatch, tmp_path, devices):
    out = tmp_path / "run.jsonl"
    r, w = os.pipe()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(os.fdopen(r, "rb")))
    t = _staged(os.fdopen(w, "wb"), out, [
        _both(devices[0], 0),
        _frames(devices[0], 0, "sender") + _both(devices[1], 1),     # interval 0 again
        _frames(devices[2], 2, "receiver", mac=OTHER_MAC)[:1] + _both(devices[2], 2)],
        tmp_path)
    code, rows, err = _watch(capsys, "--intervals", "3", "--records", "-",
                             "--records-wait", "5", "--output", str(out))
    t.join(timeout=10)
    assert code == 0, err
    assert [r["valid"] for r in rows] == [True, False, False]
    _check_exact(rows[0], devices[0], None)
    # interval 0's sender records again, after its row: the next row is invalid
    assert any("records of interval 0 arrived after the row of interval 0" in n
               and "replayed" in n for n in rows[1]["notes"]), rows[1]["notes"]
    assert any("02:00:00:00:00:09, a second source" in n for n in rows[2]["notes"])


def test_named_pipe(capsys, tmp_path, devices):
    fifo, out = tmp_path / "tap.fifo", tmp_path / "run.jsonl"
    os.mkfifo(fifo)
    t = _staged(fifo, out, [_both(devices[0], 0), _both(devices[1], 1)], tmp_path)
    code, rows, err = _watch(capsys, "--intervals", "2", "--records", str(fifo),
                             "--records-wait", "5", "--output", str(out))
    t.join(timeout=10)
    assert code == 0, err
    assert [r["valid"] for r in rows] == [True, True]
    _check_exact(rows[1], devices[1], None)


def test_growing_file_is_followed(capsys, tmp_path, devices):
    path, out = tmp_path / "tap.pcap", tmp_path / "run.jsonl"
    t = _staged(open(path, "wb"), out, [_both(devices[0], 0), _both(devices[1], 1)],
                tmp_path)
    code, rows, err = _watch(capsys, "--intervals", "2", "--records", str(path),
                             "--records-wait", "5", "--output", str(out))
    t.join(timeout=10)
    assert code == 0, err
    assert [r["valid"] for r in rows] == [True, True]
    _check_exact(rows[1], devices[1], None)


def test_no_records_for_max_failures_intervals_exits_1(capsys, tmp_path, devices):
    cap = _pcap(tmp_path / "tap.pcap", _both(devices[0], 0))
    code, rows, err = _watch(capsys, "--intervals", "3", "--records", cap,
                             "--records-wait", "0.1", "--max-failures", "2")
    assert code == 1
    assert [r["valid"] for r in rows] == [True, False, False]
    assert "no sender record frames of interval 1 within 0.1 s" in rows[1]["notes"][0]
    assert "ldactl watch: error: no complete record frames of both points for 2" in err


@pytest.mark.parametrize("args, option", [
    (["--records", "/nonexistent/x.pcap"], "--records"),
    (["--delays-out", "d.csv"], "--delays-out"),
])
def test_usage_errors_name_the_option(capsys, tmp_path, devices, args, option):
    bad = tmp_path / "text.pcap"
    bad.write_text("not a capture at all")
    for a in (args, ["--records", str(bad)]):
        code = None
        try:
            code = main([*WATCH, "--intervals", "1", *a])
        except SystemExit as e:
            code = e.code
        assert code == 2
        err = capsys.readouterr().err
        assert a[0] in err and "Traceback" not in err


def test_keyed_frames_unattributed_frame_and_receiver_words(capsys, tmp_path, devices):
    """Interval 0: frames tagged under a key, accepted with --key-file; a frame too short
    to name its interval is a note; interval 1: the receiver's records lack one packet
    its words count (a complete, well-tagged stream): invalid, never a number."""
    key = bytes(range(16))
    (tmp_path / "k.key").write_text(key.hex() + "\n")
    short = _frames(devices[0], 0, "sender")[0][:20]
    thin = _frames(devices[1], 1, "receiver", key=key, skip=1)
    cap = _pcap(tmp_path / "tap.pcap", _both(devices[0], 0, key) + [short]
                + _frames(devices[1], 1, "sender", key=key) + thin)
    code, rows, err = _watch(capsys, "--intervals", "2", "--records", cap, "--key-file",
                             str(tmp_path / "k.key"), "--records-wait", "0.5")
    assert code == 0, err
    _check_exact(rows[0], devices[0], None)
    notes = rows[0]["notes"] + rows[1]["notes"]
    assert any("a record frame of no interval with a row to come" in n for n in notes)
    assert not rows[1]["valid"] and rows[1]["estimate"] is None
    assert any("the receiver's records of group" in n and "do not match its OPA words" in n
               for n in rows[1]["notes"]), rows[1]["notes"]
    # without the key, the keyed frames are refused: no numbers
    cap = _pcap(tmp_path / "tap2.pcap", _both(devices[2], 2, key))
    code, rows, err = _watch(capsys, "--intervals", "1", "--records", cap,
                             "--records-wait", "0.2")
    assert code == 0 and not rows[0]["valid"] and rows[0]["estimate"] is None
    assert any("no key was given" in n for n in rows[0]["notes"]), rows[0]["notes"]


def test_table_and_a_source_that_breaks(capsys, monkeypatch, tmp_path, devices):
    """The text table is estimate's OPA table (its percentiles the JSON record's); a
    source cut inside a record stops with a note, and the next interval, without
    records, is invalid saying the sources have ended."""
    out = tmp_path / "run.jsonl"
    data = open(_pcap(tmp_path / "a.pcap", _both(devices[0], 0)), "rb").read()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data + data[24:60])))
    code = main([*WATCH[:-1], "--intervals", "2", "--records", "-", "--records-wait", "0.3",
                 "--output", str(out)])
    text, err = capsys.readouterr()
    assert code == 0, err
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    lines = text.splitlines()
    assert lines[0].split()[:7] == ["interval", "sent", "recv", "lost", "reord", "p50", "ns"]
    cells = lines[1].split()
    e = rows[0]["estimate"]
    assert [int(x) for x in cells[:4]] == [0, e["sent"], e["received"], e["lost"]]
    assert [float(x) for x in cells[5:10]] == pytest.approx(
        [e["p50"], e["p90"], e["p99"], e["p99.9"], e["max"]], abs=0.05)
    notes = rows[0]["notes"] + rows[1]["notes"]
    assert any("stdin: the stream ended inside a record" in n and "the source stopped" in n
               for n in notes), notes
    assert not rows[1]["valid"]
    assert "(the record sources have ended)" in rows[1]["notes"][0]
    assert "       1 invalid: no sender record frames of interval 1" in text


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_delay_writer_bytes_equal_the_standard_writers(tmp_path, suffix):
    """DelayWriter's fast lines are byte for byte what csv.DictWriter / json.dumps make of
    delay_rows (a run number, no interval; then no run, no hashes; a tick of 2.5 ns)."""
    (rec,) = run_scenario(Scenario(packets=3000, flows=20, loss=0.002, seed=3,
                                   window_bytes=CONFIG.window_bytes), CONFIG)
    records = [dataclasses.replace(rec, run=4, interval=None),
               dataclasses.replace(rec, run=None, interval=7,
                                   details={**rec.details, "opa_hashes": None})]
    path = tmp_path / f"d{suffix}"
    w = DelayWriter(str(path), 2.5)
    assert w.write(records[:1]) + w.write(records[1:]) == 2 * rec.estimate["samples"] > 0
    w.close()
    ref = io.StringIO(newline="")
    if suffix == ".csv":
        writer = csv.DictWriter(ref, fieldnames=DELAY_COLUMNS)
        writer.writeheader()
        writer.writerows(delay_rows(records, 2.5))
    else:
        ref.writelines(json.dumps(row) + "\n" for row in delay_rows(records, 2.5))
    assert open(path, newline="").read() == ref.getvalue()


def test_mutated_frames_never_raise_and_notes_are_capped(tmp_path, intervals):
    """Frames with a flipped bit, cut short, a header byte changed or bytes appended go
    to the interval they name or to the next row's notes — never an exception; a flood
    of them lists the first few and a count; the streams kept stay bounded."""
    args = argparse.Namespace(records=[], mtu=1500, key_file=None, records_wait=0,
                              delays_out=None, histogram=None, confidence=0.98,
                              max_failures=5)
    w = OpaRecordWatch(CONFIG, args)
    w.done = {point: 0 for point in w.done}        # interval 0 has had its row
    frames = _both(intervals[0], 0) + _both(intervals[1], 1)
    rng = np.random.default_rng(5)
    for _ in range(600):
        f = bytearray(frames[rng.integers(len(frames))])
        mode = rng.integers(4)
        if mode == 0:
            f[rng.integers(len(f))] ^= 1 << int(rng.integers(8))
        elif mode == 1:
            f = f[:rng.integers(14, len(f))]
        elif mode == 2:
            f[rng.integers(14, 48)] = int(rng.integers(256))
        else:
            f += bytes(rng.integers(1, 256, int(rng.integers(1, 40))).astype(np.uint8))
        w.take(SourceEvent("frame", "fuzz", bytes(f)))
    assert all(len(s) <= MAX_PENDING for s in w.streams.values())
    assert len(w.loose) > MAX_NOTES and w.replays and w.streams
    capped = _capped(w.loose)
    assert len(capped) == MAX_NOTES + 1 and capped[-1].endswith("more such notes")
    w.close()


def test_sampled_groups_give_exact_delays_of_the_recorded_groups(capsys, tmp_path,
                                                                 devices):
    """Both points record groups 0..g/4-1 only: the interval is those groups (a note
    says so), every delay of them exact; the words of the other groups left out."""
    g = CONFIG.groups // 4
    cap = _pcap(tmp_path / "tap.pcap", _frames(devices[0], 0, "sender", groups=g)
                + _frames(devices[0], 0, "receiver", groups=g))
    delays = tmp_path / "d.csv"
    code, (row,), err = _watch(capsys, "--intervals", "1", "--records", cap,
                               "--delays-out", str(delays))
    assert code == 0 and row["valid"], (err, row["notes"])
    assert f"sampled: groups 0..{g - 1} of {CONFIG.groups} recorded (25.00%)" in row["notes"]
    s, r, true, _ = devices[0]
    gbits = CONFIG.groups.bit_length() - 1
    recorded = (r.packet >> np.uint64(64 - gbits)) < np.uint64(g)
    e = row["estimate"]
    assert e["received"] == recorded.sum() and e["samples"] > 0.95 * recorded.sum()
    assert e["sent"] == ((s.packet >> np.uint64(64 - gbits)) < np.uint64(g)).sum()
    rows = list(csv.DictReader(open(delays)))
    idx = np.array([int(x["packet"]) for x in rows])       # index among recorded packets
    assert [float(x["delay_ns"]) for x in rows] == \
        (true[recorded][idx] * CONFIG.tick_ns).tolist()


def test_records_mtu_below_one_receiver_record_is_a_usage_error(capsys):
    """``--mtu`` is the MTU the record frames were built for: no record frame of a core
    (both points' records, the receiver's 12 bytes) is built below 54."""
    with pytest.raises(SystemExit) as e:
        main([*WATCH, "--intervals", "1", "--records", "-", "--mtu", "53"])
    assert e.value.code == 2 and "--mtu: must be 54..9000" in capsys.readouterr().err
    p = argparse.ArgumentParser(prog="watch")
    add_opa_watch_options(p)
    assert p.parse_args(["--mtu", "54"]).mtu == 54


def _rotated(paths, out, stages):
    """tcpdump's rotation: stage 0 as the file ``paths[0]`` now; stage k as the whole
    next file ``paths[k]`` (written by a thread) once ``out`` holds k rows."""
    _pcap(paths[0], stages[0])

    def run():
        for k in range(1, len(stages)):
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline and (
                    not out.exists() or len(out.read_text().splitlines()) < k):
                time.sleep(0.02)
            time.sleep(0.05)           # a later modification time than the last file's
            _pcap(paths[k], stages[k])
    t = threading.Thread(target=run, daemon=True)
    t.start()
    return t


@pytest.mark.parametrize("naming, given", [
    (("tap.pcap", "tap.pcap1", "tap.pcap2"), "tap.pcap"),            # -C
    (("tap.pcap0", "tap.pcap1", "tap.pcap2"), "tap.pcap"),           # -C -W 3
    (("tap.pcap0", "tap.pcap1", "tap.pcap0"), "tap.pcap"),           # -C -W 2: a ring
    (("tap-20261128-120000.pcap", "tap-20261128-120010.pcap",
      "tap-20261128-120020.pcap"), "tap-%Y%m%d-%H%M%S.pcap"),        # -G 10
], ids=["-C", "-C -W", "-C -W ring", "-G"])
def test_rotated_files_are_followed(capsys, tmp_path, devices, naming, given):
    """Each interval's records split across two of tcpdump's files (the sender's in one,
    the receiver's in the next): every row valid and exact."""
    out = tmp_path / "run.jsonl"
    (tmp_path / "tap.pcap.old").write_bytes(b"not a capture")    # not of the series
    stages = [_both(devices[0], 0) + _frames(devices[1], 1, "sender"),
              _frames(devices[1], 1, "receiver") + _frames(devices[2], 2, "sender"),
              _frames(devices[2], 2, "receiver")]
    t = _rotated([tmp_path / n for n in naming], out, stages)
    code, rows, err = _watch(capsys, "--intervals", "3", "--records",
                             str(tmp_path / given), "--records-wait", "5",
                             "--output", str(out))
    t.join(timeout=10)
    assert code == 0, err
    assert [r["valid"] for r in rows] == [True, True, True], [r["notes"] for r in rows]
    for row, iv in zip(rows, devices):
        _check_exact(row, iv, None)


def test_a_rotated_file_cut_inside_a_record_is_an_error(capsys, tmp_path, devices):
    """The file tcpdump left for the next one must end on a record: a cut one stops
    the source with an error naming the file."""
    out = tmp_path / "run.jsonl"
    first = tmp_path / "tap.pcap"
    t = _rotated([first, tmp_path / "tap.pcap1"], out,
                 [_both(devices[0], 0), _both(devices[1], 1)])
    with open(first, "ab") as f:
        f.write(b"\x00" * 7)         # a record header begun
    code, rows, err = _watch(capsys, "--intervals", "2", "--records", str(first),
                             "--records-wait", "1", "--output", str(out))
    t.join(timeout=10)
    assert rows[0]["valid"] and not rows[1]["valid"]
    notes = " ".join(rows[1]["notes"])
    assert f"{first}: the stream ended inside a record" in notes, notes

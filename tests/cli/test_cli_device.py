# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl`` device commands against in-memory devices (fake://), and the offline ones:
exit codes, clear errors with no numbers printed, export formats, plan, plot, and
estimates from snapshot files, exported-frame captures and packet captures."""

import json
import math
import socket
import threading
import time
import urllib.request

import numpy as np
import pytest

from host_sw.contracts.frames import control_frame as cf
from host_sw.model.channel import Scenario, simulate_interval
from host_sw.cli import main
from host_sw.cli.export import csv_text, prometheus_text
from host_sw.contracts.config import LdaConfig
from host_sw.estimators.lda import tuned_threshold
from host_sw.device.fake_device import DeviceServer
from host_sw.estimators.measure import estimate_pair
from host_sw.estimators.planning import expected_effective_samples, plan_memory, size_for_loss
from host_sw.estimators.record import IntervalRecord, record_for_pair
from host_sw.model.pcap import write_pcap
from host_sw.device.fake_transport import register_fake_device

CONFIG = LdaConfig(banks=2, rows=256, thresholds=(0, 5))


@pytest.fixture(scope="module")
def pairs():
    out = []
    for seed in (1, 2, 3):
        out.append(simulate_interval(packets=10000, loss=0.01, seed=seed).synopses(CONFIG))
    return out


@pytest.fixture
def devices(pairs, scripted_device):
    s = scripted_device(CONFIG, [p[0] for p in pairs])
    r = scripted_device(CONFIG, [p[1] for p in pairs])
    for d, role, mac in ((s, 1, 0x0200_0000_0001), (r, 2, 0x0200_0000_0003)):
        d.set("config_id", CONFIG.config_id)
        d.set("role", role)
        d.set("local_mac", mac)
    r.set("marker_src_mac", 0x0200_0000_0001)
    register_fake_device("sender", s)
    register_fake_device("receiver", r)
    yield s, r
    register_fake_device("sender", None)
    register_fake_device("receiver", None)


@pytest.fixture
def config_file(tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(CONFIG.to_dict()))
    return str(p)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_info_and_config(capsys, devices, config_file):
    code, out, err = run(capsys, "info", "-d", "fake://sender", "--json")
    assert code == 0 and json.loads(out)["kind"] == "lda"
    code, out, _ = run(capsys, "info", "-d", "fake://sender")
    assert code == 0 and "LDA 2 × 256" in out
    code, out, _ = run(capsys, "config", "-d", "fake://sender", "--config", config_file,
                       "--thresholds", "1,7", "--mode", "time", "--interval-ticks", "1000",
                       "--json")
    assert code == 0
    doc = json.loads(out)
    assert doc["config"]["thresholds"] == [1, 7]
    assert doc["device_config_id"] == doc["config_id"]
    assert doc["interval_mode"]["mode"] == 1 and doc["interval_ticks"] == 1000


def test_id_mismatch_exit_1_and_nothing_on_stdout(capsys, devices, tmp_path):
    p = tmp_path / "other.json"
    p.write_text(json.dumps(LdaConfig().to_dict()))
    code, out, err = run(capsys, "read", "-d", "fake://sender", "--config", str(p))
    assert code == 1 and out == ""
    assert "error: device ID" in err and "rows (device 256, expected 1024)" in err


@pytest.mark.parametrize("fault, message", [("drop", "got 0 of"),
                                            ("extra", "unexpected byte")])
def test_bus_faults_exit_1_no_numbers(capsys, devices, fault, message):
    s, _ = devices
    s.swap()
    s.inject(fault, times=1000)
    code, out, err = run(capsys, "read", "-d", "fake://sender?retries=2", "--json")
    assert code == 1 and out == ""
    assert message in err and "failed after 3 attempts" in err


def test_read_and_estimate_from_snapshot_files(capsys, devices, pairs, tmp_path,
                                               config_file):
    s, r = devices
    s.swap()
    r.swap()
    code, out, _ = run(capsys, "read", "-d", "fake://sender", "-o", str(tmp_path / "s.json"))
    assert code == 0 and "interval 0: valid" in out
    code, out, _ = run(capsys, "read", "-d", "fake://receiver", "--json", "-o",
                       str(tmp_path / "r.json"))
    assert code == 0 and json.loads(out)["seq"] == 0
    code, out, _ = run(capsys, "estimate", str(tmp_path / "s.json"), str(tmp_path / "r.json"),
                       "--json")
    assert code == 0
    rec = json.loads(out)
    direct = estimate_pair(*pairs[0])
    direct.pop("notes")
    assert rec["valid"] and rec["estimate"] == direct
    # Exported control frames of the same synopses, as two captures.
    for name, syn, mac, role in (("s", pairs[0][0], 1, 1), ("r", pairs[0][1], 3, 2)):
        frames = cf.build_synopsis_frames(syn, seq=0, src_mac=mac, dst_mac=2, role=role)
        write_pcap(tmp_path / f"{name}.pcap", frames, list(range(len(frames))))
    code, out, err = run(capsys, "estimate", str(tmp_path / "s.pcap"),
                         str(tmp_path / "r.pcap"), "--config", config_file, "--json")
    assert code == 0, err
    assert json.loads(out)["estimate"] == direct
    # A corrupted export frame: a clear error, no numbers.
    frames = cf.build_synopsis_frames(pairs[0][1], seq=0, src_mac=1, dst_mac=2, role=2)
    frames[1] = frames[1][:100]
    write_pcap(tmp_path / "bad.pcap", frames, list(range(len(frames))))
    code, out, err = run(capsys, "estimate", str(tmp_path / "s.pcap"),
                         str(tmp_path / "bad.pcap"), "--config", config_file)
    assert code == 1 and out == "" and "declares" in err


def test_estimate_from_two_packet_captures(capsys, tmp_path):
    sc = Scenario(packets=4000, flows=20, loss=0.01, delay="exponential:mean=2us", seed=5)
    sim = sc.run()
    tr = sim.trace
    (iv,) = sim.intervals
    write_pcap(tmp_path / "s.pcap", tr.frames(), tr.timestamps)
    order = np.argsort(iv.receiver.timestamps, kind="stable")
    write_pcap(tmp_path / "r.pcap", tr.frames(iv.receiver.indices[order]),
               iv.receiver.timestamps[order])
    code, out, err = run(capsys, "estimate", str(tmp_path / "s.pcap"),
                         str(tmp_path / "r.pcap"), "--interval-ns", str(10**12), "--json")
    assert code == 0, err
    rec = json.loads(out)
    assert rec["true"]["lost"] == iv.truth.lost > 0
    lo, hi = rec["estimate"]["ci"]
    assert lo <= rec["true"]["mean"] <= hi


def test_watch_pairs_intervals_and_flags_invalid(capsys, devices, tmp_path):
    s, r = devices
    records = tmp_path / "w.jsonl"
    code, out, err = run(capsys, "watch", "--sender", "fake://sender", "--receiver",
                         "fake://receiver", "--swap", "--period", "0", "--intervals", "2",
                         "-o", str(records))
    assert code == 0, err
    lines = out.splitlines()
    assert "mean ns" in lines[0] and len(lines) == 3
    recs = [json.loads(l) for l in records.read_text().splitlines()]
    assert [x["interval"] for x in recs] == [0, 1] and all(x["valid"] for x in recs)
    assert "status_delta" not in recs[0]["sender"]
    assert recs[1]["sender"]["status_delta"]["frames_seen"] == 0
    # The receiver sees extra boundaries (overruns while interval 2 is frozen): its next
    # interval spans several of the sender's; that record is invalid, with no estimate.
    r.swap()
    r.swap()
    code, out, err = run(capsys, "watch", "--sender", "fake://sender", "--receiver",
                         "fake://receiver", "--swap", "--period", "0", "--intervals", "2",
                         "--json")
    assert code == 0
    first, rec = [json.loads(l) for l in out.splitlines()]
    assert first["valid"] and first["interval"] == 2
    assert not rec["valid"] and rec["estimate"] is None
    assert any("sender interval 3 and receiver interval 5 differ" in n for n in rec["notes"])
    assert any("receiver: overrun" in n for n in rec["notes"]), rec["notes"]


def test_watch_table_prints_no_number_for_invalid(capsys, pairs, scripted_device):
    s = scripted_device(CONFIG, [pairs[0][0]])
    r = scripted_device(CONFIG, [pairs[0][1]])
    s.set("config_id", CONFIG.config_id)          # the receiver's was never programmed
    register_fake_device("s2", s)
    register_fake_device("r2", r)
    try:
        code, out, err = run(capsys, "watch", "--sender", "fake://s2", "--receiver",
                             "fake://r2", "--swap", "--period", "0", "--intervals", "1")
    finally:
        register_fake_device("s2", None)
        register_fake_device("r2", None)
    # The row is printed, then a device running another configuration ends the run.
    row = out.splitlines()[1]
    assert "invalid" in row and "config ID" in row and " ns" not in row
    assert code == 1 and err.count("error:") == 1
    assert "the receiver (fake://r2) runs another configuration" in err


def _records(pairs):
    out = [record_for_pair(s, r, interval=k, when=1000.0 + k) for k, (s, r) in enumerate(pairs)]
    out.append(record_for_pair(*pairs[0], interval=9, valid=False, notes=["overrun"]))
    return out


def _write_records(path, recs):
    path.write_text("".join(json.dumps(r.to_json()) + "\n" for r in recs))


def test_records_round_trip_through_json(pairs):
    for rec in _records(pairs):
        assert IntervalRecord.from_json(json.loads(json.dumps(rec.to_json()))) == rec
    with pytest.raises(ValueError, match="no 'estimate' key"):
        IntervalRecord.from_json({"interval": 1})


def test_export_formats(capsys, pairs, tmp_path):
    recs = _records(pairs)
    path = tmp_path / "r.jsonl"
    _write_records(path, recs)
    code, out, _ = run(capsys, "export", "-i", str(path), "-f", "csv")
    assert code == 0 and out == csv_text(recs)
    rows = out.splitlines()
    assert rows[0].startswith("interval,time,valid") and len(rows) == 5
    assert rows[4].startswith("9,") and ",False," in rows[4] and rows[4].endswith("overrun")
    code, out, _ = run(capsys, "export", "-i", str(path), "-f", "prometheus")
    assert out == prometheus_text(recs)
    last = recs[2].estimate
    assert (f'ldactl_delay_mean_seconds{{synopsis="lda",config_id="{CONFIG.config_id:#010x}"}}'
            f' {last["mean"] * 1e-9!r}') in out
    assert "nanoseconds" not in out
    assert 'ldactl_intervals_total{valid="false"} 1' in out
    assert "# TYPE ldactl_loss_ratio gauge" in out
    code, out, _ = run(capsys, "export", "-i", str(path))
    assert [json.loads(l) for l in out.splitlines()] == [r.to_json() for r in recs]
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    code, out, err = run(capsys, "export", "-i", str(bad), "-f", "csv")
    assert code == 1 and out == "" and "bad.jsonl:1" in err


def test_export_serves_metrics(pairs, tmp_path):
    path = tmp_path / "r.jsonl"
    _write_records(path, _records(pairs))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t = threading.Thread(target=main, args=(["export", "-i", str(path), "--serve", str(port),
                                             "--serve-once"],), daemon=True)
    t.start()
    body = None
    for _ in range(100):
        try:
            body = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read()
            break
        except OSError:
            time.sleep(0.05)
    t.join(5)
    assert body is not None and b"ldactl_delay_mean_seconds" in body


def test_plan_follows_lda_section_iv(capsys):
    # One known loss rate: a single bank with all counters, tuned as §IV-A says.
    (best, *_) = plan_memory(counters=2048, packets=5e6, loss_min=0.01, loss_max=0.01)
    assert best["banks"] == 1 and best["rows"] == 2048
    assert best["thresholds"] == [tuned_threshold(2048, 0.01 * 5e6)]
    # A wide range of loss: several banks beat one (§IV-B).
    (wide, *_) = plan_memory(counters=2048, packets=5e6, loss_min=1e-4, loss_max=0.2)
    assert wide["banks"] > 1 and wide["banks"] * wide["rows"] <= 2048
    assert wide["thresholds"] == sorted(wide["thresholds"])
    code, out, _ = run(capsys, "plan", "--bytes", str(2048 * 9), "--loss-min", "1%",
                       "--loss-max", "1%", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["counters"] == 2048 and doc["recommended"] == best
    with pytest.raises(SystemExit) as exc:
        main(["plan", "--counters", "100", "--loss-min", "0.2", "--loss-max", "0.1"])
    assert exc.value.code == 2


def test_plan_says_which_size_the_observed_loss_needs(capsys):
    # 5 % of 5e6 packets lost, a ±2 % mean at cv 1: E[S] ≥ 2 ln(100)/0.02² = 23 026;
    # one tuned bank of 2048 rows falls short, 4096 rows (threshold 7) reach it.
    need = size_for_loss(packets=5e6, loss=0.05, error=0.02)
    assert need["samples_needed"] == pytest.approx(2 * math.log(100) / 0.02 ** 2)
    assert need["rows"] == 4096 and need["threshold"] == tuned_threshold(4096, 250_000)
    assert need["expected_samples"] >= need["samples_needed"] > \
        expected_effective_samples(2048, (tuned_threshold(2048, 250_000),), 5e6, 0.05)
    assert need["rda_buckets"] == 500_000
    code, out, _ = run(capsys, "plan", "--counters", "2048", "--observed-loss", "5%",
                       "--error", "0.02")
    assert code == 0
    assert ("one bank of 4096 rows at threshold 7 (E[S] 23035): the budget of 2048 "
            "counters is 2× too small") in out
    code, out, _ = run(capsys, "plan", "--counters", "2048", "--packets", "2000",
                       "--observed-loss", "1%", "--json")
    doc = json.loads(out)
    assert doc["observed"]["rows"] is None and doc["observed"]["rda_buckets"] == 40


@pytest.mark.parametrize("pairing, message", [
    ("swapped", "sender and receiver swapped: the sender's input comes from a receiver"),
    ("same_point", "both inputs come from one point (source MAC 02:00:00:00:00:01): the "
                   "same point twice"),
    ("foreign", "the receiver accepts markers from 02:00:00:00:00:09, not from the sender "
                "02:00:00:00:00:01: the two points measure different streams"),
    ("unsaid_role", "the sender's input comes from a point whose role is none, not sender"),
    ("role_flipped", "check value mismatch")])
def test_snapshot_pairs_of_the_wrong_points_are_refused(capsys, devices, tmp_path, pairing,
                                                        message):
    """Snapshot files carry the point's role and source MAC inside the check value
    (FROZEN_ROLE, FROZEN_SRC_MAC) and a receiver's accepted marker source beside it:
    estimate refuses, in one line with exit 1, swapped files, one point's file twice (a
    byte-different copy), a receiver that accepts another sender's markers, and a point
    whose role was never said; a role edited in the file breaks its check."""
    s, r = devices
    if pairing == "unsaid_role":
        s.set("role", 0)                       # manual mode: no role implied
    s.swap()
    r.swap()
    for name, dev in (("s", "sender"), ("r", "receiver")):
        assert run(capsys, "read", "-d", f"fake://{dev}", "-o",
                   str(tmp_path / f"{name}.json"))[0] == 0
    sender, receiver = tmp_path / "s.json", tmp_path / "r.json"
    if pairing == "swapped":
        sender, receiver = receiver, sender
    elif pairing == "same_point":
        receiver = tmp_path / "s2.json"
        receiver.write_text(json.dumps(json.loads(sender.read_text()), indent=1))
    elif pairing == "foreign":
        doc = json.loads(receiver.read_text())
        doc["marker_src_mac"] = "02:00:00:00:00:09"
        receiver.write_text(json.dumps(doc))
    elif pairing == "role_flipped":            # swapped files with their roles edited
        for path, role in ((sender, 2), (receiver, 1)):
            doc = json.loads(path.read_text())
            doc["role"] = role
            path.write_text(json.dumps(doc))
        sender, receiver = receiver, sender
    code, out, err = run(capsys, "estimate", str(sender), str(receiver), "--json")
    if pairing == "role_flipped":              # not refused as a pair: invalid, no numbers
        rec = json.loads(out)
        assert code == 0 and not rec["valid"] and rec["estimate"] is None
        assert any(message in n for n in rec["notes"]), rec["notes"]
        return
    assert code == 1 and out == "" and err.count("\n") == 1
    assert message in err


def test_plot_png(capsys, pairs, tmp_path):
    path = tmp_path / "r.jsonl"
    _write_records(path, _records(pairs))
    code, out, err = run(capsys, "plot", "-i", str(path), "-o", str(tmp_path / "e.png"))
    assert code == 0, err
    assert (tmp_path / "e.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("argv", [["read"], ["watch", "--sender", "x"], ["plan"],
                                  ["estimate", "a"], ["export", "-i", "x", "-f", "xml"]])
def test_usage_errors_exit_2(capsys, argv):
    with pytest.raises(SystemExit) as exc:
        main(argv)
    assert exc.value.code == 2


def test_missing_files_exit_1(capsys, tmp_path):
    code, out, err = run(capsys, "estimate", str(tmp_path / "a.json"), str(tmp_path / "b.json"))
    assert code == 1 and out == "" and "error" in err
    code, out, err = run(capsys, "read", "-d", "fake://nobody")
    assert code == 1 and "no fake device" in err


def test_watch_over_tcp(capsys, pairs, scripted_device):
    s = scripted_device(CONFIG, [p[0] for p in pairs])
    r = scripted_device(CONFIG, [p[1] for p in pairs])
    for d in (s, r):
        d.set("config_id", CONFIG.config_id)
    s.set("frames_seen", 0xFFFFFFF0)
    s.hooks.append(lambda dev, cmd, n, a: dev.set("frames_seen", (dev.get("frames_seen") + 4)
                                                  & 0xFFFFFFFF) if a == 8 else None)
    with DeviceServer(s) as a, DeviceServer(r) as b:
        code, out, err = run(capsys, "watch", "--sender", a.url, "--receiver", b.url,
                             "--swap", "--period", "0", "--intervals", "3", "--json")
    assert code == 0, err
    recs = [json.loads(l) for l in out.splitlines()]
    for rec, (sy, ry) in zip(recs, pairs):
        direct = estimate_pair(sy, ry)
        direct.pop("notes")
        assert rec["valid"] and rec["estimate"] == direct
    # frames_seen (+4 per CONTROL write) wraps from 0xfffffffc to 4 before the last read.
    assert [r["sender"].get("status_delta", {}).get("frames_seen") for r in recs] == \
        [None, 8, 8]

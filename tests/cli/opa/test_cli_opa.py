# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl simulate --synopsis opa``: percentiles equal the truth's (every recovered
delay exact), the per-packet and histogram files, the Prometheus histogram, and the OPA
options' usage errors."""

import csv
import json

import numpy as np
import pytest

from host_sw.cli import main
from host_sw.cli.opa.output import prometheus_histogram


def _numbers(line):
    return [float(x) for x in line.replace("/", " ").replace(";", " ").split()
            if x.replace(".", "", 1).isdigit()]


def test_simulate_opa_prints_exact_percentiles(capsys, tmp_path):
    delays, hist = tmp_path / "d.jsonl", tmp_path / "h.csv"
    assert main(["simulate", "--synopsis", "opa", "--packets", "20000", "--loss", "0.002",
                 "--fast", "--seed", "4", "--delays", str(delays),
                 "--histogram", str(hist)]) == 0
    out = capsys.readouterr().out.splitlines()
    row = out[2].split()
    sent, recv, lost, est_lost = (int(x) for x in row[1:5])
    assert sent == 20000 and recv == sent - lost and est_lost == lost
    estimate = [float(x) for x in row[6:11]]
    truth_line = next(l for l in out if "true p50" in l)
    assert "every recovered delay exact" in truth_line
    assert estimate == _numbers(truth_line.split(":", 1)[1])[:5]
    rows = [json.loads(l) for l in delays.read_text().splitlines()]
    assert len(rows) == recv and max(r["delay_ns"] for r in rows) == estimate[-1]
    counts = list(csv.reader(hist.open()))
    assert counts[0] == ["le_seconds", "count"] and counts[-1] == ["+Inf", str(recv)]


def test_simulate_json_carries_the_opa_percentiles(capsys, tmp_path):
    delays = tmp_path / "d.jsonl"
    args = ["simulate", "--synopsis", "opa", "--packets", "5000", "--loss", "0.002",
            "--fast", "--seed", "5"]
    assert main([*args, "--json", "--delays", str(delays)]) == 0
    (line,) = [json.loads(l) for l in capsys.readouterr().out.splitlines() if l.strip()]
    e = line["estimate"]
    assert line["synopsis"] == "opa"
    d = np.array([json.loads(l)["delay_ns"] for l in delays.read_text().splitlines()])
    assert len(d) == line["true"]["received"] == e["samples"]
    for q in (50, 90, 99, 99.9):
        assert e[f"p{q:g}"] == pytest.approx(float(np.percentile(d, q)))
    assert e["max"] == d.max() and e["recovered_fraction"] == 1.0
    assert e["unrecovered_groups"] == 0 and e["reordered"] >= 0
    assert main(args) == 0   # the table run prints the same percentiles
    row = capsys.readouterr().out.splitlines()[2].split()
    assert [float(x) for x in row[6:11]] == pytest.approx(
        [e["p50"], e["p90"], e["p99"], e["p99.9"], e["max"]], abs=0.05)


@pytest.mark.parametrize("option", [["--groups", "64"], ["--delays-out", "x.csv"],
                                    ["--histogram", "h.csv"]])
def test_opa_options_need_opa(capsys, option):
    with pytest.raises(SystemExit) as e:
        main(["simulate", "--packets", "1000", *option])
    assert e.value.code == 2
    assert f"{option[0]} applies to --synopsis opa only" in capsys.readouterr().err


def test_prometheus_histogram_in_seconds():
    lines = prometheus_histogram("lda_delay_seconds", np.array([5e-9, 1.5e-6, 3.0]),
                                 'core="0"')
    assert lines[0] == "# TYPE lda_delay_seconds histogram"
    assert 'lda_delay_seconds_bucket{core="0",le="1e-08"} 1' in lines
    assert 'lda_delay_seconds_bucket{core="0",le="2e-06"} 2' in lines
    assert 'lda_delay_seconds_bucket{core="0",le="+Inf"} 3' in lines
    assert lines[-1] == 'lda_delay_seconds_count{core="0"} 3'


def test_estimate_two_captures_prints_percentiles(capsys, tmp_path):
    from host_sw.model.channel import Scenario
    from host_sw.model.pcap import write_pcap
    sim = Scenario(packets=3000, flows=20, loss=0.002, delay="exponential:mean=2us",
                   seed=7).run()
    tr, (iv,) = sim.trace, sim.intervals
    write_pcap(tmp_path / "s.pcap", tr.frames(), tr.timestamps)
    order = np.argsort(iv.receiver.timestamps, kind="stable")
    write_pcap(tmp_path / "r.pcap", tr.frames(iv.receiver.indices[order]),
               iv.receiver.timestamps[order])
    delays, hist = tmp_path / "d.csv", tmp_path / "h.csv"
    assert main(["estimate", str(tmp_path / "s.pcap"), str(tmp_path / "r.pcap"),
                 "--synopsis", "opa", "--delays-out", str(delays),
                 "--histogram", str(hist)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:6] == ["interval", "sent", "recv", "lost", "reord", "p50"]
    cells = out[1].split()
    assert int(cells[1]) == iv.truth.sent and int(cells[3]) == iv.truth.lost
    assert float(cells[9]) == float(iv.truth.delays.max())     # max, exact
    truth_line = next(line for line in out if "true p50" in line)
    assert "every recovered delay exact" in truth_line
    # every received packet's delay, each equal to its true delay (the captures' truth)
    rows = list(csv.DictReader(delays.open()))
    assert len(rows) == iv.truth.received
    assert sorted(float(r["delay_ns"]) for r in rows) == sorted(iv.truth.delays.tolist())
    counts = list(csv.reader(hist.open()))
    assert counts[-1] == ["+Inf", str(iv.truth.received)]
    # the per-packet outputs are OPA's alone
    with pytest.raises(SystemExit) as e:
        main(["estimate", str(tmp_path / "s.pcap"), str(tmp_path / "r.pcap"),
              "--delays-out", str(tmp_path / "x.csv")])
    assert e.value.code == 2
    assert "need OPA records, not lda" in capsys.readouterr().err


def test_export_prometheus_histogram_from_records(capsys, tmp_path):
    records = tmp_path / "r.jsonl"
    from host_sw.contracts.config import OpaConfig
    from host_sw.estimators.simulate import run_scenario
    from host_sw.model.channel import Scenario
    (rec,) = run_scenario(Scenario(packets=5000, fast=True, seed=2), OpaConfig(groups=1024))
    records.write_text(json.dumps(rec.to_json()) + "\n")
    assert main(["export", "--input", str(records), "--format", "prometheus"]) == 0
    text = capsys.readouterr().out.splitlines()
    assert "# TYPE ldactl_delay_seconds histogram" in text
    count = next(l for l in text if l.startswith("ldactl_delay_seconds_count"))
    assert count.endswith(" 5000")
    inf = next(l for l in text if 'le="+Inf"' in l)
    assert inf.endswith(" 5000") and 'synopsis="opa"' in inf
    delays = rec.details["opa"].recovered_delays * 1e-9
    bucket = next(l for l in text if 'le="1e-07"' in l)
    assert int(bucket.split()[-1]) == int((delays <= 1e-7).sum())


def test_estimate_a_partial_pair_reports_the_window_both_saw(capsys, tmp_path):
    """A sender capture that stopped early (issue 23: −196.9 % loss before): the row
    covers the window both captures saw, its loss that window's (sent − received of
    the packets the sender sent in it), the trimming in a note and in the JSON."""
    from host_sw.model.channel import Scenario
    from host_sw.model.pcap import write_pcap
    sim = Scenario(packets=3000, flows=20, loss=0.002, delay="exponential:mean=2us",
                   seed=7).run()
    tr, (iv,) = sim.trace, sim.intervals
    s_ts = tr.timestamps
    cut = int(s_ts[0] + 0.5 * (s_ts[-1] - s_ts[0]))
    keep = np.flatnonzero(s_ts <= cut)
    write_pcap(tmp_path / "s.pcap", tr.frames(keep), s_ts[keep])
    order = np.argsort(iv.receiver.timestamps, kind="stable")
    write_pcap(tmp_path / "r.pcap", tr.frames(iv.receiver.indices[order]),
               iv.receiver.timestamps[order])
    args = ["estimate", str(tmp_path / "s.pcap"), str(tmp_path / "r.pcap"),
            "--synopsis", "opa"]
    assert main([*args, "--json"]) == 0
    (rec,) = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert rec["valid"], rec["notes"]
    e = rec["estimate"]
    note = next(n for n in rec["notes"] if n.startswith("window both captures saw"))
    lo, hi = (int(x) for x in note.split("sender times ")[1].split(" ns")[0].split(" to "))
    sent = np.flatnonzero((s_ts >= lo) & (s_ts <= hi))
    got = set(iv.receiver.indices.tolist())
    lost = sum(1 for i in sent.tolist() if i not in got)
    assert e["sent"] == len(sent) == len(keep) and e["lost"] == lost == rec["true"]["lost"]
    assert 0 <= e["loss_rate"] < 0.01 and 0 < e["mean"] < 20_000       # ~2 us
    left = int(note.split("left out 0 sender and ")[1].split(" receiver")[0])
    assert left == len(iv.receiver.indices) - e["received"] > 1000
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "window both captures saw" in out and "left out" in out


_GOOD_OPA = {"interval": 3, "time": 1.0, "valid": True, "synopsis": "opa",
             "config_id": "0x0000abcd", "sender": {}, "receiver": {},
             "estimate": {"mean": 200.0, "std": 10.0, "ci": [None, None], "lost": 1,
                          "loss_rate": 0.01, "samples": 90, "sent": 100, "received": 99,
                          "unrecovered": 9, "p50": None, "p50_range": [150.0, 210.0],
                          "max": None, "max_range": [900.0, None]},
             "notes": []}


@pytest.mark.parametrize("change, message", [
    ({"p50_range": [210.0, 150.0]}, "'estimate.p50_range' low 210.0 is above its high 150.0"),
    ({"p50_range": [150.0]}, "'estimate.p50_range' must be [low, high]"),
    ({"p99_range": ["a", None]}, "'estimate.p99_range' must be [low, high]"),
    ({"p50": 100.0}, "'estimate.p50' 100.0 is outside its range [150.0, 210.0]"),
    ({"unrecovered": -1}, "'estimate.unrecovered' must be a count"),
    ({"unrecovered": 12}, "'estimate.unrecovered' 12 and 'estimate.samples' 90 are not "
                          "the 99 received"),
])
def test_malformed_opa_ranges_are_refused(capsys, tmp_path, change, message):
    """Records read back (export, plot): impossible OPA ranges and counts are refused,
    naming the line (issue 23 item 5)."""
    path = tmp_path / "r.jsonl"
    bad = {**_GOOD_OPA, "estimate": {**_GOOD_OPA["estimate"], **change}}
    path.write_text(json.dumps(_GOOD_OPA) + "\n" + json.dumps(bad) + "\n")
    assert main(["export", "-f", "csv", "-i", str(path)]) == 1
    err = capsys.readouterr().err
    assert f"{path}:2" in err and message in err, err
    path.write_text(json.dumps(_GOOD_OPA) + "\n")
    assert main(["export", "-f", "csv", "-i", str(path)]) == 0

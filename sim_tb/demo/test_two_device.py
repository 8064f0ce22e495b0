# SPDX-License-Identifier: BSD-2-Clause
"""pytest entry for the two-device harness and the demo (:mod:`sim_tb.demo.two_device`,
:mod:`sim_tb.demo`): one small simulation (2 intervals) run through the demo's entry
point, then checked from its outputs:

* the demo printed its table (header and one row per interval) and exited 0;
* the counters read from both devices over their TCP bridges equal the golden model's
  synopses of the same frames (computed by the harness from the frames it offered and
  their SOF cycles) word for word;
* the estimate printed from the devices equals :func:`host_sw.estimators.measure.estimate_pair` on
  the golden synopses;
* the true mean of every interval lies in the estimate's confidence interval (default
  seed), and the packet counts match the ground truth;

* the sender's in-band export, decoded from the receiver's output stream, equals the
  sender's bus readout word for word (in-band mode: the devices end the intervals);

and a second small simulation (harness mode: the harness swaps both devices) read by
``ldactl watch`` (in-process, its default transport options, the URLs the harness
publishes), checked against the ground truth.
"""

import contextlib
import importlib.util
import io
import json
import shutil
import sys

import pytest

from host_sw.cli import main as ldactl
from host_sw.contracts.synopsis import Synopsis
from host_sw.device.snapshot import Snapshot
from host_sw.estimators.measure import estimate_pair
from sim_tb.demo import demo
from sim_tb.demo.two_device import TwoDeviceParams, start_simulation
from sim_tb.lib.verilator_build import verilator_env

pytestmark = [
    pytest.mark.cocotb,
    pytest.mark.skipif(importlib.util.find_spec("hw.lda_pipeline") is None,
                       reason="hw/lda_pipeline.py (the core's top) does not exist yet"),
    pytest.mark.skipif(shutil.which("iverilog") is None and verilator_env() is None,
                       reason="no HDL simulator (Icarus Verilog or Verilator)"),
]

INTERVALS = 2
#: In-band mode: the sender's timer ends the intervals, so an interval must be long enough
#: for the host to read both devices' frozen copies over the byte-serial bus first (32
#: rows: 192 words per device) — 400 frames are about 13 000 clocks.
FRAMES = 400
ROWS = 32
#: The 24-byte window keeps the export and the simulator build small (the demo's default
#: is the product's 64 bytes).
WINDOW = 24


def run_demo_tiny(out):
    """The demo's entry point at a tiny size; (exit status, printed lines, out)."""
    buffer = io.StringIO()

    class Tee(io.TextIOBase):
        def write(self, s):
            buffer.write(s)
            return sys.__stdout__.write(s)

    with contextlib.redirect_stdout(Tee()):
        rc = demo.main(["--intervals", str(INTERVALS), "--frames", str(FRAMES),
                        "--rows", str(ROWS), "--window-bytes", str(WINDOW),
                        "--out", str(out), "--no-check"])
    lines = buffer.getvalue().splitlines()
    return rc, lines, out


def _load(out):
    records = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    snaps = [json.loads(x) for x in (out / "snapshots.jsonl").read_text().splitlines()]
    truth = [json.loads(x) for x in (out / "sim" / "truth.jsonl").read_text().splitlines()]
    return records, snaps, [t for t in truth if not t.get("done")]


def test_two_devices_demo(tmp_path):
    """One simulation (xdist would run a module fixture once per worker), three checks."""
    demo_run = run_demo_tiny(tmp_path)
    check_demo_prints_the_table(demo_run)
    check_device_counters_equal_the_golden_model(demo_run)
    check_estimates_equal_estimate_pair_on_golden_and_contain_the_truth(demo_run)


def check_demo_prints_the_table(demo_run):
    rc, lines, out = demo_run
    assert rc == 0, "\n".join(lines)
    assert demo.HEADER in lines
    start = lines.index(demo.HEADER) + 1
    rows = lines[start:start + INTERVALS]
    assert len(rows) == INTERVALS and all(" invalid" not in r for r in rows), rows
    # the sender's in-band export, decoded from the receiver's output, equals its bus
    # readout word for word (the demo's own check, printed in the row)
    assert all("= bus" in r for r in rows), rows
    assert f"# in-band: {INTERVALS} of {INTERVALS} sender exports" in "\n".join(lines)
    assert (out / "demo.png").stat().st_size > 1000


def check_device_counters_equal_the_golden_model(demo_run):
    rc, _, out = demo_run
    records, snaps, truth = _load(out)
    assert len(records) == len(snaps) == len(truth) == INTERVALS
    by_seq = {t["interval"]: t for t in truth}
    for pair in snaps:
        s = Snapshot.from_json(pair["sender"])
        r = Snapshot.from_json(pair["receiver"])
        assert s.seq == r.seq and s.valid and r.valid, (s.notes, r.notes)
        t = by_seq[s.seq]
        assert s.synopsis.words() == t["golden_sender_words"], f"sender interval {s.seq}"
        assert r.synopsis.words() == t["golden_receiver_words"], f"receiver {s.seq}"
        assert s.packets == t["sent"] and r.packets == t["received"]


def check_estimates_equal_estimate_pair_on_golden_and_contain_the_truth(demo_run):
    rc, _, out = demo_run
    records, snaps, truth = _load(out)
    by_seq = {t["interval"]: t for t in truth}
    config = Snapshot.from_json(snaps[0]["sender"]).config
    for rec in records:
        t = by_seq[rec["interval"]]
        golden = estimate_pair(Synopsis.from_words(config, t["golden_sender_words"]),
                               Synopsis.from_words(config, t["golden_receiver_words"]))
        est = rec["estimate"]
        for key in ("mean", "std", "ci", "lost", "samples", "sent", "received"):
            assert est[key] == golden[key], (key, est[key], golden[key])
        assert est["sent"] == t["sent"] and est["lost"] == t["lost"]
        lo, hi = est["ci"]
        assert lo <= t["true_mean_ns"] <= hi, (rec["interval"], est, t["true_mean_ns"])
        assert rec["true"]["in_ci"]


def test_ldactl_watch_reads_the_simulation(tmp_path, capsys):
    """``ldactl watch`` with its default transport options, on the URLs the harness
    publishes, reads every interval; its numbers agree with the ground truth. The demo
    test's core shape (``ROWS``, ``WINDOW``), so the two tests share one simulator build."""
    params = TwoDeviceParams(intervals=2, frames=30, seed=3, host_wait_s=120,
                             mode="harness", rows=ROWS, window_bytes=WINDOW)
    sim = start_simulation(params, tmp_path)
    try:
        ports = sim.wait_ports(300)
        rc = ldactl(["watch", "--sender", ports["sender"], "--receiver", ports["receiver"],
                     "--tick-ns", "4", "--intervals", "2", "--json"])
        out = capsys.readouterr().out
        assert rc == 0, out
        assert sim.wait(300) == 0, sim.log_tail()
    finally:
        sim.stop()
    records = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    truth = {t["interval"]: t for t in sim.truth() if not t.get("done")}
    assert [r["interval"] for r in records] == sorted(truth)
    for rec in records:
        t = truth[rec["interval"]]
        e = rec["estimate"]
        assert rec["valid"] and e["sent"] == t["sent"] and e["received"] == t["received"]
        assert e["ci"][0] <= t["true_mean_ns"] <= e["ci"][1], (e, t["true_mean_ns"])

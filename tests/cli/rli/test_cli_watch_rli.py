# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl watch`` on an RLI receiver (issue 14, item 4): the receiver alone is read per
interval; its snapshot (the golden model's cells of a simulated interval on the queueing
channel, served by an in-memory device: the RLI core has no bus in gateware yet) gives
the aggregate and the per-flow table of the ``--flows`` keys, its RLI_FROZEN_* registers
are printed, and an interval with buffer overflow or refused references is flagged with
no number. Another kind without ``--sender`` is a usage error (exit 2)."""

import csv
import json

import numpy as np
import pytest

from host_sw.cli import main
from host_sw.contracts.config import LdaConfig, RliConfig
from host_sw.device.fake_transport import register_fake_device
from host_sw.estimators.flows import flow_label
from host_sw.estimators.rli.estimate import aggregate, estimate_flows, simulated_synopses
from host_sw.model.channel import Scenario
from host_sw.model.golden_rli import with_references

CONFIG = RliConfig(cells=512, ref_packets=20)


@pytest.fixture(scope="module")
def intervals():
    """Three simulated intervals: (receiver synopsis, RLI registers, trace, receiver
    flow hashes of the trace's flows)."""
    out = []
    for seed in (1, 2, 3):
        sc = Scenario(packets=3000, flows=6, queue="red:utilisation=0.88",
                      delay="constant:value=0", loss=0.0, rate_pps=2e6, seed=seed)
        trace, _ = with_references(sc.trace(), CONFIG)
        iv = sc.run(trace=trace).intervals[0]
        _, receiver, stats = simulated_synopses(CONFIG, iv)
        regs = {"rli_frozen_references": stats.references,
                "rli_frozen_overflowed": stats.overflowed,
                "rli_frozen_unreferenced": stats.unreferenced, "rli_frozen_refused": 0}
        out.append((receiver, regs, trace))
    out[1][1]["rli_frozen_overflowed"] = 7          # the receiver flagged interval 1
    return out


@pytest.fixture
def receiver(intervals, scripted_device):
    class RliReceiver(scripted_device):
        """Each swap freezes the next interval's cells with its RLI registers."""

        def __init__(self):
            super().__init__(CONFIG, [s for s, _, _ in intervals])
            self.set("config_id", CONFIG.config_id)
            self.regs = [dict(r) for _, r, _ in intervals]
            self.plan = {}        # interval -> fault kinds of the replies after its freeze

        def swap(self, timestamp=None):
            fresh = self.frozen is None
            if fresh and self.regs:
                for name, value in self.regs.pop(0).items():
                    self.set(name, value)
            super().swap(timestamp)
            if fresh:
                self.faults += self.plan.pop(self.get("frozen_seq"), [])

    dev = RliReceiver()
    register_fake_device("rli_r", dev)
    yield dev
    register_fake_device("rli_r", None)


def _keys(tmp_path, trace, n=3):
    lines = []
    for w, c in list(zip(trace.flow_windows, trace.flow_classes))[:n]:
        proto, src, _, dst = flow_label(w, c).split()[:4]
        lines.append(f"{proto} {' '.join(src.rsplit(':', 1))} {' '.join(dst.rsplit(':', 1))}")
    path = tmp_path / "keys.txt"
    path.write_text("\n".join(lines) + "\n")
    return path


def _watch(capsys, tmp_path, *extra):
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(CONFIG.to_dict()))
    code = main(["watch", "--receiver", "fake://rli_r", "--config", str(cfg), "--swap",
                 "--period", "0", "--intervals", "3", "--wait", "5", *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_receiver_alone_json_rows(capsys, tmp_path, receiver, intervals):
    code, out, err = _watch(capsys, tmp_path, "--json", "--flows",
                            str(_keys(tmp_path, intervals[0][2])))
    assert code == 0, err
    rows = [json.loads(l) for l in out.splitlines()]
    assert [r["interval"] for r in rows] == [0, 1, 2]
    assert [r["valid"] for r in rows] == [True, False, True]
    for row, (syn, regs, _) in zip(rows, intervals):
        assert row["receiver"]["rli"]["references"] == regs["rli_frozen_references"] > 100
    mean, std, n = aggregate(intervals[0][0])
    assert rows[0]["estimate"]["mean"] == pytest.approx(mean)
    assert rows[0]["estimate"]["received"] == n and rows[0]["estimate"]["lost"] is None
    assert rows[1]["estimate"] is None
    assert any("7 data frames found the interpolation buffer full" in n
               for n in rows[1]["notes"])


def test_table_flows_and_flagged_interval(capsys, tmp_path, receiver, intervals):
    trace = intervals[0][2]
    out_csv = tmp_path / "flows.csv"
    code, out, err = _watch(capsys, tmp_path, "--flows", str(_keys(tmp_path, trace)),
                            "--top", "0", "--flows-out", str(out_csv))
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].split()[-4:] == ["refs", "overflow", "unref", "refused"]
    flagged = next(l for l in lines if l.split()[0] == "1")
    assert "invalid" in flagged and "no estimate and no per-flow figures" in flagged
    table = list(csv.DictReader(out_csv.open()))
    assert sorted({t["interval"] for t in table}) == ["0", "2"]     # none for interval 1
    # the per-flow means are the estimator's on the golden cells, word for word
    hashes = trace.flow_hashes(CONFIG)[:, :3]
    est = estimate_flows(intervals[0][0], hashes)
    names = [flow_label(w, c) for w, c in zip(trace.flow_windows[:3], trace.flow_classes[:3])]
    got = {t["flow"]: t for t in table if t["interval"] == "0"}
    for k, name in enumerate(names):
        assert float(got[name]["mean"]) == pytest.approx(est.mean_ns[k])
        assert int(got[name]["packets"]) == est.packets[k] > 0


def test_refused_reference_flags_the_interval(capsys, tmp_path, receiver, intervals):
    receiver.regs[0]["rli_frozen_refused"] = 2
    code, out, err = _watch(capsys, tmp_path, "--json")
    assert code == 0, err
    first = json.loads(out.splitlines()[0])
    assert not first["valid"] and first["estimate"] is None
    assert any("2 reference frames were refused" in n for n in first["notes"])


def test_other_kinds_need_a_sender(capsys, tmp_path, scripted_device):
    config = LdaConfig(banks=2, rows=64, thresholds=(0, 5))
    dev = scripted_device(config, [])
    register_fake_device("lda_r", dev)
    try:
        with pytest.raises(SystemExit) as e:
            main(["watch", "--receiver", "fake://lda_r", "--intervals", "1"])
    finally:
        register_fake_device("lda_r", None)
    assert e.value.code == 2 and "--sender" in capsys.readouterr().err


def test_with_a_sender_the_flows_have_loss(capsys, tmp_path, scripted_device):
    sc = Scenario(packets=3000, flows=6, queue="droptail:utilisation=0.88",
                  delay="constant:value=0", loss=0.05, rate_pps=2e6, seed=7)
    trace, _ = with_references(sc.trace(), CONFIG)
    iv = sc.run(trace=trace).intervals[0]
    sender, receiver, stats = simulated_synopses(CONFIG, iv)
    devs = {"rli_ps": scripted_device(CONFIG, [sender]),
            "rli_pr": scripted_device(CONFIG, [receiver])}
    devs["rli_pr"].set("rli_frozen_references", stats.references)
    for name, dev in devs.items():
        dev.set("config_id", CONFIG.config_id)
        register_fake_device(name, dev)
    cfg = tmp_path / "config.json"
    cfg.write_text(json.dumps(CONFIG.to_dict()))
    out_json = tmp_path / "flows.json"
    try:
        code = main(["watch", "--sender", "fake://rli_ps", "--receiver", "fake://rli_pr",
                     "--config", str(cfg), "--swap", "--period", "0", "--intervals", "1",
                     "--flows", str(_keys(tmp_path, trace, 6)), "--flows-out",
                     str(out_json)])
    finally:
        for name in devs:
            register_fake_device(name, None)
    out, err = capsys.readouterr()
    assert code == 0, err
    (doc,) = [json.loads(l) for l in out_json.read_text().splitlines()]
    lost = {f["flow"]: f["lost"] for f in doc["flows"]}
    truth = np.bincount(trace.flow_ids[iv.truth.lost_ids], minlength=trace.num_flows)
    for w, c, k in zip(trace.flow_windows, trace.flow_classes, range(6)):
        assert lost[flow_label(w, c)] == truth[k]
    assert sum(lost.values()) > 0


def test_unreadable_interval_is_a_row_with_its_reason(capsys, tmp_path, receiver):
    receiver.plan = {0: ["drop"] * 2}      # the read and its resynchronisation probe
    code, out, err = _watch(capsys, tmp_path, "--json", "--attempts", "1",
                            "--timeout", "0.05", "--retries", "0")
    assert code == 0, err
    rows = [json.loads(l) for l in out.splitlines()]
    assert [r["valid"] for r in rows] == [False, False, True]     # 1: flagged (overflow)
    assert rows[0]["estimate"] is None
    assert rows[0]["interval"] == 0 and rows[0]["notes"][0].startswith(
        "receiver: could not be read (1 attempt)")
    assert "released unread" in rows[0]["notes"][0]
    assert rows[2]["receiver"]["rli"]["references"] > 100

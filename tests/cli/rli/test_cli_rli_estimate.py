# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl estimate --synopsis rli S.pcap R.pcap``: the per-flow table named by
5-tuples with the truth beside the estimate, JSON lines and ``--flows-out`` (CSV/JSON),
``--ref-*`` for captures without reference frames, unbacked flows with their reason,
and bad options (exit 2)."""

import csv
import json

import numpy as np
import pytest

from host_sw.cli import main
from host_sw.contracts.config import RliConfig
from host_sw.contracts.frames.reference_frame import build_reference
from host_sw.device.fake_transport import register_fake_device
from host_sw.estimators.flows import flow_label
from host_sw.estimators.rli.estimate import estimate_flows, simulated_synopses
from host_sw.model.channel import Scenario
from host_sw.model.pcap import write_pcap
from host_sw.model.golden_rli import with_references

CONFIG = RliConfig()        # the defaults --synopsis rli analyses with (1 in 100)
#: Capture clocks in Unix-epoch ns, as real captures have them.
EPOCH = 1_764_000_000 * 10**9


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def caps(tmp_path_factory):
    """Captures with reference frames (s, r) and without (s0, r0), RED queue at 88 %."""
    sc = Scenario(packets=8000, flows=12, queue="red:utilisation=0.88",
                  delay="constant:value=0", loss=0.0, rate_pps=2e6, seed=11)
    base = sc.trace()
    d = tmp_path_factory.mktemp("rli_cli")
    iv0 = sc.run(trace=base).intervals[0]
    write_pcap(d / "s0.pcap", base.frames(), base.timestamps + EPOCH)
    write_pcap(d / "r0.pcap", base.frames(iv0.receiver.indices),
               iv0.receiver.timestamps + EPOCH)
    trace, is_ref = with_references(base, CONFIG)
    iv = sc.run(trace=trace).intervals[0]
    seq = np.cumsum(is_ref) - 1

    def frames(rows):
        data = trace.frames(rows)
        return [build_reference(CONFIG, seq=int(seq[i]), timestamp=int(trace.timestamps[i]),
                                src_mac="02:00:00:00:00:01", dst_mac="02:00:00:00:00:02")
                if is_ref[i] else data[k] for k, i in enumerate(rows.tolist())]
    write_pcap(d / "s.pcap", frames(np.arange(len(trace))), trace.timestamps + EPOCH)
    write_pcap(d / "r.pcap", frames(iv.receiver.indices), iv.receiver.timestamps + EPOCH)
    return d


def test_table_with_reference_frames(capsys, caps, tmp_path):
    out_csv = tmp_path / "flows.csv"
    code, out, err = run(capsys, "estimate", str(caps / "s.pcap"), str(caps / "r.pcap"),
                         "--synopsis", "rli", "--top", "3", "--flows-out", str(out_csv))
    assert code == 0, err
    assert "RLI references: 80 reference frames in the sender capture, 80 used" in out
    lines = out.splitlines()
    head = next(i for i, l in enumerate(lines) if l.strip().startswith("flow "))
    rows = lines[head + 1:head + 4]
    names = [r.split("  ")[2].strip() for r in rows]     # after the 4-space indent
    assert len(rows) == 3 and all(n.split()[0] in ("tcp", "udp") and " > " in n
                                  for n in names)
    assert all(n in {t["flow"] for t in csv.DictReader(out_csv.open())} for n in names)
    assert "… 9 smaller flows" in lines[head + 4]
    table = list(csv.DictReader(out_csv.open()))
    assert len(table) == 12 and set(table[0]) >= {"interval", "flow", "mean", "unbacked"}
    for t in table:
        if t["unbacked"]:
            assert t["mean"] == ""                  # never a number without a check
        else:
            assert abs(float(t["mean"]) / float(t["true_mean"]) - 1) < 0.3


def test_json_and_rule_for_captures_without_references(capsys, caps, tmp_path):
    out = tmp_path / "flows.json"
    code, text, err = run(capsys, "estimate", str(caps / "s0.pcap"), str(caps / "r0.pcap"),
                          "--synopsis", "rli", "--ref-packets", "40", "--json",
                          "--flows-out", str(out), "--min-samples", "100000")
    assert code == 0, err
    (rec,) = [json.loads(l) for l in text.splitlines()]
    assert rec["valid"] and rec["synopsis"] == "rli"
    assert any("200 sender packets designated by the configured rule, 200 found" in n
               for n in rec["notes"])
    assert rec["estimate"]["mean"] == pytest.approx(rec["true"]["mean"], rel=0.2)
    (flows,) = [json.loads(l) for l in out.read_text().splitlines()]
    assert flows["interval"] == 0 and len(flows["flows"]) == 12
    assert all(f["mean"] is None and f["unbacked"].startswith("too few samples")
               for f in flows["flows"])


def test_keyed_references_need_their_key(capsys, caps, tmp_path):
    key = tmp_path / "key"
    key.write_text("00112233445566778899aabbccddeeff\n")
    code, out, err = run(capsys, "estimate", str(caps / "s.pcap"), str(caps / "r.pcap"),
                         "--synopsis", "rli", "--key-file", str(key))
    assert code == 0, err
    assert "80 reference frames in the sender capture failed their tag" in out


@pytest.mark.parametrize("extra, message", [
    (["--ref-packets", "5", "--ref-period", "100"], "exclude each other"),
    (["--ref-packets", "0"], "--ref-packets"),
    (["--ref-period", "-3"], "--ref-period"),
    (["--ref-adaptive", "nan"], "--ref-adaptive"),
    (["--mode", "marker"], "--mode"),
    (["--synopsis", "lds", "--ref-packets", "5"], "apply to --synopsis rli only"),
])
def test_bad_options_exit_2(capsys, caps, extra, message):
    argv = ["estimate", str(caps / "s0.pcap"), str(caps / "r0.pcap"), "--synopsis", "rli",
            *extra]
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_flows_file_names_the_flows(capsys, caps, tmp_path):
    keys = tmp_path / "keys.txt"
    code, out, err = run(capsys, "estimate", str(caps / "s.pcap"), str(caps / "r.pcap"),
                         "--synopsis", "rli", "--flows-out", str(tmp_path / "all.csv"))
    assert code == 0, err
    big = list(csv.DictReader((tmp_path / "all.csv").open()))[:2]
    lines = []
    for t in big:
        proto, src, _, dst = t["flow"].split()
        lines.append(f"{proto} {' '.join(src.rsplit(':', 1))} {' '.join(dst.rsplit(':', 1))}")
    keys.write_text("\n".join(lines + ["udp 192.0.2.1 1 192.0.2.2 2"]) + "\n")
    code, out, err = run(capsys, "estimate", str(caps / "s.pcap"), str(caps / "r.pcap"),
                         "--synopsis", "rli", "--flows", str(keys), "--flows-out",
                         str(tmp_path / "keyed.csv"))
    assert code == 0, err
    keyed = {t["flow"]: t for t in csv.DictReader((tmp_path / "keyed.csv").open())}
    for t in big:       # the same cells: the same figures, without the truth
        assert keyed[t["flow"]]["mean"] == t["mean"] and keyed[t["flow"]]["true_mean"] == ""
    assert keyed["udp 192.0.2.1:1 > 192.0.2.2:2"]["unbacked"].startswith("no packets")


def test_snapshot_files_with_flows(capsys, tmp_path, scripted_device):
    """Two RLI snapshots (ldactl read -o) and --flows: RLI's per-flow figures (the
    estimator's on the two synopses), not LDS's."""
    config = RliConfig(cells=256, ref_packets=20)
    sc = Scenario(packets=3000, flows=5, queue="droptail:utilisation=0.88",
                  delay="constant:value=0", loss=0.03, rate_pps=2e6, seed=2)
    trace, _ = with_references(sc.trace(), config)
    iv = sc.run(trace=trace).intervals[0]
    sender, receiver, _ = simulated_synopses(config, iv)
    cfg = tmp_path / "rli.json"
    cfg.write_text(json.dumps(config.to_dict()))
    for side, syn, role in (("s", sender, 1), ("r", receiver, 2)):
        dev = scripted_device(config, [syn])
        dev.set("config_id", config.config_id)
        dev.set("role", role)
        dev.set("local_mac", 0x0200_0000_0000 + role)
        register_fake_device("rli_snap", dev)
        try:
            assert main(["read", "--device", "fake://rli_snap", "--config", str(cfg),
                         "--swap", "-o", str(tmp_path / f"{side}.json")]) == 0
        finally:
            register_fake_device("rli_snap", None)
    capsys.readouterr()
    names = [flow_label(w, c) for w, c in zip(trace.flow_windows[:5], trace.flow_classes[:5])]
    keys = tmp_path / "keys.txt"
    keys.write_text("".join(f"{n.split()[0]} {' '.join(n.split()[1].rsplit(':', 1))} "
                            f"{' '.join(n.split()[3].rsplit(':', 1))}\n" for n in names))
    code, out, err = run(capsys, "estimate", str(tmp_path / "s.json"),
                         str(tmp_path / "r.json"), "--flows", str(keys), "--flows-out",
                         str(tmp_path / "f.csv"))
    assert code == 0, err
    got = {t["flow"]: t for t in csv.DictReader((tmp_path / "f.csv").open())}
    est = estimate_flows(receiver, trace.flow_hashes(config)[:, :5], sender)
    for k, n in enumerate(names):
        assert float(got[n]["mean"]) == pytest.approx(est.mean_ns[k])
        assert int(got[n]["lost"]) == est.sent[k] - est.packets[k]
    assert sum(int(t["lost"]) for t in got.values()) > 0

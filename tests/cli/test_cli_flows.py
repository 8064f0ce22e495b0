# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl estimate`` and ``watch`` with an LDS configuration print per-flow estimates
(a top-N table, flows named by their 5-tuple) and write every flow to ``--flows-out``
(CSV or JSON lines); a flow whose delay is not backed shows the reason, never a number.
``estimate --mtu`` reads exports built for jumbo frames; the capture tables show the
notes and the true std."""

import csv
import json

import numpy as np
import pytest

from host_sw.cli import main
from host_sw.contracts.frames import control_frame as cf
from host_sw.contracts.config import LdaConfig, LdsConfig
from host_sw.device.fake_transport import register_fake_device
from host_sw.estimators.flows import flow_label
from host_sw.model.channel import Scenario
from host_sw.model.pcap import write_pcap

LDS = LdsConfig(rows=4, cells=256, vlda_cells=4)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def sim():
    return Scenario(packets=6000, flows=12, delay="exponential:mean=2us", seed=9).run()


@pytest.fixture(scope="module")
def captures(sim, tmp_path_factory):
    d = tmp_path_factory.mktemp("caps")
    tr = sim.trace
    (iv,) = sim.intervals
    write_pcap(d / "s.pcap", tr.frames(), tr.timestamps)
    order = np.argsort(iv.receiver.timestamps, kind="stable")
    write_pcap(d / "r.pcap", tr.frames(iv.receiver.indices[order]),
               iv.receiver.timestamps[order])
    return d / "s.pcap", d / "r.pcap"


def _labels(sim):
    tr = sim.trace
    return [flow_label(w, c) for w, c in zip(tr.flow_windows, tr.flow_classes)]


def test_estimate_lds_prints_the_top_flows(capsys, sim, captures, tmp_path):
    s, r = captures
    out_csv = tmp_path / "flows.csv"
    code, out, err = run(capsys, "estimate", str(s), str(r), "--synopsis", "lds",
                         "--top", "3", "--sort", "packets", "--flows-out", str(out_csv))
    assert code == 0, err
    lines = out.splitlines()
    assert "true" in lines[1] and "std" in lines[1]       # the truth beside the estimate
    assert any(l.strip().startswith("note: LDS aggregate") for l in lines)
    at = next(i for i, l in enumerate(lines) if "flows: top 3 of 12 by packets" in l)
    rows = lines[at + 2:at + 5]
    counts = np.bincount(sim.trace.flow_ids)
    shown = [row.strip().split("  ")[0] for row in rows]
    assert [counts[_labels(sim).index(x)] for x in shown] == sorted(counts)[::-1][:3]
    table = list(csv.DictReader(out_csv.open()))
    assert len(table) == 12 and {t["flow"] for t in table} == set(_labels(sim))
    for t in table:
        assert (t["delay_ns"] == "") == (t["unbacked"] != "")
        assert int(t["true_packets"]) == counts[_labels(sim).index(t["flow"])]


def test_estimate_flows_file_and_json_lines(capsys, sim, captures, tmp_path):
    s, r = captures
    label = _labels(sim)[0]
    proto, src, _, dst = label.split()[:4]
    keys = tmp_path / "keys.txt"
    keys.write_text(f"# two flows\n{proto} {src.rsplit(':', 1)[0]} {src.rsplit(':', 1)[1]} "
                    f"{dst.rsplit(':', 1)[0]} {dst.rsplit(':', 1)[1]}\n"
                    f"udp 192.0.2.1 1 192.0.2.2 2\n")
    out_json = tmp_path / "flows.jsonl"
    code, out, err = run(capsys, "estimate", str(s), str(r), "--synopsis", "lds",
                         "--flows", str(keys), "--flows-out", str(out_json), "--json")
    assert code == 0, err
    assert json.loads(out)["synopsis"] == "lds"
    rows = [json.loads(l) for l in out_json.read_text().splitlines()]
    assert [x["flow"] for x in rows] == [label, "udp 192.0.2.1:1 > 192.0.2.2:2"]
    assert rows[1]["delay_ns"] is None and rows[1]["unbacked"] == "no packets"
    assert rows[0]["packets"] == np.bincount(sim.trace.flow_ids)[0]


def test_flow_option_errors(capsys, captures, tmp_path):
    s, r = captures
    keys = tmp_path / "k.txt"
    keys.write_text("tcp 10.0.0.1 80 10.0.0.2\n")
    code, _, err = run(capsys, "estimate", str(s), str(r), "--synopsis", "lds",
                       "--flows", str(keys))
    assert code == 1 and "k.txt:1: expected PROTO SRC SPORT DST DPORT" in err
    keys.write_text("tcp 10.0.0.1 80 10.0.0.2 81\n")
    code, _, err = run(capsys, "estimate", str(s), str(r), "--flows", str(keys))
    assert code == 1 and "--flows needs an LDS configuration" in err
    with pytest.raises(SystemExit) as e:
        main(["estimate", str(s), str(r), "--top", "-1"])
    assert e.value.code == 2 and "--top" in capsys.readouterr().err


def test_mtu_for_jumbo_exports(capsys, sim, tmp_path):
    config = LdaConfig(banks=2, rows=1024)
    (iv,) = sim.intervals
    for name, syn, mac, role in zip(("s", "r"), iv.synopses(config), (1, 3), (1, 2)):
        frames = cf.build_synopsis_frames(syn, seq=0, src_mac=mac, dst_mac=2, mtu=9000,
                                          role=role)
        write_pcap(tmp_path / f"{name}.pcap", frames, list(range(len(frames))))
    cfg = tmp_path / "c.json"
    cfg.write_text(json.dumps(config.to_dict()))
    args = ["estimate", str(tmp_path / "s.pcap"), str(tmp_path / "r.pcap"), "--config",
            str(cfg), "--json"]
    code, _, err = run(capsys, *args)
    assert code == 1 and "MTU" in err
    code, out, err = run(capsys, *args, "--mtu", "9000")
    assert code == 0, err
    assert json.loads(out)["estimate"]["lost"] == 0
    with pytest.raises(SystemExit) as e:
        main([*args, "--mtu", "9001"])
    assert e.value.code == 2 and "--mtu" in capsys.readouterr().err


def test_watch_lds_flows(capsys, sim, scripted_device, tmp_path):
    (iv,) = sim.intervals
    pair = iv.synopses(LDS)
    s, r = scripted_device(LDS, [pair[0]]), scripted_device(LDS, [pair[1]])
    for d in (s, r):
        d.set("config_id", LDS.config_id)
    register_fake_device("lds_s", s)
    register_fake_device("lds_r", r)
    keys = tmp_path / "keys.txt"
    lines = []
    for label in _labels(sim)[:4]:
        proto, src, _, dst = label.split()[:4]
        lines.append(f"{proto} {' '.join(src.rsplit(':', 1))} {' '.join(dst.rsplit(':', 1))}")
    keys.write_text("\n".join(lines) + "\n")
    try:
        code, out, err = run(capsys, "watch", "--sender", "fake://lds_s", "--receiver",
                             "fake://lds_r", "--swap", "--period", "0", "--intervals", "1",
                             "--flows", str(keys), "--top", "0",
                             "--flows-out", str(tmp_path / "f.csv"))
    finally:
        register_fake_device("lds_s", None)
        register_fake_device("lds_r", None)
    assert code == 0, err
    assert "flows: all of 4 by packets" in out
    assert "note: LDS aggregate" in out       # the record's notes under its row
    table = list(csv.DictReader((tmp_path / "f.csv").open()))
    counts = np.bincount(sim.trace.flow_ids)
    assert sorted(t["flow"] for t in table) == sorted(_labels(sim)[:4])
    for t in table:
        assert float(t["packets"]) >= counts[_labels(sim).index(t["flow"])]


def test_progress_bar_goes_to_stderr_only(capsys, captures):
    s, r = captures
    code, out, err = run(capsys, "estimate", str(s), str(r), "--json", "--progress")
    assert code == 0
    assert json.loads(out)["valid"] is True          # stdout: the record alone
    total = (s.stat().st_size + r.stat().st_size) / 2**20
    assert "reading captures" in err and "100.0%" in err and f"{total:8.0f} MiB" in err

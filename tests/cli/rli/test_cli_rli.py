# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl simulate --synopsis rli`` on the queueing channel: the per-flow table, the
per-flow CSV/JSON file, and usage errors."""

import csv
import json

import pytest

from host_sw.cli import main

BASE = ["simulate", "--synopsis", "rli", "--channel", "queue", "--utilisation", "0.88",
        "--packets", "40000", "--flows", "200", "--seed", "4"]


def test_per_flow_table_and_csv(capsys, tmp_path):
    out = tmp_path / "flows.csv"
    assert main([*BASE, "--top", "3", "--flows-out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "queue red:utilisation=0.88" in text
    assert "400 reference packets" in text
    lines = text.splitlines()
    head = next(i for i, l in enumerate(lines) if l.startswith("flow "))
    rows = lines[head + 1:head + 4]
    assert len(rows) == 3 and all(" > " in r for r in rows)
    with open(out, newline="") as f:
        table = list(csv.DictReader(f))
    assert len(table) == 200
    big = [r for r in table if int(r["packets"]) >= 100 and r["collided"] == "False"]
    errors = sorted(float(r["rel_err"]) for r in big)
    assert len(big) > 20 and errors[len(errors) // 2] < 0.1
    assert int(table[0]["packets"]) >= int(table[-1]["packets"])


def test_json_lines_and_flows_file(capsys, tmp_path):
    out = tmp_path / "flows.json"
    assert main([*BASE, "--json", "--ref-period", "20000", "--flows-out", str(out)]) == 0
    (line,) = [json.loads(l) for l in capsys.readouterr().out.splitlines() if l.strip()]
    assert line["synopsis"] == "rli" and line["true"]["lost"] == 0
    assert line["estimate"]["mean"] == pytest.approx(line["true"]["mean"], rel=0.2)
    (flows,) = [json.loads(l) for l in out.read_text().splitlines()]
    assert flows["run"] == 0 and len(flows["flows"]) == 200
    assert set(flows["flows"][0]) == {"flow", "packets", "lost", "true_mean", "mean",
                                      "rel_err", "true_std", "std", "collided"}


@pytest.mark.parametrize("args, message", [
    (["--synopsis", "lds", "--ref-packets", "5"], "--ref-packets applies to --synopsis rli"),
    (["--synopsis", "rli", "--ref-packets", "5", "--ref-period", "100"], "exclude each other"),
    (["--synopsis", "lda", "--flows-out", "x.csv"], "--flows-out applies"),
    (["--utilisation", "0"], "--utilisation"),
    (["--aqm", "codel"], "--aqm"),
])
def test_usage_errors_exit_2(capsys, args, message):
    with pytest.raises(SystemExit) as e:
        main(["simulate", "--packets", "100", *args])
    assert e.value.code == 2
    assert message in capsys.readouterr().err


def test_unwritable_flows_file_is_one_error_line(capsys, tmp_path):
    bad = tmp_path / "no" / "such" / "dir.csv"
    assert main([*BASE[:-4], "--packets", "2000", "--flows", "20",
                 "--flows-out", str(bad)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("ldactl simulate: error: cannot write")

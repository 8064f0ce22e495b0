# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl simulate``: the JSON contract, estimates near the truth, and usage errors."""

import json
import subprocess
import sys

import pytest

from host_sw.cli import main
from host_sw.cli.output.table import RECORD_TABLE, SIMULATE_TABLE
from host_sw.estimators.simulate import lda_config_for, run_scenario
from host_sw.model.channel import Scenario


def run_json(capsys, *args):
    assert main(["simulate", "--json", *args]) == 0
    lines = [json.loads(l) for l in capsys.readouterr().out.splitlines() if l.strip()]
    return lines


def test_json_contract_lda(capsys):
    lines = run_json(capsys, "--packets", "100000", "--loss", "0.001", "--runs", "2",
                     "--seed", "3")
    assert len(lines) == 2
    for line in lines:
        assert set(line["true"]) == {"mean", "std", "sent", "received", "lost"}
        assert set(line["estimate"]) == {"mean", "std", "lost", "samples", "ci"}
        t, e = line["true"], line["estimate"]
        assert t["sent"] == 100000 and t["lost"] == 100 and t["received"] == 99900
        lo, hi = e["ci"]
        assert lo <= e["mean"] <= hi
        assert abs(e["mean"] - t["mean"]) / t["mean"] < 0.05
        assert e["samples"] > 10000


def test_rda_set_difference_is_exact(capsys):
    (line,) = run_json(capsys, "--synopsis", "rda", "--packets", "50000",
                       "--set-difference", "400", "--rows", "4096", "--seed", "5")
    t, e = line["true"], line["estimate"]
    assert t["lost"] == 200 and e["lost"] == 200
    assert e["mean"] == pytest.approx(t["mean"], rel=1e-12)
    assert e["ci"][0] == e["ci"][1] == e["mean"]


def test_lds_no_loss_exact_aggregate(capsys):
    (line,) = run_json(capsys, "--synopsis", "lds", "--packets", "50000", "--loss", "0")
    assert line["estimate"]["mean"] == pytest.approx(line["true"]["mean"], rel=1e-12)
    assert line["estimate"]["lost"] == 0


def test_tune_for_loss_single_bank(capsys):
    (line,) = run_json(capsys, "--packets", "200000", "--loss", "0.05",
                       "--tune-for-loss", "0.05")
    e, t = line["estimate"], line["true"]
    assert abs(e["mean"] - t["mean"]) / t["mean"] < 0.1


@pytest.mark.parametrize("args, message", [
    (["--packets", "0"], "positive integer"),
    (["--loss", "1.5"], "probability"),
    (["--delay", "weibull:shape=-1,scale=3"], "shape"),
    (["--delay", "gamma:k=1"], "gamma"),
    (["--synopsis", "rda", "--tune-for-loss", "0.1"], "lda only"),
    (["--set-difference", "10"], "rda only"),
    (["--rows", "1000"], "power of two"),
])
def test_bad_options_exit_2(capsys, args, message):
    with pytest.raises(SystemExit) as exc:
        main(["simulate", *args])
    assert exc.value.code == 2
    assert message in capsys.readouterr().err


def test_console_script_table():
    out = subprocess.run([sys.executable, "-m", "host_sw.cli", "simulate", "--packets",
                          "20000", "--seed", "2"], capture_output=True, text=True, check=True)
    assert "est. mean" in out.stdout and "config ID" in out.stdout


def test_ldactl_does_not_import_the_simulation_harness():
    code = ("import sys; from host_sw.cli.main import build_parser; build_parser(); "
            "bad = sorted(m for m in sys.modules if m.split('.')[0] in ('sim_tb', 'bench', 'tests')); "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_table_headers_are_the_published_ones():
    assert SIMULATE_TABLE.header() == (
        f"{'run':>3} {'sent':>9} {'recv':>9} {'lost':>7} {'est.lost':>8} "
        f"{'mean ns':>9} {'est. mean':>9} {'err':>8} {'ci (ns)':>19} "
        f"{'std ns':>8} {'est. std':>8} {'err':>8} {'samples':>8}")
    assert RECORD_TABLE.header() == (
        f"{'interval':>8} {'sent':>9} {'recv':>9} {'lost':>7} {'loss':>8} "
        f"{'mean ns':>10} {'ci (ns)':>21} {'std ns':>9} {'samples':>8}")


def test_simulate_json_is_the_record_summary(capsys):
    (line,) = run_json(capsys, "--packets", "20000", "--seed", "4")
    config = lda_config_for(packets=20000, rows=1024, banks=2, tune_for_loss=None)
    scenario = Scenario(packets=20000, flows=1000, delay="weibull:scale=133,shape=0.6",
                        loss=0.01, multipath_extra="constant:value=0", seed=4)
    (rec,) = run_scenario(scenario, config)
    assert line == json.loads(json.dumps(rec.summary_json()))
    assert line["estimate"] == {k: rec.estimate[k] for k in line["estimate"]}

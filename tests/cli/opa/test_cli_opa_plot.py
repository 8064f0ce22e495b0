# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl plot`` of per-packet delays and OPA records: the CDF, the tail events marked,
the histogram CDF's values, and the usage errors."""

import json

import numpy as np
import pytest

from host_sw.cli import main
from host_sw.cli.opa.plot import delay_cdf, histogram_cdf, read_delays, tail_events
from host_sw.cli.records import read_records

PNG = b"\x89PNG\r\n\x1a\n"


def test_cdf_and_tail_events_values():
    x, y = delay_cdf([30.0, 10.0, 20.0, 20.0])
    assert x.tolist() == [10.0, 20.0, 20.0, 30.0] and y.tolist() == [0.25, 0.5, 0.75, 1.0]
    d = np.array([5.0, 90.0, 1.0, 90.0, 70.0, 2.0])
    assert tail_events(d, 3).tolist() == [1, 3, 4]
    assert tail_events(d, 1).tolist() == [1] and tail_events(d, 0).tolist() == []
    assert tail_events(d, 99).tolist() == list(range(6))


@pytest.fixture(scope="module")
def opa_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("opa")
    delays = tmp / "d.csv"
    assert main(["simulate", "--synopsis", "opa", "--packets", "4000", "--loss", "0.002",
                 "--fast", "--seed", "7", "--delays", str(delays)]) == 0
    return tmp, delays


def test_plot_delays_marks_the_largest(capsys, opa_run):
    tmp, delays = opa_run
    capsys.readouterr()
    ticks, d = read_delays(delays)
    out_png = tmp / "d.png"
    assert main(["plot", "--delays", str(delays), "--top", "5", "-o", str(out_png)]) == 0
    line = capsys.readouterr().out
    big = int(np.argmax(d))
    assert f"({len(d)} delays, the 5 largest marked; largest {d[big]:.1f} ns at receive " \
           f"tick {ticks[big]})" in line
    assert out_png.read_bytes()[:8] == PNG


def test_plot_opa_records_histogram_cdf(capsys, tmp_path):
    records = tmp_path / "r.jsonl"
    # Records carrying the interval histograms: the estimate's histogram_s counts.
    rec = {"interval": 3, "time": 0.0, "valid": True, "synopsis": "opa",
           "config_id": "0x00000001", "sender": {}, "receiver": {}, "notes": [],
           "estimate": {"mean": 50.0, "std": 1.0, "samples": 4, "p50": 40.0, "p99": 90.0,
                        "p99.9": 99.0, "max": 100.0,
                        "histogram_s": {"le": [1e-8, 1e-7, 1e-6], "count": [0, 3, 4],
                                        "sum": 2e-7}}}
    rec2 = {**rec, "interval": 4, "estimate": {**rec["estimate"], "samples": 6, "max": 900.0,
            "histogram_s": {"le": [1e-8, 1e-7, 1e-6], "count": [1, 2, 6], "sum": 9e-7}}}
    records.write_text(json.dumps(rec) + "\n" + json.dumps(rec2) + "\n")
    le, frac = histogram_cdf(read_records(records))
    assert le.tolist() == pytest.approx([10.0, 100.0, 1000.0])
    assert frac.tolist() == pytest.approx([0.1, 0.5, 1.0])
    out_png = tmp_path / "r.png"
    assert main(["plot", "-i", str(records), "--top", "1", "-o", str(out_png)]) == 0
    assert "(2 OPA intervals, the 1 largest maxima marked)" in capsys.readouterr().out
    assert out_png.read_bytes()[:8] == PNG


def test_plot_needs_one_source(capsys, tmp_path):
    with pytest.raises(SystemExit) as e:
        main(["plot", "-o", str(tmp_path / "p.png")])
    assert e.value.code == 2 and "--input" in capsys.readouterr().err
    bad = tmp_path / "d.csv"
    bad.write_text("receive_tick,delay_ns\n12,abc\n")
    assert main(["plot", "--delays", str(bad), "-o", str(tmp_path / "p.png")]) == 1
    err = capsys.readouterr().err
    assert f"{bad}:2: not a delay row" in err and "Traceback" not in err

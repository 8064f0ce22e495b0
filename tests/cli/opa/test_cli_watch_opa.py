# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl watch`` on two OPA devices: the words alone give each interval's sent,
received and lost packets exactly; no delay figure is printed without the per-packet
record frames, and the row says where they come from (``--records``:
``test_cli_watch_opa_records.py``)."""

import json

import pytest

from host_sw.cli.main import main
from host_sw.contracts.config import OpaConfig
from host_sw.device.fake_transport import register_fake_device
from host_sw.model.channel import simulate_interval
from host_sw.model.golden_opa import opa_synopsis

CONFIG = OpaConfig(groups=64, rows=4)


@pytest.fixture
def opa_pair(scripted_device):
    intervals = [simulate_interval(packets=2000, loss=0.01, seed=seed) for seed in (1, 2)]
    points = [[opa_synopsis(CONFIG, getattr(iv, side).hashes(CONFIG).packet)
               for iv in intervals] for side in ("sender", "receiver")]
    for name, synopses in zip(("opa_s", "opa_r"), points):
        dev = scripted_device(CONFIG, synopses)
        dev.set("config_id", CONFIG.config_id)
        register_fake_device(name, dev)
    yield intervals
    for name in ("opa_s", "opa_r"):
        register_fake_device(name, None)


def test_watch_gives_opa_loss_and_no_delay_without_records(capsys, opa_pair):
    code = main(["watch", "--sender", "fake://opa_s", "--receiver", "fake://opa_r", "--swap",
                 "--period", "0", "--intervals", "2", "--wait", "5", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    rows = [json.loads(line) for line in out.splitlines()]
    assert [r["interval"] for r in rows] == [0, 1]
    for row, iv in zip(rows, opa_pair):
        est = row["estimate"]
        assert (est["sent"], est["received"]) == (len(iv.sender), len(iv.receiver))
        assert est["lost"] == len(iv.sender) - len(iv.receiver) > 0
        assert est["mean"] is None and est["std"] is None and est["samples"] == 0
        assert any("record frames" in n for n in row["notes"])
        assert any("give watch --records" in n for n in row["notes"])
        assert not any("collisions" in n for n in row["notes"])

# SPDX-License-Identifier: BSD-2-Clause
"""Pairs of snapshots and export captures that must make sense (issue 23, item 3, host
side): swapped roles (the receiver counting more packets than the sender, a negative
mean) give an invalid row with the reason and no estimate; the same point twice (equal
synopses, or one device's exports as both points, byte-different) is refused."""

import contextlib
import io
import json

import numpy as np
import pytest

from host_sw.cli import main
from host_sw.contracts.config import LdaConfig, RdaConfig
from host_sw.contracts.frames import control_frame as cf
from host_sw.estimators.record import record_for_pair
from host_sw.model.channel import simulate_interval
from host_sw.model.pcap import write_pcap

CONFIG = LdaConfig(banks=2, rows=64, thresholds=(0, 5))


@pytest.fixture(scope="module")
def synopses():
    return simulate_interval(packets=3000, loss=0.02, seed=4).synopses(CONFIG)


def _call(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as e:
            code = e.code
    return code or 0, out.getvalue(), err.getvalue()


def test_the_right_order_is_valid(synopses):
    s, r = synopses
    rec = record_for_pair(s, r)
    assert rec.valid and rec.estimate["lost"] > 0 and rec.estimate["mean"] > 0


@pytest.mark.parametrize("config", [CONFIG, RdaConfig()], ids=["lda", "rda"])
def test_swapped_synopses_are_invalid_with_the_reason(config):
    s, r = simulate_interval(packets=3000, loss=0.02, seed=4).synopses(config)
    rec = record_for_pair(r, s)
    assert not rec.valid and rec.estimate is None and rec.problem == "swapped"
    assert rec.notes[0].startswith("the receiver counted more packets than the sender (")
    assert "sender and receiver swapped" in rec.notes[0]


def test_a_negative_mean_is_invalid():
    # the receiver's timestamps before the sender's: a loss-free pair, delays negative
    late = simulate_interval(packets=3000, loss=0.0, seed=4)
    s0, r0 = late.synopses(CONFIG)
    rec = record_for_pair(r0, s0)
    assert not rec.valid and rec.problem == "swapped"
    assert rec.notes[0].startswith("negative mean delay (")


def test_equal_synopses_are_the_same_point_twice(synopses):
    s, _ = synopses
    rec = record_for_pair(s, s)
    assert not rec.valid and rec.estimate is None and rec.problem == "same_point"
    assert "the same point twice" in rec.notes[0]


def _exports(tmp_path, synopses, macs, names=("s.pcap", "r.pcap"), start=(0, 0)):
    paths = []
    for name, syn, mac, t0 in zip(names, synopses, macs, start):
        frames = cf.build_synopsis_frames(syn, seq=0, src_mac=mac, dst_mac=2)
        write_pcap(tmp_path / name, frames, t0 + np.arange(len(frames)))
        paths.append(str(tmp_path / name))
    (tmp_path / "cfg.json").write_text(json.dumps(CONFIG.to_dict()))
    return [*paths, "--config", str(tmp_path / "cfg.json"), "--json"]


def test_swapped_export_captures_give_an_invalid_row(tmp_path, synopses):
    s, r = synopses
    code, out, err = _call(["estimate", *_exports(tmp_path, (s, r), (1, 3))])
    assert code == 0 and json.loads(out)["valid"], err
    code, out, err = _call(["estimate", *_exports(tmp_path, (r, s), (3, 1))])
    assert code == 0, err
    rec = json.loads(out)
    assert not rec["valid"] and rec["estimate"] is None and rec["problem"] == "swapped"
    assert "sender and receiver swapped" in rec["notes"][0]


def test_one_devices_exports_as_both_points_are_refused(tmp_path, synopses):
    s, _ = synopses
    # byte-different copies: the same frames at other capture times
    argv = _exports(tmp_path, (s, s), (1, 1), start=(0, 10 ** 9))
    code, out, err = _call(["estimate", *argv])
    assert code == 1 and out == ""
    assert ("both captures hold the exports of one device (00:00:00:00:00:01): the same "
            "point twice") in err

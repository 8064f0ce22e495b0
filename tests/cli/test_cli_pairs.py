# SPDX-License-Identifier: BSD-2-Clause
"""Pairs of snapshots and export captures that must make sense (issue 23, item 3, host
side): swapped roles (the receiver counting more packets than the sender, a negative
mean) give an invalid row with the reason and no estimate; the same point twice (equal
synopses, or one device's exports as both points, byte-different) is refused."""

import contextlib
import io
import json
import re

import numpy as np
import pytest

from host_sw.cli import main
from host_sw.contracts.config import LdaConfig, RdaConfig, RliConfig
from host_sw.contracts.frames import control_frame as cf
from host_sw.estimators.record import record_for_pair
from host_sw.estimators.rli.estimate import simulated_synopses
from host_sw.model.channel import Scenario, simulate_interval
from host_sw.model.golden_rli import with_references
from host_sw.model.pcap import write_pcap
from tests.estimators.test_offline_pairs import (_BAD as BAD_PAIRS, _bad_pair as bad_pair,
                                                 _partial as partial_pair, simulated_run,
                                                 window_truth)

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


def _exports(tmp_path, synopses, macs, names=("s.pcap", "r.pcap"), start=(0, 0),
             roles=(1, 2)):
    paths = []
    for name, syn, mac, t0, role in zip(names, synopses, macs, start, roles):
        frames = cf.build_synopsis_frames(syn, seq=0, src_mac=mac, dst_mac=2, role=role)
        write_pcap(tmp_path / name, frames, t0 + np.arange(len(frames)))
        paths.append(str(tmp_path / name))
    (tmp_path / "cfg.json").write_text(json.dumps(CONFIG.to_dict()))
    return [*paths, "--config", str(tmp_path / "cfg.json"), "--json"]


def test_swapped_export_captures_are_refused(tmp_path, synopses):
    """The exports carry each point's role (the chunk frames' ``role`` byte, FROZEN_ROLE):
    the receiver's capture given as the sender's is refused before any estimate."""
    s, r = synopses
    code, out, err = _call(["estimate", *_exports(tmp_path, (s, r), (1, 3))])
    assert code == 0 and json.loads(out)["valid"], err
    code, out, err = _call(["estimate", *_exports(tmp_path, (r, s), (3, 1), roles=(2, 1))])
    assert code == 1 and out == ""
    assert err.count("\n") == 1 and "interval 0: sender and receiver swapped" in err


@pytest.mark.parametrize("roles, message", [
    ((0, 2), "the sender's input comes from a point whose role is none, not sender"),
    ((1, 1), "the receiver's input comes from a point whose role is sender, not receiver"),
    ((2, 2), "the sender's input comes from a point whose role is receiver, not sender")])
def test_export_captures_of_the_wrong_roles_are_refused(tmp_path, synopses, roles, message):
    s, r = synopses
    code, out, err = _call(["estimate", *_exports(tmp_path, (s, r), (1, 3), roles=roles)])
    assert code == 1 and out == "" and message in err


def test_one_devices_exports_as_both_points_are_refused(tmp_path, synopses):
    s, _ = synopses
    # byte-different copies: the same frames at other capture times
    argv = _exports(tmp_path, (s, s), (1, 1), start=(0, 10 ** 9))
    code, out, err = _call(["estimate", *argv])
    assert code == 1 and out == ""
    assert ("both captures hold the exports of one device (00:00:00:00:00:01): the same "
            "point twice") in err


# -- packet captures: ldactl estimate on pairs that are not, or only partly, one stream --

#: The kinds whose capture pairs are trimmed and checked (OPA's path is its own).
_CAPTURE_KINDS = ["lda", "rda", "lds", "rli"]


@pytest.fixture(scope="module")
def capture_run():
    return simulated_run()


def _rows(argv):
    code, out, err = _call(["estimate", *argv, "--json"])
    assert code == 0 and "Traceback" not in err, err
    return [json.loads(line) for line in out.splitlines()]


def _sane(row):
    """No valid row with a negative or > 100 % loss or a negative mean."""
    if row["valid"]:
        e = row["estimate"]
        assert e["lost"] is None or e["lost"] >= 0, row
        assert e["loss_rate"] is None or 0 <= e["loss_rate"] <= 1, row
        assert e["mean"] is None or e["mean"] >= 0, row


@pytest.mark.parametrize("case", ["sender stopped early", "receiver started late",
                                  "receiver stopped early"])
@pytest.mark.parametrize("kind", _CAPTURE_KINDS)
def test_estimate_on_a_partial_capture_pair_reports_the_window_both_saw(
        capture_run, tmp_path, case, kind):
    s, r = partial_pair(capture_run, tmp_path, case)
    (row,) = _rows([str(s), str(r), "--synopsis", kind])
    _sane(row)
    assert row["valid"], row["notes"]
    (note,) = [n for n in row["notes"] if n.startswith("window both captures saw")]
    first, last = map(int, re.search(r"sender times (\d+) to (\d+) ns", note).groups())
    sent, lost, _ = window_truth(capture_run, {"first_ns": first, "last_ns": last})
    assert 0 < sent < 4000
    assert row["estimate"]["lost"] == row["true"]["lost"] == lost
    assert row["true"]["sent"] == sent


@pytest.mark.parametrize("case", sorted(BAD_PAIRS))
@pytest.mark.parametrize("kind", _CAPTURE_KINDS)
def test_estimate_on_a_capture_pair_that_is_not_one_stream_gives_invalid_rows(
        capture_run, tmp_path, case, kind):
    s, r = bad_pair(capture_run, tmp_path, case)
    rows = _rows([str(s), str(r), "--synopsis", kind, "--interval-ns", "1000000"])
    assert rows
    for row in rows:
        _sane(row)
        assert not row["valid"] and row["estimate"] is None, (case, row["notes"])
        assert row["problem"] == BAD_PAIRS[case], (case, row["problem"], row["notes"])
        assert row["notes"][0]


def test_rli_synopses_swapped_or_twice_are_invalid():
    """RLI's snapshots (the sender's counts, the receiver's interpolated cells): in order
    valid; swapped, a negative loss; either point twice, the same point."""
    config = RliConfig()
    sc = Scenario(packets=4000, flows=20, loss=0.02, delay="exponential:mean=2us", seed=3)
    trace, _ = with_references(sc.trace(), config)
    s, r, _ = simulated_synopses(config, sc.run(trace=trace).intervals[0])
    rec = record_for_pair(s, r)
    assert rec.valid and rec.estimate["lost"] == 81 and rec.estimate["mean"] > 0
    rec = record_for_pair(r, s)
    assert not rec.valid and rec.estimate is None and rec.problem == "swapped"
    assert "(4000 > 3919, a loss of -81)" in rec.notes[0]
    for syn in (s, r):
        rec = record_for_pair(syn, syn)
        assert not rec.valid and rec.estimate is None and rec.problem == "same_point"

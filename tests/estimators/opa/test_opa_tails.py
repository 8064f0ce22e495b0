# SPDX-License-Identifier: BSD-2-Clause
"""OPA percentiles that hold (issue 25, item 4): a percentile is a number only where the
received packets without a delay (in unrecovered groups) cannot move it, else the range
they leave open (every one of them below, or every one above; an open end where they
could be anywhere); the loss is sent − received, whatever was recovered; a note names
the group count the interval's loss and reordering need.

The reordering case keeps the issue's regime (10⁶ packets at the default 1 024 groups:
about 1 000 packets and one reordered packet per group, most groups beyond reach) at a
tenth of the packets: 10⁵ packets in 128 groups, simulated and as two packet captures."""

import math

import numpy as np
import pytest

from host_sw.cli.opa.output import OPA_RECORD_TABLE, OPA_SIMULATE_TABLE
from host_sw.contracts.config import OpaConfig
from host_sw.estimators.opa.tails import (group_advice, groups_for, percentile_ranges,
                                         rows_for, three_loss_reach)
from host_sw.estimators.offline import capture_records
from host_sw.estimators.simulate import run_scenario
from host_sw.model.channel import Scenario
from host_sw.model.pcap import write_pcap

KEYS = ("p50", "p90", "p99", "p99.9", "max")


def _run(config, **kw):
    (rec,) = run_scenario(Scenario(packets=100_000, fast=True, **kw), config)
    return rec


REORDERING = dict(multipath_fraction=1e-3, multipath_extra="constant:value=20000")


@pytest.fixture(scope="module", params=["simulated 1", "simulated 2", "captures 1"])
def reordered(request, tmp_path_factory):
    """``(record, table, first percentile column)`` of an interval with 10⁻³ reordering:
    simulated (``ldactl simulate``'s rows), or from its two packet captures
    (``ldactl estimate``'s rows)."""
    source, seed = request.param.split()
    if source == "simulated":
        rec = _run(OpaConfig(groups=128), seed=int(seed), **REORDERING)
        return rec, OPA_SIMULATE_TABLE, 6
    sim = Scenario(packets=100_000, seed=int(seed), **REORDERING).run()
    tr, (iv,) = sim.trace, sim.intervals
    d = tmp_path_factory.mktemp("reordered")
    write_pcap(d / "s.pcap", tr.frames(), tr.timestamps)
    order = np.argsort(iv.receiver.timestamps, kind="stable")
    write_pcap(d / "r.pcap", tr.frames(iv.receiver.indices[order]),
               iv.receiver.timestamps[order])
    (rec,) = capture_records(d / "s.pcap", d / "r.pcap", OpaConfig(groups=128))
    assert rec.valid, rec.notes
    return rec, OPA_RECORD_TABLE, 5


def _cell_range(cell: str):
    """``(lo, hi)`` a printed cell allows (None: open), or None for a withheld one."""
    if cell == "—":
        return None
    if cell.startswith("≥"):
        return float(cell[1:]), None
    if cell.startswith("≤"):
        return None, float(cell[1:])
    if ".." in cell:
        lo, hi = cell.split("..")
        return float(lo), float(hi)
    return float(cell), float(cell)


def _holds(rng, true, tol):
    lo, hi = rng
    return (lo is None or true >= lo - tol) and (hi is None or true <= hi + tol)


def test_reordering_leaves_packets_unrecovered(reordered):
    reordered = reordered[0]
    e = reordered.estimate
    assert e["unrecovered_groups"] > 0
    assert e["unrecovered"] == e["received"] - e["samples"] > 1000
    assert any(f"{e['unrecovered']} received packets without a delay" in n
               for n in reordered.notes), reordered.notes


def test_no_printed_percentile_lies_outside_the_truth(reordered):
    """JSON and table: a number only where it is the truth's, else a range that holds
    the truth."""
    reordered, table, first = reordered
    e, d = reordered.estimate, reordered.details
    row = table.lines(reordered)[0].split()
    cells = row[first:first + 5]
    assert len(cells) == 5, row
    for key, cell in zip(KEYS, cells):
        rng = _cell_range(cell)
        if rng is None:
            assert e.get(f"{key}_range") == [None, None], (key, cell)
            continue
        assert _holds(rng, d[f"true_{key}"], 0.05), (key, cell, d[f"true_{key}"])
    for key in KEYS:
        true = d[f"true_{key}"]
        lo, hi = e[f"{key}_range"]
        assert _holds((lo, hi), true, 1e-9 * abs(true)), (key, lo, hi, true)
        if e[key] is not None:
            assert lo == hi == e[key] == pytest.approx(true, rel=1e-12), key
    # the tail is what the unrecovered (late) packets hold: p99.9 is no number here
    assert e["p99.9"] is None and e["max"] is None


def test_percentile_ranges_by_hand():
    r = np.array([1.0, 2.0, 3.0, 4.0])
    # every delay known: the numbers themselves
    assert percentile_ranges(r, 0, (50.0,)) == [(2.5, 2.5)]
    # one of five unknown: p50 is the 3rd of 5, between 2 (it below) and 3 (it above)
    assert percentile_ranges(r, 1, (50.0, 100.0)) == [(2.0, 3.0), (4.0, None)]
    # p90 of 5 is the 4.6th: its upper neighbour may be the unknown one
    ((lo, hi),) = percentile_ranges(r, 1, (90.0,))
    assert lo == pytest.approx(3.6, rel=1e-15) and hi is None
    # as many unknown as known: p50 open on both sides, p0 open below
    assert percentile_ranges(r, 4, (50.0, 0.0)) == [(None, None), (None, 1.0)]
    # equal delays around the index: the unknown ones cannot move it
    assert percentile_ranges(np.array([5.0, 5.0, 5.0, 5.0, 9.0]), 1, (50.0,)) == \
        [(5.0, 5.0)]


@pytest.fixture(scope="module")
def lossy():
    return _run(OpaConfig(), seed=1, loss=0.01)


def test_loss_is_sent_minus_received_whatever_was_recovered(lossy):
    e = lossy.estimate
    assert e["unrecovered_groups"] > 0
    assert e["lost"] == e["sent"] - e["received"] == lossy.true["lost"] > 900
    assert e["loss_rate"] == e["lost"] / e["sent"]
    row = OPA_SIMULATE_TABLE.lines(lossy)[0].split()
    assert int(row[3]) == int(row[4]) == e["lost"]   # true lost, est.lost


def test_the_note_names_the_group_count_the_interval_needs(lossy):
    e = lossy.estimate
    # 1 000 losses and the reordering of the recovered groups scaled to every received
    # packet: ≥ 8 groups per error (and ≤ 64 packets per group)
    scaled = math.ceil(e["reordered"] * e["received"] / e["samples"])
    assert e["reordered"] > 0 and e["unrecovered"] > 0
    assert e["groups_needed"] == groups_for(100_000, e["lost"] + scaled)
    assert e["groups_needed"] == 8192 * (2 if e["lost"] + scaled > 1024 else 1)
    (note,) = [n for n in lossy.notes if "groups" in n and "need" in n]
    assert f"need {e['groups_needed']} groups, not 1024" in note
    assert f"about {scaled}," in note


def test_groups_for_follows_the_rule():
    assert groups_for(10 ** 6, 1000) == 16384      # 10⁶/64 = 15 625
    assert groups_for(10 ** 5, 1000) == 8192       # 8 × 1 000
    assert groups_for(100, 0) == 16
    assert groups_for(10 ** 9, 10 ** 8) == 1 << 20
    assert all(math.log2(groups_for(n, k)).is_integer()
               for n in (1, 999, 10 ** 6) for k in (0, 7, 5000))


def test_three_loss_reach_is_the_searchs_own():
    """Three losses are searched up to w = 24 at k = 4 (one checking row within the
    false-match budget) and up to w = 577 at k = 5 (the grid limit): docs/SPEC.md §8.5."""
    assert three_loss_reach(4) == 24 and three_loss_reach(5) == 577


@pytest.mark.parametrize("packets, errors, groups, rows", [
    (10 ** 6, 2000, 16384, 5),     # w ≈ 61, about 4 groups of three errors: k = 5 pays
    (20_000, 40, 512, 4),          # 0.04 groups of three errors expected
    (100_000, 1000, 8192, 4),      # w ≈ 12: k = 4 reaches three losses
    (10 ** 7, 10 ** 4, 1024, 4),   # w ≈ 9 766: beyond k = 5's reach as well
])
def test_rows_for_where_k5_pays(packets, errors, groups, rows):
    assert rows_for(packets, errors, groups) == rows


def test_simulate_takes_k5_where_it_pays():
    from argparse import Namespace
    from host_sw.cli.simulate import _opa
    assert _opa(Namespace(packets=10 ** 6, loss=0.002, groups=None, rows=None)) == \
        OpaConfig(groups=16384, rows=5)
    assert _opa(Namespace(packets=20_000, loss=0.002, groups=None, rows=None)).rows == 4
    assert _opa(Namespace(packets=10 ** 6, loss=0.002, groups=None, rows=4)).rows == 4


def test_the_advice_names_k5_where_it_pays():
    groups, rows, text = group_advice(10 ** 6, 2000, 2000, 1024, 4)
    assert (groups, rows) == (16384, 5)
    assert "need 16384 groups, not 1024" in text and "k = 5" in text
    assert group_advice(10 ** 6, 2000, 2000, 16384, 5)[2] is None     # already so
    groups, rows, text = group_advice(10 ** 6, 2000, 2000, 16384, 4)
    assert "need 16384 groups" not in text and "k = 5 (rows 5, not 4)" in text
    assert "about 5 of 16384 groups hold three" in text

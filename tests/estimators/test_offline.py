# SPDX-License-Identifier: BSD-2-Clause
"""Offline analysis of two captures: loss-free pairs report no loss, RDA repairs from the
captures' own timestamps (an exact mean), pairs that are no sender-receiver pair are
invalid with their reason, and records carry the captures' times and the truth."""

from fractions import Fraction

import numpy as np
import pytest

from host_sw.contracts.config import LdaConfig, RdaConfig, RliConfig
from host_sw.estimators.offline import (MAX_NEGATIVE_FRACTION, PairProblem, capture_cache,
                                        capture_records, check_pairing)
from host_sw.estimators.rda.estimate import estimate_rda
from host_sw.estimators.record import IntervalRecord
from host_sw.model.channel import Scenario
from host_sw.model.pcap import CaptureError, pair_captures, write_pcap
from host_sw.model.traffic import synthetic_trace


@pytest.fixture(scope="module")
def loss_free(capture_pair, tmp_path_factory):
    sim = Scenario(packets=3000, flows=20, delay="exponential:mean=2us", seed=5).run()
    return sim, capture_pair(tmp_path_factory.mktemp("free"), sim)


@pytest.fixture(scope="module")
def lossy(capture_pair, tmp_path_factory):
    sim = Scenario(packets=4000, flows=30, loss=0.03, delay="exponential:mean=2us",
                   multipath_fraction=0.05, multipath_extra="constant:value=20us",
                   seed=11).run()
    return sim, capture_pair(tmp_path_factory.mktemp("lossy"), sim)


@pytest.mark.parametrize("config", [LdaConfig(), RdaConfig()], ids=["lda", "rda"])
def test_loss_free_pair_reports_no_loss(loss_free, config):
    _, (s, r) = loss_free
    (rec,) = capture_records(s, r, config)
    assert rec.valid and rec.problem is None
    assert rec.estimate["lost"] == 0 and rec.estimate["loss_rate"] == 0
    assert rec.true["lost"] == 0 and rec.true["sent"] == rec.true["received"] == 3000


def test_rda_mean_is_exact_from_the_captures(lossy):
    sim, (s, r) = lossy
    (rec,) = capture_records(s, r, RdaConfig())
    (iv,) = pair_captures(s, r)
    truth = Fraction(iv.truth.delay_sum, len(iv.truth.delays))
    assert iv.truth.lost > 50
    assert rec.valid and rec.estimate["decoded"] and rec.estimate["exact"]
    assert rec.estimate["lost"] == iv.truth.lost
    assert rec.estimate["mean"] == float(truth)
    assert not any("cache" in n for n in rec.notes), rec.notes


def test_rda_caches_built_once_serve_every_interval(lossy):
    # Time mode, several intervals: packets lost in one interval at the sender and seen
    # in the next at the receiver are removed from both sides, from the same two caches.
    sim, (s, r) = lossy
    config = RdaConfig()
    span = int(sim.trace.timestamps[-1] - sim.trace.timestamps[0])
    intervals = pair_captures(s, r, interval_ns=span // 4 + 1)
    assert len(intervals) == 4 and sum(iv.truth.reordered for iv in intervals) > 0
    caches = [capture_cache(getattr(intervals[0], side).trace, config)
              for side in ("sender", "receiver")]
    for iv in intervals:
        e = estimate_rda(*iv.synopses(config), sender_cache=caches[0],
                         receiver_cache=caches[1])
        assert e.exact, e.notes
        assert e.mean_ticks == Fraction(iv.truth.delay_sum, len(iv.truth.delays))
        assert e.lost_found == iv.truth.lost and e.reordered_found == iv.truth.reordered


def test_capture_cache_leaves_out_repeated_packets(tmp_path, loss_free):
    sim, _ = loss_free
    tr = sim.trace
    frames = tr.frames(range(10))
    write_pcap(tmp_path / "d.pcap", frames + frames[:1], list(tr.timestamps[:11]))
    (iv,) = pair_captures(tmp_path / "d.pcap", tmp_path / "d.pcap")
    cache = capture_cache(iv.sender.trace, RdaConfig())
    assert len(cache) == 9
    assert np.array_equal(np.sort(cache.timestamps), np.sort(tr.timestamps[1:10]))


def _invalid(records, problem):
    assert records
    for rec in records:
        assert not rec.valid and rec.problem == problem.value
        assert rec.estimate is None and rec.true is None
        assert rec.notes
    return records[0].notes[0]


@pytest.mark.parametrize("config", [LdaConfig(), RdaConfig()], ids=["lda", "rda"])
def test_the_same_capture_twice(loss_free, config):
    _, (s, _) = loss_free
    note = _invalid(capture_records(s, s, config), PairProblem.SAME_CAPTURE)
    assert "the same capture twice" in note


def test_a_copy_of_the_same_capture(tmp_path, loss_free):
    _, (s, _) = loss_free
    copy = tmp_path / "copy.pcap"
    copy.write_bytes(s.read_bytes())
    _invalid(capture_records(s, copy, LdaConfig(), interval_ns=100_000),
             PairProblem.SAME_CAPTURE)


def test_unrelated_captures(tmp_path, loss_free):
    _, (s, _) = loss_free
    other = synthetic_trace(packets=3000, flows=20, seed=99)
    write_pcap(tmp_path / "u.pcap", other.frames(), other.timestamps)
    note = _invalid(capture_records(s, tmp_path / "u.pcap", LdaConfig()),
                    PairProblem.UNRELATED)
    assert "unrelated captures: only 0 of the 3000" in note


def test_heavy_loss_is_no_unrelated_pair(capture_pair, tmp_path):
    sim = Scenario(packets=2000, flows=20, loss=0.6, delay="exponential:mean=2us",
                   seed=3).run()
    s, r = capture_pair(tmp_path, sim)
    (rec,) = capture_records(s, r, LdaConfig())
    assert rec.valid and rec.true["lost"] > 1000


def test_swapped_sender_and_receiver(lossy):
    _, (s, r) = lossy
    note = _invalid(capture_records(r, s, LdaConfig()), PairProblem.SWAPPED)
    assert "swapped" in note


def test_clock_offset_larger_than_the_delays(capture_pair, tmp_path):
    # Receiver clock 1 µs behind, exponential delays of mean 2 µs: about 39 % negative.
    sim = Scenario(packets=3000, flows=20, delay="exponential:mean=2us",
                   clock_offset_ns=-1_000, seed=5).run()
    s, r = capture_pair(tmp_path, sim)
    check = check_pairing(pair_captures(s, r))
    assert check.problem is PairProblem.CLOCK_OFFSET
    assert 0.3 < check.negative / check.matched < 0.5
    note = _invalid(capture_records(s, r, RdaConfig(), interval_ns=200_000),
                    PairProblem.CLOCK_OFFSET)
    assert "clock offset larger than the delays" in note


def test_a_few_negative_delays_are_noted_only(capture_pair, tmp_path):
    sim = Scenario(packets=3000, flows=20, delay="constant:value=2us", seed=5).run()
    s, r = capture_pair(tmp_path, sim)
    (iv,) = pair_captures(s, r)
    check = check_pairing([iv])
    assert check.valid and check.negative == 0 and check.notes == ()
    # one packet reaches the receiver 1 ns before the sender's timestamp
    tr = sim.trace
    (siv,) = sim.intervals
    r_ts = siv.receiver.timestamps.copy()
    r_ts[0] = siv.sender.timestamps[0] - 1
    write_pcap(tmp_path / "r1.pcap", tr.frames(siv.receiver.indices), r_ts)
    (rec,) = capture_records(s, tmp_path / "r1.pcap", LdaConfig())
    assert 1 <= MAX_NEGATIVE_FRACTION * 3000
    assert rec.valid and rec.estimate is not None
    assert any("1 of 3000 matched packets have a negative delay" in n for n in rec.notes)


def test_record_times_and_truth_come_from_the_captures(lossy):
    sim, (s, r) = lossy
    span = int(sim.trace.timestamps[-1] - sim.trace.timestamps[0])
    intervals = pair_captures(s, r, interval_ns=span // 3 + 1)
    records = capture_records(s, r, LdaConfig(), interval_ns=span // 3 + 1)
    assert [rec.interval for rec in records] == [iv.interval for iv in intervals]
    for rec, iv in zip(records, intervals):
        last = max(int(iv.sender.timestamps.max()), int(iv.receiver.timestamps.max()))
        assert rec.time == last / 1e9
        assert rec.sender["first_ns"] == int(iv.sender.timestamps.min())
        assert rec.receiver["last_ns"] == int(iv.receiver.timestamps.max())
        assert rec.true["mean"] == iv.truth.mean
        assert rec.true["std"] == iv.truth.std


def test_problem_round_trips_through_json(loss_free):
    _, (s, _) = loss_free
    (rec,) = capture_records(s, s, LdaConfig())
    d = rec.to_json()
    assert d["problem"] == "same_capture" and d["valid"] is False
    assert IntervalRecord.from_json(d) == rec
    (ok,) = capture_records(*loss_free[1], LdaConfig())
    assert "problem" not in ok.to_json()


def test_opa_from_two_captures(lossy):
    """OPA from two captures (3 % loss, 5 % of packets 20 µs late): most delays
    recovered, the found losses never more than the true ones, percentiles given."""
    from host_sw.contracts.config import OpaConfig
    sim, (s, r) = lossy
    (rec,) = capture_records(s, r, OpaConfig(groups=1024))
    e, t = rec.estimate, rec.true
    assert rec.valid and e["sent"] == t["sent"] and e["received"] == t["received"]
    assert e["lost"] <= t["lost"] and e["samples"] > 0.9 * t["received"]
    assert e["p50"] <= e["p99"] <= e["max"] and abs(e["mean"] - t["mean"]) < 0.05 * t["mean"]


@pytest.mark.parametrize("config", [LdaConfig(), RliConfig()], ids=["lda", "rli"])
def test_a_capture_of_another_link_type_is_refused(tmp_path, loss_free, config):
    _, (s, _) = loss_free
    tr = synthetic_trace(packets=10, flows=2, seed=1)
    raw = tmp_path / "raw.pcap"
    write_pcap(raw, tr.frames(), tr.timestamps, linktype=101)     # DLT_RAW: IP, no Ethernet
    with pytest.raises(CaptureError, match=r"link type 1\) are supported, not link type 101"):
        capture_records(s, raw, config)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_rda_std_from_captures_is_within_5_percent_on_a_long_path(tmp_path, seed):
    # bench.offline_stream's pair: a 10 µs base delay plus exponential 2 µs jitter, the
    # mean 6× the std. The papers' F - mean^2 put the std 26–99 % off here (the occupancy
    # term mean^2 (sum dn^2 / sum n - 1) swamps sigma^2); centred pairs are within 5 %.
    from bench.offline_stream import generate
    s, r, truth = generate(tmp_path, 100_000, 1000, 0.001, 96, seed)
    (rec,) = capture_records(s, r, RdaConfig())
    assert rec.valid and rec.estimate["exact"] and rec.estimate["mean"] == rec.true["mean"]
    assert rec.estimate["std"] == pytest.approx(rec.true["std"], rel=0.05)
    low, high = rec.estimate["std_ci"]
    assert 0 < low < rec.estimate["std"] < high


def test_time_mode_captures_of_a_long_path_widen_lda_intervals(capture_pair, tmp_path):
    # 40 µs delays cut into 500 µs intervals: ~200 packets in flight at each boundary.
    # Each valid LDA row says so and its widened interval holds the true mean; a row
    # with more packets in than out is invalid and says why.
    sim = Scenario(packets=12_000, flows=50, loss=0.001, delay="uniform:low=20us,high=60us",
                   seed=3).run()
    s, r = capture_pair(tmp_path, sim)
    recs = capture_records(s, r, LdaConfig(), interval_ns=500_000)
    valid = [rec for rec in recs if rec.valid and rec.true and rec.true.get("mean")]
    assert len(valid) >= 3
    for rec in valid:
        lo, hi = rec.estimate["ci"]
        assert lo <= rec.true["mean"] <= hi
        assert any(n.startswith("time mode: about") for n in rec.notes), rec.notes
    for rec in recs:
        if not rec.valid and rec.problem == "swapped":
            assert "in time mode" in rec.notes[0]

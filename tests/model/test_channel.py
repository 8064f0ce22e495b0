# SPDX-License-Identifier: BSD-2-Clause
"""The simulated path: delay distributions, loss models, reordering, clock offset,
interval assignment and the exactness of the ground truth."""

import math

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from host_sw.model.channel import Channel, Scenario, observe, simulate_interval
from host_sw.model.impairments import DelayDistribution, LossModel, parse_time_ns
from host_sw.contracts.config import LdaConfig, RdaConfig
from host_sw.model.traffic import synthetic_trace


# -- delay distributions ------------------------------------------------------------------

def test_weibull_mean_rescaling_reproduces_the_lda_paper_scale():
    d = DelayDistribution.parse("weibull:shape=0.6,mean=0.2us")
    assert d.family == "weibull"
    assert d["scale"] == pytest.approx(132.93, abs=0.01)  # the paper's α = 0.133 µs
    assert d.mean() == pytest.approx(200.0)


@pytest.mark.parametrize("spec, mean", [
    ("weibull:shape=0.6,mean=200", 200.0),
    ("weibull:scale=133,shape=0.7", 133 * math.gamma(1 + 1 / 0.7)),
    ("pareto:shape=3,mean=0.2us", 200.0),
    ("pareto:scale=100,shape=4", 100 * 4 / 3),
    ("constant:value=1.5us", 1500.0),
    ("bimodal:a=100,b=500,p=0.25", 400.0),
    ("bimodal:a=1,b=3,p=0.5,mean=1us", 1000.0),
    ("exponential:mean=2us", 2000.0),
    ("uniform:low=10,high=30", 20.0),
    ("lognormal:sigma=0.5,mean=300", 300.0),
])
def test_empirical_means_match_the_target(spec, mean):
    d = DelayDistribution.parse(spec)
    assert d.mean() == pytest.approx(mean, rel=1e-9)
    x = d.sample_ns(400_000, np.random.default_rng(11))
    assert x.dtype == np.int64 and (x >= 0).all()
    assert x.mean() == pytest.approx(mean, rel=0.02)


def test_weibull_and_pareto_follow_the_papers_cdfs():
    rng = np.random.default_rng(2)
    w = DelayDistribution.parse("weibull:scale=100,shape=0.6").sample(200_000, rng)
    for x in (30.0, 100.0, 400.0):
        assert (w <= x).mean() == pytest.approx(1 - math.exp(-(x / 100) ** 0.6), abs=0.005)
    p = DelayDistribution.parse("pareto:scale=100,shape=3").sample(200_000, rng)
    assert p.min() >= 100
    for x in (120.0, 200.0):
        assert (p <= x).mean() == pytest.approx(1 - (x / 100) ** -3, abs=0.005)


def test_delays_are_rounded_to_the_nearest_ns():
    d = DelayDistribution.parse("constant:value=2.6")
    assert (d.sample_ns(5, np.random.default_rng(0)) == 3).all()


@pytest.mark.parametrize("spec, message", [
    ("gamma:shape=2", "unknown delay family"),
    ("weibull:scale=1", "needs shape"),
    ("weibull:shape=0.6", "needs scale or mean="),
    ("weibull:shape=0.6,scale=1,colour=red", "unknown parameter"),
    ("weibull:shape=-1,scale=1", "shape must be positive"),
    ("weibull:shape=0.6us,scale=1", "shape must be a plain number"),
    ("constant:value=3 parsecs", "must be a number with an optional unit|unknown time unit"),
    ("constant:value=3lightyears", "unknown time unit"),
    ("pareto:shape=0.9,mean=100", "infinite mean"),
    ("bimodal:a=1,b=2,p=1.5", "p must be in"),
    ("uniform:low=5,high=1", "low must not exceed high"),
    ("exponential", "needs mean="),
    ("weibull:shape", "expected key=value"),
    ("constant:value=1,value=2", "given twice"),
    ("", "non-empty string"),
])
def test_bad_delay_specs_raise_clear_errors(spec, message):
    with pytest.raises(ValueError, match=message):
        DelayDistribution.parse(spec)


@settings(max_examples=40, deadline=None)
@given(st.floats(0, 1e6, allow_nan=False), st.sampled_from(["ns", "us", "µs", "ms", "s"]))
def test_time_units(value, unit):
    factor = {"ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6, "s": 1e9}[unit]
    assert parse_time_ns(f"{value!r}{unit}") == pytest.approx(value * factor)


# -- loss ---------------------------------------------------------------------------------

def test_uniform_loss_drops_exactly_round_rate_times_n():
    m = LossModel.parse(0.013)
    drops = m.drops(100_000, np.random.default_rng(1))
    assert drops.sum() == 1300
    assert LossModel.parse("uniform:rate=0.5").drops(7, np.random.default_rng(0)).sum() == 4
    assert not LossModel.parse("none").drops(10, np.random.default_rng(0)).any()
    assert LossModel.parse("0").kind == "none"


def test_loss_episodes_are_bursty_and_rate_matched():
    m = LossModel.parse("episodes:rate=0.02,length=20")
    drops = m.drops(2_000_000, np.random.default_rng(5))
    assert drops.mean() == pytest.approx(0.02, rel=0.08)
    # runs of consecutive drops average about `length` packets (merged episodes only
    # lengthen them)
    edges = np.diff(np.concatenate([[0], drops.astype(np.int8), [0]]))
    runs = np.flatnonzero(edges == -1) - np.flatnonzero(edges == 1)
    assert 17 < runs.mean() < 24
    # uniform loss at the same rate has runs of about 1
    u = LossModel.parse(0.02).drops(200_000, np.random.default_rng(5))
    e = np.diff(np.concatenate([[0], u.astype(np.int8), [0]]))
    assert (np.flatnonzero(e == -1) - np.flatnonzero(e == 1)).mean() < 1.1


@pytest.mark.parametrize("spec, message", [
    ("uniform:rate=1.5", "loss rate must be in"),
    (-0.1, "loss rate must be in"),
    ("episodes:length=100", "needs rate="),
    ("episodes:rate=0.1,length=0.5", "episode length"),
    ("bursts:rate=0.1", "unknown loss model"),
    ("uniform:rate=0.1,length=3", "unknown parameter"),
])
def test_bad_loss_specs(spec, message):
    with pytest.raises(ValueError, match=message):
        LossModel.parse(spec)


# -- intervals and truth ------------------------------------------------------------------

def _check_truth_consistency(intervals, trace):
    for iv in intervals:
        t = iv.truth
        assert t.sent == len(iv.sender) and t.received == len(iv.receiver)
        both = t.sent - t.lost
        assert both == t.received - t.reordered == len(t.both_ids) == len(t.delays)
        assert np.array_equal(np.sort(np.concatenate([t.both_ids, t.lost_ids])),
                              np.sort(iv.sender.packet_ids))
        assert np.array_equal(np.sort(np.concatenate([t.both_ids, t.reordered_ids])),
                              np.sort(iv.receiver.packet_ids))
        assert set(t.dropped_ids.tolist()) <= set(t.lost_ids.tolist())


def test_marker_mode_truth_is_exact():
    sc = Scenario(packets=30_000, flows=50, loss=0.01, delay="weibull:shape=0.6,mean=200",
                  clock_offset_ns=-500, interval_ns=1_000_000, seed=3)
    sim = sc.run()
    trace = sim.trace
    assert len(sim.intervals) > 3
    _check_truth_consistency(sim.intervals, trace)
    total_lost = 0
    for iv in sim.intervals:
        t = iv.truth
        assert t.reordered == 0 and t.sent == t.received + t.lost
        assert np.array_equal(t.lost_ids, t.dropped_ids)
        # the sender's interval is its send-time interval at both points
        assert np.array_equal(iv.sender.timestamps, trace.timestamps[iv.sender.indices])
        total_lost += t.lost
        # exact delays: receiver clock − sender clock, integers, offset included
        recv = dict(zip(iv.receiver.packet_ids.tolist(), iv.receiver.timestamps.tolist()))
        expect = [recv[i] - trace.timestamps[i] for i in t.both_ids[:50]]
        assert t.delays[:50].tolist() == expect
        assert t.mean == pytest.approx(t.delays.mean())
        assert t.delay_sum == int(t.delays.sum())
    assert total_lost == 300
    means = np.array([iv.truth.mean for iv in sim.intervals])
    assert np.average(means, weights=[len(iv.truth.delays) for iv in sim.intervals]) \
        == pytest.approx(200 - 500, abs=6)


def test_time_mode_boundary_packets_are_lost_then_reordered():
    # packets every 100 ns, constant 250 ns delay, 1000 ns intervals: the packets sent
    # in the last 250 ns of an interval arrive in the next one
    trace = synthetic_trace(packets=100, flows=3, rate_pps=1e7, gaps="constant",
                            start_ns=10_000, seed=1)
    ch = Channel(delay="constant:value=250")
    ivs = observe(trace, ch, mode="time", interval_ns=1000)
    assert [iv.interval for iv in ivs] == list(range(11))
    _check_truth_consistency(ivs, trace)
    for iv in ivs[:10]:
        t = iv.truth
        first = 10 * iv.interval
        assert t.sent == 10
        assert t.lost_ids.tolist() == [first + 8, first + 9]       # sent at 800, 900
        assert len(t.dropped_ids) == 0
        expect_reordered = [first - 2, first - 1] if iv.interval else []
        assert t.reordered_ids.tolist() == expect_reordered
        assert (t.delays == 250).all()
    assert ivs[10].truth.sent == 0 and ivs[10].truth.reordered_ids.tolist() == [98, 99]


def test_time_mode_clock_offset_shifts_the_receiver_boundaries():
    trace = synthetic_trace(packets=100, flows=3, rate_pps=1e7, gaps="constant",
                            start_ns=10_000, seed=1)
    # receiver clock 300 ns ahead: arrival at true t is stamped t + 300
    ivs = observe(trace, Channel(delay="constant:value=0", clock_offset_ns=300),
                  mode="time", interval_ns=1000)
    t = ivs[0].truth
    assert t.lost_ids.tolist() == [7, 8, 9] and (t.delays == 300).all()
    # marker mode ignores clocks for the assignment
    ivs = observe(trace, Channel(delay="constant:value=0", clock_offset_ns=300),
                  mode="marker", interval_ns=1000)
    assert all(iv.truth.lost == 0 and iv.truth.reordered == 0 for iv in ivs)


def test_boundary_reordering_holds_packets_past_the_boundary():
    trace = synthetic_trace(packets=1000, flows=3, rate_pps=1e7, gaps="constant",
                            start_ns=10_000, seed=1)
    ch = Channel(delay="constant:value=10", boundary_reorder_fraction=1.0,
                 boundary_reorder_span_ns=300)
    ivs = observe(trace, ch, mode="time", interval_ns=10_000, seed=4)
    _check_truth_consistency(ivs, trace)
    for iv in ivs[:-1]:
        first = 100 * iv.interval
        # sent at 9700, 9800, 9900 (within 300 ns of the boundary) → next interval
        assert iv.truth.lost_ids.tolist() == [first + 97, first + 98, first + 99]
        assert ivs[iv.interval + 1].truth.reordered_ids.tolist() == [first + 97, first + 98,
                                                                      first + 99]


def test_multipath_reorders_arrivals_without_breaking_marker_intervals():
    sim = Scenario(packets=20_000, flows=20, rate_pps=1e7, delay="constant:value=100",
                   multipath_fraction=0.05, multipath_extra="constant:value=1us",
                   seed=2).run()
    iv = sim.intervals[0]
    # receiver order is by arrival: a slow packet comes after later-sent fast ones
    assert (np.diff(iv.receiver.timestamps) >= 0).all()
    assert (np.diff(iv.receiver.packet_ids) < 0).sum() > 500
    d = iv.truth.delays
    assert set(np.unique(d).tolist()) == {100, 1100}
    assert (d == 1100).mean() == pytest.approx(0.05, abs=0.01)
    assert iv.truth.lost == iv.truth.reordered == 0


def test_observations_feed_the_golden_model():
    iv = simulate_interval(packets=5000, flows=30, loss=0.02, seed=9)
    s, r = iv.synopses(LdaConfig(banks=1, rows=64, thresholds=(0,)))
    assert int(s.count.sum()) == iv.truth.sent == 5000
    assert int(r.count.sum()) == iv.truth.received == 4900
    # an exact check of the timestamp sums (no wrap at these magnitudes)
    assert int(r.ts_sum.sum()) - int(s.ts_sum.sum()) == \
        iv.truth.delay_sum - int(iv.sender.timestamps[np.isin(iv.sender.packet_ids,
                                                               iv.truth.lost_ids)].sum())
    rh = iv.receiver.hashes(RdaConfig())
    assert len(rh) == 4900


def test_runs_share_the_trace_and_differ_in_the_channel():
    sc = Scenario(packets=5000, flows=20, loss=0.1, seed=1)
    trace = sc.trace()
    a, b = sc.run(0, trace=trace), sc.run(1, trace=trace)
    a2 = sc.run(0, trace=trace)
    ta, tb = a.intervals[0].truth, b.intervals[0].truth
    assert np.array_equal(ta.lost_ids, a2.intervals[0].truth.lost_ids)
    assert not np.array_equal(ta.lost_ids, tb.lost_ids)
    # changing only the loss keeps every packet's delay (independent random streams)
    c = Scenario(packets=5000, flows=20, loss=0.2, seed=1).run(0, trace=trace)
    tc = c.intervals[0].truth
    common, ia, ic = np.intersect1d(ta.both_ids, tc.both_ids, return_indices=True)
    assert len(common) > 3000
    assert np.array_equal(ta.delays[ia], tc.delays[ic])


def test_per_flow_truth():
    sim = Scenario(packets=4000, flows=10, loss=0.05, seed=4).run()
    iv = sim.intervals[0]
    pf = iv.truth.per_flow(sim.trace.flow_ids, sim.trace.num_flows)
    assert pf["packets"].sum() == len(iv.truth.both_ids)
    assert pf["lost"].sum() == iv.truth.lost == 200
    f = int(np.argmax(pf["packets"]))
    sel = sim.trace.flow_ids[iv.truth.both_ids] == f
    assert pf["mean"][f] == pytest.approx(iv.truth.delays[sel].mean())


@pytest.mark.parametrize("kwargs, message", [
    (dict(mode="sometimes"), "mode must be"),
    (dict(interval_ns=0), "interval_ns must be positive"),
    (dict(multipath_fraction=2), "multipath_fraction must be in"),
    (dict(delay="weibull:shape=0"), "shape must be positive|needs scale"),
    (dict(loss="episodes:rate=1"), "below 1"),
])
def test_bad_scenarios(kwargs, message):
    with pytest.raises(ValueError, match=message):
        Scenario(**kwargs)


def test_negative_receiver_timestamps_are_refused():
    trace = synthetic_trace(packets=10, flows=1, start_ns=100, seed=0)
    with pytest.raises(ValueError, match="negative"):
        observe(trace, Channel(clock_offset_ns=-10_000))


def test_flow_extra_delay_is_constant_within_a_flow():
    sim = Scenario(packets=5000, flows=40, delay="constant:value=100",
                   flow_extra="bimodal:a=0,b=1000,p=0.5", seed=3).run()
    iv = sim.intervals[0]
    flows = sim.trace.flow_ids[iv.truth.both_ids]
    per_flow = {}
    for f, d in zip(flows.tolist(), iv.truth.delays.tolist()):
        per_flow.setdefault(f, set()).add(d)
    assert all(len(v) == 1 for v in per_flow.values())
    values = {next(iter(v)) for v in per_flow.values()}
    assert values == {100, 1100}
    with pytest.raises(ValueError, match="flow id"):
        Channel(flow_extra="constant:value=1").transmit(np.arange(3))


def test_synopses_count_in_the_configurations_ticks():
    iv = simulate_interval(packets=2000, flows=5, delay="constant:value=640", seed=1)
    cfg = LdaConfig(banks=1, rows=2, thresholds=(0,), tick_ns=6.4)
    assert np.array_equal(iv.sender.ticks(cfg), np.floor(iv.sender.timestamps / 6.4))
    s, r = iv.synopses(cfg)
    # a 640 ns delay is exactly 100 ticks of 6.4 ns (up to the floor of each stamp)
    diff = (int(r.ts_sum.sum()) - int(s.ts_sum.sum())) / 2000
    assert 99 <= diff <= 101
    cfg8 = cfg.replace(tick_ns=8.0)
    assert np.array_equal(iv.sender.ticks(cfg8), iv.sender.timestamps // 8)


@settings(max_examples=25, deadline=None)
@given(packets=st.integers(1, 400), loss=st.floats(0, 0.5),
       mode=st.sampled_from(["marker", "time"]), interval=st.integers(50, 5000),
       offset=st.integers(-500, 500), multipath=st.floats(0, 0.3), seed=st.integers(0, 99))
def test_truth_invariants_hold_for_any_scenario(packets, loss, mode, interval, offset,
                                                multipath, seed):
    sim = Scenario(packets=packets, flows=5, rate_pps=2e7, loss=loss, mode=mode,
                   interval_ns=interval, clock_offset_ns=offset,
                   delay="exponential:mean=300", multipath_fraction=multipath,
                   multipath_extra="constant:value=700", seed=seed).run()
    _check_truth_consistency(sim.intervals, sim.trace)
    assert sum(iv.truth.sent for iv in sim.intervals) == packets
    dropped = sum(len(iv.truth.dropped_ids) for iv in sim.intervals)
    assert dropped == round(loss * packets)
    assert sum(iv.truth.received for iv in sim.intervals) == packets - dropped
    for iv in sim.intervals:
        if mode == "marker":
            assert iv.truth.reordered == 0
        # every receiver timestamp of the interval lies in it (time mode, own clock)
        if mode == "time" and len(iv.receiver):
            t0 = int(sim.trace.timestamps[0])
            assert ((iv.receiver.timestamps - t0) // interval == iv.interval).all()

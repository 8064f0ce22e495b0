# SPDX-License-Identifier: BSD-2-Clause
"""Capture pairs that must make sense (issue 23, item 3, host side): pairs that are not,
or only partly, one stream at two points — a sender capture that stopped early, a
receiver capture that started late or stopped early, every packet twice, swapped roles
with a clock offset, the same point twice (byte-different copies), the receiver holding
another stream's packets — are trimmed to the window both captures saw (the row
reports the window and the loss of that window, equal to the true loss computed here
from the simulated pair) or are invalid with their reason. No valid row ever has a
negative or > 100 % loss or a negative mean."""

import numpy as np
import pytest

from host_sw.contracts.config import LdaConfig, LdsConfig, OpaConfig, RdaConfig, RliConfig
from host_sw.estimators.offline import capture_records
from host_sw.model.channel import Scenario
from host_sw.model.pcap import write_pcap

CONFIGS = {"lda": LdaConfig(), "rda": RdaConfig(), "lds": LdsConfig()}
#: The kinds whose capture pairs are trimmed and checked as one stream at two points
#: (RLI on its own streamed path, OPA streamed with its records spilled by interval).
TRIMMED = {**CONFIGS, "opa": OpaConfig(), "rli": RliConfig()}


@pytest.fixture(scope="module")
def run():
    return simulated_run()


def simulated_run():
    """A lossy simulated run: the trace, the sender's and the receiver's (index,
    timestamp) arrays (receiver in arrival order) and a second, unrelated run."""
    sim = Scenario(packets=4000, flows=30, loss=0.02, delay="exponential:mean=2us",
                   seed=21).run()
    (iv,) = sim.intervals
    order = np.argsort(iv.receiver.timestamps, kind="stable")
    other = Scenario(packets=4000, flows=30, loss=0.0, delay="exponential:mean=2us",
                     seed=99).run()
    return {"trace": sim.trace, "s": (np.arange(len(sim.trace)), sim.trace.timestamps),
            "r": (iv.receiver.indices[order], iv.receiver.timestamps[order]),
            "other": other.trace}


def _write(path, trace, idx, ts, **kw):
    write_pcap(path, trace.frames(idx), ts, **kw)
    return path


def _window_truth(run, rec):
    """``(sent, lost, mean delay)`` of the window the row reports, from the simulated
    pair: the sender's packets sent in the window, those of them the receiver's capture
    holds, their delays."""
    return window_truth(run, rec.details["window"])


def window_truth(run, w):
    """``(sent, lost, mean delay)`` of the window ``{"first_ns", "last_ns"}``."""
    s_idx, s_ts = run["s"]
    r_idx, r_ts = run["r"]
    inside = (s_ts >= w["first_ns"]) & (s_ts <= w["last_ns"])
    sent = s_idx[inside]
    arrival = dict(zip(r_idx.tolist(), r_ts.tolist()))
    got = [i for i in sent.tolist() if i in arrival]
    delays = [arrival[i] - int(s_ts[i]) for i in got]
    return len(sent), len(sent) - len(got), float(np.mean(delays))


def _check_sane(rec):
    """No valid row with a negative or > 100 % loss or a negative mean."""
    if rec.valid and rec.estimate:
        e = rec.estimate
        assert e.get("lost") is None or e["lost"] >= 0, rec
        assert e.get("loss_rate") is None or 0 <= e["loss_rate"] <= 1, rec
        assert e.get("mean") is None or e["mean"] >= 0, rec


def test_the_whole_pair_is_not_trimmed(run, tmp_path):
    tr = run["trace"]
    s = _write(tmp_path / "s.pcap", tr, *run["s"])
    r = _write(tmp_path / "r.pcap", tr, *run["r"])
    for kind, config in TRIMMED.items():
        (rec,) = capture_records(s, r, config)
        assert rec.valid, (kind, rec.notes)
        assert "window" not in rec.details
        assert rec.estimate["lost"] == rec.true["lost"] == 4000 - len(run["r"][0])


def _partial(run, tmp_path, case):
    """The capture pair of a partial case."""
    tr = run["trace"]
    (s_idx, s_ts), (r_idx, r_ts) = run["s"], run["r"]
    cut = int(s_ts[0] + 0.6 * (s_ts[-1] - s_ts[0]))
    start = int(s_ts[0] + 0.4 * (s_ts[-1] - s_ts[0]))
    if case == "sender stopped early":
        s_keep, r_keep = s_ts <= cut, np.ones(len(r_ts), bool)
    elif case == "receiver started late":
        s_keep, r_keep = np.ones(len(s_ts), bool), r_ts >= start
    else:   # receiver stopped early
        s_keep, r_keep = np.ones(len(s_ts), bool), r_ts <= cut
    return (_write(tmp_path / "s.pcap", tr, s_idx[s_keep], s_ts[s_keep]),
            _write(tmp_path / "r.pcap", tr, r_idx[r_keep], r_ts[r_keep]))


@pytest.mark.parametrize("case", ["sender stopped early", "receiver started late",
                                  "receiver stopped early"])
@pytest.mark.parametrize("kind", sorted(TRIMMED))
def test_a_partial_pair_reports_the_loss_of_the_window_both_saw(run, tmp_path, case, kind):
    s, r = _partial(run, tmp_path, case)
    (rec,) = capture_records(s, r, TRIMMED[kind])
    _check_sane(rec)
    assert rec.valid, rec.notes
    sent, lost, mean = _window_truth(run, rec)
    assert 0 < sent < 4000
    assert rec.estimate["lost"] == rec.true["lost"] == lost
    assert rec.true["sent"] == sent and rec.true["mean"] == pytest.approx(mean, rel=1e-12)
    # ~2 us, not 24 us (RLI interpolates between references 100 packets apart: its mean
    # of the whole pair is 25 % below the truth on these exponential delays)
    assert abs(rec.estimate["mean"] - mean) < (0.35 if kind == "rli" else 0.1) * mean
    w = rec.details["window"]
    (note,) = [n for n in rec.notes if n.startswith("window both captures saw")]
    assert f"sender times {w['first_ns']} to {w['last_ns']} ns" in note
    assert w["left_out"]["sender"] + w["left_out"]["receiver"] > 0


def _bad_pair(run, tmp_path, case):
    tr = run["trace"]
    (s_idx, s_ts), (r_idx, r_ts) = run["s"], run["r"]
    s = _write(tmp_path / "s.pcap", tr, s_idx, s_ts)
    r = _write(tmp_path / "r.pcap", tr, r_idx, r_ts)
    if case == "sender twice":
        twice = np.repeat(s_idx, 2)
        return _write(tmp_path / "s2.pcap", tr, twice, np.repeat(s_ts, 2)), r
    if case == "receiver twice":
        return s, _write(tmp_path / "r2.pcap", tr, np.repeat(r_idx, 2), np.repeat(r_ts, 2))
    if case == "swapped with a clock offset":
        return r, _write(tmp_path / "s_late.pcap", tr, s_idx, s_ts + 30_000)
    if case == "swapped, clocks apart by more than the captures":
        return r, _write(tmp_path / "s_late.pcap", tr, s_idx, s_ts + 10_000_000)
    if case == "same point, another snap length":
        return s, _write(tmp_path / "s_copy.pcap", tr, s_idx, s_ts, snaplen=9000)
    if case == "same point, one packet less":
        return s, _write(tmp_path / "s_less.pcap", tr, s_idx[1:], s_ts[1:])
    if case == "another stream":
        o = run["other"]
        return s, _write(tmp_path / "o.pcap", o, np.arange(len(o)), o.timestamps)
    # a receiver holding 5 % packets of another stream among its own
    o = run["other"]
    extra = np.arange(0, len(o), 20)
    frames = tr.frames(r_idx) + o.frames(extra)
    ts = np.concatenate([r_ts, o.timestamps[extra] - o.timestamps[0] + s_ts[0] + 50_000])
    order = np.argsort(ts, kind="stable")
    write_pcap(tmp_path / "rx.pcap", [frames[k] for k in order], ts[order])
    return s, tmp_path / "rx.pcap"


_BAD = {"sender twice": "duplicated_packets", "receiver twice": "duplicated_packets",
        "swapped with a clock offset": "foreign_packets",
        "same point, another snap length": "same_capture",
        "swapped, clocks apart by more than the captures": "no_common_window",
        "same point, one packet less": "same_capture", "another stream": "unrelated_captures",
        "foreign packets in the receiver": "foreign_packets"}


@pytest.mark.parametrize("case", sorted(_BAD))
@pytest.mark.parametrize("kind", sorted(TRIMMED))
def test_a_pair_that_is_not_one_stream_is_invalid_with_its_reason(run, tmp_path, case,
                                                                  kind):
    s, r = _bad_pair(run, tmp_path, case)
    records = capture_records(s, r, TRIMMED[kind])
    assert records
    for rec in records:
        assert not rec.valid and rec.estimate is None, (case, rec.notes)
        if _BAD[case] is not None:
            assert rec.problem == _BAD[case], (case, rec.problem, rec.notes)
        assert rec.notes and rec.problem

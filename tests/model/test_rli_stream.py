# SPDX-License-Identifier: BSD-2-Clause
"""The RLI rules fed in pieces (``ReferenceDesignator``, ``StreamedReceiver``, used by
``ldactl estimate`` on captures) give exactly what the batch golden model gives: the
same reference positions, and the same counter words and stats, however the stream is
cut."""

import numpy as np
import pytest

from host_sw.contracts.config import RliConfig
from host_sw.model.golden_rli import (ReferenceDesignator, StreamedReceiver, receiver_synopsis,
                               reference_positions)

RULES = [dict(ref_packets=7), dict(ref_packets=0, ref_period_ticks=5000),
         dict(ref_packets=0, adapt_link_Bps=1.25e8, adapt_window_ticks=20_000,
              ref_packets_low_util=3, ref_packets_high_util=40)]


def _cuts(rng, n, pieces):
    return np.sort(rng.choice(np.arange(1, n), size=pieces, replace=False))


@pytest.mark.parametrize("rule", RULES)
@pytest.mark.parametrize("seed", range(3))
def test_designator_equals_reference_positions(rule, seed):
    config = RliConfig(**rule)
    rng = np.random.default_rng(seed)
    n = 3000
    gaps = rng.choice([0, 1, 3, 200, 900, 30_000], size=n, p=[.1, .2, .2, .3, .18, .02])
    ticks = 1_764_000_000 * 10**9 + np.cumsum(gaps)     # epoch ns: no float step may round
    nbytes = rng.integers(60, 1500, n)
    counted = rng.random(n) > 0.1
    want, _ = reference_positions(config, ticks, nbytes, counted)
    d = ReferenceDesignator(config)
    got = []
    cuts = _cuts(rng, n, 9)
    for a, b in zip(np.r_[0, cuts], np.r_[cuts, n]):
        got.append(d.add(ticks[a:b], nbytes[a:b], counted[a:b]))
    got.append(d.finish())
    assert len(want) > 20
    np.testing.assert_array_equal(np.concatenate(got), want)


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("refs", [0.02, 0.0005, 0.0])
def test_streamed_receiver_equals_receiver_synopsis(seed, refs):
    config = RliConfig(cells=64, buffer_packets=150, digest_bits=16, slope_frac_bits=8)
    rng = np.random.default_rng(seed)
    n = 4000
    arrival = np.cumsum(rng.integers(0, 50, n)) + 1_764_000_000 * 10**9
    is_ref = rng.random(n) < refs
    ref_send = arrival - rng.integers(0, 3000, n)
    counted = (rng.random(n) > 0.05) & ~is_ref
    flows = rng.integers(0, 1 << 32, (2, n), dtype=np.uint64)
    want, want_stats = receiver_synopsis(config, flows, arrival, is_ref, ref_send, counted)
    r = StreamedReceiver(config)
    cuts = _cuts(rng, n, 12)
    for a, b in zip(np.r_[0, cuts], np.r_[cuts, n]):
        r.add(flows[:, a:b], arrival[a:b], is_ref[a:b], ref_send[a:b], counted[a:b])
    got, stats = r.finish()
    assert stats == want_stats
    assert got.words() == want.words()
    if refs == 0.02:
        assert stats.counted > 3000
    if refs == 0.0005:
        assert stats.overflowed > 0            # the buffer filled between references


def test_streamed_receiver_without_reference_overflows_beyond_the_buffer():
    """No reference in the interval: the streamed receiver holds ``buffer_packets`` (then
    unreferenced), the rest overflow, as the batch model and the gateware count them."""
    config = RliConfig(buffer_packets=1)
    r = StreamedReceiver(config)
    r.add(np.ones((2, 1), np.uint64), [10], [False], [0], [True])
    r.add(np.ones((2, 1), np.uint64), [20], [False], [0], [True])
    syn, stats = r.finish()
    assert (stats.references, stats.counted, stats.overflowed, stats.unreferenced) == \
        (0, 0, 1, 1)
    assert not syn.count.any()

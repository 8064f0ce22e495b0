# SPDX-License-Identifier: BSD-2-Clause
"""Smoke tests of the OPA/RLI comparison benches at tiny sizes: RLI on the OPA workload
(``bench.opa_common.rli_estimates``) is exact where delays are constant, and OPA on the
RLI queueing traffic (``bench.accuracy_rli``) gives every flow its true mean."""

import numpy as np

from host_sw.model.channel import Scenario

from bench import accuracy_rli
from bench.opa_common import make_workload, rli_estimates


def test_rli_on_constant_delays_is_exact_and_smooths_large_ones():
    work = make_workload(packets=20_000, loss=1e-3, scale_ns=0.0, large_p=0.0,
                         base_ns=700.0, seed=3)
    d, got, refs = rli_estimates(work, 100)
    assert got.all() and 190 <= refs <= 200
    assert np.array_equal(d, work.true_delay.astype(float))
    work = make_workload(packets=20_000, loss=0.0, scale_ns=10.0, large_p=2e-3,
                         base_ns=1000.0, seed=4)
    d, got, _ = rli_estimates(work, 1000)
    rel = (d - work.true_delay) / work.true_delay
    assert work.large.sum() > 10 and np.all(rel[work.large] < -0.5)   # smoothed away


def test_opa_per_flow_means_on_the_queue_are_exact():
    sc = Scenario(packets=20_000, flows=200, rate_pps=5e6, delay="constant:value=0",
                  queue="red:utilisation=0.88", fast=True, seed=9)
    trace = sc.trace()
    iv = sc.run(0, trace=trace).intervals[0]
    mean, stats = accuracy_rli._opa_errors(iv, trace, 11)
    t = iv.truth.per_flow(trace.flow_ids, trace.num_flows)
    seen = t["packets"] > 0
    assert stats["recovered"] == 1.0 and stats["groups"] == 128
    assert np.allclose(mean[seen], t["mean"][seen], rtol=0, atol=1e-9)
    assert 2.0 < stats["bytes_per_packet"] < 3.0

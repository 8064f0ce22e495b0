# SPDX-License-Identifier: BSD-2-Clause
"""hw.rli.interpolator.RliInterpolator's slope at the edges of its floor division: delay
differences that the span divides exactly and ones it does not, rising and falling, so
that the negative slope's rounding (⌊−x / span⌋ formed as ~⌊(x − 1) / span⌋) is checked
against the golden model on both sides."""

import numpy as np
import pytest

from host_sw.model.golden_rli import interpolated_delays

from tests.hw.rli.test_hw_rli_interpolator import CONFIG, _run


@pytest.mark.parametrize("step", [-1024, -1000, -2, -1, 1, 2, 1000, 1024])
def test_slopes_round_as_the_golden_model(step):
    # references every 4 packets, 128 ticks apart: the span 512 divides (step << F)
    # exactly for even steps; offsets up to 384 ticks > 2^F make one unit of the slope
    # visible in the delay
    n = 17
    arrival = 1000 + 128 * np.arange(n)
    is_ref = np.arange(n) % 4 == 0
    delay = 500 + step * (np.arange(n) // 4)
    send = arrival - delay
    cell = np.arange(n) % CONFIG.cells
    digest = np.arange(n) % 256
    out, stats = _run(arrival, is_ref, send, cell, digest)
    got, kept, golden = interpolated_delays(CONFIG, arrival, is_ref, send, ~is_ref)
    assert out == [(int(cell[k]), int(digest[k]), int(d)) for k, d in zip(kept, got)]
    assert stats["references"] == golden.references == 5

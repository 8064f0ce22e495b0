# SPDX-License-Identifier: BSD-2-Clause
"""The LDA std estimate on structured traffic (issue 12): one flow whose header windows
differ only in a counter (IP identification, TCP sequence number, UDP port, a payload
counter). With the row, sign and bank taken from raw (linear) H3 output the estimate was
low in 80-89 % of runs, -3.5..-9 % on average with a spread of 30-40 %
(``docs/ACCURACY.md``, "Structured traffic"); from the field hash it is unbiased with the
spread of random windows. The full 200-run figures come from
``bench/accuracy_structured.py``; this test takes 100 runs per class (a second or two each)."""

import pytest

from bench.accuracy_structured import summarise


@pytest.mark.parametrize("kind", ["ip_id", "tcp_seq", "udp_sport", "payload"])
def test_std_estimate_unbiased_on_counting_fields(kind):
    row = summarise(kind, 100)
    # 100 runs: standard error of the mean about 0.8 % (spread about 8 %)
    assert abs(row["std_mean_err"]) < 0.03, row
    assert 0.35 <= row["below_truth"] <= 0.65, row
    assert row["std_spread"] < 0.12, row
    assert row["no_std"] == 0
    assert abs(row["mean_mean_err"]) < 1e-9       # no loss: the mean is exact

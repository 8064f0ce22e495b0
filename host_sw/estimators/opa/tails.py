# SPDX-License-Identifier: BSD-2-Clause
"""OPA's percentiles as far as they hold, and the group count an interval needs.

Estimators layer, used by :func:`host_sw.estimators.opa.recovery.summary` and
:func:`~host_sw.estimators.opa.recovery.estimate_opa`. The packets of an unrecovered
group are received but get no delay, and they are not a random sample: reordered
(late) packets are what puts a group beyond reach. A percentile of the recovered
delays alone can then lie far from the interval's (issue 25: p99.9 printed as 4 227
ticks where the truth was 10 581). Each percentile is a non-decreasing function of
every delay, so the ``u`` delays not known bound it between its value with all of them
below the recovered ones and its value with all of them above
(:func:`percentile_ranges`); it is a number only where the two agree.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["percentile_ranges", "groups_for", "PACKETS_PER_GROUP", "GROUPS_PER_ERROR",
           "MIN_GROUPS", "MAX_GROUPS"]

#: The group count's rule (OPA §VI-A: the paper takes g = 2δ … 10δ for δ errors): about
#: this many packets per group at most, at least this many groups per error (loss or
#: reordered packet), at least :data:`MIN_GROUPS`, a power of two up to :data:`MAX_GROUPS`.
PACKETS_PER_GROUP = 64
GROUPS_PER_ERROR = 8
MIN_GROUPS = 16
MAX_GROUPS = 1 << 20


def groups_for(packets: float, errors: float) -> int:
    """The group count for ``packets`` per interval with ``errors`` lost or reordered
    packets among them (the rule of :data:`PACKETS_PER_GROUP` and
    :data:`GROUPS_PER_ERROR`)."""
    want = max(packets / PACKETS_PER_GROUP, GROUPS_PER_ERROR * errors, MIN_GROUPS)
    return 1 << min(20, max(0, math.ceil(math.log2(want))))


def _index(n: int, q: float) -> tuple[int, float]:
    """The lower order statistic and the weight of the next one of percentile ``q`` of
    ``n`` values, as ``numpy.percentile``'s linear method reads them."""
    h = (q / 100.0) * (n - 1)
    j = int(math.floor(h))
    return j, h - j


def percentile_ranges(recovered: np.ndarray, unknown: int,
                      qs) -> list[tuple[float | None, float | None]]:
    """Per percentile ``q`` of ``qs`` (100 = the maximum), ``(lo, hi)``: the least and
    the greatest the percentile of ``recovered`` and ``unknown`` more values can be,
    whatever those values (``numpy.percentile``, linear). ``lo`` is its value with every
    unknown one below the recovered ones, ``hi`` with every one above; ``None`` where
    the unknown ones alone decide it (an open end). ``lo == hi``: the unknown ones
    cannot move it. Both ``None`` when nothing is known."""
    r = np.sort(np.asarray(recovered, dtype=np.float64))
    n, u = len(r), int(unknown)
    total = n + u
    if n == 0:
        return [(None, None) for _ in qs]
    low = np.concatenate([np.full(u, r[0]), r]) if u else r    # the unknown ones below
    high = np.concatenate([r, np.full(u, r[-1])]) if u else r  # … above
    out = []
    for q in qs:
        j, f = _index(total, q)
        last = j if f == 0 or j + 1 >= total else j + 1     # the statistics it reads
        lo = float(np.percentile(low, q)) if j >= u else None
        hi = float(np.percentile(high, q)) if last < n else None
        out.append((lo, hi))
    return out

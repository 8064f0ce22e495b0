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
from functools import lru_cache

import numpy as np

from host_sw.estimators.opa.levels import level_size, required_matches
from host_sw.estimators.opa.search import FALSE_MATCH_BUDGET, GRID_LIMIT

__all__ = ["percentile_ranges", "groups_for", "rows_for", "three_loss_reach",
           "group_advice", "PACKETS_PER_GROUP", "GROUPS_PER_ERROR", "MIN_GROUPS",
           "MAX_GROUPS"]

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


@lru_cache(maxsize=None)
def three_loss_reach(rows: int) -> int:
    """The largest group (w packets) whose three losses the search tries at ``rows``
    CAH rows: its ``C(w, 3)`` candidates within the grid limit and, with the checking
    rows left, within the false-match budget (:mod:`host_sw.estimators.opa.search`)."""
    w = 3
    while (level_size(w - 2, w + 1, 3, 0, 0) <= GRID_LIMIT and required_matches(
            level_size(w - 2, w + 1, 3, 0, 0), rows, 3, 0, FALSE_MATCH_BUDGET) is not None):
        w += 1
    return w


def _three_or_more(groups: int, errors: float) -> float:
    """The groups expected to hold three or more of ``errors`` (Poisson, the paper's
    Eq. 8 for many groups)."""
    lam = errors / groups
    if lam > 20:
        return groups * (1.0 - math.exp(-lam) * (1.0 + lam + lam * lam / 2.0))
    term, tail = lam ** 3 / 6.0, 0.0        # the tail's own terms: no cancellation
    for j in range(4, 120):
        tail += term
        term *= lam / j
    return groups * math.exp(-lam) * tail


def rows_for(packets: float, errors: float, groups: int) -> int:
    """k, the CAH rows: 5 where it pays — at least one group expected to hold three lost
    or reordered packets, in groups larger than k = 4 searches three losses in and no
    larger than k = 5 does (:func:`three_loss_reach`) —, else 4."""
    w = packets / groups
    if not three_loss_reach(4) < w <= three_loss_reach(5):
        return 4
    return 5 if _three_or_more(groups, errors) >= 1.0 else 4


def group_advice(sent: int, errors: int, lost: int, groups: int,
                 rows: int) -> tuple[int, int, str | None]:
    """``(groups, rows, note)``: the group count and k an interval of ``sent`` packets
    with ``errors`` lost (``lost``) or reordered ones needs (:func:`groups_for`,
    :func:`rows_for`), and the note saying so when ``groups`` or ``rows`` fall short
    (None: they do not)."""
    need_g = groups_for(sent, errors)
    need_k = rows_for(sent, errors, max(need_g, groups))
    parts = []
    if need_g > groups:
        parts.append(f"need {need_g} groups, not {groups} (≥ {GROUPS_PER_ERROR} groups per "
                     f"lost or reordered packet, ≤ {PACKETS_PER_GROUP} packets per group)")
    if need_k > rows:
        g = max(need_g, groups)
        parts.append(f"k = {need_k} (rows {need_k}, not {rows}): about "
                     f"{_three_or_more(g, errors):.0f} of {g} groups hold three lost or "
                     f"reordered packets, which k = {rows} searches only in groups of up "
                     f"to {three_loss_reach(rows)} packets (these hold {sent / g:.0f})")
    if not parts:
        return need_g, need_k, None
    return need_g, need_k, (f"the loss ({lost}) and reordering (about {errors - lost}, "
                            f"scaled from the recovered groups) " + "; and ".join(parts)
                            + "; the configuration's groups and rows, simulate --groups "
                              "and --rows")


def _index(n: int, q: float) -> tuple[int, float]:
    """The lower order statistic and the weight of the next one of percentile ``q`` of
    ``n`` values, as ``numpy.percentile``'s linear method reads them."""
    h = (n - 1) * (q / 100.0)          # numpy's 'linear': (n − 1) · quantile
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
    qs = list(qs)
    lows, highs = np.percentile(low, qs), np.percentile(high, qs)
    out = []
    for q, lo, hi in zip(qs, lows.tolist(), highs.tolist()):
        j, f = _index(total, q)
        last = j if f == 0 or j + 1 >= total else j + 1     # the statistics it reads
        out.append((lo if j >= u else None, hi if last < n else None))
    return out

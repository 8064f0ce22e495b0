# SPDX-License-Identifier: BSD-2-Clause
"""Comparison baselines for the accuracy benchmarks: FineComb with the RDA paper's
"ideal" repair, and Poisson active probing as in the LDA paper's §IV-C.

Neither is a synopsis the gateware computes; both take per-packet ground truth (the
traffic a simulation generated) and return estimates comparable with
:func:`~host_sw.estimators.lda.estimate_lda` and :func:`~host_sw.estimators.rda.estimate.estimate_rda`.
Data flow (docs/DESIGN.md, "Layers and the import rule": estimators layer): simulated
traffic ► **baselines** ► ``docs/ACCURACY.md``.

* :func:`finecomb_ideal` — one array of ``buckets`` buckets, each packet in the bucket
  chosen by a hash of its ID; a bucket's digest check fails when the two points hold
  different packet sets. As in the RDA paper's §VII-B (the brute-force stash search is
  exponential), the repair is *ideal*: a bucket whose sets differ only by reordered
  packets (present at the receiver only) is repaired with the true set; a bucket with any
  lost packet (present at the sender only) is discarded. The mean uses the remaining
  buckets; the standard deviation collapses adjacent buckets ``2i, 2i+1`` that are both
  usable (the LDA estimator, eq. 5), ``F − µ²`` clipped at 0.
* :func:`poisson_probes` — probes sent at Poisson times with rate ``f`` over the
  interval; each probe takes the delay and the loss of the traffic at its send time (the
  last regular packet sent at or before it), so it sees the same delay distribution and
  the same loss episodes without perturbing the traffic (as the LDA paper's simulation).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from host_sw.contracts.hash_fields import range_reduce32
from host_sw.estimators._common import dataclass_to_dict, fraction_to_float, salted_mix64

__all__ = ["FineCombEstimate", "finecomb_ideal", "finecomb_buckets", "ProbeEstimate",
           "poisson_probes"]

#: Salt of FineComb's bucket hash (independent of the contract's H3 matrices).
FINECOMB_SALT = 0x46434F4D  # "FCOM"


def finecomb_buckets(ids, buckets: int) -> np.ndarray:
    """FineComb bucket of each packet ID: ``range_reduce32`` of a mixed 32-bit hash."""
    if not 1 <= buckets <= (1 << 32):
        raise ValueError(f"buckets must be 1..2**32, not {buckets}")
    mixed = salted_mix64(np.asarray(ids, dtype=np.uint64), FINECOMB_SALT) >> np.uint64(32)
    return range_reduce32(mixed, buckets)


@dataclass(frozen=True)
class FineCombEstimate:
    """FineComb (ideal repair) estimate.

    Attributes
    ----------
    buckets:
        Buckets in the array.
    usable_buckets:
        Non-empty buckets used for the mean (clean or repaired).
    repaired_buckets:
        Buckets whose only difference was reordered packets (repaired ideally).
    discarded_buckets:
        Buckets holding at least one lost packet.
    samples:
        Packets in usable buckets.
    mean_ticks, mean_ns:
        Exact mean (Fraction, ticks) and in ns, or None.
    variance_ns2, std_ns, variance_clipped:
        Collapsed-bucket estimate, or None.
    notes:
        Why values are missing.
    """
    buckets: int
    usable_buckets: int
    repaired_buckets: int
    discarded_buckets: int
    samples: int
    mean_ticks: Fraction | None
    mean_ns: float | None
    variance_ns2: float | None
    std_ns: float | None
    variance_clipped: bool
    notes: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return dataclass_to_dict(self)


def _bool_array(name, value, n) -> np.ndarray:
    arr = np.asarray(value, dtype=bool).ravel()
    if arr.size != n:
        raise ValueError(f"{name} has {arr.size} entries, expected one per packet ({n})")
    return arr


def finecomb_ideal(ids, sender_ts, receiver_ts, at_sender, at_receiver, *, buckets: int,
                   tick_ns: float = 1.0) -> FineCombEstimate:
    """FineComb's estimate with ideal repair of reordered packets.

    Parameters
    ----------
    ids:
        uint64 packet IDs, one per packet.
    sender_ts, receiver_ts:
        Integer timestamps (ticks) at each point; entries where the packet was not seen
        there are ignored.
    at_sender, at_receiver:
        Whether each point recorded the packet (lost: sender only; reordered out of the
        interval: receiver only).
    buckets:
        Size of the bucket array.
    tick_ns:
        Tick length in ns.
    """
    ids = np.asarray(ids, dtype=np.uint64).ravel()
    n = ids.size
    at_sender = _bool_array("at_sender", at_sender, n)
    at_receiver = _bool_array("at_receiver", at_receiver, n)
    s_ts = np.asarray(sender_ts).ravel()
    r_ts = np.asarray(receiver_ts).ravel()
    if s_ts.size != n or r_ts.size != n:
        raise ValueError(f"need one sender and one receiver timestamp per packet ({n})")
    if tick_ns <= 0:
        raise ValueError(f"tick_ns must be positive, not {tick_ns}")
    bucket = finecomb_buckets(ids, buckets) if n else np.zeros(0, dtype=np.int64)
    both = at_sender & at_receiver
    lost = at_sender & ~at_receiver
    reordered = at_receiver & ~at_sender

    has_lost = np.bincount(bucket[lost], minlength=buckets) > 0
    has_reordered = np.bincount(bucket[reordered], minlength=buckets) > 0
    counts = np.bincount(bucket[both], minlength=buckets)
    delays = np.zeros(buckets, dtype=object)
    delay_values = (r_ts[both].astype(object) - s_ts[both].astype(object))
    np.add.at(delays, bucket[both], delay_values)
    usable = ~has_lost & (counts > 0)
    samples = int(counts[usable].sum())
    notes = []
    mean_ticks = mean_ns = variance_ns2 = std_ns = None
    clipped = False
    tick = Fraction(tick_ns)
    if samples:
        mean_ticks = Fraction(int(np.sum(delays[usable])), samples)
        mean_ns = fraction_to_float(mean_ticks * tick)
        even = buckets - buckets % 2
        pair = usable[0:even:2] & usable[1:even:2]
        if pair.any():
            d = delays[1:even:2][pair] - delays[0:even:2][pair]
            pair_count = int(counts[0:even:2][pair].sum() + counts[1:even:2][pair].sum())
            variance = Fraction(int(np.sum(d * d)), pair_count) - mean_ticks * mean_ticks
            if variance < 0:
                clipped = True
                notes.append("variance estimate was negative and is clipped to 0")
                variance = Fraction(0)
            variance_ns2 = fraction_to_float(variance * tick * tick)
            std_ns = math.sqrt(variance_ns2)
        else:
            notes.append("no standard deviation: no pair of adjacent usable buckets")
    else:
        notes.append("no mean: every non-empty bucket holds a lost packet")
    return FineCombEstimate(
        buckets=buckets, usable_buckets=int(usable.sum()),
        repaired_buckets=int((usable & has_reordered).sum()),
        discarded_buckets=int(has_lost.sum()), samples=samples, mean_ticks=mean_ticks,
        mean_ns=mean_ns, variance_ns2=variance_ns2, std_ns=std_ns, variance_clipped=clipped,
        notes=tuple(notes))


@dataclass(frozen=True, eq=False)
class ProbeEstimate:
    """Poisson active-probing estimate.

    Attributes
    ----------
    rate_hz:
        Probe rate.
    probes_sent, probes_received:
        Probes sent in the interval and those not lost.
    mean_ns, std_ns:
        Mean and sample standard deviation (``ddof=1``) of the received probes' delays,
        or None (the std needs two probes).
    send_times_ns:
        Send time of every probe.
    delays_ns:
        Delay of each received probe (the samples).
    """
    rate_hz: float
    probes_sent: int
    probes_received: int
    mean_ns: float | None
    std_ns: float | None
    send_times_ns: np.ndarray = field(repr=False)
    delays_ns: np.ndarray = field(repr=False)

    @property
    def samples(self) -> int:
        return self.probes_received

    def to_dict(self) -> dict:
        d = dataclass_to_dict(self)
        d["samples"] = self.samples
        return d


def poisson_probes(send_times_ns, delays_ns, lost, *, rate_hz: float,
                   start_ns: float | None = None, end_ns: float | None = None,
                   seed: int | None = None,
                   rng: np.random.Generator | None = None) -> ProbeEstimate:
    """Simulate Poisson active probes over the traffic's delay and loss process.

    Parameters
    ----------
    send_times_ns:
        Send times of the regular packets (ns), in any order.
    delays_ns:
        Their one-way delays (ns); ignored where ``lost``.
    lost:
        Whether each regular packet was lost.
    rate_hz:
        Probe rate ``f``: exponential inter-send gaps of mean ``1e9 / f`` ns.
    start_ns, end_ns:
        The interval (default: first and last send time).
    seed, rng:
        Randomness (a :class:`numpy.random.Generator`, or a seed for a new one).

    Returns
    -------
    ProbeEstimate
        A probe sent before the first packet takes the first packet's delay and loss.
    """
    times = np.asarray(send_times_ns, dtype=np.float64).ravel()
    delays = np.asarray(delays_ns, dtype=np.float64).ravel()
    lost = _bool_array("lost", lost, times.size)
    if delays.size != times.size:
        raise ValueError(f"need one delay per packet ({times.size}), got {delays.size}")
    if times.size == 0:
        raise ValueError("probing needs the traffic's delay process: no packets given")
    if not rate_hz > 0:
        raise ValueError(f"rate_hz must be positive, not {rate_hz}")
    rng = rng if rng is not None else np.random.default_rng(seed)
    order = np.argsort(times, kind="stable")
    times, delays, lost = times[order], delays[order], lost[order]
    start = times[0] if start_ns is None else float(start_ns)
    end = times[-1] if end_ns is None else float(end_ns)
    if end < start:
        raise ValueError(f"the interval ends ({end}) before it starts ({start})")
    mean_gap = 1e9 / rate_hz
    expected = (end - start) / mean_gap
    chunk = int(expected + 10 * math.sqrt(expected + 1) + 16)
    gaps = rng.exponential(mean_gap, size=chunk)
    probe_times = start + np.cumsum(gaps)
    while probe_times.size and probe_times[-1] < end:  # rare: draw more
        more = probe_times[-1] + np.cumsum(rng.exponential(mean_gap, size=chunk))
        probe_times = np.concatenate([probe_times, more])
    probe_times = probe_times[probe_times < end]
    which = np.maximum(np.searchsorted(times, probe_times, side="right") - 1, 0)
    arrived = ~lost[which]
    samples = delays[which][arrived]
    mean = float(samples.mean()) if samples.size else None
    std = float(samples.std(ddof=1)) if samples.size >= 2 else None
    return ProbeEstimate(rate_hz=float(rate_hz), probes_sent=int(probe_times.size),
                         probes_received=int(samples.size), mean_ns=mean, std_ns=std,
                         send_times_ns=probe_times, delays_ns=samples)

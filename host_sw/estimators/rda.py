# SPDX-License-Identifier: BSD-2-Clause
"""RDA estimators: subtract two RDA synopses, decode (peel) the lost and reordered
packets, repair the synopses with the two caches, and compute an exact average delay and
a standard deviation (Huang et al., "Reconcilable Difference Aggregator", §IV–§V, §VIII).

Data flow (docs/DESIGN.md, "Data flow of a counter"; estimators layer): snapshot of an
interval (two :class:`~host_sw.contracts.synopsis.Synopsis` of an
:class:`~host_sw.contracts.config.RdaConfig`, plus each measurement point's cache
``{packet ID: timestamp}``) ► **this module** ► CLI/export.

Steps (each a public function):

1. :func:`subtract` — bucket by bucket, ``Δ = receiver count − sender count`` (signed,
   :func:`~host_sw.contracts.layouts.signed_difference`) and ``ID = receiver ID ⊕ sender ID``.
2. :func:`decode` — Algorithm 1. A bucket ``i`` of bank ``l`` is *pure* when
   ``h_l(ID) == i`` and ``|Δ| == 1``, with ``h_l`` the contract's bucket function
   (``range_reduce32(Hashers(config).rda_bucket[l].of_u64(ID), m)``). ``Δ = +1``: the
   receiver holds the extra packet, so it is *reordered* (present only at the receiver);
   ``Δ = −1``: *lost*. (Algorithm 1 as printed labels ``Δ = 1`` lost; §IV-C and the
   subtraction ``receiver − sender`` give the labels used here.)
3. :func:`repair` — remove each lost packet from the sender synopsis and each reordered
   packet from the receiver synopsis (XOR its ID, subtract its timestamp, count − 1 in
   its bucket of every bank), timestamps from the caches.
4. :func:`estimate_rda` — the mean over every *clean* bucket (IDs equal, counts equal,
   count > 0) of every bank. Each packet is counted once per bank, which leaves the mean
   exact: ``k·Σ delays / k·n``. When decoding succeeded and every found packet was
   repaired, the mean is EXACT (a :class:`~fractions.Fraction` of integers). The standard
   deviation uses the selective collapse of Algorithm 2 and Algorithm 3 (which returns
   the *variance* ``SqSum/Count − µ²``; the paper's eq. (3) misprints it as ``F² − µ²``).

Decoding details beyond the paper (documented because they matter):

* The contract's bucket hash puts an S-box in front of H3 (:class:`~host_sw.contracts.hashing.
  RdaBucketHash`) so that a bucket holding several IDs passes the ``h_l(ID) == i`` test
  only by chance (about ``1/m``), as the paper assumes. Guards keep the remaining
  false positives harmless: (a) an ID is only peeled when its bucket in every bank
  holds a non-zero ID (a genuine member of the difference is in all ``k`` of them);
  (b) IDs pure in *every* bank (never a false one) are peeled first, the others only in
  rounds where no such ID is left; (c) peeled IDs are kept as a signed multiset — a
  false ID is peeled back out with the opposite sign once its constituents are decoded,
  its entries cancel, and any residue (net count other than ±1, or buckets left
  non-empty) makes ``decoded`` False; (d) with the caches, :func:`decode` checks each
  ID's membership, which rejects false IDs exactly (:func:`estimate_rda` does this).
* Peeling runs in vectorised rounds: every bucket pure at the start of a round is peeled
  in that round (distinct IDs once each; removals commute), and only the buckets touched
  are re-tested. 100 000 differences decode in well under a second
  (``bench/rda_decode.py``).

Late binding (§VIII): :func:`estimate_set_difference` estimates ``d = |S_S ⊕ S_R|`` from
the two caches with MinHash (bottom-``k`` values of a mixed hash of the IDs, as the paper's
min-wise estimator), :func:`late_binding_buckets` gives ``m = 2·d̂`` (Theorem 2), and
:func:`rda_from_caches` builds both synopses with that ``m`` from the caches.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from fractions import Fraction

import numpy as np

from host_sw.contracts.config import RdaConfig
from host_sw.model.golden import Hashers, PacketHashes, update
from host_sw.contracts.synopsis import Synopsis
from host_sw.contracts.hashing import range_reduce32
from host_sw.contracts.layouts import signed_difference, wrap
from host_sw.estimators._common import (check_confidence, check_kind, check_pair,
                                        dataclass_to_dict, fraction_to_float,
                                        hoeffding_half_width, salted_mix64)

__all__ = ["RdaSubtraction", "RdaDecoding", "RdaEstimate", "PacketCache", "subtract",
           "decode", "repair", "estimate_rda", "SetDifferenceEstimate", "minhash_sketch",
           "estimate_set_difference", "late_binding_buckets", "LateBoundRda",
           "rda_from_caches"]


# ---------------------------------------------------------------------------------------
# Caches
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class PacketCache:
    """A measurement point's cache of ``(packet ID, timestamp)`` for one interval, as
    sorted arrays (built by :meth:`of`).

    Attributes
    ----------
    ids:
        uint64, sorted, distinct.
    timestamps:
        uint64 ticks, aligned with ``ids``.
    """
    ids: np.ndarray
    timestamps: np.ndarray

    @classmethod
    def of(cls, cache) -> "PacketCache":
        """Build from a ``{id: timestamp}`` mapping, an ``(ids, timestamps)`` pair of
        arrays, or a :class:`PacketCache` (returned as is)."""
        if isinstance(cache, PacketCache):
            return cache
        if isinstance(cache, dict):
            n = len(cache)
            ids = np.fromiter((int(i) for i in cache.keys()), dtype=np.uint64, count=n)
            ts = np.fromiter((int(t) for t in cache.values()), dtype=np.int64, count=n)
        else:
            try:
                ids_in, ts_in = cache
            except (TypeError, ValueError):
                raise ValueError("a cache is a {id: timestamp} dict or an (ids, timestamps) "
                                 f"pair of arrays, not {type(cache).__name__}") from None
            ids = np.asarray(ids_in, dtype=np.uint64).ravel()
            ts = np.asarray(ts_in).ravel()
            if ids.shape != ts.shape:
                raise ValueError(f"cache has {ids.size} IDs but {ts.size} timestamps")
        if ts.size and not np.issubdtype(ts.dtype, np.integer):
            raise ValueError(f"cache timestamps must be integer ticks, not {ts.dtype}")
        if ts.size and np.issubdtype(ts.dtype, np.signedinteger) and (ts < 0).any():
            raise ValueError("cache timestamps must be non-negative ticks")
        order = np.argsort(ids, kind="stable")
        ids, ts = ids[order], ts[order].astype(np.uint64)
        if ids.size > 1 and (ids[1:] == ids[:-1]).any():
            dup = int(ids[1:][ids[1:] == ids[:-1]][0])
            raise ValueError(f"cache holds packet ID {dup:#018x} more than once; keep one "
                             f"entry per ID (the paper discards duplicates)")
        return cls(ids, ts)

    def __len__(self):
        return int(self.ids.size)

    def lookup(self, ids) -> tuple[np.ndarray, np.ndarray]:
        """``(found, timestamps)`` for each ID (timestamps are 0 where not found)."""
        ids = np.asarray(ids, dtype=np.uint64).ravel()
        if self.ids.size == 0:
            return np.zeros(ids.size, bool), np.zeros(ids.size, np.uint64)
        pos = np.searchsorted(self.ids, ids)
        pos_c = np.minimum(pos, self.ids.size - 1)
        found = self.ids[pos_c] == ids
        return found, np.where(found, self.timestamps[pos_c], np.uint64(0))


# ---------------------------------------------------------------------------------------
# Subtraction and decoding (Algorithm 1)
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class RdaSubtraction:
    """The subtraction RDA ``I_B − I_A`` (receiver minus sender).

    Attributes
    ----------
    config:
        The shared configuration.
    delta:
        int64 ``(k, m)``: receiver count − sender count (signed).
    id_xor:
        uint64 ``(k, m)``: receiver ID ⊕ sender ID.
    """
    config: RdaConfig
    delta: np.ndarray
    id_xor: np.ndarray


def subtract(sender: Synopsis, receiver: Synopsis) -> RdaSubtraction:
    """Bucket-wise ``receiver − sender`` of two RDA synopses (§V-B (i)).

    Raises :class:`~host_sw.contracts.config.ConfigMismatch` on different configurations.
    """
    config = check_pair(sender, receiver, RdaConfig, "subtract")
    delta = signed_difference(receiver.count, sender.count, config.count_bits)
    ids = (np.asarray(receiver["id_xor"], dtype=np.uint64)
           ^ np.asarray(sender["id_xor"], dtype=np.uint64))
    return RdaSubtraction(config, delta.astype(np.int64), ids)


@dataclass(frozen=True, eq=False)
class RdaDecoding:
    """Result of :func:`decode`.

    Attributes
    ----------
    lost_ids:
        uint64, sorted: packets only the sender recorded (``Δ = −1``).
    reordered_ids:
        uint64, sorted: packets only the receiver recorded (``Δ = +1``).
    decoded:
        True when every bucket of the subtraction emptied and every peeled ID has a net
        count of ±1: the set difference was listed completely.
    undecoded_buckets:
        Buckets still non-empty (``Δ ≠ 0`` or ``ID ≠ 0``) when peeling stopped.
    rounds:
        Peeling rounds run.
    cancelled_ids:
        IDs peeled once with each sign (false pure buckets that corrected themselves).
    """
    lost_ids: np.ndarray
    reordered_ids: np.ndarray
    decoded: bool
    undecoded_buckets: int
    rounds: int
    cancelled_ids: int = 0

    @property
    def set_difference(self) -> int:
        return int(self.lost_ids.size + self.reordered_ids.size)

    def to_dict(self) -> dict:
        return dataclass_to_dict(self)


class _BucketFunction:
    """``h_l`` of every bank, as flat indices ``l·m + h_l(id)``."""

    def __init__(self, config: RdaConfig, hashers: Hashers | None):
        hashers = hashers or Hashers(config)
        if len(hashers.rda_bucket) != config.banks:
            raise ValueError("hashers were not built for this RDA configuration")
        self.h3 = hashers.rda_bucket
        self.banks, self.m = config.shape

    def bank(self, l: int, ids: np.ndarray) -> np.ndarray:
        return range_reduce32(self.h3[l].of_u64(ids), self.m)

    def positions(self, ids: np.ndarray) -> np.ndarray:
        """``(k, n)`` flat bucket positions of each ID in every bank."""
        return np.stack([self.bank(l, ids) + l * self.m for l in range(self.banks)])

    def pure(self, flat: np.ndarray, delta: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """The subset of flat positions ``flat`` whose bucket is pure."""
        flat = flat[np.abs(delta[flat]) == 1]
        if flat.size == 0:
            return flat
        bank = flat // self.m
        keep = np.zeros(flat.size, dtype=bool)
        for l in range(self.banks):
            sel = bank == l
            if sel.any():
                home = self.bank(l, ids[flat[sel]]) + l * self.m
                keep[sel] = home == flat[sel]
        return flat[keep]


def decode(subtraction: RdaSubtraction, *, hashers: Hashers | None = None,
           sender_ids=None, receiver_ids=None,
           max_rounds: int | None = None) -> RdaDecoding:
    """List the lost and reordered packets of a subtraction RDA (Algorithm 1).

    Parameters
    ----------
    subtraction:
        From :func:`subtract` (not modified).
    hashers:
        Optional prebuilt :class:`~host_sw.model.golden.Hashers` of the configuration.
    sender_ids, receiver_ids:
        Optional membership check (ID arrays or :class:`PacketCache`): a pure-looking
        bucket with ``Δ = −1`` is only peeled when its ID is in ``sender_ids``, one with
        ``Δ = +1`` only when it is in ``receiver_ids``. This rejects the false pure
        buckets exactly (see the module notes). Without it
        the guards make them harmless at ``d ≤ m/8`` (every failure seen there was a
        true stopping set), but at ``d/m ≈ 0.3–0.4`` decoding can stop with tens of IDs
        left where the check lets it finish (``bench/rda_decode.py``).
    max_rounds:
        Limit on peeling rounds (default 1000; decoding below the peeling threshold
        takes a few tens). It stops false pure IDs that would be peeled back and forth.

    Returns
    -------
    RdaDecoding
    """
    config = subtraction.config
    k, m = config.shape
    h = _BucketFunction(config, hashers)
    delta = np.array(subtraction.delta, dtype=np.int64).reshape(-1)
    ids = np.array(subtraction.id_xor, dtype=np.uint64).reshape(-1)
    limit = 1000 if max_rounds is None else max_rounds
    if limit < 1:
        raise ValueError(f"max_rounds must be positive, not {max_rounds}")

    members = {-1: None if sender_ids is None else _membership(sender_ids),
               +1: None if receiver_ids is None else _membership(receiver_ids)}

    candidates = h.pure(np.flatnonzero(np.abs(delta) == 1), delta, ids)
    peeled_ids, peeled_delta = [], []
    rounds = 0
    while candidates.size and rounds < limit:
        rounds += 1
        x, first = np.unique(ids[candidates], return_index=True)
        home = candidates[first]
        dx = delta[home]
        where = h.positions(x)
        # Guard (a): a genuine member of the difference sits in every bank's bucket.
        genuine = np.all(ids[where] != 0, axis=0)
        for sign, known in members.items():
            if known is not None:
                side = dx == sign
                genuine[side] &= _contains(known, x[side])
        if not genuine.all():
            x, dx, where, home = x[genuine], dx[genuine], where[:, genuine], home[genuine]
            if x.size == 0:
                break
        # Guard (b): IDs pure in every bank go first; the others wait until none is left.
        confirmed = np.all(ids[where] == x, axis=0)
        deferred = home[:0]
        if confirmed.any() and not confirmed.all():
            deferred = home[~confirmed]
            x, dx, where = x[confirmed], dx[confirmed], where[:, confirmed]
        flat = where.reshape(-1)
        np.bitwise_xor.at(ids, flat, np.tile(x, k))
        np.subtract.at(delta, flat, np.tile(dx, k))
        peeled_ids.append(x)
        peeled_delta.append(dx)
        # Only touched (and deferred) buckets can have become pure; duplicates are
        # harmless (IDs are deduplicated above).
        candidates = h.pure(np.concatenate([flat, deferred]), delta, ids)

    undecoded = int(np.count_nonzero((delta != 0) | (ids != 0)))
    cancelled = 0
    if peeled_ids:
        all_ids = np.concatenate(peeled_ids)
        all_delta = np.concatenate(peeled_delta)
        unique_ids, inverse = np.unique(all_ids, return_inverse=True)
        net = np.zeros(unique_ids.size, dtype=np.int64)
        np.add.at(net, inverse, all_delta)
        lost = unique_ids[net == -1]
        reordered = unique_ids[net == 1]
        cancelled = int(np.count_nonzero(net == 0))
        inconsistent = int(np.count_nonzero(np.abs(net) > 1))
    else:
        lost = reordered = np.zeros(0, dtype=np.uint64)
        inconsistent = 0
    return RdaDecoding(lost_ids=lost, reordered_ids=reordered,
                       decoded=undecoded == 0 and inconsistent == 0,
                       undecoded_buckets=undecoded, rounds=rounds, cancelled_ids=cancelled)


def _sorted_unique(values) -> np.ndarray:
    """Distinct values, sorted (sort-based; numpy's hash-based ``unique`` is slower on
    large uint64 arrays)."""
    a = np.sort(np.asarray(values, dtype=np.uint64).ravel())
    if a.size > 1:
        a = a[np.concatenate(([True], a[1:] != a[:-1]))]
    return a


def _membership(ids) -> np.ndarray:
    if isinstance(ids, PacketCache):
        return ids.ids
    return np.sort(np.asarray(ids, dtype=np.uint64).ravel())


def _contains(sorted_ids: np.ndarray, x: np.ndarray) -> np.ndarray:
    if sorted_ids.size == 0 or x.size == 0:
        return np.zeros(x.size, dtype=bool)
    pos = np.minimum(np.searchsorted(sorted_ids, x), sorted_ids.size - 1)
    return sorted_ids[pos] == x


# ---------------------------------------------------------------------------------------
# Repair
# ---------------------------------------------------------------------------------------

def _remove(synopsis: Synopsis, ids: np.ndarray, timestamps: np.ndarray,
            hashers: Hashers | None) -> Synopsis:
    """The synopsis without the given packets (the golden model's update, inverted)."""
    config = synopsis.config
    removal = update(config, PacketHashes(packet=np.asarray(ids, dtype=np.uint64)),
                     np.asarray(timestamps, dtype=np.uint64), hashers=hashers)
    out = {}
    for f in config.layout.fields:
        a = np.asarray(synopsis.fields[f.name], dtype=np.uint64)
        b = removal.fields[f.name]
        out[f.name] = wrap(a - b, f.width) if f.combine == "sum" else a ^ b
    return Synopsis(config, out)


def _ids_array(ids) -> np.ndarray:
    return _sorted_unique(ids)


def repair(sender: Synopsis, receiver: Synopsis, lost_ids, reordered_ids,
           sender_cache=None, receiver_cache=None, *,
           hashers: Hashers | None = None) -> tuple[Synopsis, Synopsis]:
    """Remove lost packets from the sender synopsis and reordered packets from the
    receiver synopsis (§VIII "Latency Aggregation").

    Parameters
    ----------
    sender, receiver:
        The two RDA synopses (not modified).
    lost_ids, reordered_ids:
        Packet IDs, e.g. from :func:`decode`.
    sender_cache, receiver_cache:
        ``{id: timestamp}`` dicts, ``(ids, timestamps)`` arrays or :class:`PacketCache`;
        each is needed only when its list of IDs is non-empty.

    Returns
    -------
    (Synopsis, Synopsis)
        The repaired sender and receiver synopses.

    Raises
    ------
    ValueError
        When an ID is missing from the cache that must hold it.
    """
    config = check_pair(sender, receiver, RdaConfig, "repair")
    hashers = hashers or Hashers(config)
    out = []
    for side, syn, ids, cache in (("sender", sender, lost_ids, sender_cache),
                                  ("receiver", receiver, reordered_ids, receiver_cache)):
        ids = _ids_array(ids)
        if ids.size == 0:
            out.append(syn)
            continue
        kind = "lost" if side == "sender" else "reordered"
        if cache is None:
            raise ValueError(f"{ids.size} {kind} packets need the {side} cache to repair")
        found, ts = PacketCache.of(cache).lookup(ids)
        if not found.all():
            missing = ids[~found]
            raise ValueError(f"{missing.size} {kind} packet IDs are not in the {side} "
                             f"cache (first: {int(missing[0]):#018x})")
        out.append(_remove(syn, ids, ts, hashers))
    return out[0], out[1]


# ---------------------------------------------------------------------------------------
# Latency aggregation (§V-C, Algorithms 2 and 3)
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class RdaEstimate:
    """Delay and loss estimate of one interval from a pair of RDA synopses.

    Attributes
    ----------
    config_id:
        The shared configuration ID.
    sent, received:
        Packets the sender and the receiver recorded (bank 0's counters).
    decoded:
        The decoder listed the whole set difference.
    repaired:
        Every decoded packet was found in its cache and removed.
    exact:
        ``decoded`` and ``repaired`` and every non-empty bucket is clean: the mean is the
        exact average delay of the packets both points recorded.
    lost_found, reordered_found:
        Numbers of lost and reordered packets decoded.
    lost_ids, reordered_ids:
        Their IDs (uint64, sorted).
    clean_buckets, unclean_buckets:
        Non-empty buckets (all banks) usable for the mean, and non-empty ones that are
        not (different IDs or counts after repair).
    counted:
        Sum of counts of the clean buckets (each packet once per bank it is clean in).
    delay_sum_ticks:
        Sum of timestamp differences over the clean buckets (exact, ticks).
    samples:
        Effective sample size for the confidence interval: the largest per-bank count of
        clean packets (a lower bound on the distinct packets behind the mean).
    mean_ticks:
        ``delay_sum_ticks / counted`` (exact Fraction) or None.
    mean_ns:
        Average delay in ns, or None.
    collapsed_pairs, collapsed_count:
        Buckets pairs collapsed by Algorithm 2, and the packets in them (its ``Count``).
    variance_ns2, std_ns, variance_clipped:
        Algorithm 3's ``SqSum/Count − µ²`` (clipped at 0, flagged) and its square root.
    confidence, ci_half_width_ns, ci_low_ns, ci_high_ns:
        Interval for the mean: zero width when ``exact``; otherwise from the LDA paper's
        bound (1) with the estimated std and ``samples``.
    cancelled_ids:
        False pure buckets the decoder peeled and cancelled again.
    notes:
        Why values are missing and any caveat.
    """
    config_id: int
    sent: int
    received: int
    decoded: bool
    repaired: bool
    exact: bool
    lost_found: int
    reordered_found: int
    lost_ids: np.ndarray = field(repr=False)
    reordered_ids: np.ndarray = field(repr=False)
    clean_buckets: int = 0
    unclean_buckets: int = 0
    counted: int = 0
    delay_sum_ticks: int = 0
    samples: int = 0
    mean_ticks: Fraction | None = None
    mean_ns: float | None = None
    collapsed_pairs: int = 0
    collapsed_count: int = 0
    variance_ns2: float | None = None
    std_ns: float | None = None
    variance_clipped: bool = False
    confidence: float = 0.98
    ci_half_width_ns: float | None = None
    ci_low_ns: float | None = None
    ci_high_ns: float | None = None
    cancelled_ids: int = 0
    notes: tuple[str, ...] = ()

    @property
    def mean_numerator_ticks(self) -> int:
        """Numerator of the mean before reduction (``delay_sum_ticks``)."""
        return self.delay_sum_ticks

    @property
    def mean_denominator(self) -> int:
        """Denominator of the mean before reduction (``counted``)."""
        return self.counted

    def to_dict(self) -> dict:
        return dataclass_to_dict(self)


def _ts_signed(receiver: Synopsis, sender: Synopsis, bits: int) -> np.ndarray:
    return signed_difference(receiver.ts_sum, sender.ts_sum, bits).astype(object)


def estimate_rda(sender: Synopsis, receiver: Synopsis, *, sender_cache=None,
                 receiver_cache=None, confidence: float = 0.98,
                 hashers: Hashers | None = None) -> RdaEstimate:
    """Decode, repair and estimate average delay and its standard deviation.

    Parameters
    ----------
    sender, receiver:
        The two RDA synopses of one interval (same configuration).
    sender_cache, receiver_cache:
        The caches ``{id: timestamp}`` (or ``(ids, timestamps)`` arrays,
        :class:`PacketCache`) of both points. Without them no bucket is repaired and the
        mean uses the buckets the difference did not touch.
    confidence:
        Level of the interval for the mean.
    hashers:
        Optional prebuilt :class:`~host_sw.model.golden.Hashers`.

    Returns
    -------
    RdaEstimate

    Raises
    ------
    ConfigMismatch
        On different configurations.
    """
    config = check_pair(sender, receiver, RdaConfig, "estimate_rda")
    confidence = check_confidence(confidence)
    hashers = hashers or Hashers(config)
    k, m = config.shape
    tick = Fraction(config.tick_ns)
    notes: list[str] = []

    sender_cache = None if sender_cache is None else PacketCache.of(sender_cache)
    receiver_cache = None if receiver_cache is None else PacketCache.of(receiver_cache)
    decoding = decode(subtract(sender, receiver), hashers=hashers, sender_ids=sender_cache,
                      receiver_ids=receiver_cache)
    if not decoding.decoded:
        notes.append(f"decoding incomplete: {decoding.undecoded_buckets} buckets still "
                     f"hold undecoded packets; the mean uses the clean buckets only")

    # Repair with whatever the caches can supply.
    repaired = True
    fixed = []
    for side, syn, ids, cache in (("sender", sender, decoding.lost_ids, sender_cache),
                                  ("receiver", receiver, decoding.reordered_ids,
                                   receiver_cache)):
        kind = "lost" if side == "sender" else "reordered"
        if ids.size == 0:
            fixed.append(syn)
            continue
        if cache is None:
            repaired = False
            notes.append(f"{ids.size} {kind} packets not removed: no {side} cache given")
            fixed.append(syn)
            continue
        found, ts = PacketCache.of(cache).lookup(ids)
        if not found.all():
            repaired = False
            notes.append(f"{int((~found).sum())} decoded {kind} IDs are not in the {side} "
                         f"cache; left in place")
        fixed.append(_remove(syn, ids[found], ts[found], hashers) if found.any() else syn)
    rep_sender, rep_receiver = fixed

    # Clean buckets.
    s_count = np.asarray(rep_sender.count, dtype=np.uint64)
    r_count = np.asarray(rep_receiver.count, dtype=np.uint64)
    count_equal = signed_difference(r_count, s_count, config.count_bits) == 0
    id_equal = (np.asarray(rep_sender["id_xor"], dtype=np.uint64)
                == np.asarray(rep_receiver["id_xor"], dtype=np.uint64))
    nonempty = (s_count != 0) | (r_count != 0)
    clean = count_equal & id_equal & (s_count != 0)
    unclean = nonempty & ~clean
    ts_diff = _ts_signed(rep_receiver, rep_sender, config.ts_bits)

    counted = int(np.sum(s_count[clean].astype(object))) if clean.any() else 0
    delay_sum = int(np.sum(ts_diff[clean])) if clean.any() else 0
    samples = max((int(np.sum(s_count[l][clean[l]].astype(object))) for l in range(k)),
                  default=0)
    exact = decoding.decoded and repaired and not unclean.any() and counted > 0

    mean_ticks = mean_ns = None
    if counted > 0:
        mean_ticks = Fraction(delay_sum, counted)
        mean_ns = fraction_to_float(mean_ticks * tick)
    elif not nonempty.any():
        notes.append("no mean: both synopses are empty")
    else:
        notes.append(f"no mean: no clean bucket ({int(unclean.sum())} buckets hold "
                     f"different packets at the two points)")

    # Algorithm 2 (selective collapse, per bank) and Algorithm 3.
    square_sum = 0
    collapsed_count = 0
    collapsed_pairs = 0
    for l in range(k):
        chosen = np.flatnonzero(clean[l])
        pairs = chosen.size // 2
        if pairs == 0:
            continue
        p, q = chosen[0:2 * pairs:2], chosen[1:2 * pairs:2]
        d = ts_diff[l][p] - ts_diff[l][q]
        square_sum += int(np.sum(d * d))
        collapsed_count += int(np.sum(s_count[l][p].astype(object) + s_count[l][q]))
        collapsed_pairs += pairs
    variance_ns2 = std_ns = None
    clipped = False
    if mean_ticks is not None and collapsed_count > 0:
        variance_ticks2 = Fraction(square_sum, collapsed_count) - mean_ticks * mean_ticks
        if variance_ticks2 < 0:
            clipped = True
            notes.append(f"variance estimate SqSum/Count - mean^2 = "
                         f"{fraction_to_float(variance_ticks2 * tick * tick):.6g} ns^2 was "
                         f"negative and is clipped to 0 ({collapsed_pairs} collapsed pairs)")
            variance_ticks2 = Fraction(0)
        variance_ns2 = fraction_to_float(variance_ticks2 * tick * tick)
        std_ns = math.sqrt(variance_ns2)
    elif mean_ticks is not None:
        notes.append("no standard deviation: fewer than two clean buckets in every bank")

    half = low = high = None
    if exact:
        half, low, high = 0.0, mean_ns, mean_ns
        notes.append("exact mean: the set difference was decoded and repaired completely")
    elif std_ns is not None:
        half = hoeffding_half_width(std_ns, samples, confidence)
        low, high = mean_ns - half, mean_ns + half
    elif mean_ticks is not None:
        notes.append("no confidence interval: it needs the standard deviation")

    return RdaEstimate(
        config_id=config.config_id,
        sent=int(np.sum(np.asarray(sender.count[0], dtype=np.uint64).astype(object))),
        received=int(np.sum(np.asarray(receiver.count[0], dtype=np.uint64).astype(object))),
        decoded=decoding.decoded, repaired=repaired, exact=bool(exact),
        lost_found=int(decoding.lost_ids.size),
        reordered_found=int(decoding.reordered_ids.size),
        lost_ids=decoding.lost_ids, reordered_ids=decoding.reordered_ids,
        clean_buckets=int(clean.sum()), unclean_buckets=int(unclean.sum()),
        counted=counted, delay_sum_ticks=delay_sum, samples=samples,
        mean_ticks=mean_ticks, mean_ns=mean_ns, collapsed_pairs=collapsed_pairs,
        collapsed_count=collapsed_count, variance_ns2=variance_ns2, std_ns=std_ns,
        variance_clipped=clipped, confidence=confidence, ci_half_width_ns=half,
        ci_low_ns=low, ci_high_ns=high, cancelled_ids=decoding.cancelled_ids,
        notes=tuple(notes))


# ---------------------------------------------------------------------------------------
# Late binding (§VIII): set-difference size from the caches, m = 2·d̂
# ---------------------------------------------------------------------------------------

#: Salt of the MinHash mixer (independent of every H3 matrix of the contract).
MINHASH_SALT = 0x4D494E48  # "MINH"


def minhash_sketch(ids, size: int = 1024) -> np.ndarray:
    """The ``size`` smallest distinct mixed hashes of a set of packet IDs (a bottom-k
    MinHash sketch; what a measurement point would send instead of its cache)."""
    if size < 1:
        raise ValueError(f"sketch size must be positive, not {size}")
    values = _sorted_unique(salted_mix64(np.asarray(ids, dtype=np.uint64).ravel(),
                                         MINHASH_SALT))
    return values[:size]


@dataclass(frozen=True)
class SetDifferenceEstimate:
    """Estimated size of ``S_S ⊕ S_R`` from two MinHash sketches.

    Attributes
    ----------
    sender_size, receiver_size:
        ``|S_S|`` and ``|S_R|`` (exact: each point knows its cache size).
    jaccard:
        Estimated ``|S_S ∩ S_R| / |S_S ∪ S_R|``.
    difference:
        ``d̂ = (|S_S| + |S_R|) (1 − J) / (1 + J)``.
    sketch_size:
        Values per sketch; the estimate is exact when both sets fit in it.
    """
    sender_size: int
    receiver_size: int
    jaccard: float
    difference: float
    sketch_size: int

    def to_dict(self) -> dict:
        return dataclass_to_dict(self)


def estimate_set_difference(sender_ids, receiver_ids, *,
                            sketch_size: int = 1024) -> SetDifferenceEstimate:
    """Estimate ``d = |S_S ⊕ S_R|`` with MinHash (§VIII, the paper's min-wise estimator).

    The bottom-``k`` values of the union are taken from the two sketches; the fraction
    of them present in both estimates the Jaccard similarity ``J``, and
    ``|S_S ∪ S_R| = (|S_S| + |S_R|) / (1 + J)`` gives ``d = |union| − |intersection|``.
    The relative error of ``1 − J`` is about ``1 / sqrt(k (1 − J))``, so small
    differences of large sets need a large sketch.
    """
    a_ids = _sorted_unique(sender_ids)
    b_ids = _sorted_unique(receiver_ids)
    a, b = minhash_sketch(a_ids, sketch_size), minhash_sketch(b_ids, sketch_size)
    union_bottom = np.union1d(a, b)[:sketch_size]
    if union_bottom.size == 0:
        jaccard = 1.0
    else:
        # A value below both sketches' cut-offs is in a set iff it is in its sketch.
        both = np.isin(union_bottom, a) & np.isin(union_bottom, b)
        jaccard = float(both.sum()) / union_bottom.size
    total = a_ids.size + b_ids.size
    difference = total * (1.0 - jaccard) / (1.0 + jaccard)
    return SetDifferenceEstimate(sender_size=int(a_ids.size), receiver_size=int(b_ids.size),
                                 jaccard=jaccard, difference=difference,
                                 sketch_size=sketch_size)


def late_binding_buckets(d_hat: float, factor: float = 2.0) -> int:
    """Buckets per bank for an estimated set difference: ``ceil(factor · d̂)``, at least
    1 (Theorem 2: ``m = 2d`` gives failure probability ``O(d^-k)``)."""
    if d_hat < 0:
        raise ValueError(f"the set-difference estimate must be non-negative, not {d_hat}")
    if factor <= 0:
        raise ValueError(f"factor must be positive, not {factor}")
    return max(1, math.ceil(factor * d_hat))


@dataclass(frozen=True, eq=False)
class LateBoundRda:
    """Two RDA synopses built after the interval from the caches (§VIII).

    Attributes
    ----------
    config:
        The configuration with the chosen ``buckets_per_bank``.
    sender, receiver:
        The synopses.
    difference:
        The set-difference estimate the size came from.
    """
    config: RdaConfig
    sender: Synopsis
    receiver: Synopsis
    difference: SetDifferenceEstimate


def rda_from_caches(sender_cache, receiver_cache, *, config: RdaConfig | None = None,
                    sketch_size: int = 1024, factor: float = 2.0,
                    min_buckets: int = 16) -> LateBoundRda:
    """Late binding: size an RDA from the estimated set difference and insert each
    cached packet (``golden.update`` with the IDs as packet hashes).

    Parameters
    ----------
    sender_cache, receiver_cache:
        The two caches (see :class:`PacketCache`).
    config:
        Template configuration (seed, banks, widths); its ``buckets_per_bank`` is
        replaced by ``max(min_buckets, late_binding_buckets(d̂, factor))``.
    """
    config = config or RdaConfig()
    check_kind(config, RdaConfig, f"late binding builds RDA synopses, not {config.kind.upper()}")
    if min_buckets < 1:
        raise ValueError(f"min_buckets must be positive, not {min_buckets}")
    s_cache, r_cache = PacketCache.of(sender_cache), PacketCache.of(receiver_cache)
    estimate = estimate_set_difference(s_cache.ids, r_cache.ids, sketch_size=sketch_size)
    m = max(min_buckets, late_binding_buckets(estimate.difference, factor))
    bound = config.replace(buckets_per_bank=min(m, 1 << 24))
    hashers = Hashers(bound)
    synopses = [update(bound, PacketHashes(packet=c.ids), c.timestamps, hashers=hashers)
                for c in (s_cache, r_cache)]
    return LateBoundRda(bound, synopses[0], synopses[1], estimate)

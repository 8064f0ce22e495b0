# SPDX-License-Identifier: BSD-2-Clause
"""RDA decoding: the packet caches, the subtraction of two RDA synopses, the peeling of
the lost and reordered packets (Algorithm 1) and the repair of both synopses.

Steps 1–3 of :mod:`host_sw.estimators.rda.estimate` (whose docstring explains them);
:func:`host_sw.estimators.rda.estimate.estimate_rda` runs them and aggregates the repaired
synopses. Estimators layer (docs/DESIGN.md, "Data flow of a counter"): it inverts the
golden model's update (:mod:`host_sw.model.golden_lda_rda_lds`) to remove packets.

Decoding details beyond the paper (documented because they matter):

* The contract's bucket hash puts an S-box in front of H3
  (:class:`~host_sw.contracts.hash_fields.RdaBucketHash`) so that a bucket holding
  several IDs passes the ``h_l(ID) == i`` test only by chance (about ``1/m``), as the
  paper assumes. Guards keep the remaining false positives harmless: (a) an ID is only
  peeled when its bucket in every bank holds a non-zero ID (a genuine member of the
  difference is in all ``k`` of them); (b) IDs pure in *every* bank (never a false one)
  are peeled first, the others only in rounds where no such ID is left; (c) peeled IDs
  are kept as a signed multiset — a false ID is peeled back out with the opposite sign
  once its constituents are decoded, its entries cancel, and any residue (net count other
  than ±1, or buckets left non-empty) makes ``decoded`` False; (d) with the caches,
  :func:`decode` checks each ID's membership, which rejects false IDs exactly
  (:func:`~host_sw.estimators.rda.estimate.estimate_rda` does this).
* Peeling runs in vectorised rounds: every bucket pure at the start of a round is peeled
  in that round (distinct IDs once each; removals commute), and only the buckets touched
  are re-tested, eight table look-ups (one per ID byte) hashing them into every bank
  (:class:`BucketPositions`). A round costs tens of numpy calls whatever its size, and
  decoding takes a few rounds below the peeling threshold: a difference of 1 000 in
  2 × 2 500 buckets decodes in 6 rounds, about a millisecond, faster than a queue of
  single peel steps over Python ints, and 100 000 differences in well under a second
  (``bench/rda_decode.py``, ``docs/BENCHMARKS.md``).
* The caches: build a :class:`PacketCache` once per capture and pass it to every
  interval's :func:`~host_sw.estimators.rda.estimate.estimate_rda`. The estimate only searches it
  for the decoded IDs; given as arrays or a dict, it is sorted and checked again on every
  call, which at 100 000 packets costs ten times the rest of the estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from host_sw.contracts.config import RdaConfig
from host_sw.contracts.hashing import RDA_SBOX
from host_sw.contracts.layouts import signed_difference, wrap
from host_sw.contracts.synopsis import Synopsis
from host_sw.estimators._common import check_pair, dataclass_to_dict
from host_sw.model.golden_lda_rda_lds import Hashers, PacketHashes, update

__all__ = ["PacketCache", "RdaSubtraction", "RdaDecoding", "BucketPositions", "subtract",
           "decode", "repair", "remove_packets", "sorted_unique"]

_MASK32 = np.uint64(0xFFFFFFFF)
#: Byte ``b`` through the S-box nibble by nibble (``S`` of the RDA bucket hash, per byte).
_SBOX_BYTE = np.array([(RDA_SBOX[b >> 4] << 4) | RDA_SBOX[b & 0xF] for b in range(256)],
                      dtype=np.intp)


# ---------------------------------------------------------------------------------------
# Caches
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False)
class PacketCache:
    """A measurement point's cache of ``(packet ID, timestamp)``, as sorted arrays (built
    by :meth:`of`).

    Build it once per capture (or per interval, when caches are flushed per interval)
    and pass the same object to every :func:`~host_sw.estimators.rda.estimate.estimate_rda` call:
    an estimate only searches it for the decoded IDs (``O(d log n)``), while the other
    call forms (a dict, an ``(ids, timestamps)`` pair) are converted and checked again
    on every call — at 100 000 packets that conversion costs more than the estimate.
    A cache larger than one interval is fine: the membership check and the timestamp
    look-up only ever ask about IDs decoded from that interval's synopses.

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
            ids = np.array(ids_in, dtype=np.uint64).ravel()  # a copy: the cache is kept
            ts = np.array(ts_in).ravel()
            if ids.shape != ts.shape:
                raise ValueError(f"cache has {ids.size} IDs but {ts.size} timestamps")
        if ts.size and not np.issubdtype(ts.dtype, np.integer):
            raise ValueError(f"cache timestamps must be integer ticks, not {ts.dtype}")
        if ts.size and np.issubdtype(ts.dtype, np.signedinteger) and (ts < 0).any():
            raise ValueError("cache timestamps must be non-negative ticks")
        if ids.size > 1 and not (ids[1:] > ids[:-1]).all():  # sorted and distinct: as is
            order = np.argsort(ids, kind="stable")
            ids, ts = ids[order], ts[order]
            if (ids[1:] == ids[:-1]).any():
                dup = int(ids[1:][ids[1:] == ids[:-1]][0])
                raise ValueError(f"cache holds packet ID {dup:#018x} more than once; keep "
                                 f"one entry per ID (the paper discards duplicates)")
        return cls(ids, ts.astype(np.uint64, copy=False))

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

    Raises :class:`~host_sw.contracts.config_base.ConfigMismatch` on different configurations.
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


class BucketPositions:
    """``h_l`` of every bank at once, as flat indices ``l·m + h_l(id)``.

    The contract's bucket hash is ``H3_rda[l](S(ID))`` (:class:`~host_sw.contracts.
    hash_fields.RdaBucketHash`): the S-box works byte by byte, so it folds into H3's
    256-entry byte tables, and two banks' 32-bit outputs share one uint64 entry. Hashing
    ``n`` IDs into every bank is then eight gathers of ``n`` entries per pair of banks —
    what makes a peeling round cheap (the decoder hashes the touched buckets every
    round). Built per call from the given hashers' tables (a few microseconds); eight
    gathers with the ID's bytes as indices beat the golden model's 16-bit tables at
    every size here (the 256-entry tables stay in the first-level cache);
    ``tests/test_estimators_rda_decode.py`` checks it against the contract's
    :meth:`~host_sw.contracts.hash_fields.RdaBucketHash.bucket`.

    Attributes
    ----------
    tables:
        One uint64 ``(8, 256)`` table per pair of banks: entry ``[j, b]`` is H3 of
        byte ``j`` = ``b`` of the ID through the S-box, bank ``2g`` in the low and bank
        ``2g+1`` in the high 32 bits.
    """

    def __init__(self, config: RdaConfig, hashers: Hashers | None):
        hashers = hashers or Hashers(config)
        if len(hashers.rda_bucket) != config.banks:
            raise ValueError("hashers were not built for this RDA configuration")
        self.banks, self.m = config.shape
        tables = [np.asarray(h.h3.tables, dtype=np.uint64)[:, _SBOX_BYTE]
                  for h in hashers.rda_bucket]
        self.tables = [tables[l] if l + 1 == self.banks
                       else tables[l] | (tables[l + 1] << np.uint64(32))
                       for l in range(0, self.banks, 2)]

    def positions(self, ids: np.ndarray) -> np.ndarray:
        """``(k, n)`` int64 flat bucket positions of each ID in every bank."""
        ids = np.ascontiguousarray(ids, dtype=np.uint64)
        if not np.little_endian:  # pragma: no cover
            ids = ids.byteswap()
        columns = ids.view(np.uint8).reshape(-1, 8)  # column j: byte j of every ID
        out = np.empty((self.banks, ids.size), dtype=np.int64)
        m = np.uint64(self.m)
        for g, table in enumerate(self.tables):
            both = table[0][columns[:, 0]]
            for j in range(1, 8):
                both ^= table[j][columns[:, j]]
            for half in range(min(2, self.banks - 2 * g)):
                l = 2 * g + half
                h = (both >> np.uint64(32 * half)) & _MASK32
                out[l] = ((h * m) >> np.uint64(32)).astype(np.int64) + l * self.m
        return out

    def pure(self, flat: np.ndarray, delta: np.ndarray, ids: np.ndarray):
        """``(pure, where)``: the subset of the flat positions ``flat`` whose bucket is
        pure, in their order, and the ``(k, n)`` positions of their IDs."""
        flat = flat[np.abs(delta[flat]) == 1]
        where = self.positions(ids[flat])
        keep = np.choose(flat // self.m, where) == flat  # the home bank (k ≤ 8 < 32)
        return flat[keep], where[:, keep]


def _net_peeled(peeled_ids: list, peeled_delta: list):
    """Guard (c): the peeled IDs as a signed multiset. ``(lost, reordered, cancelled,
    inconsistent)``: net −1 is lost, +1 reordered, 0 a false ID peeled back out, any
    other count inconsistent."""
    if not peeled_ids:
        return np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.uint64), 0, 0
    unique_ids, inverse = np.unique(np.concatenate(peeled_ids), return_inverse=True)
    net = np.zeros(unique_ids.size, dtype=np.int64)
    np.add.at(net, inverse, np.concatenate(peeled_delta))
    return (unique_ids[net == -1], unique_ids[net == 1], int(np.count_nonzero(net == 0)),
            int(np.count_nonzero(np.abs(net) > 1)))


def decode(subtraction: RdaSubtraction, *, hashers: Hashers | None = None,
           sender_ids=None, receiver_ids=None,
           max_rounds: int | None = None) -> RdaDecoding:
    """List the lost and reordered packets of a subtraction RDA (Algorithm 1).

    Parameters
    ----------
    subtraction:
        From :func:`subtract` (not modified).
    hashers:
        Optional prebuilt :class:`~host_sw.model.golden_lda_rda_lds.Hashers` of the configuration.
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
    h = BucketPositions(config, hashers)
    delta = np.array(subtraction.delta, dtype=np.int64).reshape(-1)
    ids = np.array(subtraction.id_xor, dtype=np.uint64).reshape(-1)
    limit = 1000 if max_rounds is None else max_rounds
    if limit < 1:
        raise ValueError(f"max_rounds must be positive, not {max_rounds}")

    members = {-1: None if sender_ids is None else _membership(sender_ids),
               +1: None if receiver_ids is None else _membership(receiver_ids)}

    candidates, cand_where = h.pure(np.flatnonzero(np.abs(delta) == 1), delta, ids)
    peeled_ids, peeled_delta = [], []
    rounds = 0
    while candidates.size and rounds < limit:
        rounds += 1
        x, first = np.unique(ids[candidates], return_index=True)
        home = candidates[first]
        dx = delta[home]
        where = cand_where[:, first]
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
        for l in range(k):  # not one call with x broadcast: numpy 2.4's ufunc.at
            np.bitwise_xor.at(ids, where[l], x)  # reads broadcast values wrongly
            np.subtract.at(delta, where[l], dx)
        flat = where.reshape(-1)
        peeled_ids.append(x)
        peeled_delta.append(dx)
        # Only touched (and deferred) buckets can have become pure; duplicates are
        # harmless (IDs are deduplicated above).
        candidates, cand_where = h.pure(np.concatenate([flat, deferred]), delta, ids)

    undecoded = int(np.count_nonzero((delta != 0) | (ids != 0)))
    lost, reordered, cancelled, inconsistent = _net_peeled(peeled_ids, peeled_delta)
    return RdaDecoding(lost_ids=lost, reordered_ids=reordered,
                       decoded=undecoded == 0 and inconsistent == 0,
                       undecoded_buckets=undecoded, rounds=rounds, cancelled_ids=cancelled)


def sorted_unique(values) -> np.ndarray:
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

def remove_packets(synopsis: Synopsis, ids: np.ndarray, timestamps: np.ndarray,
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
    return sorted_unique(ids)


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
        out.append(remove_packets(syn, ids, ts, hashers))
    return out[0], out[1]

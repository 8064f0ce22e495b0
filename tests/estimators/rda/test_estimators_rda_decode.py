# SPDX-License-Identifier: BSD-2-Clause
"""Tests of the RDA peeling decoder (host_sw.estimators.rda.decode) against a
straightforward reference: the vectorised rounds must return exactly what a plain
Python peeling with the same rules returns, decoding failures included, and the
decoder's bucket kernel must be the contract's bucket function."""

from functools import lru_cache

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from host_sw.contracts.config import RdaConfig
from host_sw.estimators.rda.decode import PacketCache, decode, subtract
from host_sw.estimators.rda.estimate import estimate_rda
from host_sw.estimators.rda.decode import BucketPositions
from host_sw.model.golden_lda_rda_lds import Hashers, PacketHashes, update


def reference_decode(sub, hashers, sender_ids=None, receiver_ids=None, max_rounds=1000):
    """Algorithm 1 with the decoder's guards, one bucket and one ID at a time, over Python
    ints and the contract's bit-by-bit hash (``RdaBucketHash.scalar``).

    Rounds: every bucket pure at the start of a round is a candidate; each distinct ID
    is taken once, with the sign of the first bucket (in candidate order) it is pure in;
    (a) it needs a non-zero ID in its bucket of every bank and, when the caches are
    given, (d) membership in the cache of its side; (b) IDs whose bucket in every bank
    holds exactly them go first, the others are deferred while any such ID is left.
    Candidates of the next round: the buckets touched (bank by bank), then the deferred.
    """
    k, m = sub.config.shape
    delta = [[int(v) for v in row] for row in sub.delta]
    ids = [[int(v) for v in row] for row in sub.id_xor]

    @lru_cache(maxsize=None)
    def bucket(l, x):
        return (hashers.rda_bucket[l].scalar(x) * m) >> 32

    def pure(l, i):
        return abs(delta[l][i]) == 1 and bucket(l, ids[l][i]) == i

    members = {-1: None if sender_ids is None else {int(x) for x in sender_ids},
               +1: None if receiver_ids is None else {int(x) for x in receiver_ids}}
    candidates = [(l, i) for l in range(k) for i in range(m) if pure(l, i)]
    net, rounds = {}, 0
    while candidates and rounds < max_rounds:
        rounds += 1
        home = {}
        for l, i in candidates:
            home.setdefault(ids[l][i], (l, i))
        peel = []
        for x in sorted(home):
            sign = delta[home[x][0]][home[x][1]]
            where = [(l, bucket(l, x)) for l in range(k)]
            if any(ids[l][i] == 0 for l, i in where):
                continue
            if members[sign] is not None and x not in members[sign]:
                continue
            peel.append((x, sign, where, all(ids[l][i] == x for l, i in where)))
        if not peel:
            break
        deferred = []
        if any(p[3] for p in peel) and not all(p[3] for p in peel):
            deferred = [home[p[0]] for p in peel if not p[3]]
            peel = [p for p in peel if p[3]]
        for x, sign, where, _ in peel:
            for l, i in where:
                ids[l][i] ^= x
                delta[l][i] -= sign
            net[x] = net.get(x, 0) + sign
        touched = [p[2][l] for l in range(k) for p in peel] + deferred
        candidates = [(l, i) for l, i in touched if pure(l, i)]
    undecoded = sum(1 for l in range(k) for i in range(m) if delta[l][i] or ids[l][i])
    return {"lost_ids": sorted(x for x, c in net.items() if c == -1),
            "reordered_ids": sorted(x for x, c in net.items() if c == 1),
            "decoded": undecoded == 0 and all(abs(c) <= 1 for c in net.values()),
            "undecoded_buckets": undecoded, "rounds": rounds,
            "cancelled_ids": sum(1 for c in net.values() if c == 0)}


def as_dict(dec):
    return {"lost_ids": dec.lost_ids.tolist(), "reordered_ids": dec.reordered_ids.tolist(),
            "decoded": dec.decoded, "undecoded_buckets": dec.undecoded_buckets,
            "rounds": dec.rounds, "cancelled_ids": dec.cancelled_ids}


def instance(seed, banks, buckets, common, lost, reordered, id_bits):
    """Two synopses of random packets: ``common`` at both points, ``lost`` at the sender
    only, ``reordered`` at the receiver only. Small ``id_bits`` make IDs that XOR into
    each other (false pure buckets, cancellations, stopping sets)."""
    rng = np.random.default_rng(seed)
    n = common + lost + reordered
    pool = np.unique(rng.integers(0, 2**id_bits, size=4 * n + 8, dtype=np.uint64))
    ids = rng.permutation(pool)[:n]
    common, lost = min(common, ids.size), min(lost, max(0, ids.size - common))
    at_sender = np.ones(ids.size, bool)
    at_receiver = np.ones(ids.size, bool)
    at_receiver[common:common + lost] = False
    at_sender[common + lost:] = False
    ts = rng.integers(0, 2**30, size=ids.size)
    config = RdaConfig(banks=banks, buckets_per_bank=buckets,
                       seed=int(rng.integers(0, 2**32)))
    hashers = Hashers(config)
    sender = update(config, PacketHashes(packet=ids[at_sender]), ts[at_sender],
                    hashers=hashers)
    receiver = update(config, PacketHashes(packet=ids[at_receiver]), ts[at_receiver] + 7,
                      hashers=hashers)
    return hashers, sender, receiver, ids[at_sender], ids[at_receiver]


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), banks=st.integers(1, 4), buckets=st.integers(1, 40),
       common=st.integers(0, 60), lost=st.integers(0, 50), reordered=st.integers(0, 50),
       id_bits=st.sampled_from([64, 12, 7]), check=st.booleans(),
       max_rounds=st.sampled_from([None, 1, 2, 5]))
def test_decoder_returns_exactly_what_the_reference_peeling_returns(
        seed, banks, buckets, common, lost, reordered, id_bits, check, max_rounds):
    hashers, sender, receiver, s_ids, r_ids = instance(seed, banks, buckets, common, lost,
                                                       reordered, id_bits)
    sub = subtract(sender, receiver)
    members = {"sender_ids": s_ids, "receiver_ids": r_ids} if check else {}
    rounds = {} if max_rounds is None else {"max_rounds": max_rounds}
    got = decode(sub, hashers=hashers, **members, **rounds)
    assert as_dict(got) == reference_decode(sub, hashers, **members, **rounds)


def test_the_reference_comparison_covers_failures_cancellations_and_successes():
    # The same comparison over a fixed sweep that must contain every outcome.
    outcomes = set()
    for seed in range(60):
        banks, buckets = 1 + seed % 3, 4 + (seed * 7) % 30
        hashers, sender, receiver, s_ids, r_ids = instance(
            seed, banks, buckets, 20, buckets // 2 + seed % 9, buckets // 3, (64, 7)[seed % 2])
        sub = subtract(sender, receiver)
        for members in ({}, {"sender_ids": s_ids, "receiver_ids": r_ids}):
            got = as_dict(decode(sub, hashers=hashers, **members))
            assert got == reference_decode(sub, hashers, **members), seed
            outcomes.add(("decoded" if got["decoded"] else "failed")
                         + ("+cancelled" if got["cancelled_ids"] else ""))
    assert {"decoded", "failed", "failed+cancelled"} <= outcomes


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**64 - 1), banks=st.integers(1, 5),
       buckets=st.integers(1, 2**24), size=st.integers(0, 300))
def test_bucket_kernel_is_the_contracts_bucket_function(seed, banks, buckets, size):
    config = RdaConfig(banks=banks, buckets_per_bank=buckets, seed=seed)
    hashers = Hashers(config)
    ids = np.random.default_rng(seed % 2**32).integers(0, 2**64, size=size, dtype=np.uint64)
    got = BucketPositions(config, hashers).positions(ids)
    want = [hashers.rda_bucket[l].bucket(ids, buckets) + l * buckets for l in range(banks)]
    assert got.shape == (banks, size)
    assert np.array_equal(got, np.array(want, dtype=np.int64).reshape(banks, size))


def test_a_packet_cache_built_once_gives_the_same_estimate_as_the_other_forms():
    hashers, sender, receiver, s_ids, r_ids = instance(3, 2, 64, 400, 12, 9, 64)
    rng = np.random.default_rng(3)
    s_ts = rng.integers(0, 2**20, size=s_ids.size)
    r_ts = rng.integers(0, 2**20, size=r_ids.size)
    caches = [(s_ids, s_ts), (r_ids, r_ts)]
    built = [PacketCache.of(c) for c in caches]
    as_dicts = [dict(zip(i.tolist(), t.tolist())) for i, t in caches]
    results = [estimate_rda(sender, receiver, sender_cache=a, receiver_cache=b,
                            hashers=hashers).to_dict()
               for a, b in (caches, built, as_dicts)]
    assert results[0] == results[1] == results[2]


def test_packet_cache_keeps_a_copy_and_takes_sorted_input_as_is():
    ids = np.array([3, 5, 9], np.uint64)
    ts = np.array([30, 50, 90], np.uint64)
    cache = PacketCache.of((ids, ts))
    ids[0], ts[0] = 4, 1
    assert cache.ids.tolist() == [3, 5, 9] and cache.timestamps.tolist() == [30, 50, 90]
    with pytest.raises(ValueError, match="more than once"):
        PacketCache.of((np.array([1, 2, 2], np.uint64), np.array([1, 2, 3])))

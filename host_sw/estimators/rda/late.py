# SPDX-License-Identifier: BSD-2-Clause
"""RDA late binding (Huang et al., "Reconcilable Difference Aggregator", §VIII): size the
synopses after the interval, from the two caches.

Data flow (docs/DESIGN.md, "Data flow of a counter"; estimators layer): each measurement
point's cache ``{packet ID: timestamp}`` (:class:`~host_sw.estimators.rda.decode.PacketCache`)
► **this module** (two RDA synopses with ``m = 2·d̂`` buckets per bank) ►
:func:`host_sw.estimators.rda.estimate.estimate_rda`. :func:`estimate_set_difference` estimates
``d = |S_S ⊕ S_R|`` with MinHash (bottom-``k`` values of a mixed hash of the IDs, as the
paper's min-wise estimator), :func:`late_binding_buckets` gives ``m = 2·d̂`` (Theorem 2),
and :func:`rda_from_caches` builds both synopses with that ``m`` from the caches (the
golden model's ``update``, with the IDs as packet hashes).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from host_sw.contracts.config import RdaConfig
from host_sw.contracts.synopsis import Synopsis
from host_sw.estimators._common import check_kind, dataclass_to_dict, salted_mix64
from host_sw.estimators.rda.decode import PacketCache, sorted_unique
from host_sw.model.golden_lda_rda_lds import Hashers, PacketHashes, update

__all__ = ["SetDifferenceEstimate", "minhash_sketch", "estimate_set_difference",
           "late_binding_buckets", "LateBoundRda", "rda_from_caches", "MINHASH_SALT"]


#: Salt of the MinHash mixer (independent of every H3 matrix of the contract).
MINHASH_SALT = 0x4D494E48  # "MINH"


def minhash_sketch(ids, size: int = 1024) -> np.ndarray:
    """The ``size`` smallest distinct mixed hashes of a set of packet IDs (a bottom-k
    MinHash sketch; what a measurement point would send instead of its cache)."""
    if size < 1:
        raise ValueError(f"sketch size must be positive, not {size}")
    values = sorted_unique(salted_mix64(np.asarray(ids, dtype=np.uint64).ravel(),
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
    a_ids = sorted_unique(sender_ids)
    b_ids = sorted_unique(receiver_ids)
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

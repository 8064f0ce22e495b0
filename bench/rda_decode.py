# SPDX-License-Identifier: BSD-2-Clause
"""Benchmark: RDA decoding (Algorithm 1) of 100 000 lost/reordered packets.

``docs/DESIGN.md`` requires "RDA decode of 100 000 lost/reordered packets in under a second".
Builds a sender and a receiver synopsis with the golden model (random 64-bit packet IDs,
k = 2 banks, m buckets per bank), then times :func:`host_sw.estimators.rda.subtract` +
:func:`~host_sw.estimators.rda.decode` (best of ``--repeat`` runs), with and without the
caches' membership check, and the whole :func:`~host_sw.estimators.rda.estimate_rda`
(decode, repair from the caches, exact mean). Prints the figures and writes them to ``bench/out/rda_decode.json``.

Run: ``.venv/bin/python -m bench.rda_decode`` (from the repository root).
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from fractions import Fraction
from pathlib import Path

import numpy as np

from host_sw.contracts.config import RdaConfig
from host_sw.estimators.rda import decode, estimate_rda, subtract
from host_sw.model.golden import Hashers, PacketHashes, update

from bench import OUT


def build(difference: int, common: int, buckets: int, banks: int, seed: int):
    rng = np.random.default_rng(seed)
    n = common + difference
    ids = np.unique(rng.integers(0, 2**64, size=n + 64, dtype=np.uint64))[:n]
    rng.shuffle(ids)
    send = rng.integers(0, 2**38, size=n).astype(np.uint64)
    delay = rng.integers(0, 10_000, size=n).astype(np.uint64)
    lost = np.zeros(n, bool)
    reordered = np.zeros(n, bool)
    lost[:difference // 2] = True
    reordered[difference // 2:difference] = True
    at_sender, at_receiver = ~reordered, ~lost
    config = RdaConfig(banks=banks, buckets_per_bank=buckets)
    hashers = Hashers(config)
    sender = update(config, PacketHashes(packet=ids[at_sender]), send[at_sender],
                    hashers=hashers)
    receiver = update(config, PacketHashes(packet=ids[at_receiver]),
                      send[at_receiver] + delay[at_receiver], hashers=hashers)
    both = at_sender & at_receiver
    truth = Fraction(int(delay[both].sum()), int(both.sum()))
    caches = ((ids[at_sender], send[at_sender]),
              (ids[at_receiver], send[at_receiver] + delay[at_receiver]))
    return config, hashers, sender, receiver, caches, truth


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--difference", type=int, default=100_000)
    ap.add_argument("--common", type=int, default=200_000)
    ap.add_argument("--banks", type=int, default=2)
    ap.add_argument("--buckets", type=int, nargs="*", default=[200_000, 250_000, 262_144])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=str(OUT / "rda_decode.json"))
    args = ap.parse_args(argv)
    results = []
    for buckets in args.buckets:
        config, hashers, sender, receiver, caches, truth = build(
            args.difference, args.common, buckets, args.banks, args.seed)
        best = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            dec = decode(subtract(sender, receiver), hashers=hashers)
            best = min(best, time.perf_counter() - t0)
        best_cached = float("inf")
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            dec_cached = decode(subtract(sender, receiver), hashers=hashers,
                                sender_ids=caches[0][0], receiver_ids=caches[1][0])
            best_cached = min(best_cached, time.perf_counter() - t0)
        t0 = time.perf_counter()
        est = estimate_rda(sender, receiver, sender_cache=caches[0],
                           receiver_cache=caches[1], hashers=hashers)
        full = time.perf_counter() - t0
        row = {
            "difference": args.difference, "common": args.common, "banks": args.banks,
            "buckets_per_bank": buckets, "decoded": dec.decoded,
            "found": dec.set_difference, "rounds": dec.rounds,
            "cancelled_ids": dec.cancelled_ids, "decode_seconds": round(best, 4),
            "decoded_with_cache_check": dec_cached.decoded,
            "found_with_cache_check": dec_cached.set_difference,
            "decode_with_cache_check_seconds": round(best_cached, 4),
            "estimate_seconds": round(full, 4), "exact_mean": est.exact,
            "mean_equals_truth": est.mean_ticks == truth,
        }
        results.append(row)
        print(f"k={args.banks} m={buckets}: decode {args.difference} differences in "
              f"{best * 1e3:.0f} ms (best of {args.repeat}; {dec.rounds} rounds, decoded="
              f"{dec.decoded}, found {dec.set_difference}); with the cache membership check "
              f"{best_cached * 1e3:.0f} ms, decoded={dec_cached.decoded}; "
              f"estimate_rda incl. repair "
              f"{full * 1e3:.0f} ms, exact={est.exact}, mean==truth="
              f"{est.mean_ticks == truth}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"benchmark": "rda_decode", "python": platform.python_version(),
                               "machine": platform.machine(), "results": results},
                              indent=2) + "\n")
    print(f"wrote {out}")


if __name__ == "__main__":
    main()

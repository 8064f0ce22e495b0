# SPDX-License-Identifier: BSD-2-Clause
"""Which error patterns of one OPA group the host recovery resolves: a randomised survey
of groups with exactly ``L`` losses and ``R`` reordered packets (each moved up to ``d``
places in the arrival order) at several group sizes, against what the false-match budget
of ``docs/SPEC.md`` §8.5 would allow.

For each pattern and size, ``--trials`` groups of uniform packet hashes: the sender's
word (:func:`host_sw.model.golden_opa.opa_synopsis`), the receiver's packets with the pattern
applied, :func:`host_sw.estimators.opa.search.search_group`; the outcome is ``exact``
(σ equals the truth), ``WRONG`` (a σ that differs: must never happen) or the reason the
group was left unrecovered, with the CPU time per group. "Bound allows" is whether the
smallest search that contains the truth — the lost positions anywhere (``C(w, L)``), the
reordered packets placed within ``d`` (``C(n, R)·(2d+1)^R``) and ``k − L`` checks —
expects at most ``budget`` false matches.

Usage::

    .venv/bin/python -m bench.opa_patterns [--rows 4] [--d 8] [--trials 4]
                                           [--patterns 0:3,1:2] [--sizes 14,30,60,120,240]
    .venv/bin/python -m bench.opa_patterns --mixed 1000 [--d 4]

``--mixed N``: N groups of random size and random mixed pattern (losses, reordered and
foreign packets, moves that may chain) — the counts of exact mappings, unrecovered groups
by reason, and wrong mappings (which must be 0).
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from math import comb, log

import numpy as np

from host_sw.contracts.config import OpaConfig
from host_sw.contracts.opa.words import OPA_PRIME
from host_sw.estimators.opa.search import FALSE_MATCH_BUDGET, search_group
from host_sw.model.golden_opa import opa_synopsis

PATTERNS = "1:0,2:0,3:0,0:1,1:1,2:1,0:2,1:2,0:3,2:2"


def make_group(rng, w: int, lost: int, moved: int, d: int, rows: int):
    """``(packets in arrival order, b, true σ)`` of a group of ``w`` sent packets with
    ``lost`` losses and ``moved`` packets each moved 1…d places (either way) in the
    arrival order; σ is the truth (1-based sending positions)."""
    p = rng.integers(0, 2 ** 64, w, dtype=np.uint64)
    config = OpaConfig(groups=1, rows=rows)
    syn = opa_synopsis(config, p)
    b = np.array([syn[f"b{r}"][0, 0] for r in range(rows)], dtype=np.uint64)
    keep = np.sort(rng.choice(w, w - lost, replace=False))
    order = list(keep)
    for i in rng.choice(len(order), moved, replace=False) if moved else ():
        src = order.index(keep[i])
        pkt = order.pop(src)
        step = int(rng.integers(1, d + 1)) * (1 if rng.random() < 0.5 else -1)
        order.insert(int(np.clip(src + step, 0, len(order))), pkt)
    order = np.array(order, dtype=np.int64)
    return p[order], b, order + 1


def bound_allows(w: int, n: int, lost: int, moved: int, d: int, rows: int,
                 budget: float) -> bool:
    """The smallest search holding the truth expects at most ``budget`` false matches."""
    checks = rows - lost
    if checks < 1:
        return False
    size = comb(w, lost) * comb(n, moved) * (2 * d + 1) ** moved
    return log(max(size, 1)) - checks * log(OPA_PRIME) <= log(budget)


def survey(patterns, sizes, trials: int, d: int, rows: int, seed: int = 1):
    rng = np.random.default_rng(seed)
    for lost, moved in patterns:
        for w in sizes:
            n = w - lost
            if n < moved + 1:
                continue
            allowed = bound_allows(w, n, lost, moved, d, rows, FALSE_MATCH_BUDGET)
            outcome, cpu = Counter(), []
            for _ in range(trials):
                packets, b, truth = make_group(rng, w, lost, moved, d, rows)
                t0 = time.process_time()
                found = search_group(packets, w, b, seed=OpaConfig().seed, shift_bound=d)
                cpu.append(time.process_time() - t0)
                if found.sigma is None:
                    outcome[found.reason] += 1
                else:
                    outcome["exact" if np.array_equal(found.sigma, truth) else "WRONG"] += 1
            yield dict(lost=lost, moved=moved, w=w, allowed=allowed, outcome=dict(outcome),
                       cpu_s=float(np.median(cpu)))


def mixed(count: int, d: int, rows: int, seed: int, sizes=(8, 80)) -> Counter:
    """``count`` groups of random size with a random pattern — 0–3 losses, 0–4 reordered
    packets (moved one after the other, so moves may chain or overlap), 0–1 foreign
    packets —: outcome counts (``exact``, ``WRONG``, or the reason)."""
    rng = np.random.default_rng(seed)
    out = Counter()
    for _ in range(count):
        w = int(rng.integers(*sizes))
        lost, moved = int(rng.integers(0, 4)), int(rng.integers(0, 5))
        if w - lost < moved + 2 or lost + moved == 0:
            continue
        packets, b, truth = make_group(rng, w, lost, moved, d, rows)
        if rng.random() < 0.2:                       # a packet of another interval
            at = int(rng.integers(0, len(packets) + 1))
            packets = np.insert(packets, at, rng.integers(0, 2 ** 63, dtype=np.uint64))
            truth = np.insert(truth, at, 0)
        found = search_group(packets, w, b, seed=OpaConfig().seed, shift_bound=d)
        if found.sigma is None:
            out[found.reason] += 1
        else:
            out["exact" if np.array_equal(found.sigma, truth) else "WRONG"] += 1
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=4)
    ap.add_argument("--d", type=int, default=8)
    ap.add_argument("--trials", type=int, default=4)
    ap.add_argument("--patterns", default=PATTERNS, help="L:R,… (losses:reordered)")
    ap.add_argument("--sizes", default="14,30,60,120,240")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--mixed", type=int, default=0, help="instead: this many groups of "
                    "random size (8-79) and random pattern (with foreign packets); counts")
    args = ap.parse_args(argv)
    if args.mixed:
        print(dict(mixed(args.mixed, args.d, args.rows, args.seed)))
        return 0
    patterns = [tuple(int(v) for v in s.split(":")) for s in args.patterns.split(",")]
    sizes = [int(s) for s in args.sizes.split(",")]
    print(f"# OPA patterns, k = {args.rows}, d = {args.d}, {args.trials} groups each")
    print(" L  R     w  bound allows  CPU s/group  outcome")
    for row in survey(patterns, sizes, args.trials, args.d, args.rows, args.seed):
        print(f"{row['lost']:2d} {row['moved']:2d} {row['w']:5d}  {str(row['allowed']):>12}"
              f"  {row['cpu_s']:11.3f}  {row['outcome']}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

# SPDX-License-Identifier: BSD-2-Clause
"""OPA host recovery: per-packet delays, loss and reordering of one interval from the
sender's OPA words and timestamp block and the receiver's per-packet records
(OPA Algorithms 1 and 2; ``docs/SPEC.md`` §8.5).

Estimators layer. Data flow: sender :class:`~host_sw.contracts.synopsis.Synopsis` (fields
``count``, ``b0``…) + timestamp block (:mod:`host_sw.contracts.opa.timestamps`) and the
receiver's :class:`~host_sw.model.golden_opa.PacketRecords` → :func:`recover_interval` →
:class:`OpaRecovery` (a delay per recovered packet) → :func:`summary` (the interval's
percentiles, loss, reordering) → the record ``ldactl`` prints.

Every group whose count and CAH match the receiver's packets in arrival order is exact
(one vectorised pass over all packets). The others go through the bounded search of
:func:`~host_sw.estimators.opa.search.search_group`; a group it cannot resolve is reported
unrecovered and its packets get no delay — never a guessed one.
"""

from __future__ import annotations

import math
import threading
from bisect import bisect_left
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

from host_sw.contracts.opa.words import augmented_hash
from host_sw.contracts.opa.timestamps import decode_timestamps
from host_sw.contracts.synopsis import Synopsis
from host_sw.estimators.opa.search import FALSE_MATCH_BUDGET, GRID_LIMIT, search_group
from host_sw.estimators.opa.tails import group_advice, percentile_ranges
from host_sw.model.golden_opa import PacketRecords, group_packets, group_sums, sender_timestamp_block

__all__ = ["OpaRecovery", "recover_interval", "summary", "PERCENTILES", "HISTOGRAM_BUCKETS_S",
           "SUMMARY_KEYS", "recover_pair",
           "estimate_opa", "last_block_bytes"]

#: The percentiles every OPA interval reports (``p50`` … ``p99.9``, then ``max``).
PERCENTILES = (50.0, 90.0, 99.0, 99.9)
#: The keys of :func:`summary` that ``ldactl simulate --json`` adds for an OPA run (the
#: percentiles and max in ns, reordering and how much was recovered).
SUMMARY_KEYS = tuple(f"p{q:g}" for q in PERCENTILES) + ("max",) + tuple(
    f"p{q:g}_range" for q in PERCENTILES) + (
    "max_range", "reordered", "unrecovered_groups", "unrecovered", "recovered_fraction")
#: Upper bounds (seconds) of the delay histogram's buckets: 1-2-5 steps from 10 ns to
#: 1 s (Prometheus ``le`` labels; ``+Inf`` is implied by ``samples``).
HISTOGRAM_BUCKETS_S = tuple(m * 10.0 ** e for e in range(-8, 0) for m in (1, 2, 5)) + (1.0,)


@dataclass
class OpaRecovery:
    """One interval's recovery. Per received packet (the receiver's order): ``delays``
    (int64 ticks, receive minus send time; meaningful where ``recovered``),
    ``recovered``, ``receive_ts``. Per interval: ``lost`` (in recovered groups),
    ``reordered`` (packets out of sending order in their group), ``foreign`` (received
    but sent in another interval), ``unrecovered_groups``/``unrecovered_sent`` (sender
    packets in them), ``reasons`` (why groups were not recovered), ``candidates``
    (mappings tested), ``error_bound`` (ticks; 0 = every delay exact)."""
    delays: np.ndarray
    recovered: np.ndarray
    receive_ts: np.ndarray
    sent: int
    received: int
    lost: int = 0
    reordered: int = 0
    foreign: int = 0
    exact_groups: int = 0
    searched_groups: int = 0
    unrecovered_groups: int = 0
    unrecovered_sent: int = 0
    candidates: int = 0
    error_bound: int = 0
    reasons: Counter = field(default_factory=Counter)

    @property
    def recovered_delays(self) -> np.ndarray:
        return self.delays[self.recovered]


def _sender_words(sender: Synopsis):
    config = sender.config
    w = sender.count.reshape(-1).astype(np.int64)
    b = np.stack([sender[f"b{r}"].reshape(-1) for r in range(config.rows)])
    return w, b.astype(np.uint64)


def recover_interval(sender: Synopsis, timestamp_block: bytes, receiver: PacketRecords, *,
                     max_errors: int | None = None, shift_bound: int = 8, max_aside: int = 3,
                     candidate_limit: int = 2_000_000, grid_limit: int = GRID_LIMIT,
                     false_match_budget: float = FALSE_MATCH_BUDGET) -> OpaRecovery:
    """Algorithms 1 and 2 over one interval (module docstring). ``max_errors`` bounds the
    unknown positions per group (default and at most ``rows − 1``), ``shift_bound`` the
    reordering shift d within a group, ``max_aside`` the reordered or foreign packets per
    group, ``candidate_limit`` and ``grid_limit`` the mappings one group may test one by
    one or as a grid, and ``false_match_budget`` the expected false matches of one
    searched level (``docs/SPEC.md`` §8.5)."""
    config = sender.config
    if max_errors is not None and not 0 <= max_errors < config.rows:
        raise ValueError(f"max_errors must be 0..rows-1 ({config.rows - 1}), not {max_errors}")
    w, b = _sender_words(sender)
    send_ts, bound = decode_timestamps(timestamp_block, w)
    send_start = np.concatenate(([0], np.cumsum(w)[:-1]))
    p = np.asarray(receiver.packet, dtype=np.uint64)
    rts = np.asarray(receiver.timestamps, dtype=np.int64)
    grouped = group_packets(config, p)
    p_sorted = p[grouped.order]
    b_recv = group_sums(config, augmented_hash(p_sorted, grouped.position, config.seed),
                        grouped)
    exact = (grouped.counts == w) & (b_recv == b).all(axis=0)
    sigma = grouped.position.copy()
    ok = exact[grouped.group]
    out = OpaRecovery(delays=np.zeros(len(p), np.int64), recovered=np.zeros(len(p), bool),
                      receive_ts=rts, sent=int(w.sum()), received=len(p),
                      exact_groups=int(exact.sum()), error_bound=bound)
    for gi in np.flatnonzero(~exact):
        lo, n = int(grouped.starts[gi]), int(grouped.counts[gi])
        out.searched_groups += 1
        if n == 0:                 # nothing received: every packet of the group lost
            out.lost += int(w[gi])
            continue
        found = search_group(p_sorted[lo:lo + n], int(w[gi]), b[:, gi], seed=config.seed,
                             max_errors=max_errors, shift_bound=shift_bound,
                             max_aside=max_aside, candidate_limit=candidate_limit,
                             grid_limit=grid_limit,
                             false_match_budget=false_match_budget)
        out.candidates += found.candidates
        if found.sigma is None:
            out.unrecovered_groups += 1
            out.unrecovered_sent += int(w[gi])
            out.reasons[found.reason] += 1
            continue
        s = found.sigma
        sigma[lo:lo + n] = s
        ok[lo:lo + n] = s > 0
        mapped = s[s > 0]
        out.lost += int(w[gi]) - len(mapped)
        out.foreign += int((s == 0).sum())
        out.reordered += int(len(mapped) - _increasing_run(mapped))
    # Algorithm 2: receive time minus the send time at the mapped position.
    idx = np.flatnonzero(ok)
    send_index = send_start[grouped.group[idx]] + sigma[idx] - 1
    arrival = grouped.order[idx]
    out.delays[arrival] = rts[arrival] - send_ts[send_index]
    out.recovered[arrival] = True
    return out


def _increasing_run(values: np.ndarray) -> int:
    """Length of the longest increasing subsequence (patience sorting): the packets
    that kept their sending order."""
    if len(values) < 2 or (np.diff(values) > 0).all():
        return len(values)
    tails: list[int] = []
    for v in values.tolist():
        i = bisect_left(tails, v)
        if i == len(tails):
            tails.append(v)
        else:
            tails[i] = v
    return len(tails)


def summary(result: OpaRecovery, tick_ns: float) -> dict:
    """The interval's figures (times in ns): ``mean``, ``std`` (of the recovered
    delays), ``p50`` … ``p99.9`` and ``max`` — each a number only where the received
    packets without a delay cannot move it, else None — and ``p50_range`` …
    ``max_range``, ``[lo, hi]``: the range those packets leave open (every one below,
    every one above; None: open, :func:`~host_sw.estimators.opa.tails.percentile_ranges`);
    ``samples`` (recovered delays), ``unrecovered`` (received packets without a delay),
    ``lost`` (sent − received, foreign packets set apart: exact whatever was recovered),
    ``lost_located`` (the losses recovery placed), ``reordered``, ``foreign``,
    ``unrecovered_groups``, ``unrecovered_packets`` (sent in unrecovered groups),
    ``recovered_fraction`` (of received packets), ``error_bound_ns``, and
    ``histogram_s``: cumulative counts of the recovered delays at most each of
    :data:`HISTOGRAM_BUCKETS_S` seconds (``le``, ``count``) and their ``sum`` (s)."""
    d = result.recovered_delays.astype(np.float64) * tick_ns
    unknown = result.received - len(d)
    out = {"mean": float(d.mean()) if len(d) else None,
           "std": float(d.std()) if len(d) else None}
    keys = [f"p{q:g}" for q in PERCENTILES] + ["max"]
    ranges = percentile_ranges(d, unknown, PERCENTILES + (100.0,))
    for key, (lo, hi) in zip(keys, ranges):
        out[key] = lo if lo is not None and lo == hi else None
    for key, (lo, hi) in zip(keys, ranges):
        out[f"{key}_range"] = [lo, hi]
    ds = np.sort(d) * 1e-9
    out["histogram_s"] = {"le": list(HISTOGRAM_BUCKETS_S),
                          "count": np.searchsorted(ds, HISTOGRAM_BUCKETS_S,
                                                   side="right").tolist(),
                          "sum": float(ds.sum())}
    out.update(samples=len(d), unrecovered=unknown,
               lost=result.sent - result.received + result.foreign,
               lost_located=result.lost, reordered=result.reordered,
               foreign=result.foreign, unrecovered_groups=result.unrecovered_groups,
               unrecovered_packets=result.unrecovered_sent,
               recovered_fraction=len(d) / result.received if result.received else None,
               error_bound_ns=result.error_bound * tick_ns)
    return out


#: The last recovery, per thread: the analysis's tasks run on threads at once
#: (``ldactl estimate --jobs N --threads``), and one memo shared between them handed a
#: task another interval's recovery.
_LAST = threading.local()


def recover_pair(sender: Synopsis, sender_records: PacketRecords,
                 receiver_records: PacketRecords, *, shift: int = 0, **bounds) -> OpaRecovery:
    """The recovery of one interval from the sender's words and both points' records,
    the sender's timestamp block made here as the sender's host makes it
    (:func:`~host_sw.model.golden_opa.sender_timestamp_block`). The calling thread's last
    result is kept (by the identity of its inputs, which it keeps alive) so that the
    interval's estimate and its per-packet output share one recovery."""
    key = (id(sender), id(sender_records), id(receiver_records), shift,
           tuple(sorted(bounds.items())))
    last = getattr(_LAST, "memo", None)
    if last is None or last["key"] != key:
        block = sender_timestamp_block(sender.config, sender_records, shift=shift)
        last = {"key": key, "result": recover_interval(sender, block, receiver_records,
                                                       **bounds),
                "block_bytes": len(block), "refs": (sender, sender_records, receiver_records)}
        _LAST.memo = last
    return last["result"]


def last_block_bytes() -> int:
    """Size of the timestamp block of the calling thread's last :func:`recover_pair`."""
    last = getattr(_LAST, "memo", None)
    return 0 if last is None else last["block_bytes"]


def estimate_opa(sender: Synopsis, receiver: Synopsis, sender_records=None,
                 receiver_records=None) -> dict:
    """The interval's estimate (``measure.PAIR_ESTIMATORS``' form, times in ns). With
    both points' records: per-packet recovery (:func:`summary`); without: only the
    counts and the number of groups whose words agree."""
    config = sender.config
    sent = int(sender.count.astype(np.int64).sum())
    received = int(receiver.count.astype(np.int64).sum())
    if sender_records is None or receiver_records is None:
        same = int(np.all([sender[n] == receiver[n] for n in config.layout.names],
                          axis=0).sum())
        return {"mean": None, "std": None, "ci": [None, None], "lost": sent - received,
                "loss_rate": (sent - received) / sent if sent else None, "samples": 0,
                "sent": sent, "received": received, "groups_equal": same,
                "notes": ["no mean: OPA's delays need both points' per-packet record "
                          "frames (ldactl estimate --synopsis opa on export captures); "
                          "loss from the words only"]}
    result = recover_pair(sender, sender_records, receiver_records)
    out = summary(result, config.tick_ns)
    out.update(ci=[None, None], sent=sent, received=received,
               loss_rate=out["lost"] / sent if sent else None,
               timestamp_bytes=last_block_bytes())
    out["groups_needed"], out["rows_needed"], advice = group_advice(
        sent, _errors(out), max(out["lost"], 0), config.groups, config.rows)
    out["notes"] = _tail_notes(out, dict(result.reasons), advice)
    return out


def _errors(e: dict) -> int:
    """The interval's lost and reordered packets: the loss exact, the reordering counted
    in the recovered groups and scaled to every received packet (at least that:
    reordering is what puts a group beyond reach)."""
    reordered = e["reordered"]
    if e["samples"] and e["unrecovered"]:
        reordered = math.ceil(reordered * e["received"] / e["samples"])
    return max(e["lost"], 0) + reordered


def _tail_notes(e: dict, reasons: dict, advice: str | None) -> list[str]:
    """What the unrecovered groups leave open: their packets, the figures that are
    ranges or withheld, and ``advice``: the group count and k the interval needs
    (:func:`~host_sw.estimators.opa.tails.group_advice`)."""
    if not e["unrecovered_groups"] and not e["unrecovered"]:
        return []
    notes = [f"{e['unrecovered_groups']} group(s) beyond the recovery bounds ({reasons}): "
             f"{e['unrecovered']} received packets without a delay; 'lost' is sent − "
             f"received (exact), mean and std are the recovered delays'"]
    keys = [f"p{q:g}" for q in PERCENTILES] + ["max"]
    ranged = [k for k in keys if e[k] is None and None not in e[f"{k}_range"]]
    opened = [k for k in keys if e[k] is None and e[f"{k}_range"].count(None) == 1]
    withheld = [k for k in keys if e[f"{k}_range"] == [None, None]]
    if ranged or opened:
        notes.append(f"{', '.join(ranged + opened)}: the range the packets without a "
                     f"delay leave open (lo..hi: every one below .. every one above; ≥ or "
                     f"≤: they alone could set the other end)")
    if withheld:
        notes.append(f"{', '.join(withheld)} withheld: the packets without a delay could "
                     f"set it whatever the recovered ones are")
    return notes + ([advice] if advice else [])

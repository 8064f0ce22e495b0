# SPDX-License-Identifier: BSD-2-Clause
"""RLI estimators: per-flow mean and standard deviation of the interpolated delays, from
the receiver's per-flow cells (and the sender's, for per-flow loss).

Data flow (docs/DESIGN.md, "Data flow of a counter"; estimators layer): the receiver's
:class:`~host_sw.contracts.synopsis.Synopsis` of an :class:`~host_sw.contracts.config.RliConfig`
(built by :mod:`host_sw.model.golden_rli` in simulation) ► **these estimators** ► CLI table,
JSON/CSV. A flow is named by its key (its header window; :func:`flow_key_text` prints the
5-tuple) and found by its two flow hashes (``Trace.flow_hashes(config)``): its cell, and
its digest. A cell is *clean* for a flow when ``digest_sum == count · digest`` (mod
``2**digest_bits``): a second flow in the cell breaks the equality except with
probability about ``2**-digest_bits``, and is reported as a collision (no estimate).

The estimate (RLI §3): mean = ``delay_sum / count``, variance =
``delay_sq_sum / count − mean²`` (population, over the interpolated delays), times
``tick_ns``. What interpolation smooths away (a delay spike between two references,
the OPA paper's Fig. 6) is in neither figure: these are estimates of the interpolated
delays, judged against the true ones in ``bench/accuracy_rli.py``.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import numpy as np

from host_sw.contracts.config import RliConfig, check_comparable
from host_sw.contracts.hashing import FrameClass
from host_sw.contracts.synopsis import Synopsis
from host_sw.model.golden_rli import RliReceiverStats, flow_cells, receiver_synopsis, sender_synopsis

__all__ = ["RliFlowEstimates", "estimate_flows", "aggregate", "flow_key_text",
           "simulated_synopses"]


def _signed(values: np.ndarray, bits: int) -> np.ndarray:
    """Two's-complement reading of ``bits``-bit field values, as float64."""
    v = np.asarray(values, dtype=np.uint64)
    if bits == 64:
        return v.view(np.int64).astype(np.float64)
    half = np.uint64(1 << (bits - 1))
    return np.where(v >= half, v.astype(np.float64) - float(1 << bits), v.astype(np.float64))


@dataclass(frozen=True)
class RliFlowEstimates:
    """Per queried flow (arrays of length F): ``cell``, receiver ``packets``, ``sent``
    (sender count, or None without a sender synopsis), ``collided`` and the estimates
    ``mean_ns``/``std_ns`` (NaN for a collided or empty cell)."""
    cell: np.ndarray
    packets: np.ndarray
    sent: np.ndarray | None
    collided: np.ndarray
    mean_ns: np.ndarray
    std_ns: np.ndarray

    @property
    def lost(self) -> np.ndarray | None:
        return None if self.sent is None else self.sent - self.packets


def _clean(syn: Synopsis, cells: np.ndarray, digests: np.ndarray) -> np.ndarray:
    config = syn.config
    count = syn.count[0][cells]
    got = syn["digest_sum"][0][cells]
    want = count * digests  # uint64: wraps mod 2**64, a multiple of 2**digest_bits
    if config.digest_bits < 64:
        want = want & np.uint64((1 << config.digest_bits) - 1)
    return got == want


def estimate_flows(receiver: Synopsis, flow_hashes: np.ndarray,
                   sender: Synopsis | None = None) -> RliFlowEstimates:
    """Per-flow estimates for flows given by their two flow hashes ``(2, F)``."""
    config = receiver.config
    if config.kind != "rli":
        raise ValueError(f"RLI estimates need an RLI synopsis, not {config.kind}")
    if sender is not None:
        check_comparable(sender.config, config)
    cells, digests = flow_cells(config, flow_hashes)
    count = receiver.count[0][cells].astype(np.int64)
    clean = _clean(receiver, cells, digests)
    sent = None
    if sender is not None:
        sent = sender.count[0][cells].astype(np.int64)
        clean &= _clean(sender, cells, digests)
    collided = ~clean
    ok = clean & (count > 0)
    n = np.where(ok, count, 1).astype(np.float64)
    dsum = _signed(receiver["delay_sum"][0][cells], config.delay_bits)
    sq = receiver["delay_sq_sum"][0][cells].astype(np.float64)
    mean = dsum / n
    var = np.maximum(sq / n - mean * mean, 0.0)
    tick = config.tick_ns
    return RliFlowEstimates(cells, count, sent, collided,
                            np.where(ok, mean * tick, np.nan),
                            np.where(ok, np.sqrt(var) * tick, np.nan))


def aggregate(receiver: Synopsis) -> tuple[float | None, float | None, int]:
    """Mean and standard deviation (ns) of all interpolated delays, and their number."""
    config = receiver.config
    n = int(np.asarray(receiver.count, dtype=object).sum())
    if n == 0:
        return None, None, 0
    dsum = _signed(receiver["delay_sum"], config.delay_bits).sum()
    sq = receiver["delay_sq_sum"].astype(np.float64).sum()
    mean = dsum / n
    var = max(sq / n - mean * mean, 0.0)
    return mean * config.tick_ns, float(np.sqrt(var)) * config.tick_ns, n


def flow_key_text(window: np.ndarray | None, frame_class: int, flow: int) -> str:
    """A flow's 5-tuple from a header window (option-less IPv4/IPv6, ports after the IP
    header, as the default flow masks read it); ``flow#<n>`` without one (fast mode)."""
    if window is None or frame_class not in (FrameClass.IPV4, FrameClass.IPV6):
        return f"flow#{flow}"
    w = bytes(np.asarray(window, dtype=np.uint8))
    if frame_class == FrameClass.IPV4:
        proto, src, dst, l4 = w[23], w[26:30], w[30:34], 34
    else:
        proto, src, dst, l4 = w[20], w[22:38], w[38:54], 54
    if len(w) < l4 + 4:
        return f"flow#{flow}"
    a, b = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    sport, dport = int.from_bytes(w[l4:l4 + 2], "big"), int.from_bytes(w[l4 + 2:l4 + 4], "big")
    name = {6: "tcp", 17: "udp"}.get(proto, str(proto))
    fmt = "[{}]:{}" if frame_class == FrameClass.IPV6 else "{}:{}"
    return f"{name} {fmt.format(a, sport)} > {fmt.format(b, dport)}"


def simulated_synopses(config: RliConfig, iv, hashers=None
                       ) -> tuple[Synopsis, Synopsis, RliReceiverStats]:
    """Both points' RLI cells for a simulated interval whose trace carries the reference
    packets (:func:`host_sw.model.golden_rli.with_references`; in simulation they are the only
    control frames): ``(sender, receiver, receiver stats)``."""
    s_obs, r_obs = iv.sender, iv.receiver
    s_h = s_obs.hashes(config, hashers)
    r_h = r_obs.hashes(config, hashers)
    sender = sender_synopsis(config, s_h.flow, s_h.counted)
    trace = r_obs.trace
    is_ref = trace.classes[r_obs.indices] == FrameClass.CONTROL
    send_ticks = _ticks(config, trace.timestamps[r_obs.indices])
    receiver, stats = receiver_synopsis(config, r_h.flow, r_obs.ticks(config), is_ref,
                                        send_ticks, r_h.counted)
    return sender, receiver, stats


def _ticks(config: RliConfig, ns: np.ndarray) -> np.ndarray:
    tick = config.tick_ns
    if tick == 1:
        return ns
    if float(tick).is_integer():
        return ns // int(tick)
    return np.floor(ns / tick).astype(np.int64)

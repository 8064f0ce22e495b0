# SPDX-License-Identifier: BSD-2-Clause
"""LDS estimators: per-flow delay, size and loss from a sender's and a receiver's Lossy
Difference Sketch (Sanjuàs-Cuxart et al., IMC 2011, ``papers/lds-*``).

Data flow (docs/DESIGN.md, "Data flow of a counter"; estimators layer): snapshot of an
interval (two :class:`~host_sw.contracts.synopsis.Synopsis` objects of one
:class:`~host_sw.contracts.config.LdsConfig`) ► **these estimators** ► CLI/export. Pure
functions over the counter arrays, vectorised over flows (the §5.1 reproduction queries
~100 k flows).

A flow is named by its per-row 32-bit flow hashes (``(R,)`` for one flow, ``(R, F)`` for
F flows), computed from its header with the contract
``Hashers(config).flow[class][r]`` (:func:`host_sw.model.golden_lda_rda_lds.flow_row_hashes`, also
importable from here). Its cells in row ``r`` are
``(base_r + j) mod C`` for ``j in 0..k-1`` with ``base_r = range_reduce32(h_r, C)`` —
the flow's virtual LDA, exactly the cells :func:`host_sw.model.golden_lda_rda_lds.bucket_indices` updates.
A packet's offset ``j`` comes from the row's own offset hash ``h'_r`` (the LDS paper's
§2.3.4, ``docs/SPEC.md`` §3.6), so the packets a loss spoils fall into different offsets
in different rows and the flow keeps clean cells in some row; the estimator needs only
the cells, not the offsets.

Delay (Fig. 6, §4.2): a cell is *usable* when sender and receiver agree on its count and
digest and the count is non-zero (an empty cell carries no sample; Fig. 6 would divide by
zero). Each usable count is inverted by its row's sampling rate (``n · 2**z_r``); the
smallest inverted count ``n_min`` is found, and the cells with inverted count
``≤ (1 + α)·n_min`` are kept (the text's "at most n(1+α)"; Fig. 6 writes ``<``).
The estimate is ``Σ Δs / Σ n`` over the kept cells with the *raw* counts (§4.2: after
cell selection "delay estimates are produced normally"), in ns (× ``tick_ns``).

Size (§4.3, count-min): per row, the sum of the flow's ``k`` counts; the minimum over
rows, times ``2**z`` (the sampling correction). Loss: the same over ``sender −
receiver`` counts (collisions only add other flows' losses, in marker mode). Only the
rows with the highest sampling rate (smallest ``z_r``) take part: a sampled row's
corrected count is unbiased but noisy, and the minimum over noisy rows is biased low
(with rates 1, 1/2, 1/8, 1/64 the 1/64 row would usually report zero loss). With flow
weights (§4.1) counts are weighted: pass ``weights`` to divide them back out.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

import numpy as np

from host_sw.contracts.config import LdsConfig, check_comparable
from host_sw.contracts.hashing import FrameClass
from host_sw.contracts.hash_fields import range_reduce32
from host_sw.contracts.layouts import signed_difference
from host_sw.contracts.synopsis import Synopsis
from host_sw.estimators._common import check_kind

__all__ = ["LdsFlowEstimates", "flow_key_window", "flow_cells", "estimate_flows",
           "DEFAULT_ALPHA"]

#: The paper's tolerance for interference in cell selection (§2.3.4, Fig. 6).
DEFAULT_ALPHA = 0.1


_PROTOCOLS = {"tcp": 6, "udp": 17, "icmp": 1, "sctp": 132}


def flow_key_window(*, src: str, dst: str, proto, sport: int = 0, dport: int = 0,
                    window_bytes: int = 64) -> tuple[np.ndarray, FrameClass]:
    """A header window carrying a flow's 5-tuple where the default flow masks read it
    (option-less IPv4 or IPv6 header, L4 ports right after), and its frame class — to
    query a flow by its key: ``flow_row_hashes(config, window[None], [cls])``.

    ``src``/``dst`` are IPv4 or IPv6 address strings (same family); ``proto`` a number
    or ``"tcp"``/``"udp"``/``"icmp"``/``"sctp"``.
    """
    a, b = ipaddress.ip_address(src), ipaddress.ip_address(dst)
    if a.version != b.version:
        raise ValueError(f"source {src} and destination {dst} are different IP versions")
    if isinstance(proto, str):
        if proto.lower() not in _PROTOCOLS:
            raise ValueError(f"unknown protocol {proto!r}; give a number or one of "
                             f"{', '.join(_PROTOCOLS)}")
        proto = _PROTOCOLS[proto.lower()]
    if not 0 <= int(proto) <= 255:
        raise ValueError(f"protocol must be 0..255, not {proto}")
    for name, port in (("sport", sport), ("dport", dport)):
        if not 0 <= int(port) <= 0xFFFF:
            raise ValueError(f"{name} must be 0..65535, not {port}")
    w = bytearray(max(window_bytes, 58))
    ports = int(sport).to_bytes(2, "big") + int(dport).to_bytes(2, "big")
    if a.version == 4:
        w[12:14], w[14] = b"\x08\x00", 0x45
        w[23] = int(proto)
        w[26:34] = a.packed + b.packed
        w[34:38] = ports
        cls = FrameClass.IPV4
    else:
        w[12:14], w[14] = b"\x86\xdd", 0x60
        w[20] = int(proto)
        w[22:54] = a.packed + b.packed
        w[54:58] = ports
        cls = FrameClass.IPV6
    if window_bytes < 58 and any(w[window_bytes:]):
        raise ValueError(f"a {window_bytes}-byte window cannot hold this flow key")
    return np.frombuffer(bytes(w[:window_bytes]), dtype=np.uint8).copy(), cls


def _as_table(config: LdsConfig, flow_hashes) -> tuple[np.ndarray, bool]:
    table = np.asarray(flow_hashes, dtype=np.uint64)
    single = table.ndim == 1
    if single:
        table = table[:, None]
    if table.ndim != 2 or table.shape[0] != config.rows:
        raise ValueError(f"flow hashes must be ({config.rows},) or ({config.rows}, F), "
                         f"got {np.shape(flow_hashes)}")
    return table, single


def flow_cells(config: LdsConfig, flow_hashes) -> np.ndarray:
    """Column of each flow's cells: int64 ``(R, F, k)``, ``(base_r + j) mod C``."""
    table, _ = _as_table(config, flow_hashes)
    base = range_reduce32(table, config.cells)
    return (base[:, :, None] + np.arange(config.vlda_cells)) % config.cells


@dataclass
class LdsFlowEstimates:
    """Per-flow LDS estimates (arrays over the F queried flows; scalars-in-arrays of
    length 1 when a single flow was queried).

    Attributes
    ----------
    delay_ns:
        float64 — average delay estimate in ns; NaN when no cell is usable.
    cells_used:
        int64 — cells that entered the estimate (0 … R·k).
    usable_cells:
        int64 — cells whose counts and digests matched (non-empty).
    packets_used:
        int64 — Σ n (raw, possibly weighted counts) of the used cells.
    size:
        float64 — count-min packet count of the flow at the sender (highest-rate rows,
        sampling-corrected, divided by the flow weight when given).
    receiver_size:
        float64 — the same at the receiver.
    loss:
        float64 — count-min of per-row ``sender − receiver`` counts (sampling-corrected).
    """
    delay_ns: np.ndarray
    cells_used: np.ndarray
    usable_cells: np.ndarray
    packets_used: np.ndarray
    size: np.ndarray
    receiver_size: np.ndarray
    loss: np.ndarray

    def __len__(self):
        return len(self.delay_ns)


def estimate_flows(sender: Synopsis, receiver: Synopsis, flow_hashes, *,
                   alpha: float = DEFAULT_ALPHA, weights=None,
                   min_cell_packets: int = 1) -> LdsFlowEstimates:
    """Per-flow delay, size and loss (module docstring) for flows given by their per-row
    flow hashes ``(R,)`` or ``(R, F)``.

    Parameters
    ----------
    sender, receiver:
        The two points' synopses of one interval (same configuration).
    flow_hashes:
        uint64 per-row flow hashes (:func:`flow_row_hashes`, or a trace's
        :meth:`~host_sw.model.traffic.Trace.flow_hashes`).
    alpha:
        Interference tolerance of the cell selection (≥ 0; the paper uses 0.1).
    weights:
        Optional per-flow weights ``(F,)`` used at update time (§4.1); only the size
        estimates need them (delay needs no change).
    min_cell_packets:
        Beyond the paper (default 1 = Fig. 6 exactly): only usable cells with at least
        this many (raw) packets define ``n_min`` when the flow has any; others may still
        be kept. With per-row sampling the inverted count of a sparsely sampled cell is
        noisy, and the plain minimum tends to pick a 1-sample cell of the sparsest row.
    """
    config = sender.config
    check_kind(config, LdsConfig, f"LDS estimators need LDS synopses, not {config.kind}")
    check_comparable(config, receiver.config)
    if not alpha >= 0:
        raise ValueError(f"alpha must be non-negative, not {alpha}")
    if int(min_cell_packets) != min_cell_packets or min_cell_packets < 1:
        raise ValueError(f"min_cell_packets must be a positive integer, not {min_cell_packets}")
    table, _ = _as_table(config, flow_hashes)
    rows = np.arange(config.rows)[:, None, None]
    cols = flow_cells(config, table)
    n_s = sender.count[rows, cols].astype(np.int64)          # (R, F, k)
    n_r = receiver.count[rows, cols].astype(np.int64)
    d_s = sender["digest"][rows, cols]
    d_r = receiver["digest"][rows, cols]
    dts = signed_difference(receiver.ts_sum[rows, cols], sender.ts_sum[rows, cols],
                            config.ts_bits).astype(np.int64)
    scale = (2.0 ** np.asarray(config.row_thresholds, dtype=np.float64))[:, None, None]
    usable = (n_s == n_r) & (d_s == d_r) & (n_s > 0)
    inverted = np.where(usable, n_s * scale, np.inf)
    n_min = inverted.min(axis=(0, 2))                       # (F,)
    if min_cell_packets > 1:
        # the minimum is taken over cells with enough samples, where there are any
        solid = np.where(usable & (n_s >= min_cell_packets), inverted, np.inf).min(axis=(0, 2))
        n_min = np.where(np.isfinite(solid), solid, n_min)
    keep = usable & (inverted <= (1.0 + alpha) * n_min[None, :, None])
    s_sum = np.where(keep, dts, 0).sum(axis=(0, 2))
    n_sum = np.where(keep, n_s, 0).sum(axis=(0, 2))
    with np.errstate(invalid="ignore", divide="ignore"):
        delay = np.where(n_sum > 0, s_sum / np.maximum(n_sum, 1), np.nan) * config.tick_ns
    # count-min over the rows that sample at the highest rate (see module docstring)
    z = np.asarray(config.row_thresholds)
    best = np.flatnonzero(z == z.min())
    row_scale = 2.0 ** float(z.min())
    size = n_s[best].sum(axis=2).min(axis=0) * row_scale
    receiver_size = n_r[best].sum(axis=2).min(axis=0) * row_scale
    loss = (n_s[best] - n_r[best]).sum(axis=2).min(axis=0) * row_scale
    if weights is not None:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != size.shape:
            raise ValueError(f"need one weight per flow ({size.shape[0]}), got {w.shape}")
        size, receiver_size, loss = size / w, receiver_size / w, loss / w
    return LdsFlowEstimates(
        delay_ns=delay, cells_used=keep.sum(axis=(0, 2)).astype(np.int64),
        usable_cells=usable.sum(axis=(0, 2)).astype(np.int64),
        packets_used=n_sum.astype(np.int64), size=size, receiver_size=receiver_size,
        loss=loss)

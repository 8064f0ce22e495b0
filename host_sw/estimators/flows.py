# SPDX-License-Identifier: BSD-2-Clause
"""Per-flow LDS results as the CLI reports them: which flows, their names, their
estimates, and which of those numbers a check backs.

In the host data flow (``docs/DESIGN.md``) this sits between the LDS estimator
(:func:`host_sw.estimators.lds.estimate_flows`, used through its public API only) and
the CLI's per-flow table and files: the flows come from a capture (every flow seen,
named by its 5-tuple) or from a file of flow keys (``ldactl watch`` / ``estimate
--flows FILE``, named as written). A flow whose delay is not backed — no cell where both
points agree on count and digest (every cell collided with another flow or lost a
packet), fewer samples than ``min_samples``, or cells overloaded with other flows'
packets (:func:`foreign_share` above :data:`OVERLOAD_SHARE`) — carries the reason
instead of a number.
"""

from __future__ import annotations

import ipaddress
import math
from dataclasses import dataclass

import numpy as np

from host_sw.contracts.hashing import FrameClass
from host_sw.contracts.synopsis import Synopsis
from host_sw.estimators.lds import estimate_flows, flow_key_window
from host_sw.model.golden_lda_rda_lds import flow_row_hashes

__all__ = ["FlowReport", "flow_report", "flow_labels", "flow_label", "parse_flow_keys",
           "DEFAULT_MIN_FLOW_SAMPLES", "FLOW_SORT_KEYS", "OVERLOAD_SHARE", "cell_load",
           "foreign_share"]

#: Fewer samples (packets in the kept cells) than this back no delay figure.
DEFAULT_MIN_FLOW_SAMPLES = 5

_PROTO_NAMES = {6: "tcp", 17: "udp", 1: "icmp", 132: "sctp", 58: "icmpv6"}
_PORTS = {6, 17, 132}

#: ``--sort`` choices of the per-flow table: what each ranks by.
FLOW_SORT_KEYS = ("packets", "loss", "delay")


def _ipv4_names(windows: np.ndarray) -> list[str]:
    """The 5-tuple names of IPv4 header windows (``(N, >= 38)`` uint8), their fields
    taken for all rows at once: addresses written from their four bytes (what
    ``ipaddress`` prints, without its objects: 10,000 flows took 0.45 s through them)."""
    w = np.asarray(windows, dtype=np.uint8).astype(np.int64)
    ports = ((w[:, [34, 36]] << 8) | w[:, [35, 37]]).tolist()
    out = []
    for proto, q, (sport, dport) in zip(w[:, 23].tolist(), w[:, 26:34].tolist(), ports):
        name = _PROTO_NAMES.get(proto) or str(proto)
        a, b = f"{q[0]}.{q[1]}.{q[2]}.{q[3]}", f"{q[4]}.{q[5]}.{q[6]}.{q[7]}"
        out.append(f"{name} {a}:{sport} > {b}:{dport}" if proto in _PORTS
                   else f"{name} {a} > {b}")
    return out


def flow_label(window: np.ndarray, frame_class: int) -> str:
    """A flow's 5-tuple from one of its header windows: ``tcp 10.0.0.1:80 >
    10.0.0.2:4242`` (IPv6 addresses in brackets, in ``ipaddress``'s shortened form)."""
    w = bytes(np.asarray(window, dtype=np.uint8))
    if frame_class == FrameClass.IPV4 and len(w) >= 38:
        return _ipv4_names(np.frombuffer(w, np.uint8)[None])[0]
    if not (frame_class == FrameClass.IPV6 and len(w) >= 58):
        return ""
    proto, ports = w[20], w[54:58]
    a, b = ipaddress.ip_address(w[22:38]), ipaddress.ip_address(w[38:54])
    name = _PROTO_NAMES.get(proto, str(proto))
    if proto not in _PORTS:
        return f"{name} {a} > {b}"
    sport, dport = int.from_bytes(ports[:2], "big"), int.from_bytes(ports[2:], "big")
    return f"{name} [{a}]:{sport} > [{b}]:{dport}"


def flow_labels(flows) -> list[str]:
    """Names of the flows of a :class:`~host_sw.estimators.offline_stream.FlowTable`:
    the 5-tuple where the window holds it, else the flow hash of row 0. The IPv4 flows
    are named all at once (:func:`_ipv4_names`: 10,000 flows in about 10 ms, against 20
    one at a time), the others by :func:`flow_label`."""
    windows = np.asarray(flows.windows, dtype=np.uint8)
    classes = np.asarray(flows.classes, dtype=np.int64).reshape(-1)
    heads = np.asarray(flows.hashes, dtype=np.uint64).reshape(len(classes), -1)[:, 0]
    out = [""] * len(classes)
    v4 = np.zeros(len(classes), bool)
    if windows.ndim == 2 and windows.shape[1] >= 38:
        v4 = classes == int(FrameClass.IPV4)
        for i, name in zip(np.flatnonzero(v4).tolist(), _ipv4_names(windows[v4])):
            out[i] = name
    for i in np.flatnonzero(~v4).tolist():
        out[i] = flow_label(windows[i], int(classes[i]))
    return [name or f"hash {int(h):#010x}" for name, h in zip(out, heads.tolist())]


def parse_flow_keys(text: str, config, where: str = "flows") -> tuple[np.ndarray, list]:
    """Per-row flow hashes ``(R, F)`` and names of the flows in a flow-keys file: one
    flow a line, ``PROTO SRC SPORT DST DPORT`` (``tcp 10.0.0.1 80 10.0.0.2 4242``;
    ``#`` starts a comment). Raises ``ValueError`` naming the line."""
    windows, classes, names = [], [], []
    for k, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        if len(parts) != 5:
            raise ValueError(f"{where}:{k}: expected PROTO SRC SPORT DST DPORT, "
                             f"not {line!r}")
        proto, src, sport, dst, dport = parts
        try:
            proto_v = int(proto) if proto.isdigit() else proto
            w, cls = flow_key_window(src=src, dst=dst, proto=proto_v, sport=int(sport),
                                     dport=int(dport), window_bytes=config.window_bytes)
        except ValueError as e:
            raise ValueError(f"{where}:{k}: {e}") from None
        windows.append(w)
        classes.append(int(cls))
        names.append(flow_label(w, cls) or line)
    if not windows:
        raise ValueError(f"{where}: no flow key in the file")
    table = flow_row_hashes(config, np.stack(windows), np.array(classes))
    return table, names


@dataclass
class FlowReport:
    """Per-flow results of one interval (arrays over F flows; ``delay_ns`` is NaN
    where ``reason`` says why no figure is backed)."""
    labels: list
    delay_ns: np.ndarray
    samples: np.ndarray
    cells_used: np.ndarray
    packets: np.ndarray
    received: np.ndarray
    loss: np.ndarray
    reason: list
    true_packets: np.ndarray | None = None
    true_mean: np.ndarray | None = None
    true_lost: np.ndarray | None = None

    def __len__(self):
        return len(self.labels)

    def order(self, sort: str = "packets", top: int | None = None) -> np.ndarray:
        """Flow indices ranked by ``sort`` (largest first; unbacked delays last)."""
        if sort not in FLOW_SORT_KEYS:
            raise ValueError(f"sort must be one of {FLOW_SORT_KEYS}, not {sort!r}")
        key = {"packets": self.packets, "loss": self.loss,
               "delay": np.where(np.isnan(self.delay_ns), -np.inf, self.delay_ns)}[sort]
        order = np.lexsort((np.arange(len(self)), -key))
        return order if top is None else order[:top]

    def row(self, i: int) -> dict:
        """One flow's JSON object (``delay_ns`` null and ``unbacked`` set when no check
        backs it)."""
        d = float(self.delay_ns[i])
        out = {"flow": self.labels[i], "packets": float(self.packets[i]),
               "received": float(self.received[i]), "lost": float(self.loss[i]),
               "delay_ns": None if math.isnan(d) else d, "samples": int(self.samples[i]),
               "cells": int(self.cells_used[i])}
        if self.reason[i]:
            out["unbacked"] = self.reason[i]
        if self.true_packets is not None:
            tm = float(self.true_mean[i])
            out["true"] = {"packets": int(self.true_packets[i]),
                           "mean": None if math.isnan(tm) else tm,
                           "lost": int(self.true_lost[i])}
        return out


#: A flow whose cells hold more than this share of other flows' packets (on average) is
#: not backed: its figure is a mixture (the LDS paper's interference tolerance α).
OVERLOAD_SHARE = 0.1


def cell_load(sender: Synopsis) -> float:
    """Mean packets per cell (raw counts) of the sender's densest-sampling rows."""
    z = np.asarray(sender.config.row_thresholds)
    rows = np.flatnonzero(z == z.min())
    return float(np.asarray(sender.count[rows], dtype=np.float64).mean())


def _expected_min_load(sender: Synopsis) -> float:
    """``E[min of R cells' counts]`` over the densest-sampling rows (``R`` of them), from
    the rows' own cell counts: ``Σ_k P(X ≥ k)^R``."""
    z = np.asarray(sender.config.row_thresholds)
    rows = np.flatnonzero(z == z.min())
    counts = np.sort(np.asarray(sender.count[rows], dtype=np.float64).ravel())
    values, first = np.unique(counts, return_index=True)
    survival = 1.0 - first / counts.size          # P(X >= values[i])
    steps = np.diff(np.r_[0.0, values])
    return float(np.sum(steps * survival ** rows.size))


def foreign_share(sender: Synopsis, e) -> np.ndarray:
    """Per flow, the expected share of other flows' packets in the cells its estimate
    used: the expected load of the least loaded of its cells over the flow's mean count
    per used cell.

    The estimate keeps a flow's smallest cells (Fig. 6), where the other flows' load is
    about the minimum of ``R`` cells drawn from the sketch's cell counts (one per row,
    :func:`_expected_min_load`); a used cell holds ``n̄ = packets_used/cells_used``, so
    about ``min load/n̄`` of its packets are not the flow's and the delay is a mixture.
    At 146 k flows on the default sketch that is most flows (issue 26: 500–999-packet
    flows 42 % off, all "backed")."""
    load = _expected_min_load(sender)
    with np.errstate(invalid="ignore", divide="ignore"):
        per_cell = np.asarray(e.packets_used, np.float64) / np.asarray(e.cells_used,
                                                                       np.float64)
        share = np.where(per_cell > 0, load / per_cell, np.inf)
    return np.minimum(share, 1.0)


def flow_report(sender: Synopsis, receiver: Synopsis, table: np.ndarray, labels: list,
                *, truth: dict | None = None,
                min_samples: int = DEFAULT_MIN_FLOW_SAMPLES) -> FlowReport:
    """Per-flow estimates of the flows ``table`` (``(R, F)`` row hashes) named
    ``labels``; ``truth`` (``packets``, ``delay_sum``, ``lost`` arrays) where known."""
    if table.shape[1] == 0:
        empty = np.zeros(0)
        return FlowReport([], empty, empty.astype(np.int64), empty.astype(np.int64),
                          empty, empty, empty, [])
    e = estimate_flows(sender, receiver, table)
    delay = np.asarray(e.delay_ns, dtype=np.float64).copy()
    foreign = foreign_share(sender, e)
    reason = []
    load = None                       # cell_load(sender), computed once when needed
    for i in range(len(labels)):
        if e.usable_cells[i] == 0:
            reason.append("no packets" if e.size[i] == 0 and e.receiver_size[i] == 0
                          else "no usable cell (every cell collided or lost packets)")
        elif e.packets_used[i] < min_samples:
            reason.append(f"too few samples ({int(e.packets_used[i])} < {min_samples})")
        elif foreign[i] > OVERLOAD_SHARE:
            load = cell_load(sender) if load is None else load
            reason.append(f"overloaded: about {foreign[i]:.0%} of the packets in its cells "
                          f"are other flows' (the sketch holds {load:.3g} "
                          f"packets per cell on average); more cells (--cells) back it")
        else:
            reason.append("")
    delay[[bool(r) for r in reason]] = np.nan
    report = FlowReport(list(labels), delay, np.asarray(e.packets_used),
                        np.asarray(e.cells_used), np.asarray(e.size, np.float64),
                        np.asarray(e.receiver_size, np.float64),
                        np.asarray(e.loss, np.float64), reason)
    if truth is not None:
        n = len(labels)
        pk = np.zeros(n, np.int64)
        pk[:len(truth["packets"])] = truth["packets"][:n]
        ds = np.zeros(n, np.int64)
        ds[:len(truth["delay_sum"])] = truth["delay_sum"][:n]
        lost = np.zeros(n, np.int64)
        lost[:len(truth["lost"])] = truth["lost"][:n]
        with np.errstate(invalid="ignore", divide="ignore"):
            report.true_packets, report.true_lost = pk, lost
            report.true_mean = np.where(pk > 0, ds / np.maximum(pk, 1), np.nan)
    return report

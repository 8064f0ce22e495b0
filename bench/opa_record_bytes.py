# SPDX-License-Identifier: BSD-2-Clause
"""Bytes per packet of OPA's record export (docs/SPEC.md §8.7) beside the host's Rice
timestamp layer (§8.4) and the paper's figure, on the OPA benches' workload
(``bench/opa_common.py``: Poisson send times at 5 Mpps, loss 1e-4).

Measured as the paper's §VI.B counts its overhead: the bytes of the record frames the
contract builds (:func:`host_sw.contracts.opa.records.build_record_frames`, the frames
the gateware sends byte for byte, as captured, without FCS) per packet the sender sent,
and the frames per packet (the paper: 269 frames of MTU 1500 for 10^6 packets,
2.7·10^−4). For each point also the bytes on the wire (+ 24 per frame: preamble, FCS,
inter-frame gap); for the sender the Rice block of the same timestamps (host to host).
Sampling (``--record-groups``) records a fraction of the groups: the bytes per packet of
the whole traffic shrink by it.

Usage::

    .venv/bin/python -m bench.opa_record_bytes [--packets 1000000] [--groups 1024]
        [--record-groups 0] [--mtu 1500] [--json]

``--json`` prints one JSON object (:func:`summary`) instead of the table.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from host_sw.contracts.config import OpaConfig
from host_sw.contracts.opa.records import build_record_frames
from host_sw.model.golden_opa import sender_timestamp_block

from bench.opa_common import make_workload

#: Ethernet bytes of a frame on the wire besides the captured frame (preamble and SFD 8,
#: FCS 4, inter-frame gap 12).
WIRE_EXTRA = 24
#: The paper's §VI.B: 403 600 bytes in 269 frames of MTU 1500 for 10^6 packets.
PAPER = {"bytes_per_packet": 0.4036, "frames_per_packet": 269e-6}


def record_frames(packets: int, groups: int, record_groups: int, mtu: int,
                  seed: int = 1) -> dict:
    """The contract's record frames of one interval of the workload: ``{"sender": …,
    "receiver": …}`` lists of frames, ``"sent"`` the packets sent and ``"block"`` the
    sender's Rice block (lossless) of the same timestamps."""
    config = OpaConfig(groups=groups)
    w = make_workload(packets=packets, seed=seed)
    # the receiver records in arrival-time order (the workload keeps the sending order)
    order = np.argsort(w.received.timestamps, kind="stable")
    arrived = (w.received.packet[order], w.received.timestamps[order])
    out = {"sent": len(w.sent.packet), "block": sender_timestamp_block(config, w.sent)}
    for point, (packet, ts) in (("sender", (w.sent.packet, w.sent.timestamps)),
                                ("receiver", arrived)):
        out[point] = build_record_frames(config, point, seq=1, packet=packet,
                                         timestamps=ts, src_mac=1, dst_mac=2,
                                         record_groups=record_groups, mtu=mtu)
    return out


def summary(frames: dict, *, packets: int, groups: int, record_groups: int,
            mtu: int) -> dict:
    """The JSON figures of :func:`record_frames`' frames, per packet sent. The record
    frames have one sender format today (no lossy mode in the device): the lossy figures
    are the lossless ones, and ``sender_lossy_mode`` says so."""
    sent = frames["sent"]

    def size(point):
        return sum(len(f) for f in frames[point])
    out = {
        "packets": sent, "groups": groups, "record_groups": record_groups or groups,
        "mtu": mtu,
        "sender_bytes_per_packet": size("sender") / sent,
        "sender_frames_per_packet_lossless": len(frames["sender"]) / sent,
        "sender_lossy_mode": False,
        "sender_bytes_per_packet_lossy": size("sender") / sent,
        "sender_frames_per_packet": len(frames["sender"]) / sent,
        "receiver_bytes_per_packet": size("receiver") / sent,
        "receiver_frames_per_packet": len(frames["receiver"]) / sent,
        "sender_wire_bytes_per_packet": (size("sender") + WIRE_EXTRA * len(frames["sender"]))
        / sent,
        "receiver_wire_bytes_per_packet": (size("receiver")
                                           + WIRE_EXTRA * len(frames["receiver"])) / sent,
        "sender_rice_block_bytes_per_packet": len(frames["block"]) / sent,
        "paper_bytes_per_packet": PAPER["bytes_per_packet"],
        "paper_frames_per_packet": PAPER["frames_per_packet"],
    }
    return out


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--packets", type=int, default=1_000_000)
    p.add_argument("--groups", type=int, default=1024)
    p.add_argument("--record-groups", type=int, default=0)
    p.add_argument("--mtu", type=int, default=1500)
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    frames = record_frames(args.packets, args.groups, args.record_groups, args.mtu)
    s = summary(frames, packets=args.packets, groups=args.groups,
                record_groups=args.record_groups, mtu=args.mtu)
    if args.json:
        print(json.dumps(s, sort_keys=True))
        return
    print(f"{args.packets} packets, g = {args.groups}, record_groups = "
          f"{s['record_groups']}, MTU {args.mtu}")
    print(f"{'':45s} {'frames':>7s} {'B/packet':>9s} {'on wire':>8s}")
    for point in ("sender", "receiver"):
        print(f"{point + ' record frames':45s} {len(frames[point]):7d} "
              f"{s[point + '_bytes_per_packet']:9.3f} "
              f"{s[point + '_wire_bytes_per_packet']:8.3f}")
    print(f"{'sender Rice block (host to host, lossless)':45s} {1:7d} "
          f"{s['sender_rice_block_bytes_per_packet']:9.3f}")
    print(f"paper (wavelet, 4-byte timestamps at 1/10, lossy): {PAPER['bytes_per_packet']} "
          f"B/packet, {PAPER['frames_per_packet']:.1e} frames/packet")


if __name__ == "__main__":
    main()

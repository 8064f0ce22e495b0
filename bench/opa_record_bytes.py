# SPDX-License-Identifier: BSD-2-Clause
"""Bytes per packet of OPA's record export (docs/SPEC.md §8.7) beside the host's Rice
timestamp layer (§8.4) and the paper's figure, on the OPA benches' workload
(``bench/opa_common.py``: Poisson send times at 5 Mpps, loss 1e-4).

Measured as the paper's §VI.B counts its overhead: the bytes of the record frames the
contract builds (:func:`host_sw.contracts.opa.records.build_record_frames`, the frames
the gateware sends byte for byte, as captured, without FCS) per packet the sender sent,
and the frames per packet (the paper: 269 frames of MTU 1500 for 10^6 packets,
2.7·10^−4). The sender's records are measured Rice-coded, lossless and lossy (``--shift``, default
the contract's ``DEFAULT_LOSSY_SHIFT``), and fixed-width; the receiver's Rice-coded (the
whole packet hash and the arrival difference, lossless) and fixed-width.
For each point also the bytes on the wire (+ 24 per frame: preamble, FCS,
inter-frame gap); for the sender the Rice block of the same timestamps (host to host).
Sampling (``--record-groups``) records a fraction of the groups: the bytes per packet of
the whole traffic shrink by it.

Usage::

    .venv/bin/python -m bench.opa_record_bytes [--packets 1000000] [--groups 1024]
        [--record-groups 0] [--mtu 1500] [--shift 16] [--json]

``--json`` prints one JSON object (:func:`summary`) instead of the table.
"""

from __future__ import annotations

import argparse
import json

import numpy as np

from host_sw.contracts.config import OpaConfig
from host_sw.contracts.opa.records import (DEFAULT_LOSSY_SHIFT, build_record_frames,
                                           lossy_error_bound)
from host_sw.model.golden_opa import sender_timestamp_block

from bench.opa_common import make_workload

#: Ethernet bytes of a frame on the wire besides the captured frame (preamble and SFD 8,
#: FCS 4, inter-frame gap 12).
WIRE_EXTRA = 24
#: The paper's §VI.B: 403 600 bytes in 269 frames of MTU 1500 for 10^6 packets.
PAPER = {"bytes_per_packet": 0.4036, "frames_per_packet": 269e-6}


def record_frames(packets: int, groups: int, record_groups: int, mtu: int,
                  seed: int = 1, shift: int = DEFAULT_LOSSY_SHIFT) -> dict:
    """The contract's record frames of one interval of the workload: lists of frames
    ``"sender"`` (Rice-coded, lossless), ``"sender_lossy"`` (coded at ``shift``),
    ``"sender_fixed"`` (fixed-width), ``"receiver"`` (Rice-coded) and
    ``"receiver_fixed"`` (fixed-width); ``"sent"`` the packets sent and
    ``"block"`` the sender's Rice block (lossless, host to host) of the same
    timestamps."""
    config = OpaConfig(groups=groups)
    w = make_workload(packets=packets, seed=seed)
    # the receiver records in arrival-time order (the workload keeps the sending order)
    order = np.argsort(w.received.timestamps, kind="stable")
    arrived = (w.received.packet[order], w.received.timestamps[order])
    out = {"sent": len(w.sent.packet), "block": sender_timestamp_block(config, w.sent)}
    sent = (w.sent.packet, w.sent.timestamps)
    for name, point, (packet, ts), coding in (
            ("sender", "sender", sent, {"rice": True}),
            ("sender_lossy", "sender", sent, {"rice": True, "shift": shift}),
            ("sender_fixed", "sender", sent, {}),
            ("receiver", "receiver", arrived, {"rice": True}),
            ("receiver_fixed", "receiver", arrived, {})):
        out[name] = build_record_frames(config, point, seq=1, packet=packet,
                                        timestamps=ts, src_mac=1, dst_mac=2,
                                        record_groups=record_groups, mtu=mtu, **coding)
    return out


def summary(frames: dict, *, packets: int, groups: int, record_groups: int,
            mtu: int, shift: int = DEFAULT_LOSSY_SHIFT) -> dict:
    """The JSON figures of :func:`record_frames`' frames, per packet sent:
    ``sender_*`` the Rice-coded sender records (lossless; ``_lossy`` at ``shift``,
    every send tick within ``sender_lossy_bound_ticks``; ``sender_frames_per_packet``
    is the lossy one's, as the paper's), ``sender_fixed_*`` the fixed-width ones;
    ``receiver_*`` the Rice-coded receiver records, ``receiver_fixed_*`` the
    fixed-width ones."""
    sent = frames["sent"]

    def size(point):
        return sum(len(f) for f in frames[point])
    out = {
        "packets": sent, "groups": groups, "record_groups": record_groups or groups,
        "mtu": mtu,
        "sender_bytes_per_packet": size("sender") / sent,
        "sender_frames_per_packet_lossless": len(frames["sender"]) / sent,
        "sender_lossy_shift": shift,
        "sender_lossy_bound_ticks": lossy_error_bound(shift),
        "sender_bytes_per_packet_lossy": size("sender_lossy") / sent,
        "sender_frames_per_packet": len(frames["sender_lossy"]) / sent,
        "sender_fixed_bytes_per_packet": size("sender_fixed") / sent,
        "receiver_bytes_per_packet": size("receiver") / sent,
        "receiver_frames_per_packet": len(frames["receiver"]) / sent,
        "receiver_fixed_bytes_per_packet": size("receiver_fixed") / sent,
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
    p.add_argument("--shift", type=int, default=DEFAULT_LOSSY_SHIFT,
                   help="the lossy sender records' shift (default %(default)s)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    args = p.parse_args(argv)
    frames = record_frames(args.packets, args.groups, args.record_groups, args.mtu,
                           shift=args.shift)
    s = summary(frames, packets=args.packets, groups=args.groups,
                record_groups=args.record_groups, mtu=args.mtu, shift=args.shift)
    if args.json:
        print(json.dumps(s, sort_keys=True))
        return
    print(f"{args.packets} packets, g = {args.groups}, record_groups = "
          f"{s['record_groups']}, MTU {args.mtu}")
    print(f"{'':45s} {'frames':>7s} {'B/packet':>9s} {'on wire':>8s}")
    for name, text in (("sender", "sender record frames, Rice lossless"),
                       ("sender_lossy", f"sender, Rice lossy (shift {args.shift})"),
                       ("sender_fixed", "sender, fixed-width"),
                       ("receiver", "receiver, Rice lossless (whole hash)"),
                       ("receiver_fixed", "receiver, fixed-width")):
        size = sum(map(len, frames[name]))
        print(f"{text:45s} {len(frames[name]):7d} {size / s['packets']:9.3f} "
              f"{(size + WIRE_EXTRA * len(frames[name])) / s['packets']:8.3f}")
    print(f"{'sender Rice block (host to host, lossless)':45s} {1:7d} "
          f"{s['sender_rice_block_bytes_per_packet']:9.3f}")
    print(f"paper (wavelet, 4-byte timestamps at 1/10, lossy): {PAPER['bytes_per_packet']} "
          f"B/packet, {PAPER['frames_per_packet']:.1e} frames/packet")


if __name__ == "__main__":
    main()

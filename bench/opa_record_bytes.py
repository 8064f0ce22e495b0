# SPDX-License-Identifier: BSD-2-Clause
"""Bytes per packet of OPA's record export (docs/SPEC.md §8.7) beside the host's Rice
timestamp layer (§8.4) and the paper's figure, on the OPA benches' workload
(``bench/opa_common.py``: Poisson send times at 5 Mpps, loss 1e-4).

For each point: the record frames' bytes (as captured, without FCS) per recorded packet,
and on the wire (+ 24 bytes per frame: preamble, FCS, inter-frame gap); for the sender,
the Rice block of the same timestamps (lossless). Sampling (``--record-groups``) records
a fraction of the groups: the bytes per packet of the whole traffic shrink by it.

Usage::

    .venv/bin/python -m bench.opa_record_bytes [--packets 1000000] [--groups 1024]
        [--record-groups 0] [--mtu 1500]
"""

from __future__ import annotations

import argparse

import numpy as np

from host_sw.contracts.config import OpaConfig
from host_sw.contracts.opa.records import build_record_frames
from host_sw.model.golden_opa import sender_timestamp_block

from bench.opa_common import make_workload

#: Ethernet bytes of a frame on the wire besides the captured frame (preamble and SFD 8,
#: FCS 4, inter-frame gap 12).
WIRE_EXTRA = 24


def measure(packets: int, groups: int, record_groups: int, mtu: int, seed: int = 1) -> list:
    config = OpaConfig(groups=groups)
    w = make_workload(packets=packets, seed=seed)
    rows = []
    # the receiver records in arrival-time order (the workload keeps the sending order)
    order = np.argsort(w.received.timestamps, kind="stable")
    arrived = (w.received.packet[order], w.received.timestamps[order])
    for point, (packet, ts) in (("sender", (w.sent.packet, w.sent.timestamps)),
                                ("receiver", arrived)):
        frames = build_record_frames(config, point, seq=1, packet=packet,
                                     timestamps=ts, src_mac=1, dst_mac=2,
                                     record_groups=record_groups, mtu=mtu)
        size = sum(len(f) for f in frames)
        rows.append((f"{point} record frames", len(frames), size / len(ts),
                     (size + WIRE_EXTRA * len(frames)) / len(ts)))
    block = sender_timestamp_block(config, w.sent)
    rows.append(("sender Rice block (host to host, lossless)", 1, len(block) / packets, None))
    return rows


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--packets", type=int, default=1_000_000)
    p.add_argument("--groups", type=int, default=1024)
    p.add_argument("--record-groups", type=int, default=0)
    p.add_argument("--mtu", type=int, default=1500)
    args = p.parse_args(argv)
    print(f"{args.packets} packets, g = {args.groups}, record_groups = "
          f"{args.record_groups or args.groups}, MTU {args.mtu}")
    print(f"{'':45s} {'frames':>7s} {'B/packet':>9s} {'on wire':>8s}")
    for name, frames, per, wire in measure(args.packets, args.groups, args.record_groups,
                                           args.mtu):
        print(f"{name:45s} {frames:7d} {per:9.3f} "
              f"{'' if wire is None else f'{wire:8.3f}'}")
    print("paper (wavelet, 4-byte timestamps at 1/10, lossy): about 0.4 B/packet")


if __name__ == "__main__":
    main()

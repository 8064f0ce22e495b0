# SPDX-License-Identifier: BSD-2-Clause
"""A sender's and a receiver's capture of RLI traffic on the queueing channel, for
``ldactl estimate --synopsis rli`` (docs/CLI.md, estimate; docs/ACCURACY.md, RLI).

Writes into DIR four Ethernet pcap files (ns timestamps from a Unix epoch time, as a real
capture has them): ``s.pcap``/``r.pcap`` hold the traffic with the sender's reference
frames (type 3, zero-key tag; one after every ``--ref-packets`` data packets, sent in
the gap after it as the golden model schedules them), ``s0.pcap``/``r0.pcap`` the same
data packets without the reference frames (for ``--ref-packets``: the rule designates
sender packets). Delays and drops come from the queue (``--utilisation``, RED), so the
captures hold each packet's true delay.

Usage::

    .venv/bin/python -m bench.rli_capture_pair DIR --packets 300000
    .venv/bin/ldactl estimate DIR/s.pcap DIR/r.pcap --synopsis rli --flows-out flows.csv
    .venv/bin/ldactl estimate DIR/s0.pcap DIR/r0.pcap --synopsis rli --ref-packets 100
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from host_sw.contracts.config import RliConfig
from host_sw.contracts.frames.reference_frame import build_reference
from host_sw.model.channel import Scenario
from host_sw.model.pcap import write_pcap
from host_sw.model.golden_rli import with_references

#: The captures' clock: ns since the epoch (2025-11-24), as a capturing host writes it.
EPOCH_NS = 1_764_000_000 * 10 ** 9
_MACS = {"src_mac": "02:00:00:00:00:01", "dst_mac": "02:00:00:00:00:02"}


def write_pair(out: Path, *, packets: int, flows: int, utilisation: float,
               ref_packets: int, seed: int) -> None:
    """The four captures (module docstring) into ``out``."""
    config = RliConfig(ref_packets=ref_packets)
    sc = Scenario(packets=packets, flows=flows, queue=f"red:utilisation={utilisation}",
                  delay="constant:value=0", loss=0.0, seed=seed)
    trace, is_ref = with_references(sc.trace(), config)
    iv = sc.run(trace=trace).intervals[0]
    seq = np.cumsum(is_ref) - 1

    def frames(rows):
        data = trace.frames(rows)
        return [build_reference(config, seq=int(seq[i]), timestamp=int(trace.timestamps[i]),
                                **_MACS) if is_ref[i] else data[k]
                for k, i in enumerate(rows.tolist())]

    r_rows, r_ts = iv.receiver.indices, iv.receiver.timestamps
    write_pcap(out / "s.pcap", frames(np.arange(len(trace))), trace.timestamps + EPOCH_NS)
    write_pcap(out / "r.pcap", frames(r_rows), r_ts + EPOCH_NS)
    data = np.flatnonzero(~is_ref)
    write_pcap(out / "s0.pcap", trace.frames(data), trace.timestamps[data] + EPOCH_NS)
    keep = ~is_ref[r_rows]
    write_pcap(out / "r0.pcap", trace.frames(r_rows[keep]), r_ts[keep] + EPOCH_NS)


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("out", type=Path)
    p.add_argument("--packets", type=int, default=300_000)
    p.add_argument("--flows", type=int, default=1000)
    p.add_argument("--utilisation", type=float, default=0.88)
    p.add_argument("--ref-packets", type=int, default=100)
    p.add_argument("--seed", type=int, default=4)
    a = p.parse_args(argv)
    a.out.mkdir(parents=True, exist_ok=True)
    write_pair(a.out, packets=a.packets, flows=a.flows, utilisation=a.utilisation,
               ref_packets=a.ref_packets, seed=a.seed)


if __name__ == "__main__":
    main()

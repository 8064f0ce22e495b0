# SPDX-License-Identifier: BSD-2-Clause
"""How long the host takes to read one interval over a board's UART: the bytes on the
wire of ``ldactl read`` (connect, swap, wait for the frozen copy, read it consistently,
release), counted on an in-memory device, and the time they take at a baud rate.

Where it sits: a benchmark of the host ↔ board link (``docs/HARDWARE.md``, "Reading
the synopsis over the UART"). The counting is exact (every UARTBone byte both ways);
the time is bytes × 10 bits / baud (8N1, no gaps: the FT2232H and CH340 bridges and
the boards' UART keep up back to back), a lower bound that ignores USB latency.

    python -m bench.uart_readout [--synopsis lda|rda|lds] [--baud 115200 3000000 ...]
"""

from __future__ import annotations

import argparse
import json
import sys

from host_sw.device.driver import Device
from host_sw.device.transport import open_transport

#: 115 200 (the tops' default) and what the boards' USB-serial bridges carry: the
#: FT2232H (Versa, ECPIX-5) up to 12 Mbaud; the CH340 class adapters used on the
#: Colorlight 5A-75B up to 2 Mbaud.
DEFAULT_BAUDS = (115_200, 2_000_000, 3_000_000, 12_000_000)


def count_read_bytes(synopsis: str = "lda") -> dict:
    """Bytes sent and received while a default ``synopsis`` device is connected, swapped
    and its frozen interval read and released."""
    transport = open_transport(f"fake://?synopsis={synopsis}")
    counts = {"sent": 0, "received": 0}
    send, receive = transport._send, transport._receive_some

    def counting_send(data):
        counts["sent"] += len(data)
        return send(data)

    def counting_receive(deadline):
        data = receive(deadline)
        counts["received"] += len(data)
        return data

    transport._send, transport._receive_some = counting_send, counting_receive
    device = Device(transport)
    connect = dict(counts)
    device.swap()
    snap = device.read_snapshot()
    words = int(sum(v.size for v in snap.synopsis.fields.values()))
    return {"synopsis": synopsis, "config": device.config.to_dict(),
            "connect_bytes": connect["sent"] + connect["received"],
            "sent": counts["sent"], "received": counts["received"],
            "total": counts["sent"] + counts["received"], "counter_values": words}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--synopsis", choices=("lda", "rda", "lds"), default="lda")
    ap.add_argument("--baud", type=int, nargs="+", default=list(DEFAULT_BAUDS))
    args = ap.parse_args(argv)
    out = count_read_bytes(args.synopsis)
    out["seconds"] = {str(b): round(out["total"] * 10 / b, 3) for b in args.baud}
    print(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())

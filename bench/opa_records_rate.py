# SPDX-License-Identifier: BSD-2-Clause
"""Sustained rate of OPA's record streamer (:class:`hw.opa.records.OpaRecordStreamer`)
on Amaranth's simulator: clocks per record with back-to-back packets, a FIFO deep
enough to drop none and an output always ready — the packet rate above which the device
drops records (and counts them) unless it samples groups.

Usage::

    .venv/bin/python -m bench.opa_records_rate [--point receiver] [--records 1500] [--gap 1]

Cases: the sender fixed-width, Rice lossless, Rice lossy (shift 16); the receiver
fixed-width and Rice (lossless: the whole hash, then the arrival difference).
"""

from __future__ import annotations

import argparse

import numpy as np

from host_sw.contracts.config import OpaConfig
from hw.opa.records import OpaRecordStreamer
from sim_tb.lib.amaranth_streams import Sink, simulate


def measure(point: str, records: int, data_width: int = 64, rice: bool = False,
            shift: int = 0, gap: int = 1) -> dict:
    """Clocks per record for ``records`` back-to-back packets ``gap`` ticks apart (the
    records Rice-coded with ``rice``, the sender's at ``shift``)."""
    dut = OpaRecordStreamer(config=OpaConfig(), point=point, data_width=data_width,
                            depth=records + 8)
    out = Sink(dut.source, data_width, np.random.default_rng(1))
    res = {}
    frames = None if rice else -(-records // dut.per_frame)

    async def main(ctx):
        ctx.set(dut.src_mac, 1)
        ctx.set(dut.dst_mac, 2)
        ctx.set(dut.rice, int(rice))
        if point == "sender":
            ctx.set(dut.shift, shift)
        for i in range(records):
            ctx.set(dut.valid, 1)
            ctx.set(dut.packet_hash, (i * 0x9E3779B97F4A7C15) & ((1 << 64) - 1))
            ctx.set(dut.timestamp, 1000 + gap * i)
            await ctx.tick()
        ctx.set(dut.valid, 0)
        ctx.set(dut.boundary, 1)
        ctx.set(dut.next_seq, 1)
        await ctx.tick()
        ctx.set(dut.boundary, 0)
        for c in range(100 * records):
            await ctx.tick()
            if c % 500 == 0 and (out.frames() and out.frames()[-1][16] & 1
                                 if frames is None else len(out.frames()) >= frames):
                break
        res.update(last_beat=out.beats[-1][0], dropped=ctx.get(dut.dropped))

    simulate(dut, main, out.run)
    return {"point": point, "rice": rice, "shift": shift, "gap": gap, "records": records,
            "frames": len(out.frames()),
            "dropped": res["dropped"], "clocks_per_record": res["last_beat"] / records}


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--point", choices=("sender", "receiver"), default=None)
    p.add_argument("--records", type=int, default=1500)
    p.add_argument("--gap", type=int, default=1, help="ticks between packets")
    args = p.parse_args(argv)
    cases = [("sender", False, 0), ("sender", True, 0), ("sender", True, 16),
             ("receiver", False, 0), ("receiver", True, 0)]
    for point, rice, shift in cases:
        if args.point and point != args.point:
            continue
        r = measure(point, args.records, rice=rice, shift=shift, gap=args.gap)
        name = point + (f", Rice shift {shift}" if rice else ", fixed")
        print(f"{name}: {r['records']} records in {r['frames']} frames, "
              f"{r['clocks_per_record']:.2f} clocks per record, {r['dropped']} dropped")


if __name__ == "__main__":
    main()

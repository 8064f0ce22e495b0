# SPDX-License-Identifier: BSD-2-Clause
"""Speed of ``ldactl watch --records`` on two OPA devices: the host's whole work per
interval — the capture of both points' record frames parsed as a stream, every frame's
tag checked and reassembled, the words of both (fake) devices read, the checks and the
recovery of :func:`host_sw.estimators.opa.export.interval_record`, the row and the
per-packet delay file (CSV) — in packets per second of measured traffic, without and
with ``--delays-out``.

Workload: :func:`bench.opa_common.make_workload` (Weibull delays, uniform loss), one
workload per interval; the sender's and receiver's record frames of every interval
built by :func:`host_sw.contracts.opa.records.build_record_frames` into one pcap (the
frames a tap after the receiver sees). Every delay ``watch`` writes is checked against
the truth. Timed by the wall clock and the process's CPU time.

Writes ``bench/out/watch_opa_records.json``.

Usage::

    .venv/bin/python -m bench.watch_opa_records [--packets 200000] [--intervals 3]
                                                [--loss 1e-4] [--groups 1024]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import platform
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.opa_common import make_workload
from host_sw.cli.main import main
from host_sw.contracts.config import OpaConfig
from host_sw.contracts.opa.records import build_record_frames
from host_sw.device.fake_device import FakeDevice
from host_sw.device.fake_transport import register_fake_device
from host_sw.model.golden_opa import opa_synopsis
from host_sw.model.pcap import write_pcap

OUT = Path(__file__).parent / "out" / "watch_opa_records.json"


class _Intervals(FakeDevice):
    """A fake device whose intervals hold the given words, in order."""

    def __init__(self, config, synopses):
        super().__init__(config)
        self.queue = list(synopses)
        self.set("config_id", config.config_id)

    def swap(self, timestamp=None):
        if self.frozen is None and self.queue:
            self.set_active(self.queue.pop(0))
        super().swap(timestamp)


def _watch(cap: Path, intervals: int, extra: list) -> tuple[list, tuple]:
    """``ldactl watch --records cap`` on the registered fake devices: its JSON rows and
    (wall, CPU) seconds."""
    out = io.StringIO()
    wall, cpu = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(out):
        code = main(["watch", "--sender", "fake://bench_s", "--receiver", "fake://bench_r",
                     "--swap", "--period", "0", "--intervals", str(intervals), "--json",
                     "--records", str(cap), *extra])
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    assert code == 0
    return [json.loads(x) for x in out.getvalue().splitlines()], (wall, cpu)


def run(packets: int, intervals: int, loss: float, groups: int) -> dict:
    config = OpaConfig(groups=groups)
    work = [make_workload(packets=packets, loss=loss, seed=seed) for seed in range(intervals)]
    frames = []
    for seq, w in enumerate(work):
        for point, rec, mac in (("sender", w.sent, 1), ("receiver", w.received, 2)):
            frames += build_record_frames(config, point, seq=seq, packet=rec.packet,
                                          timestamps=rec.timestamps, src_mac=mac,
                                          dst_mac=15)
    with tempfile.TemporaryDirectory() as folder:
        cap, delays = Path(folder) / "tap.pcap", Path(folder) / "d.csv"
        write_pcap(cap, frames, 10 ** 9 + np.arange(len(frames)))
        timing = {}
        for name, extra in (("rows", []), ("rows_and_delays_csv", ["--delays-out",
                                                                   str(delays)])):
            for dev, side in (("bench_s", "sent"), ("bench_r", "received")):
                register_fake_device(dev, _Intervals(config, [opa_synopsis(
                    config, getattr(w, side).packet) for w in work]))
            rows, timing[name] = _watch(cap, intervals, extra)
            assert all(r["valid"] for r in rows), [r["notes"] for r in rows]
        written = np.loadtxt(delays, delimiter=",", skiprows=1,
                             usecols=(1, 2, 5), ndmin=2)     # interval, packet, delay_ns
    for seq, w in enumerate(work):
        mine = written[written[:, 0] == seq]
        idx = mine[:, 1].astype(np.int64)
        assert np.array_equal(mine[:, 2], w.true_delay[idx].astype(np.float64)
                              * config.tick_ns), f"interval {seq}: a delay is not exact"
    total = packets * intervals
    return {"packets_per_interval": packets, "intervals": intervals, "loss": loss,
            "groups": groups, "record_frames": len(frames),
            "recovered": len(written),
            **{f"{name}_{k}": v for name, (wall, cpu) in timing.items()
               for k, v in (("wall_s", round(wall, 3)), ("cpu_s", round(cpu, 3)),
                            ("packets_per_s_wall", round(total / wall)),
                            ("packets_per_s_cpu", round(total / cpu)))},
            "every_delay_exact": True, "machine": platform.platform(),
            "python": platform.python_version()}


def main_bench(argv=None) -> dict:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--packets", type=int, default=200_000)
    p.add_argument("--intervals", type=int, default=3)
    p.add_argument("--loss", type=float, default=1e-4)
    p.add_argument("--groups", type=int, default=1024)
    args = p.parse_args(argv)
    result = run(args.packets, args.intervals, args.loss, args.groups)
    OUT.parent.mkdir(exist_ok=True)
    OUT.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result, indent=1))
    return result


if __name__ == "__main__":
    main_bench()

# SPDX-License-Identifier: BSD-2-Clause
"""Fault injection: whole snapshot reads through the driver over a misbehaving line.

Reproduces the transport figure of ``docs/TRUST.md`` (issue 11, item 2). A
:class:`~host_sw.device.fake_device.FakeDevice` (an LDA core, 2 × 64 counters, random
counter values every interval) is read with :meth:`host_sw.device.driver.Device.read_snapshot`
through a :class:`~host_sw.device.fake_transport.FakeTransport` on simulated time whose
:class:`~host_sw.device.fake_transport.ScriptedLine` makes each host transmission's reply,
with probability ``--fault-rate``, late (up to three timeouts), in pieces (gaps up to
beyond the timeout), with junk bytes before / inside / after it, lost, or its command only
half sent; with ``--close-rate`` the connection closes (then the driver reconnects). Every
snapshot the driver returns is compared with the device's truth (counter words, sequence,
packets, config ID, timestamp): a difference is a *wrong* read. Every other outcome must be
a :class:`~host_sw.device.transport_base.TransportError` or
:class:`~host_sw.device.driver.DeviceError` with a message; anything else is a *crash*.

Prints the figures and writes them to ``docs/benchmarks/transport_faults.json`` (``--out``).

Run: ``.venv/bin/python -m bench.transport_faults`` (from the repository root; about a
minute for 10 000 reads).

Multi-fault mode (issue 23, item 1), ``--multi SCRIPTS``: each script is one transport read
(1 to 8 words of the counter window) or one write (CONFIG_ID) on a fresh link to the same
device, under two to six always-faulty reply plans in a row
(:func:`~host_sw.device.fake_transport.random_fault_plan`: late, split, lost replies, junk
bytes, half-sent commands, bit flips; all in order, as a bridge sends), some with clean
plans between. A read that returns other words than the device's, or a write that returns
but did not land, is *wrong and valid*. The device is the fake bridge, which runs the
contract's parser (``take_command``/``Command.reply``), the one the gateware bridge is
tested equal to (``tests/hw/bus/test_hw_uartbone.py``). ``--framing plain`` runs the same
scripts over plain UARTBone (the control: there the count is not 0). Writes
``docs/benchmarks/transport_multi_faults.json``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from host_sw.contracts.config import LdaConfig
from host_sw.contracts.synopsis import Synopsis
from host_sw.device.driver import Device, DeviceError
from host_sw.device.fake_device import FakeDevice
from host_sw.device.fake_transport import (FakeTransport, ReplyPlan, ScriptedLine,
                                           random_fault_plan, random_reply_plan)
from host_sw.device.transport_base import TransportError

from bench import ROOT

CONFIG = LdaConfig(banks=2, rows=64, thresholds=(0, 5))
#: Enough plans for the transmissions of one snapshot read (and its retries).
PLANS_PER_READ = 64


def _random_synopsis(rng: np.random.Generator) -> Synopsis:
    fields = {f.name: rng.integers(0, 1 << f.width, size=CONFIG.shape, dtype=np.uint64)
              for f in CONFIG.layout.fields}
    return Synopsis(CONFIG, fields)


#: Transport options that switch the defences off (``--without-defences``): no fence, no
#: settle window, a 50 ms pause instead of the quiet wait, and no probe
#: (:class:`_Unprobed`) — what the transport did before issue 11; the check that the
#: bench sees wrong reads when there are any.
WITHOUT_DEFENCES = {"fence": False, "settle": 0.0, "bridge_timeout": 0.0,
                    "resync_delay": 0.05}


class _Unprobed(FakeTransport):
    """A fake link that ignores the driver's probe (resynchronisation without it)."""

    def set_resync_probe(self, address, words) -> None:
        pass


def _connect(device: FakeDevice, line: ScriptedLine, timeout: float, options: dict) -> Device:
    line.plans.clear()                    # connecting over a clean line
    link = _Unprobed if options == WITHOUT_DEFENCES else FakeTransport
    return Device(link(device, line=line, timeout=timeout, **options), config=CONFIG)


def _truth(device: FakeDevice) -> dict:
    return {"words": device.frozen.words(), "seq": device.get("frozen_seq"),
            "packets": device.get("frozen_packets"),
            "config_id": device.get("frozen_config_id"),
            "timestamp": device.get("frozen_timestamp")}


def _matches(snap, truth: dict) -> bool:
    return (snap.synopsis.words() == truth["words"] and snap.seq == truth["seq"]
            and snap.packets == truth["packets"] and snap.config_id == truth["config_id"]
            and snap.timestamp == truth["timestamp"])


def run(reads: int, *, seed: int, fault_rate: float, close_rate: float,
        timeout: float, options: dict | None = None) -> dict:
    """``reads`` fault-injected snapshot reads; the counts of each outcome."""
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    device = FakeDevice(CONFIG)
    line = ScriptedLine()
    options = dict(options or {})
    dev = _connect(device, line, timeout, options)
    dev.program()
    outcomes: Counter = Counter()
    errors: Counter = Counter()
    for k in range(reads):
        device.release()
        device.set_active(_random_synopsis(nrng))
        device.swap(timestamp=rng.randrange(1 << 40))
        truth = _truth(device)
        line.plans[:] = [random_reply_plan(rng, timeout=timeout, fault_rate=fault_rate,
                                           close_rate=close_rate)
                         for _ in range(PLANS_PER_READ)]
        try:
            snap = dev.read_snapshot(release=True, timeout=0.0)
        except (TransportError, DeviceError) as e:
            outcomes["failed_clearly" if str(e) else "failed_without_message"] += 1
            errors[type(e).__name__] += 1
            if getattr(dev.transport, "closed", False):
                dev = _connect(device, line, timeout, options)
            continue
        except Exception as e:            # noqa: BLE001 - a crash is a figure here
            outcomes["crashed"] += 1
            errors[f"crash {type(e).__name__}: {e}"] += 1
            continue
        outcomes["correct" if _matches(snap, truth) else "wrong"] += 1
    return {"fault_rate": fault_rate, "reads": reads, "correct": outcomes["correct"],
            "wrong": outcomes["wrong"], "failed_clearly": outcomes["failed_clearly"],
            "failed_without_message": outcomes["failed_without_message"],
            "crashed": outcomes["crashed"], "errors": dict(sorted(errors.items())),
            "transmissions": line.used, "faulty_transmissions": line.faulty}


#: The device of the multi-fault mode (small: the scripts read 1..8 words).
MULTI_CONFIG = LdaConfig(banks=1, rows=64, thresholds=(0,))


def _refresh(device: FakeDevice, nrng: np.random.Generator) -> list[int]:
    """New random frozen counters; the window's words."""
    device.release()
    fields = {f.name: nrng.integers(0, 1 << f.width, size=MULTI_CONFIG.shape, dtype=np.uint64)
              for f in MULTI_CONFIG.layout.fields}
    device.set_active(Synopsis(MULTI_CONFIG, fields))
    device.swap()
    w = device.map.window
    return [device.bus_read(w.address + k) for k in range(w.buckets * w.chunks)]


def run_multi(scripts: int, *, seed: int, framing: str = "checked",
              timeout: float = 1.0) -> dict:
    """``scripts`` multi-fault scripts (see the module docstring); the counts."""
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    device = FakeDevice(MULTI_CONFIG)
    rmap = device.map
    lo = rmap["id"].address
    probe = [device.bus_read(lo + k) for k in range(3)]           # ID, VERSION, CONFIG
    outcomes: Counter = Counter()
    errors: Counter = Counter()
    faults = 0
    truth: list[int] = []
    for k in range(scripts):
        if k % 200 == 0:
            truth = _refresh(device, nrng)
        device.reset_bridge()
        line = ScriptedLine()
        link = FakeTransport(device, line=line, timeout=timeout, framing=framing,
                             retries=rng.randint(0, 3))
        link.set_resync_probe(lo, probe)
        for _ in range(rng.randint(2, 6)):
            if rng.random() < 0.3:
                line.plans.append(ReplyPlan())
            line.plans.append(random_fault_plan(rng, timeout=timeout))
            faults += 1
        try:
            if rng.random() < 0.15:
                value = rng.randrange(1 << 32)
                link.write_words(rmap["config_id"].address, [value])
                right = device.get("config_id") == value
            else:
                n = rng.randint(1, 8)
                first = rng.randrange(len(truth) - n + 1)
                got = link.read_words(rmap.window.address + first, n)
                right = got == truth[first:first + n]
        except TransportError as e:
            outcomes["failed_clearly" if str(e) else "failed_without_message"] += 1
            errors[type(e).__name__] += 1
            continue
        except Exception as e:            # noqa: BLE001 - a crash is a figure here
            outcomes["crashed"] += 1
            errors[f"crash {type(e).__name__}: {e}"] += 1
            continue
        outcomes["correct" if right else "wrong_and_valid"] += 1
    return {"framing": framing, "scripts": scripts, "faulty_plans": faults,
            "correct": outcomes["correct"], "wrong_and_valid": outcomes["wrong_and_valid"],
            "failed_clearly": outcomes["failed_clearly"],
            "failed_without_message": outcomes["failed_without_message"],
            "crashed": outcomes["crashed"], "errors": dict(sorted(errors.items()))}


def main_multi(args, given) -> int:
    start = time.perf_counter()
    f = run_multi(args.multi, seed=args.seed, framing=args.framing, timeout=args.timeout)
    f["wall_s"] = round(time.perf_counter() - start, 1)
    f["command"] = " ".join(["python -m bench.transport_faults", *given])
    f["seed"] = args.seed
    print(f"{f['scripts']} multi-fault scripts ({f['framing']} framing, {f['faulty_plans']} "
          f"faulty reply plans): {f['correct']} correct, "
          f"wrong_and_valid={f['wrong_and_valid']}, {f['failed_clearly']} failed with a "
          f"clear error, {f['failed_without_message']} without a message, "
          f"{f['crashed']} crashed ({f['wall_s']} s)")
    print("  errors:", ", ".join(f"{k} {v}" for k, v in f["errors"].items()))
    out = args.out if args.out is not None else \
        ROOT / "docs" / "benchmarks" / "transport_multi_faults.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(f, indent=2) + "\n")
    print(f"saved {out}")
    return 0 if f["wrong_and_valid"] == f["crashed"] == 0 else 1


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reads", type=int, default=10_000, help="per fault rate")
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--fault-rates", type=float, nargs="+", default=[0.05, 0.3],
                        help="probabilities that a transmission's reply is faulty")
    parser.add_argument("--close-rate", type=float, default=0.002,
                        help="probability that the connection closes at a transmission")
    parser.add_argument("--timeout", type=float, default=1.0, help="host reply timeout (s)")
    parser.add_argument("--without-defences", action="store_true",
                        help="switch the fence, settle window and quiet wait off (to see "
                             "that wrong reads are counted when there are any)")
    parser.add_argument("--multi", type=int, metavar="SCRIPTS",
                        help="run SCRIPTS multi-fault scripts instead (issue 23)")
    parser.add_argument("--framing", choices=("checked", "plain"), default="checked",
                        help="the framing of the multi-fault mode")
    parser.add_argument("--out", type=Path, default=None,
                        help="default docs/benchmarks/transport_faults.json "
                             "(transport_multi_faults.json with --multi)")
    args = parser.parse_args(argv)
    given = sys.argv[1:] if argv is None else list(argv)
    if args.multi is not None:
        return main_multi(args, given)
    if args.out is None:
        args.out = ROOT / "docs" / "benchmarks" / "transport_faults.json"
    runs = []
    for rate in args.fault_rates:
        start = time.perf_counter()
        f = run(args.reads, seed=args.seed, fault_rate=rate, close_rate=args.close_rate,
                timeout=args.timeout,
                options=WITHOUT_DEFENCES if args.without_defences else None)
        f["wall_s"] = round(time.perf_counter() - start, 1)
        runs.append(f)
        print(f"fault rate {rate:g}: {f['reads']} snapshot reads "
              f"({f['faulty_transmissions']} of {f['transmissions']} transmissions "
              f"faulty): {f['correct']} correct, {f['wrong']} wrong, "
              f"{f['failed_clearly']} failed with a clear error, "
              f"{f['failed_without_message']} without a message, {f['crashed']} crashed "
              f"({f['wall_s']} s)")
        print("  errors:", ", ".join(f"{k} {v}" for k, v in f["errors"].items()))
    given = sys.argv[1:] if argv is None else list(argv)
    figures = {"command": " ".join(["python -m bench.transport_faults", *given]),
               "config": f"LDA {CONFIG.banks}x{CONFIG.rows}", "seed": args.seed,
               "close_rate": args.close_rate, "timeout_s": args.timeout,
               "without_defences": args.without_defences, "runs": runs,
               "reads": sum(r["reads"] for r in runs),
               "wrong": sum(r["wrong"] for r in runs),
               "crashed": sum(r["crashed"] for r in runs)}
    print(f"total: {figures['reads']} fault-injected snapshot reads, {figures['wrong']} "
          f"returned wrong, {figures['crashed']} crashed")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(figures, indent=2) + "\n")
    print(f"saved {args.out}")
    return 0 if figures["wrong"] == figures["crashed"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())

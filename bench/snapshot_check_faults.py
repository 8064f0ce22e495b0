# SPDX-License-Identifier: BSD-2-Clause
"""Fault injection into the counter window: how many snapshot reads return wrong words
despite the device's check value (issue 11, item 1; the figure of docs/TRUST.md,
"Snapshot").

Each trial freezes a random synopsis in a fake device
(:class:`host_sw.device.fake_device.FakeDevice`, whose FROZEN_CHECK/FROZEN_UPDATES are the contract's) and corrupts the counter window's
answers for the first ``k`` window passes (``k`` uniform in 0..4; the driver reads at most
:data:`host_sw.device.driver.READ_ATTEMPTS`): one random bit flipped, one chunk replaced by
a random value, every word shifted by one to three bus words (a stray byte), a burst zeroed,
two words swapped, the check register itself garbled, or one bit flipped in the interval's
header (FROZEN_SEQ, FROZEN_FLAGS, FROZEN_PACKETS, FROZEN_CONFIG_ID, FROZEN_TIMESTAMP,
FROZEN_ROLE, FROZEN_SRC_MAC, and on RLI the RLI_FROZEN_* counts, which the check value
covers, docs/SPEC.md §4.4). The outcome of each read is *exact* (the
synopsis and header frozen), *refused* (``SnapshotError``: the check never matched, or the
sequence number read differently) or *wrong* (any other synopsis or header returned); the
goal is wrong = 0.

    .venv/bin/python -m bench.snapshot_check_faults --trials 10000
"""

from __future__ import annotations

import argparse
import random
from collections import Counter

import numpy as np

from host_sw.contracts.check_value import HEADER_REGISTERS as REGISTER_OF, header_fields
from host_sw.contracts.config import LdaConfig, LdsConfig, RdaConfig, RliConfig
from host_sw.contracts.synopsis import Synopsis
from host_sw.device.driver import Device, SnapshotError
from host_sw.device.fake_device import FakeDevice
from host_sw.device.fake_transport import FakeTransport

CONFIGS = (LdaConfig(banks=2, rows=32, thresholds=(0, 5)), RdaConfig(buckets_per_bank=16),
           LdsConfig(rows=2, cells=16, row_thresholds=(0, 1)), RliConfig(cells=16))
FAULTS = ("flip", "replace", "shift", "zero_burst", "swap", "check_register", "header")


def header_registers(config) -> tuple[str, ...]:
    """The header registers a "header" fault garbles: every register the check value's
    header is read from on a core of ``config``'s kind."""
    return tuple(REGISTER_OF[name] for name, _ in header_fields(config))


def random_synopsis(config, rng: np.random.Generator) -> Synopsis:
    fields = {}
    for f in config.layout.fields:
        hi = min(f.width, 63)
        fields[f.name] = rng.integers(0, 1 << hi, size=config.shape, dtype=np.uint64)
    return Synopsis(config, fields)


def corrupter(kind: str, dev: FakeDevice, rng: random.Random, passes: int):
    """A ``bus_read`` that corrupts the first ``passes`` passes over the window."""
    w = dev.map.window
    check_addr = dev.map["frozen_check"].address
    original = dev.bus_read
    state = {"window": -1, "check": 0}
    target = rng.randrange(w.words)
    other = rng.randrange(w.words)
    shift = rng.randint(1, 3)
    bit = rng.randrange(32)
    value = rng.getrandbits(32)
    burst = range(target, min(w.words, target + rng.randint(1, 40)))
    header_reg = dev.map[rng.choice(header_registers(dev.config))]
    # a bit of the register's fields (a flag it has; a MAC's 48 bits)
    header_bit = (rng.choice([f.offset for f in header_reg.fields])
                  if header_reg.name == "frozen_flags" else rng.randrange(header_reg.width))
    header_addr = header_reg.address + header_reg.words - 1 - header_bit // 32   # MS word first
    header_bit %= 32

    def bus_read(address):
        word = original(address)
        if kind == "header":
            if address == header_addr:
                state["check"] += 1
                if state["check"] <= passes:
                    return word ^ (1 << header_bit)
            return word
        if kind == "check_register":
            if address == check_addr:
                state["check"] += 1
                if state["check"] <= passes:
                    return word ^ (1 << bit)
            return word
        if not w.address <= address < w.address + w.words:
            return word
        k = address - w.address
        if k == 0:
            state["window"] += 1
        if state["window"] >= passes:
            return word
        if kind == "flip" and k == target:
            return word ^ (1 << bit)
        if kind == "replace" and k == target and value != word:
            return value
        if kind == "shift":
            return original(address - shift) if k >= shift else 0
        if kind == "zero_burst" and k in burst:
            return 0
        if kind == "swap" and k in (target, other):
            return original(w.address + (other if k == target else target))
        return word
    return bus_read


def trial(rng: random.Random, nrng: np.random.Generator) -> tuple[str, str]:
    config = rng.choice(CONFIGS)
    kind = rng.choice(FAULTS)
    synopsis = random_synopsis(config, nrng)
    dev = FakeDevice(config)
    dev.set("config_id", config.config_id)
    dev.set("role", rng.choice((1, 2)))
    dev.set("local_mac", rng.getrandbits(48))
    for name in header_registers(config):
        if name.startswith("rli_frozen_"):
            dev.set(name, rng.getrandbits(32))
    dev.set_active(synopsis)
    dev.swap()
    header = dev.frozen_header()
    device = Device(FakeTransport(dev), config=config)
    dev.bus_read = corrupter(kind, dev, rng, rng.randint(0, 4))
    try:
        snap = device.read_snapshot(release=False)
    except SnapshotError:
        return kind, "refused"
    exact = snap.synopsis == synopsis and snap.header == header and snap.valid
    return kind, "exact" if exact else "wrong"


def run(trials: int, seed: int = 1) -> Counter:
    """``(fault, outcome) → trials`` of ``trials`` random trials."""
    rng = random.Random(seed)
    nrng = np.random.default_rng(seed)
    table = Counter()
    for _ in range(trials):
        table[trial(rng, nrng)] += 1
    return table


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trials", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    table = run(args.trials, args.seed)
    print(f"{'fault':16} {'exact':>7} {'refused':>8} {'wrong':>6}")
    for kind in FAULTS:
        print(f"{kind:16} {table[kind, 'exact']:7} {table[kind, 'refused']:8} "
              f"{table[kind, 'wrong']:6}")
    totals = Counter()
    for (kind, outcome), n in table.items():
        totals[outcome] += n
    print(f"{'total':16} {totals['exact']:7} {totals['refused']:8} {totals['wrong']:6}")
    return 1 if totals["wrong"] else 0


if __name__ == "__main__":
    raise SystemExit(main())

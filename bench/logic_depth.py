# SPDX-License-Identifier: BSD-2-Clause
"""Static logic-depth and fan-out report of a synthesised ECP5 netlist (Yosys JSON).

Why: nextpnr reports one critical path per clock after a place-and-route of 15–30 minutes
on an 85k device; timing closure needs *every* path that will not make the target. On
ECP5 with nextpnr, routing is 75–80 % of a path's delay (``docs/HARDWARE.md``), roughly
0.5–1.5 ns per net, more for nets with hundreds of sinks, so a path's LUT levels and the
fan-out of its nets predict it well. This script reads the netlist that ``synth_ecp5``
wrote (``bench/synth_core.py`` leaves it in ``build/synth_core/<core>/lda_core.json``)
and, in seconds, lists the register-to-register paths ranked by an estimated delay:

    estimate = Σ over the cells of the path (cell delay + net delay(fan-out of its input))

with cell delays LUT4 0.25 ns, PFUMX / L6MUX21 0.15 ns, CCU2C 0.25 ns (carry in → out
0.05 ns per 2 bits, on dedicated wires without routing delay), and a net delay of 0.55 ns + 0.12 ns · log2(fan-out). The constants are fitted
by eye to the nextpnr-ecp5 speed-8 critical paths in ``bench/out/synth_core.json``; the
figure is a ranking, not a timing sign-off. Also listed: nets with a large fan-out that
are not driven straight by a flip-flop (a decision fanned out: the usual timing killer).

Hand-written: Yosys' ``sta``/``ltp`` give only the single longest path and know no ECP5
delays; no published package reads Yosys JSON for this.

Usage::

    .venv/bin/python -m bench.logic_depth build/synth_core/lda/lda_core.json [--top 40]
        [--fanout 64] [--top-module lda_core] [-o bench/out/logic_depth_lda.json]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections import defaultdict

#: Cell delays (ns) per (cell type, input port kind); see the module docstring.
_CELL_DELAY = {"LUT4": 0.25, "PFUMX": 0.15, "L6MUX21": 0.15, "CCU2C": 0.25,
               "TRELLIS_DPR16X4": 0.6}
_CARRY_DELAY = 0.05
#: Sequential cells: outputs start paths, inputs end them.
_SEQUENTIAL = {"TRELLIS_FF", "DP16KD", "IDDRX1F", "ODDRX1F", "TRELLIS_IO", "$scopeinfo"}


def net_delay(fanout: int) -> float:
    return 0.55 + 0.12 * math.log2(max(1, fanout))


def _comb_inputs(cell: dict, out_port: str) -> list[tuple[int, float]]:
    """(input bit, cell delay) pairs feeding ``out_port`` of a combinational cell."""
    ctype = cell["type"]
    conns = cell["connections"]
    if ctype == "CCU2C":
        pairs = []
        for port, bits in conns.items():
            if cell["port_directions"][port] != "input":
                continue
            for bit in bits:
                d = _CARRY_DELAY if (port == "CIN" and out_port == "COUT") \
                    else _CELL_DELAY["CCU2C"]
                pairs.append((bit, d))
        return pairs
    if ctype == "TRELLIS_DPR16X4":
        return [(b, _CELL_DELAY[ctype]) for b in conns.get("RAD", [])]
    return [(bit, _CELL_DELAY.get(ctype, 0.25))
            for port, bits in conns.items()
            if cell["port_directions"][port] == "input" for bit in bits]


class NetlistTiming:
    """Estimated arrival times of the net bits of one module of a Yosys JSON netlist
    (``top``: the module marked top when ``None``), with the worst path into each bit."""

    def __init__(self, netlist: dict, top: str | None = None):
        modules = netlist["modules"]
        if top is None:
            top = next(name for name, mod in modules.items()
                       if mod.get("attributes", {}).get("top"))
        mod = modules[top]
        self.names = {}
        for name, info in mod["netnames"].items():
            hidden = info.get("hide_name", 0)
            for bit in info["bits"]:
                if isinstance(bit, int) and (bit not in self.names or (not hidden and
                                                                       self.names[bit][1])):
                    self.names[bit] = (name, hidden)
        self.cells = mod["cells"]
        self.driver = {}
        sinks = defaultdict(list)
        for cname, cell in self.cells.items():
            for port, bits in cell["connections"].items():
                direction = cell["port_directions"].get(port)
                for bit in bits:
                    if not isinstance(bit, int):
                        continue
                    if direction == "output":
                        self.driver[bit] = (cname, port)
                    else:
                        sinks[bit].append((cname, port))
        self.fanout = {bit: len(s) for bit, s in sinks.items()}
        self.arrival: dict[int, tuple[float, int | None]] = {}  # bit -> (time, previous bit)

    def arrive(self, bit) -> float:
        """Estimated arrival time of ``bit`` after the clock (0 at a sequential output)."""
        arrival = self.arrival
        if bit in arrival:
            return arrival[bit][0]
        if not isinstance(bit, int) or bit not in self.driver:
            arrival[bit] = (0.0, None)
            return 0.0
        cname, port = self.driver[bit]
        cell = self.cells[cname]
        if cell["type"] in _SEQUENTIAL or cell["type"].startswith("$"):
            arrival[bit] = (0.0, None)
            return 0.0
        arrival[bit] = (0.0, None)          # breaks combinational loops, if any
        best, prev = 0.0, None
        for src, d in _comb_inputs(cell, port):
            if not isinstance(src, int):
                continue
            carry = cell["type"] == "CCU2C" and d == _CARRY_DELAY
            # carry nets are dedicated wires inside the chain: no routing delay
            t = self.arrive(src) + d + (0.0 if carry else net_delay(self.fanout.get(src, 1)))
            if t > best:
                best, prev = t, src
        arrival[bit] = (best, prev)
        return best

    def endpoints(self) -> list[tuple[float, str, str, int]]:
        """``(estimate, cell, port, bit)`` of every register input, worst first."""
        endpoints = []
        for cname, cell in self.cells.items():
            if cell["type"] not in _SEQUENTIAL:
                continue
            for port, bits in cell["connections"].items():
                if cell["port_directions"].get(port) != "input" or port == "CLK":
                    continue
                for bit in bits:
                    if isinstance(bit, int):
                        t = self.arrive(bit) + net_delay(self.fanout.get(bit, 1))
                        endpoints.append((t, cname, port, bit))
        endpoints.sort(reverse=True)
        return endpoints

    def path(self, bit) -> list[int]:
        """The bits of the worst path into ``bit``, from its start."""
        chain = []
        while bit is not None:
            chain.append(bit)
            bit = self.arrival.get(bit, (0, None))[1]
        return chain[::-1]

    def label(self, bit) -> str:
        """A readable name of ``bit``'s net."""
        name = self.names.get(bit, (f"bit{bit}", 1))[0]
        # Yosys names derived nets by appending the cell path: keep the source name.
        for cut in ("_TRELLIS_FF", "_LUT4", "_CCU2C", "_PFUMX", "_L6MUX"):
            if cut in name:
                name = name[:name.index(cut)] + "~"
        return name

    def logic_driven_fanout(self) -> list[tuple[int, str, float]]:
        """``(fan-out, net, arrival)`` of the nets not driven by a sequential cell,
        widest first."""
        high = []
        for bit, n in self.fanout.items():
            src = self.driver.get(bit)
            if src and self.cells[src[0]]["type"] not in _SEQUENTIAL:
                high.append((n, self.label(bit), self.arrive(bit)))
        high.sort(reverse=True)
        return high


def analyse(netlist: dict, top: str | None = None):
    """Estimated arrival time of every net bit and the worst path into each register:
    the register inputs (worst first), the path and label functions, the logic-driven
    nets by fan-out, the fan-out of every bit and the cells."""
    sys.setrecursionlimit(100_000)       # arrive() recurses along each path
    timing = NetlistTiming(netlist, top)
    endpoints = timing.endpoints()
    high = timing.logic_driven_fanout()
    return endpoints, timing.path, timing.label, high, timing.fanout, timing.cells


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("netlist")
    parser.add_argument("--top-module", default=None)
    parser.add_argument("--top", type=int, default=40, help="paths to list")
    parser.add_argument("--fanout", type=int, default=64,
                        help="list nets not driven by a flop with at least this fan-out")
    parser.add_argument("--target-mhz", type=float, default=250.0)
    parser.add_argument("-o", "--output", default=None,
                        help="also write the figures and the listed paths as JSON here")
    args = parser.parse_args(argv)
    netlist = json.load(open(args.netlist))
    endpoints, path, label, high, fanout, cells = analyse(netlist, args.top_module)
    budget = 1000.0 / args.target_mhz
    over = [e for e in endpoints if e[0] > budget]
    print(f"{len(endpoints)} register inputs; {len(over)} estimated over "
          f"{budget:.2f} ns ({args.target_mhz:.0f} MHz)")
    seen = set()
    shown = 0
    listed = []
    for t, cname, port, bit in endpoints:
        chain = path(bit)
        def base(b):
            return label(b).split("[")[0]
        key = (base(chain[0]), base(bit))
        if key in seen:
            continue
        seen.add(key)
        hops = " → ".join(f"{label(b)}({fanout.get(b, 1)})" for b in chain
                          if not (b != chain[0] and label(b) == label(chain[0])))
        print(f"{t:5.2f} ns  {len(chain) - 1:2d} lv  {cells[cname]['type']}.{port}: {hops}")
        listed.append({"estimate_ns": round(t, 2), "levels": len(chain) - 1,
                       "end": f"{cells[cname]['type']}.{port}", "nets": hops})
        shown += 1
        if shown >= args.top:
            break
    print(f"\nnets not driven by a flop with fan-out ≥ {args.fanout}:")
    wide = []
    for n, name, t in high:
        if n < args.fanout:
            break
        print(f"  {n:5d}  arrival {t:5.2f} ns  {name}")
        wide.append({"fanout": n, "net": name, "arrival_ns": round(t, 2)})
    if args.output:
        with open(args.output, "w") as f:
            json.dump({"netlist": args.netlist, "target_mhz": args.target_mhz,
                       "register_inputs": len(endpoints), "over_budget": len(over),
                       "worst_paths": listed, "logic_driven_fanout": wide}, f, indent=2)
            f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

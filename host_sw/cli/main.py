# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl``: the command line of the product.

Sub-commands:

* ``simulate`` — run a measurement scenario (traffic, path delay/loss/reordering) through
  the golden model and the estimators; print a table, or JSON lines with ``--json``;
* ``info``, ``config``, ``read``, ``watch``, ``estimate``, ``export``, ``plan``, ``plot`` —
  devices and their output (:mod:`host_sw.cli.device_commands`; ``docs/CLI.md``).

Exit codes: 0 success, 1 a run failed (e.g. a file could not be read), 2 bad usage or bad
option values (argparse's convention).
"""

from __future__ import annotations

import argparse
import json
import sys

__all__ = ["main", "build_parser"]


class UsageError(Exception):
    """A bad option value found after parsing; reported like argparse does (exit 2)."""


def _int_at_least(minimum: int, what: str):
    """An argparse type: an integer (``_`` separators allowed) of at least ``minimum``."""
    def parse(text: str) -> int:
        try:
            v = int(text.replace("_", ""))
        except ValueError:
            v = None
        if v is None or v < minimum:
            raise argparse.ArgumentTypeError(f"expected a {what} integer, not {text!r}")
        return v
    return parse


_positive_int = _int_at_least(1, "positive")
_nonneg_int = _int_at_least(0, "non-negative")


def _probability(text: str) -> float:
    try:
        v = float(text.rstrip("%")) / (100 if text.endswith("%") else 1)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a probability (0.01 or 1%), not {text!r}") from None
    if not 0 <= v < 1:
        raise argparse.ArgumentTypeError(f"expected a probability in [0, 1), not {text!r}")
    return v


def _seed(text: str) -> int:
    try:
        v = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer seed, not {text!r}") from None
    if not 0 <= v < 2 ** 63:
        raise argparse.ArgumentTypeError(f"seed must be in 0..2**63-1, not {text!r}")
    return v


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ldactl",
        description="Passive latency and loss measurement with LDA, RDA and LDS synopses.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    sim = sub.add_parser(
        "simulate", help="run a scenario through the golden model and the estimators",
        description="Simulate a measurement interval between two points and compare the "
                    "estimates with the exact truth. Times are in nanoseconds unless a unit "
                    "is given (e.g. scale=0.133us).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    sim.add_argument("--synopsis", choices=("lda", "rda", "lds"), default="lda")
    sim.add_argument("--packets", type=_positive_int, default=1_000_000,
                     help="packets sent in the interval")
    sim.add_argument("--loss", type=_probability, default=0.01,
                     help="uniform loss probability (0.01 or 1%%)")
    sim.add_argument("--burst-loss", action="store_true",
                     help="lose packets in episodes of about 100 (LDA §IV-C) instead of "
                          "uniformly")
    sim.add_argument("--delay", default="weibull:scale=133,shape=0.6",
                     help="delay distribution: weibull:scale=,shape= | pareto:scale=,shape= "
                          "| constant:value= | bimodal:a=,b=,p= | exponential:mean= ; "
                          "add mean= to rescale to an exact mean")
    sim.add_argument("--banks", type=_positive_int, default=None,
                     help="LDA banks (default 2) / RDA banks k (default 2)")
    sim.add_argument("--rows", type=_positive_int, default=None,
                     help="LDA rows per bank (default 1024) / RDA buckets per bank "
                          "(default 2×set difference, at least 1024) / LDS rows (default 4)")
    sim.add_argument("--cells", type=_positive_int, default=16384,
                     help="LDS cells per row")
    sim.add_argument("--vlda-cells", type=_positive_int, default=1,
                     help="LDS virtual-LDA length k")
    sim.add_argument("--flows", type=_positive_int, default=1000,
                     help="flows in the synthetic trace")
    sim.add_argument("--tune-for-loss", type=_probability, default=None, metavar="P",
                     help="LDA: one bank sampling at αm/(pN+1), α=0.5 (LDA §IV-A)")
    sim.add_argument("--set-difference", type=_nonneg_int, default=None, metavar="D",
                     help="RDA: exactly D lost+reordered packets (half each), replacing --loss")
    sim.add_argument("--reorder", type=_probability, default=0.0,
                     help="fraction of packets taking a slower path (multipath reordering)")
    sim.add_argument("--clock-offset", type=int, default=0, metavar="NS",
                     help="receiver clock minus sender clock, ns")
    sim.add_argument("--confidence", type=float, default=0.98,
                     help="confidence level of the intervals")
    sim.add_argument("--runs", type=_positive_int, default=1)
    sim.add_argument("--seed", type=_seed, default=1)
    sim.add_argument("--pcap", default=None, metavar="FILE",
                     help="take the packets (headers and send times) from a capture")
    sim.add_argument("--fast", action="store_true",
                     help="draw random packet hashes instead of building header windows "
                          "(statistically equivalent, faster)")
    sim.add_argument("--json", action="store_true",
                     help="print one JSON object per run: {true:{...}, estimate:{...}}")
    sim.set_defaults(handler=_cmd_simulate)
    from host_sw.cli.device_commands import add_device_commands
    add_device_commands(sub)
    demo = sub.add_parser("demo", help="two simulated devices (sender → channel → "
                          "receiver) measured over their bridges",
                          description="Run the two-device HDL simulation and read both "
                                      "devices over their TCP bridges, printing estimates "
                                      "beside the ground truth (docs/DEMO.md). Needs the "
                                      "repository's sim_tb and Icarus Verilog.")
    try:
        from sim_tb.demo import add_arguments as add_demo_arguments
        from sim_tb.demo import run_from_args as run_demo
        add_demo_arguments(demo)
        demo.set_defaults(handler=run_demo)
    except ImportError as e:  # installed without the simulation harness
        demo.set_defaults(handler=lambda args, e=e: _demo_missing(e))
    return parser


def _demo_missing(error) -> int:
    print(f"ldactl demo: the simulation harness (sim_tb) is not importable: {error}",
          file=sys.stderr)
    return 1


def _config_for(args):
    from host_sw.contracts.config import LdsConfig, RdaConfig
    from host_sw.estimators.simulate import lda_config_for
    if args.synopsis == "lda":
        return lda_config_for(packets=args.packets, rows=args.rows or 1024,
                              banks=args.banks or 2, tune_for_loss=args.tune_for_loss)
    if args.tune_for_loss is not None:
        raise UsageError("--tune-for-loss applies to --synopsis lda only")
    if args.synopsis == "rda":
        default_m = max(1024, 2 * (args.set_difference or 0))
        return RdaConfig(banks=args.banks or 2, buckets_per_bank=args.rows or default_m)
    rows = args.rows or 4
    return LdsConfig(rows=rows, cells=args.cells, vlda_cells=args.vlda_cells,
                     row_thresholds=(0,) * rows)


def _format_table(results, out) -> None:
    def f(x, spec=".2f"):
        return "—" if x is None else format(x, spec)

    def rel(est, true):
        if est is None or true in (None, 0):
            return "—"
        return f"{abs(est - true) / abs(true) * 100:.3f}%"

    header = (f"{'run':>3} {'sent':>9} {'recv':>9} {'lost':>7} {'est.lost':>8} "
              f"{'mean ns':>9} {'est. mean':>9} {'err':>8} {'ci (ns)':>19} "
              f"{'std ns':>8} {'est. std':>8} {'err':>8} {'samples':>8}")
    print(header, file=out)
    for r in results:
        t, e = r.true, r.estimate
        lo, hi = e["ci"]
        ci = "—" if lo is None else f"[{lo:.2f}, {hi:.2f}]"
        print(f"{r.run:>3} {t['sent']:>9} {t['received']:>9} {t['lost']:>7} "
              f"{f(e['lost'], '.0f'):>8} {f(t['mean']):>9} {f(e['mean']):>9} "
              f"{rel(e['mean'], t['mean']):>8} {ci:>19} {f(t['std']):>8} "
              f"{f(e['std']):>8} {rel(e['std'], t['std']):>8} {e['samples']:>8}", file=out)
        if r.details.get("flow_median_rel_error") is not None:
            print(f"    per-flow delay: median relative error "
                  f"{r.details['flow_median_rel_error'] * 100:.3f}% over "
                  f"{r.details['flows_100plus']} flows of ≥ 100 packets", file=out)
        notes = r.details.get("notes") or []
        for note in notes:
            print(f"    note: {note}", file=out)


def _cmd_simulate(args) -> int:
    from host_sw.model.channel import Scenario
    from host_sw.estimators.simulate import run_scenario
    if not 0 < args.confidence < 1:
        raise UsageError(f"--confidence must be in (0, 1), not {args.confidence}")
    if args.set_difference is not None and args.synopsis != "rda":
        raise UsageError("--set-difference applies to --synopsis rda only")
    if args.pcap and args.fast:
        raise UsageError("--pcap and --fast exclude each other")
    try:
        config = _config_for(args)
        loss = f"episodes:rate={args.loss},length=100" if args.burst_loss and args.loss else args.loss
        scenario = Scenario(packets=args.packets, flows=args.flows, delay=args.delay,
                            loss=loss, multipath_fraction=args.reorder,
                            multipath_extra="constant:value=1000" if args.reorder else
                            "constant:value=0",
                            clock_offset_ns=args.clock_offset, fast=args.fast,
                            seed=args.seed, window_bytes=config.window_bytes)
    except ValueError as e:
        raise UsageError(str(e)) from None
    trace = None
    if args.pcap:
        from host_sw.model.pcap import CaptureError, capture_trace
        try:
            trace = capture_trace(args.pcap, window_bytes=config.window_bytes)
        except (CaptureError, OSError) as e:
            print(f"ldactl simulate: cannot read {args.pcap}: {e}", file=sys.stderr)
            return 1
    if not args.json:
        print(f"# {config.kind.upper()} {dict(zip(('banks/rows', 'buckets'), config.shape))} "
              f"config ID {config.config_id:#010x}; {args.packets} packets, loss {args.loss}, "
              f"delay {args.delay}, seed {args.seed}", file=sys.stdout)
    results = []
    try:
        it = run_scenario(scenario, config, runs=args.runs, set_difference=args.set_difference,
                          confidence=args.confidence, trace=trace)
        for r in it:
            if args.json:
                print(json.dumps(r.to_json()), flush=True)
            results.append(r)
    except ValueError as e:
        raise UsageError(str(e)) from None
    if not args.json:
        _format_table(results, sys.stdout)
    return 0


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        return args.handler(args)
    except UsageError as e:
        parser.exit(2, f"ldactl {args.command}: error: {e}\n")
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

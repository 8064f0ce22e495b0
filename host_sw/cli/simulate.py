# SPDX-License-Identifier: BSD-2-Clause
"""``ldactl simulate``: a measurement scenario (traffic, path delay, loss, reordering)
through the golden model and the estimators, without a device.

In the host data flow (``docs/DESIGN.md``) it drives the whole chain in software:
:mod:`host_sw.estimators.simulate` runs the scenario and yields
:class:`~host_sw.estimators.record.IntervalRecord` objects with the exact truth; this
module builds the configuration from the options and prints the records — the
:data:`~host_sw.cli.output.table.SIMULATE_TABLE`, or one JSON line per run with ``--json``
(:meth:`~host_sw.estimators.record.IntervalRecord.summary_json`).
"""

from __future__ import annotations

import argparse
import json

from host_sw.cli.args import (RunFailure, UsageError, confidence, guard, int_at_least, int_in,
                              nonneg_int,
                              positive_int, probability, seed)
from host_sw.cli.opa.output import (OPA_SIMULATE_TABLE, add_delay_outputs, write_delays,
                                    write_histogram)
from host_sw.cli.rli.flows import (REFERENCE_OPTIONS, add_reference_options, flow_rows,
                                   name_of, reference_rule, render_flows, write_flows)
from host_sw.cli.output.table import SIMULATE_TABLE
from host_sw.contracts.config import (
    CONFIG_CLASSES, LdsConfig, OpaConfig, RdaConfig, RliConfig, config_class,
)
from host_sw.contracts.config_base import SynopsisConfig
from host_sw.estimators.opa.tails import groups_for, rows_for
from host_sw.estimators.simulate import lda_config_for, run_scenario
from host_sw.model.channel import Scenario
from host_sw.cli.files import check_input
from host_sw.model.pcap import CaptureError, capture_trace

__all__ = ["add_simulate_parser", "simulate_config"]

#: The most packets (and flows) one simulated interval holds: its arrays must fit memory.
_MAX_PACKETS = 10 ** 9
#: Path defaults of the plain channel; with ``--channel queue`` the queue makes delay and
#: loss, and these apply only when given.
_DEFAULT_DELAY = "weibull:scale=133,shape=0.6"
_DEFAULT_LOSS = 0.01


def add_simulate_parser(sub) -> None:
    sim = sub.add_parser(
        "simulate", help="run a scenario through the golden model and the estimators",
        description="Simulate a measurement interval between two points and compare the "
                    "estimates with the exact truth. Times are in nanoseconds unless a unit "
                    "is given (e.g. scale=0.133us).",
        formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    sim.add_argument("--synopsis", choices=tuple(CONFIG_CLASSES), default="lda")
    sim.add_argument("--packets", type=int_at_least(1, "positive", _MAX_PACKETS),
                     default=1_000_000,
                     help="packets sent in the interval")
    sim.add_argument("--loss", type=probability, default=_DEFAULT_LOSS,
                     help="uniform loss probability (0.01 or 1%%)")
    sim.add_argument("--burst-loss", action="store_true",
                     help="lose packets in episodes of about 100 (LDA §IV-C) instead of "
                          "uniformly")
    sim.add_argument("--delay", default=_DEFAULT_DELAY,
                     help="delay distribution: weibull:scale=,shape= | pareto:scale=,shape= "
                          "| constant:value= | bimodal:a=,b=,p= | exponential:mean= ; "
                          "add mean= to rescale to an exact mean")
    sim.add_argument("--banks", type=positive_int, default=None,
                     help="LDA banks (default 2) / RDA banks k (default 2)")
    sim.add_argument("--rows", type=positive_int, default=None,
                     help="LDA rows per bank (default 1024) / RDA buckets per bank "
                          "(default 2×set difference, at least 1024) / LDS rows (default 4) / "
                          "OPA rows k (default 4, or 5 where one group or more is "
                          "expected to hold three losses in groups of 25–577 packets)")
    sim.add_argument("--cells", type=positive_int, default=16384,
                     help="LDS cells per row")
    sim.add_argument("--vlda-cells", type=positive_int, default=1,
                     help="LDS virtual-LDA length k")
    sim.add_argument("--flows", type=int_at_least(1, "positive", _MAX_PACKETS), default=1000,
                     help="flows in the synthetic trace")
    sim.add_argument("--tune-for-loss", type=probability, default=None, metavar="P",
                     help="LDA: one bank sampling at αm/(pN+1), α=0.5 (LDA §IV-A)")
    sim.add_argument("--set-difference", type=nonneg_int, default=None, metavar="D",
                     help="RDA: exactly D lost+reordered packets (half each), replacing --loss")
    sim.add_argument("--reorder", type=probability, default=0.0,
                     help="fraction of packets taking a slower path (multipath reordering)")
    sim.add_argument("--clock-offset", type=int_in(-2 ** 53, 2 ** 53), default=0, metavar="NS",
                     help="receiver clock minus sender clock, ns")
    sim.add_argument("--confidence", type=confidence, default=0.98,
                     help="confidence level of the intervals")
    sim.add_argument("--runs", type=int_at_least(1, "positive", 10 ** 6), default=1)
    sim.add_argument("--seed", type=seed, default=1)
    sim.add_argument("--pcap", default=None, metavar="FILE",
                     help="take the packets (headers and send times) from a capture")
    sim.add_argument("--fast", action="store_true",
                     help="draw random packet hashes instead of building header windows "
                          "(statistically equivalent, faster)")
    sim.add_argument("--groups", type=int_at_least(1, "positive", 1 << 20), default=None,
                     help="OPA groups, a power of two (default: about 64 packets per "
                          "group, and at least 8 groups per expected loss)")
    add_delay_outputs(sim)
    sim.add_argument("--json", action="store_true",
                     help="print one JSON object per run: {true:{...}, estimate:{...}}")
    _add_queue_and_rli_options(sim)
    sim.set_defaults(handler=guard(_cmd_simulate))


def _add_queue_and_rli_options(sim) -> None:
    """The queueing channel (docs/SIMULATION.md) and RLI's reference and per-flow
    options."""
    sim.add_argument("--channel", choices=("path", "queue"), default="path",
                     help="path: --delay and --loss as given; queue: a FIFO queue whose "
                          "delays and drops come from the traffic (--utilisation, --aqm), "
                          "plus --delay/--loss only when given")
    sim.add_argument("--utilisation", type=_utilisation, default=0.55,
                     help="queue: offered load / drain rate (the RLI paper's 0.22, 0.55, "
                          "0.88)")
    sim.add_argument("--aqm", choices=("red", "droptail"), default="red",
                     help="queue: RED (10 000 packets, min_th 4 000, max_th 9 000, "
                          "w_q 0.002, max_p 1/50) or drop-tail at 10 000 packets")
    add_reference_options(sim)
    sim.add_argument("--top", type=nonneg_int, default=10,
                     help="RLI: per-flow rows printed (largest flows)")
    sim.add_argument("--flows-out", default=None, metavar="FILE",
                     help="RLI: every flow's figures to FILE (.csv, else JSON lines)")


def _utilisation(text):
    value = float(text)
    if not 0 < value <= 10:
        raise argparse.ArgumentTypeError(f"must be in (0, 10], not {text}")
    return value


def _lda(args) -> SynopsisConfig:
    return lda_config_for(packets=args.packets, rows=args.rows or 1024,
                          banks=args.banks or 2, tune_for_loss=args.tune_for_loss)


def _rda(args) -> SynopsisConfig:
    default_m = max(1024, 2 * (args.set_difference or 0))
    return RdaConfig(banks=args.banks or 2, buckets_per_bank=args.rows or default_m)


def _lds(args) -> SynopsisConfig:
    rows = args.rows or 4
    return LdsConfig(rows=rows, cells=args.cells, vlda_cells=args.vlda_cells,
                     row_thresholds=(0,) * rows)


def _rli(args) -> SynopsisConfig:
    return RliConfig(cells=args.cells, **(reference_rule(args) or {"ref_packets": 100}))


def _opa(args) -> SynopsisConfig:
    if args.groups is not None:
        groups = args.groups
    else:   # w ≈ 64 packets per group, and ≥ 8 groups per expected loss (OPA §VI-A)
        groups = groups_for(args.packets, args.packets * args.loss)
    # k = 5 where three losses are expected in groups k = 4 searches them not in
    return OpaConfig(groups=groups, rows=args.rows or rows_for(
        args.packets, args.packets * args.loss, groups))


#: The simulation's configuration of a synopsis kind from the options, where its defaults
#: differ from the configuration class's (LDA tuned to the packet count, RDA sized to the
#: set difference, LDS with the cells of the options); a kind not listed simulates with
#: its class's defaults.
_SIMULATE_CONFIGS = {"lda": _lda, "rda": _rda, "lds": _lds, "opa": _opa, "rli": _rli}
#: The table of a kind whose figures differ from the estimate-beside-truth table.
_SIMULATE_TABLES = {"opa": OPA_SIMULATE_TABLE}



#: The configuration fields that size a synopsis, as the header line names them.
_DIMENSIONS = ("banks", "rows", "buckets_per_bank", "cells", "groups", "vlda_cells")


def _dimensions(config: SynopsisConfig) -> str:
    """``config``'s size, by field (``banks=2 rows=1024``; OPA ``rows=4 groups=2048``)."""
    return " ".join(f"{name}={getattr(config, name)}" for name in _DIMENSIONS
                    if hasattr(config, name))


def simulate_config(args) -> SynopsisConfig:
    """The configuration ``ldactl simulate`` measures with (``ValueError`` if invalid)."""
    build = _SIMULATE_CONFIGS.get(args.synopsis)
    return build(args) if build else config_class(args.synopsis)()


def _check_options(args) -> None:
    if args.set_difference is not None and args.synopsis != "rda":
        raise UsageError("--set-difference applies to --synopsis rda only")
    if args.pcap and args.fast:
        raise UsageError("--pcap and --fast exclude each other")
    if args.tune_for_loss is not None and args.synopsis != "lda":
        raise UsageError("--tune-for-loss applies to --synopsis lda only")
    refs = [opt for opt, _ in REFERENCE_OPTIONS if getattr(args, name_of(opt)) is not None]
    if refs and args.synopsis != "rli":
        raise UsageError(f"{refs[0]} applies to --synopsis rli only")
    reference_rule(args)                    # two rules given, or --ref-packets 0
    if args.flows_out and args.synopsis != "rli":
        raise UsageError("--flows-out applies to --synopsis rli only")
    for name in ("groups", "delays_out", "histogram"):
        if getattr(args, name) is not None and args.synopsis != "opa":
            raise UsageError(f"--{name.replace('_', '-')} applies to --synopsis opa only")


def _scenario(args, config: SynopsisConfig) -> Scenario:
    delay, loss_rate, queue = args.delay, args.loss, None
    if args.channel == "queue":
        queue = f"{args.aqm}:utilisation={args.utilisation}"
        delay = "constant:value=0" if delay == _DEFAULT_DELAY else delay
        loss_rate = 0.0 if loss_rate == _DEFAULT_LOSS else loss_rate
    loss = (f"episodes:rate={loss_rate},length=100" if args.burst_loss and loss_rate
            else loss_rate)
    return Scenario(packets=args.packets, flows=args.flows, delay=delay, queue=queue,
                    loss=loss, multipath_fraction=args.reorder,
                    multipath_extra="constant:value=1000" if args.reorder else
                    "constant:value=0",
                    clock_offset_ns=args.clock_offset, fast=args.fast,
                    seed=args.seed, window_bytes=config.window_bytes)


def _cmd_simulate(args) -> int:
    _check_options(args)
    try:
        config = simulate_config(args)
        scenario = _scenario(args, config)
    except ValueError as e:
        raise UsageError(str(e)) from None
    trace = None
    if args.pcap:
        check_input(args.pcap, "--pcap capture")
        try:
            trace = capture_trace(args.pcap, window_bytes=config.window_bytes)
        except (CaptureError, OSError) as e:
            raise RunFailure(f"cannot read {args.pcap}: {e}") from None
    records = []
    try:
        for rec in run_scenario(scenario, config, runs=args.runs,
                                set_difference=args.set_difference,
                                confidence=args.confidence, trace=trace):
            if args.json:
                print(json.dumps(rec.summary_json()), flush=True)
            records.append(rec)
    except ValueError as e:
        raise UsageError(str(e)) from None
    except MemoryError:
        raise RunFailure(f"not enough memory to simulate {args.packets} packets in "
                         f"{args.flows} flows") from None
    if not args.json:
        # Printed once every run is done, so that an option found bad while running
        # leaves no half-printed table behind.
        print(f"# {config.kind.upper()} {_dimensions(config)}, "
              f"config ID {config.config_id:#010x}; {args.packets} packets, "
              f"{_path_text(args, scenario)}, seed {args.seed}")
        for line in _SIMULATE_TABLES.get(config.kind, SIMULATE_TABLE).render(records):
            print(line)
    _rli_output(args, records)
    _write_outputs(args, config, records)
    return 0


def _path_text(args, scenario: Scenario) -> str:
    channel = scenario.channel
    if channel.queue is None:
        return f"loss {args.loss}, delay {args.delay}"
    return f"queue {channel.queue}, path loss {channel.loss}, delay {channel.delay}"


def _rli_output(args, records) -> None:
    """RLI's per-flow table (not with ``--json``) and ``--flows-out`` file."""
    runs = [(rec.run, flow_rows(rec.details["rli_flows"])) for rec in records
            if "rli_flows" in rec.details]
    if not runs:
        return
    if not args.json:
        for run, rows in runs:
            d = next(r for r in records if r.run == run).details
            print(f"# run {run}: {d['references']} reference packets, "
                  f"{d['buffer_overflowed']} packets lost to a full interpolation buffer, "
                  f"{d['collided_flows']} flows in shared cells (no estimate)")
            for line in render_flows(rows, args.top):
                print(line)
    if args.flows_out:
        try:
            write_flows(args.flows_out, runs)
        except OSError as e:
            raise RunFailure(f"cannot write {args.flows_out}: {e.strerror or e}") from None


def _write_outputs(args, config: SynopsisConfig, records) -> None:
    """The per-packet files of ``--delays`` and ``--histogram`` (OPA)."""
    try:
        if args.delays_out:
            write_delays(args.delays_out, records, config.tick_ns)
        if args.histogram:
            write_histogram(args.histogram, records, config.tick_ns)
    except OSError as e:
        raise RunFailure(f"cannot write {e.filename}: {e.strerror}") from None

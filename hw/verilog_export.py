# SPDX-License-Identifier: BSD-2-Clause
"""The measurement core as a Verilog module: flat AXI4-Stream ports and the export.

Where it sits (``docs/DESIGN.md``, "Data flow of a packet"): around
:class:`hw.lda_pipeline.MeasurementCore`, at the edge of the gateware — the ports of the Verilog
module (``lda_core`` unless renamed) that cocotb benches and other designs attach to, with
the register map exports (``csr.csv`` / ``csr.json``) written beside it.
``python -m hw.lda_pipeline`` is the command line (:func:`export_main`); the interface is
written down for integrators in ``docs/CORE_INTERFACE.md``.

Four-state simulation
---------------------
Yosys writes combinational processes as ``always @*`` blocks that read a dummy register
declared ``reg T = 0;``: under Verilog-2005 semantics that initialiser is an assignment at
time 0, an event that runs every such block once. Under SystemVerilog semantics (Icarus's
``-g2012``, cocotb's default) a declaration initialiser is applied before time 0 without
an event, so a block whose inputs never change after reset (e.g. an FSM's outputs while it
stays in its reset state: the bridge's ``bus_rx_tready``) is never run and its outputs
stay X. :func:`four_state_safe` adds, for simulation only (```ifndef SYNTHESIS``), a
``#0`` assignment to each of those registers, which is an event under both standards and
comes after every block has reached its ``@*``.
"""

import argparse
import re
from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.config_args import add_config_arguments, config_from_args

from hw.backends import add_reset_domain, platform_kind
from hw.bus.uartbone import DEFAULT_TIMEOUT
from hw.hash_h3 import COMPACT_HASH_FAN_IN, HASH_FAN_IN

__all__ = ["AxisTop", "DEFAULT_MODULE_NAME", "export_verilog", "four_state_safe",
           "export_main"]

#: The Verilog module name of the export unless told otherwise.
DEFAULT_MODULE_NAME = "lda_core"
_VERILOG_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]*\Z")
# `if (\$auto$verilog_backend.cc:NNNN:dump_module$N ) begin end` opens every `always @*`.
_TRIGGER_USE = re.compile(r"^\s*if \((\\\S+ )\) begin end$", re.M)


class AxisTop(wiring.Component):
    """Flat AXI4-Stream port names around an :class:`hw.lda_pipeline.MeasurementCore`, for the
    Verilog export (cocotbext-axi attaches with the bus prefixes ``s_axis`` /
    ``m_axis``).

    A one-clock core's domain ``sync`` becomes the ports ``clk`` and ``rst`` (synchronous).
    A core with a control domain (``control_domain="ctrl"``) gets ``clk`` (datapath),
    ``ctrl_clk`` (control) and one reset ``rst``, which resets both domains: asserted
    asynchronously and released synchronously in each, two edges of its clock later
    (:func:`hw.backends.reset_synchronizer`: Amaranth's ResetSynchronizer, and with ECP5
    block RAM (``memory="ecp5"``, or ``"auto"`` for an ECP5 platform) the global network
    after it), so the two sides of the bus crossing are always reset together."""

    def __init__(self, core):
        self.core = core
        w = core.data_width
        control = getattr(core, "control_domain", "sync")
        self.control_domain = None if control == "sync" else control
        clocks = {} if self.control_domain is None else {
            "clk": In(1), f"{self.control_domain}_clk": In(1), "rst": In(1)}
        super().__init__({
            **clocks,
            "s_axis_tdata": In(w), "s_axis_tkeep": In(w // 8), "s_axis_tlast": In(1),
            "s_axis_tuser": In(1), "s_axis_tvalid": In(1), "s_axis_tready": Out(1),
            "m_axis_tdata": Out(w), "m_axis_tkeep": Out(w // 8), "m_axis_tlast": Out(1),
            "m_axis_tuser": Out(1), "m_axis_tvalid": Out(1), "m_axis_tready": In(1),
            "bus_rx_tdata": In(8), "bus_rx_tvalid": In(1), "bus_rx_tready": Out(1),
            "bus_tx_tdata": Out(8), "bus_tx_tvalid": Out(1), "bus_tx_tready": In(1),
            "m_axis_export_tdata": Out(w), "m_axis_export_tkeep": Out(w // 8),
            "m_axis_export_tlast": Out(1), "m_axis_export_tuser": Out(1),
            "m_axis_export_tvalid": Out(1), "m_axis_export_tready": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        m.submodules.core = core = self.core
        if self.control_domain is not None:
            family = platform_kind(platform) if core.memory == "auto" else core.memory
            for domain, clk in (("sync", self.clk),
                                (self.control_domain, getattr(self, f"{self.control_domain}_clk"))):
                add_reset_domain(m, domain, clk=clk, arst=self.rst, kind=family)
        s, o = core.s_axis, core.m_axis
        m.d.comb += [
            s.payload.data.eq(self.s_axis_tdata), s.payload.keep.eq(self.s_axis_tkeep),
            s.payload.last.eq(self.s_axis_tlast), s.payload.error.eq(self.s_axis_tuser),
            s.valid.eq(self.s_axis_tvalid), self.s_axis_tready.eq(s.ready),
            self.m_axis_tdata.eq(o.payload.data), self.m_axis_tkeep.eq(o.payload.keep),
            self.m_axis_tlast.eq(o.payload.last), self.m_axis_tuser.eq(o.payload.error),
            self.m_axis_tvalid.eq(o.valid), o.ready.eq(self.m_axis_tready),
            core.bus_rx.payload.eq(self.bus_rx_tdata), core.bus_rx.valid.eq(self.bus_rx_tvalid),
            self.bus_rx_tready.eq(core.bus_rx.ready),
            self.bus_tx_tdata.eq(core.bus_tx.payload), self.bus_tx_tvalid.eq(core.bus_tx.valid),
            core.bus_tx.ready.eq(self.bus_tx_tready),
        ]
        e = core.host_export
        m.d.comb += [
            self.m_axis_export_tdata.eq(e.payload.data),
            self.m_axis_export_tkeep.eq(e.payload.keep),
            self.m_axis_export_tlast.eq(e.payload.last),
            self.m_axis_export_tuser.eq(e.payload.error),
            self.m_axis_export_tvalid.eq(e.valid), e.ready.eq(self.m_axis_export_tready),
        ]
        return m


def four_state_safe(text: str) -> str:
    """``text`` (Yosys ``write_verilog`` output) with each ``always @*`` trigger register
    also assigned at ``#0`` in simulation, so the blocks run once at time 0 under both
    Verilog-2005 and SystemVerilog semantics (module docstring)."""
    triggers = set(_TRIGGER_USE.findall(text))

    def add_initial(match):
        name = match.group(2)
        if name not in triggers:
            return match.group(0)
        indent = match.group(1)
        return (f"{match.group(0)}\n`ifndef SYNTHESIS\n{indent}initial #0 {name}= 1'h1;\n"
                f"`endif")

    return re.sub(r"^(\s*)reg (\\\S+ ) ?= 0;$", add_initial, text, flags=re.M)


def export_verilog(core, path, *, name: str = DEFAULT_MODULE_NAME) -> list[Path]:
    """Write ``core`` as Verilog module ``name`` to ``path`` and ``csr.csv`` /
    ``csr.json`` beside it; return the paths written.

    The submodules are named ``<name>.<path>``, so exports with different names can be
    compiled into one simulation."""
    if not _VERILOG_NAME.match(name):
        raise ValueError(f"module name must be a Verilog identifier, not {name!r}")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = verilog.convert(AxisTop(core), name=name)
    path.write_text(four_state_safe(text))
    csv_path, json_path = core.regmap.write_exports(path.parent)
    return [path, Path(csv_path), Path(json_path)]


def export_main(argv=None, *, make_core) -> int:
    """The export command line (``python -m hw.lda_pipeline``): ``make_core`` is the
    core class (:class:`hw.lda_pipeline.MeasurementCore`)."""
    parser = argparse.ArgumentParser(
        prog="python -m hw.lda_pipeline",
        description="Export the measurement core of a synopsis kind as Verilog (module lda_core) "
                    "with csr.csv/csr.json beside it.")
    add_config_arguments(parser)
    parser.add_argument("--data-width", type=int, default=64, help="frame data width, bits")
    parser.add_argument("--clk-freq", type=float, default=None, metavar="HZ",
                        help="the core's clock in Hz, for the bus bridge's default "
                             f"timeout of {DEFAULT_TIMEOUT * 1e3:g} ms (default 100e6)")
    parser.add_argument("--uart-timeout", type=int, default=None, metavar="CYCLES",
                        help="bus bridge half-command timeout in clocks (default: "
                             f"{DEFAULT_TIMEOUT * 1e3:g} ms at --clk-freq)")
    parser.add_argument("--memory", choices=("generic", "ecp5"), default="generic",
                        help="counter RAMs: generic (any simulator/tool) or ECP5 DP16KD")
    parser.add_argument("--control-domain", choices=("sync", "ctrl"), default="sync",
                        help="sync: one clock (clk, rst) for the whole core (default); "
                             "ctrl: the bus bridge, bus_rx/bus_tx and the exporter on "
                             "a second clock "
                             "(ctrl_clk; rst resets both, through a reset synchroniser "
                             "each), --clk-freq then being that clock's")
    parser.add_argument("--hash-fan-in", type=int, default=HASH_FAN_IN, metavar="N",
                        help=f"the hasher's XOR trees' fan-in (default {HASH_FAN_IN}, for "
                             f"the fast datapath clock; {COMPACT_HASH_FAN_IN}: fewer "
                             f"register stages and flip-flops, for a slow clock)")
    parser.add_argument("--compact-reads", action="store_true",
                        help="the CSR read multiplexer's first level without registers: "
                             "one flip-flop fewer per readable register bit, for a slow "
                             "control clock")
    parser.add_argument("--module-name", default=DEFAULT_MODULE_NAME, metavar="NAME",
                        help="Verilog module name (submodules are prefixed with it, so "
                             f"two exports can share a simulation; default "
                             f"{DEFAULT_MODULE_NAME})")
    parser.add_argument("-o", "--output", default="build/lda_core.v")
    args = parser.parse_args(argv)
    if not _VERILOG_NAME.match(args.module_name):
        parser.error(f"argument --module-name: not a Verilog identifier: "
                     f"{args.module_name!r}")
    try:
        config = config_from_args(args)
        core = make_core(config=config, data_width=args.data_width,
                         bridge_timeout_cycles=args.uart_timeout, clk_freq=args.clk_freq,
                         memory=args.memory, control_domain=args.control_domain,
                         hash_fan_in=args.hash_fan_in, compact_reads=args.compact_reads)
    except ValueError as exc:
        parser.error(str(exc))
    written = export_verilog(core, args.output, name=args.module_name)
    print(f"{config.kind} core: shape {config.shape}, data width {args.data_width}, "
          f"config ID {config.config_id:#010x}, register map ID {core.regmap.id_value:#010x}")
    print(f"pass-through latency {core.passthrough_latency} cycle(s), measurement latency "
          f"{core.measurement_latency} cycles (EOF to update request)")
    print(f"module {args.module_name}, bus bridge timeout {core.bridge_timeout_for()} clocks")
    if args.control_domain != "sync":
        print(f"two clocks: clk (datapath), {args.control_domain}_clk (bus bridge, bus_rx, "
              f"bus_tx, exporter); rst resets both (asynchronous assertion, synchronous "
              f"release)")
    for path in written:
        print(f"wrote {path}")
    return 0

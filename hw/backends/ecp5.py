# SPDX-License-Identifier: BSD-2-Clause
"""The parts of the gateware built from Lattice ECP5 primitives: the counter RAM of DP16KD
block RAMs, a domain's reset on the global clock network (DCCA) and a multiplier with its
own registers (MULT18X18D).

One copy of one lane of the counter bank (docs/DESIGN.md, "Data flow of a counter") on an
ECP5: the DP16KD's own output register (``REGMODE_B="OUTREG"``) stands in for the generic
RAM's fabric register, which takes the block RAM's slow clock-to-output off the fabric
paths (figures in docs/HARDWARE.md). Same ports and cycle behaviour as
:class:`hw.backends.generic.GenericCounterRam`; ``sim_tb/benches/test_ecp5_memory.py`` checks the
two against each other under a behavioural DP16KD model.

:func:`registered_mult18x18d` is one piece product of :func:`hw.arith.multiply.product_mod`
in the ECP5 build, its operands and product registered inside the sysDSP block;
``sim_tb/benches/test_ecp5_multiply.py`` checks that build against the generic one and
Python's product under a behavioural MULT18X18D model (``sim_tb/models/mult18x18d.v``).
"""

from amaranth.hdl import ClockSignal, Const, Elaboratable, Instance, Module, ResetSignal, Signal
from amaranth.lib import wiring
from amaranth.lib.cdc import AsyncFFSynchronizer

from hw.backends.generic import check_counter_ram, counter_ram_signature

__all__ = ["DP16KD_MODES", "DP16KD_MAX_DEPTH", "Ecp5CounterRam", "Ecp5ResetSynchronizer",
           "MULT18X18D_BITS", "dp16kd_slice_bits", "registered_mult18x18d"]

#: DP16KD modes ``(depth, data width, lowest address pin)`` of one block, shallowest first.
DP16KD_MODES = ((1024, 18, 4), (2048, 9, 3), (4096, 4, 2), (8192, 2, 1), (16384, 1, 0))
#: The deepest counter RAM one column of DP16KDs holds.
DP16KD_MAX_DEPTH = DP16KD_MODES[-1][0]
#: Operand bits of one MULT18X18D; its product has twice as many.
MULT18X18D_BITS = 18


def dp16kd_slice_bits(depth: int) -> int:
    """The data bits of one DP16KD in the narrowest mode that holds ``depth`` words."""
    return next(mode[1] for mode in DP16KD_MODES if depth <= mode[0])


class Ecp5CounterRam(wiring.Component):
    """A counter RAM (:func:`~hw.backends.generic.counter_ram_signature`) of DP16KD blocks,
    one block deep in the narrowest mode that holds ``depth`` words, as many side by side
    as ``width`` needs; output register enabled; powers up zero.

    Parameters
    ----------
    width : int
    depth : int
        Up to :data:`DP16KD_MAX_DEPTH`.
    """

    def __init__(self, *, width: int, depth: int):
        check_counter_ram(width, depth)
        if depth > DP16KD_MAX_DEPTH:
            raise ValueError(f"memory='ecp5' supports up to {DP16KD_MAX_DEPTH} words per "
                             f"lane, not {depth}")
        self.width, self.depth = width, depth
        super().__init__(counter_ram_signature(width=width, depth=depth))

    def elaborate(self, platform):
        m = Module()
        _, slice_bits, low_pin = next(mode for mode in DP16KD_MODES if self.depth <= mode[0])
        for index, lsb in enumerate(range(0, self.width, slice_bits)):
            bits = min(slice_bits, self.width - lsb)
            params = {
                "p_DATA_WIDTH_A": slice_bits, "p_DATA_WIDTH_B": slice_bits,
                "p_REGMODE_A": "NOREG", "p_REGMODE_B": "OUTREG",
                "p_RESETMODE": "SYNC", "p_ASYNC_RESET_RELEASE": "SYNC",
                "p_CSDECODE_A": "0b000", "p_CSDECODE_B": "0b000",
                "p_WRITEMODE_A": "NORMAL", "p_WRITEMODE_B": "NORMAL", "p_GSR": "DISABLED",
            }
            for init in range(0x40):
                params[f"p_INITVAL_{init:02X}"] = Const(0, 320)
            m.submodules[f"dp16kd_{index}"] = Instance(
                "DP16KD", **params, **self._ports(slice_bits, low_pin, lsb, bits))
        return m

    def _ports(self, slice_bits, low_pin, lsb, bits):
        """The pins of the block holding data bits ``lsb .. lsb + bits - 1``."""
        addr_bits = len(self.w_addr)
        ports = {
            "i_CLKA": ClockSignal(), "i_CLKB": ClockSignal(),
            "i_CEA": 1, "i_OCEA": 1, "i_WEA": self.w_en, "i_RSTA": 0,
            "i_CEB": 1, "i_OCEB": 1, "i_WEB": 0, "i_RSTB": 0,
        }
        for cs in range(3):
            ports[f"i_CSA{cs}"] = 0
            ports[f"i_CSB{cs}"] = 0
        for pin in range(14):
            bit = pin - low_pin
            if 0 <= bit < addr_bits:
                ports[f"i_ADA{pin}"] = self.w_addr[bit]
                ports[f"i_ADB{pin}"] = self.r_addr[bit]
            else:
                # x18 mode: ADA0/ADA1 are the byte write enables
                ports[f"i_ADA{pin}"] = int(slice_bits == 18 and pin < 2)
                ports[f"i_ADB{pin}"] = 0
        for pin in range(18):
            ports[f"i_DIA{pin}"] = self.w_data[lsb + pin] if pin < bits else 0
            ports[f"i_DIB{pin}"] = 0
            if pin < bits:
                ports[f"o_DOB{pin}"] = self.r_data[lsb + pin]
        return ports


class Ecp5ResetSynchronizer(Elaboratable):
    """:class:`amaranth.lib.cdc.ResetSynchronizer` whose output reaches the domain's
    registers over the ECP5's global clock network: asserted asynchronously by ``arst``,
    released synchronously two edges of ``domain``'s clock later, then through a DCCA
    (the clock-network buffer) onto the reset of ``domain``.

    Why: the reset is the net with the most loads in a domain (every register whose value
    matters after reset); on fabric routing nextpnr drove it from one flip-flop to
    thousands of LSR pins, a single net of up to 7.1 ns (the LDA core's datapath limit on
    three of five placements, docs/HARDWARE.md). Lattice's clocking guide (TN1263) lets a
    primary clock net carry such a high-fan-out set/reset; nextpnr routes a DCCA's output
    that drives non-clock pins on one of the eight globals that reach the fabric.
    Amaranth's ResetSynchronizer cannot put a buffer between its last stage and the
    domain's reset, so this one is its :class:`~amaranth.lib.cdc.AsyncFFSynchronizer`
    with the DCCA after it. The same interface as ResetSynchronizer.
    """

    def __init__(self, arst, *, domain: str = "sync", stages: int = 2):
        self.arst = arst
        self._domain = domain
        self._stages = stages

    def elaborate(self, platform):
        m = Module()
        released = Signal(name=f"{self._domain}_rst_synced")
        m.submodules.synchronizer = AsyncFFSynchronizer(
            self.arst, released, o_domain=self._domain, stages=self._stages,
            async_edge="pos")
        buffered = Signal(name=f"{self._domain}_rst_global")
        m.submodules.global_buffer = Instance("DCCA", i_CLKI=released, i_CE=Const(1),
                                              o_CLKO=buffered)
        m.d.comb += ResetSignal(self._domain).eq(buffered)
        return m


def registered_mult18x18d(a, b, p, *, domain: str = "sync",
                          input_registers: bool = True) -> Instance:
    """One MULT18X18D forming the unsigned product ``p = a · b`` (``a``, ``b`` at most
    :data:`MULT18X18D_BITS` bits, ``p`` at most twice that: its low bits), with the block's
    A and B input registers and its output register on ``domain``'s clock: ``p`` follows
    ``a`` and ``b`` two clock edges later; the registers have no reset. With
    ``input_registers=False`` only the output register: ``p`` follows one edge later, the
    latency of a fabric product register (OPA's CAH, :mod:`hw.opa.cah`).

    Why: Yosys's ``synth_ecp5`` leaves the block's registers unused, and the route from a
    fabric register through the bare multiplier (2.85 ns) to the product's fabric register
    was the RLI core's critical path on two of three placements (6.1–6.6 ns, 3.3–3.8 ns of
    it routing, ``docs/HARDWARE.md``); nextpnr times the block's own registers instead.
    The parameters and pins are those of Yosys's own mapping
    (``share/lattice/dsp_map_18x18.v``), with the three registers on CLK0."""
    if len(a) > MULT18X18D_BITS or len(b) > MULT18X18D_BITS or len(p) > 2 * MULT18X18D_BITS:
        raise ValueError(f"a MULT18X18D multiplies {MULT18X18D_BITS}-bit operands into "
                         f"{2 * MULT18X18D_BITS} bits, not {len(a)} x {len(b)} into {len(p)}")
    inputs = "CLK0" if input_registers else "NONE"
    params = {"p_REG_INPUTA_CLK": inputs, "p_REG_INPUTB_CLK": inputs,
              "p_REG_OUTPUT_CLK": "CLK0", "p_REG_INPUTC_CLK": "NONE",
              "p_REG_PIPELINE_CLK": "NONE"}
    for reg in ("INPUTA", "INPUTB", "INPUTC", "PIPELINE", "OUTPUT"):
        params[f"p_REG_{reg}_CE"] = "CE0"
        params[f"p_REG_{reg}_RST"] = "RST0"
    params.update({f"p_CLK{k}_DIV": "ENABLED" for k in range(4)})
    params.update({"p_HIGHSPEED_CLK": "NONE", "p_GSR": "DISABLED", "p_CAS_MATCH_REG": "FALSE",
                   "p_SOURCEB_MODE": "B_SHIFT", "p_MULT_BYPASS": "DISABLED",
                   "p_RESETMODE": "SYNC"})
    ports = {"i_SIGNEDA": 0, "i_SIGNEDB": 0, "i_SOURCEA": 0, "i_SOURCEB": 0,
             "i_CLK0": ClockSignal(domain), "i_CE0": 1, "i_RST0": 0}
    for k in range(1, 4):
        ports.update({f"i_CLK{k}": 0, f"i_CE{k}": 0, f"i_RST{k}": 0})
    for i in range(MULT18X18D_BITS):
        ports[f"i_A{i}"] = a[i] if i < len(a) else 0
        ports[f"i_B{i}"] = b[i] if i < len(b) else 0
        ports[f"i_C{i}"] = 0
    for i in range(len(p)):
        ports[f"o_P{i}"] = p[i]
    return Instance("MULT18X18D", **params, **ports)

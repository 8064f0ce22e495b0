# SPDX-License-Identifier: BSD-2-Clause
"""Vendor backends: the parts of the gateware built from one FPGA family's primitives.

The counter bank (docs/DESIGN.md, "Data flow of a counter") keeps each copy of each lane
in a :func:`counter_ram`; this package builds it, portably (:mod:`hw.backends.generic`)
or from a family's block-RAM primitive (:mod:`hw.backends.ecp5`), with the same ports
and the same cycle behaviour. Where the core's clock domains are made (the exported
two-clock core, the board tops, the synthesis harness), :func:`add_reset_domain` adds
each domain with its clock and its reset: :func:`clock_domain` makes the domain the way
its family's reset wants it and :func:`reset_synchronizer` gives it its reset, on the
family's global network where it has one. A new family adds a module here
and entries in :data:`COUNTER_RAMS`, :data:`RESET_SYNCHRONIZERS` and
:data:`ASYNC_RESET`; nothing above this package names a vendor primitive.
"""

from amaranth.hdl import ClockDomain, ClockSignal
from amaranth.lib.cdc import ResetSynchronizer

from hw.backends.ecp5 import (DP16KD_MAX_DEPTH, DP16KD_MODES, Ecp5CounterRam,
                              Ecp5ResetSynchronizer, dp16kd_slice_bits)
from hw.backends.generic import GenericCounterRam, counter_ram_signature

__all__ = ["ASYNC_RESET", "COUNTER_RAMS", "RESET_SYNCHRONIZERS", "add_reset_domain",
           "clock_domain", "counter_ram", "counter_ram_signature", "platform_kind",
           "reset_synchronizer", "write_slices", "GenericCounterRam", "Ecp5CounterRam",
           "Ecp5ResetSynchronizer", "DP16KD_MODES", "DP16KD_MAX_DEPTH"]

#: The counter RAM of each memory kind.
COUNTER_RAMS = {"generic": GenericCounterRam, "ecp5": Ecp5CounterRam}


def counter_ram(*, width: int, depth: int, kind: str):
    """One counter RAM of ``width`` × ``depth`` built the ``kind`` way
    (``"generic"`` or ``"ecp5"``)."""
    if kind not in COUNTER_RAMS:
        raise ValueError(f"kind must be one of {', '.join(COUNTER_RAMS)}, not {kind!r}")
    return COUNTER_RAMS[kind](width=width, depth=depth)


def platform_kind(platform) -> str:
    """The backend kind of the family ``platform`` builds for (``"ecp5"`` for an ECP5
    platform, else ``"generic"``): what ``memory="auto"`` resolves to."""
    return "ecp5" if getattr(platform, "family", None) == "ecp5" else "generic"


#: The reset synchroniser of each memory kind's family (:func:`reset_synchronizer`).
RESET_SYNCHRONIZERS = {"generic": ResetSynchronizer, "ecp5": Ecp5ResetSynchronizer}


def reset_synchronizer(arst, *, domain: str, kind: str):
    """The reset of ``domain`` from the asynchronous ``arst``: asserted asynchronously,
    released synchronously two edges of the domain's clock later; ``"generic"``:
    Amaranth's :class:`~amaranth.lib.cdc.ResetSynchronizer`; ``"ecp5"``: the same, then
    on the global clock network (:class:`hw.backends.ecp5.Ecp5ResetSynchronizer`)."""
    if kind not in RESET_SYNCHRONIZERS:
        raise ValueError(f"kind must be one of {', '.join(RESET_SYNCHRONIZERS)}, "
                         f"not {kind!r}")
    return RESET_SYNCHRONIZERS[kind](arst, domain=domain)


#: Whether the registers of each kind's domains reset asynchronously (:func:`clock_domain`).
ASYNC_RESET = {"generic": False, "ecp5": True}


def clock_domain(name: str, *, kind: str) -> ClockDomain:
    """Clock domain ``name`` as the reset synchroniser of ``kind`` drives it.

    ``"ecp5"``: the registers reset asynchronously. Why: the reset reaches them over a
    global (:class:`hw.backends.ecp5.Ecp5ResetSynchronizer`), and nextpnr routes every
    load of a global with locked paths from the global's branch in the load's tile. With a
    synchronous reset Yosys merges a register's own clear into it (the flip-flop's LSR is
    then a LUT of the reset and the clear: 34 LUT inputs on the RLI core's datapath
    reset), and the locked paths to those LUT inputs run through fabric routing: one RLI
    placement could not reach the reset's own DCCA input any more (it routes with the
    asynchronous reset, docs/CHANGES.md). An ECP5 flip-flop's LSR is either asynchronous
    or synchronous, so nothing merges into an asynchronous reset and the global drives LSR
    pins alone. Release stays synchronous (the synchroniser's last stage is clocked by the
    domain).
    ``"generic"``: a synchronous reset, Amaranth's default."""
    if kind not in ASYNC_RESET:
        raise ValueError(f"kind must be one of {', '.join(ASYNC_RESET)}, not {kind!r}")
    return ClockDomain(name, async_reset=ASYNC_RESET[kind])


def add_reset_domain(m, name: str, *, clk, arst, kind: str) -> None:
    """Add domain ``name`` to ``m``: clocked by ``clk``, reset from the asynchronous
    ``arst`` through the reset synchroniser of ``kind`` (submodule ``reset_sync_<name>``).
    One call, so the domain's reset style (:func:`clock_domain`) always matches the
    synchroniser that drives it (:func:`reset_synchronizer`)."""
    m.domains += clock_domain(name, kind=kind)
    m.d.comb += ClockSignal(name).eq(clk)
    m.submodules[f"reset_sync_{name}"] = reset_synchronizer(arst, domain=name, kind=kind)


#: Block RAMs of a counter RAM written through one set of write-control registers
#: (:func:`write_slices`).
BLOCKS_PER_WRITE_SLICE = 4


def write_slices(width: int, depth: int, kind: str) -> list[tuple[int, int]]:
    """How the counter bank splits a ``width``-bit word of ``depth`` words into RAMs that
    each get write controls (enable, address, clear) of their own: ``(lsb, width)`` per
    RAM. ``"ecp5"``: :data:`BLOCKS_PER_WRITE_SLICE` DP16KD blocks a slice (a 4 096-word
    RLI lane of 176-bit words is 44 blocks, spread over the block-RAM rows; one address
    register for all of them was one long net); ``"generic"``: the whole word (the
    synthesis tool maps it)."""
    if kind not in COUNTER_RAMS:
        raise ValueError(f"kind must be one of {', '.join(COUNTER_RAMS)}, not {kind!r}")
    if kind == "generic":
        return [(0, width)]
    step = BLOCKS_PER_WRITE_SLICE * dp16kd_slice_bits(depth)
    return [(lsb, min(step, width - lsb)) for lsb in range(0, width, step)]

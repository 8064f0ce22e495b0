# SPDX-License-Identifier: BSD-2-Clause
"""The CSR bus from the control clock domain into the datapath clock domain.

Where it sits (``docs/DESIGN.md``, "Clock domains"): in a two-domain core
(:class:`hw.lda_pipeline.MeasurementCore` with ``control_domain="ctrl"``) between the
UARTBone bridge (:class:`hw.bus.uartbone.UARTBoneBridge`, control domain) and the CSR bank
(:class:`hw.bus.csr.CsrBank`, datapath domain). Each bus access crosses whole: its
request (address, read or write, data) through one
:class:`hw.bus.entry_crossing.EntryCrossing`, its answer (read data) back through
another. The CSR bank therefore performs every access in the datapath's clock exactly
as in a one-clock core — a read after a write sees the write's effect, and a command
(CONTROL.swap) takes effect in one cycle of the datapath — and no register value is
ever sampled across the clock boundary.

The bus carries one access at a time (the bridge waits for each ``ack``), so each
crossing holds at most one entry; the cost is the round trip, a few clocks of each domain
per access, against the thousands of clocks a UART byte takes. Why entry crossings, not
:class:`amaranth.lib.fifo.AsyncFIFO` pairs: the request FIFO's read pointer, from the
datapath side's ``holding`` through the pointer's increment into its LUT-RAM cells, was
the two-clock LDS core's datapath critical path on one placement (a 3.7 ns net,
``docs/HARDWARE.md``); an entry crossing has no pointer and no memory.

The answer crossing is free whenever an answer comes: its previous answer was taken
(and its acknowledge flipped) before the bridge could send the request this answer
belongs to, and that flip reaches the datapath side through a synchroniser of the same
depth as the request's, which then still has to be taken and acknowledged by the target.
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.registers import BUS_DATA_BITS
from hw.bus.csr import csr_bus_signature
from hw.bus.entry_crossing import EntryCrossing

__all__ = ["CsrBusCrossing"]

_W = BUS_DATA_BITS


class CsrBusCrossing(wiring.Component):
    """A CSR bus slave in one clock domain, its master in another.

    Parameters
    ----------
    master_domain : str
        The domain of ``bus`` (the bridge's side; default ``"ctrl"``).
    target_domain : str
        The domain of ``target`` (the CSR bank's side; default ``"sync"``).

    Members
    -------
    bus : In(hw.bus.csr.csr_bus_signature())
        Slave port for the master (the bridge), in ``master_domain``. The crossing adds
        11 clocks to an access when both clocks are equal (each entry's toggle
        through a two-stage synchroniser, and the registers on each side).
    target : Out(hw.bus.csr.csr_bus_signature())
        Master port towards the target (the CSR bank), in ``target_domain``: the same
        accesses in the same order, one at a time, each held until its ``ack``.

    Reset: each crossing's toggles by their own domain's reset. Reset both domains
    together (``docs/CORE_INTERFACE.md``, "Clock and reset"): a reset of one domain alone
    while an access is under way can lose it (the master then waits) or leave its answer
    for the next access.
    """

    def __init__(self, *, master_domain: str = "ctrl", target_domain: str = "sync"):
        if master_domain == target_domain:
            raise ValueError(f"a crossing needs two domains, not {master_domain!r} twice")
        self.master_domain = master_domain
        self.target_domain = target_domain
        super().__init__({"bus": In(csr_bus_signature()),
                          "target": Out(csr_bus_signature())})

    def elaborate(self, platform):
        m = Module()
        ctrl, fast = self.master_domain, self.target_domain
        bus, target = self.bus, self.target
        addr_bits = len(bus.addr)
        m.submodules.requests = requests = EntryCrossing(
            width=addr_bits + 1 + _W, w_domain=ctrl, r_domain=fast)
        m.submodules.answers = answers = EntryCrossing(width=_W, w_domain=fast, r_domain=ctrl)

        # Master side: a strobe enqueues its access once; the answer dequeued is the ack
        # (one cycle, registered, as the CSR bank's), after which the bridge lowers its
        # strobe or presents the next access.
        waiting = Signal()                 # an access is queued or under way
        ack = Signal()
        r_data = Signal(_W, reset_less=True)
        m.d.comb += [
            requests.w_data.eq(Cat(bus.addr, bus.w_stb, bus.w_data)),
            requests.w_en.eq((bus.r_stb | bus.w_stb) & ~waiting & ~ack),
            answers.r_en.eq(waiting),
            bus.ack.eq(ack), bus.r_data.eq(r_data),
        ]
        # ``r_data`` loads the crossing's output every clock: with ``ack`` it holds the
        # answer just taken, and the master reads it only then. Loaded only with the
        # answer, its 32 enables hung on the answer FIFO's empty compare, the two-clock
        # cores' control clock critical path on three placements (``docs/HARDWARE.md``).
        m.d[ctrl] += [ack.eq(0), r_data.eq(answers.r_data)]
        with m.If(requests.w_en & requests.w_rdy):
            m.d[ctrl] += waiting.eq(1)
        with m.If(answers.r_en & answers.r_rdy):
            m.d[ctrl] += [waiting.eq(0), ack.eq(1)]

        # Target side: one access at a time, held with its strobe until the target's ack;
        # the ack enqueues the answer (a write's too, whose data the master ignores).
        holding = Signal()
        addr = Signal(addr_bits)
        write = Signal()
        w_data = Signal(_W)
        m.d.comb += [
            requests.r_en.eq(~holding),
            target.addr.eq(addr), target.w_data.eq(w_data),
            target.r_stb.eq(holding & ~write), target.w_stb.eq(holding & write),
            answers.w_data.eq(target.r_data),
            answers.w_en.eq(holding & target.ack),
        ]
        with m.If(requests.r_en & requests.r_rdy):
            m.d[fast] += [holding.eq(1),
                          Cat(addr, write, w_data).eq(requests.r_data)]
        with m.If(holding & target.ack):
            m.d[fast] += holding.eq(0)
        return m

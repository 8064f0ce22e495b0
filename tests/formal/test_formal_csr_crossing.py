# SPDX-License-Identifier: BSD-2-Clause
"""Proof (SymbiYosys, two clocks) of the CSR bus crossing
:class:`hw.bus.csr_crossing.CsrBusCrossing`, between the bridge's control clock and the
CSR bank's datapath clock of a two-clock core.

Both clocks are inputs the solver drives (``multiclock on``): every ratio and phase of
the two, changing from cycle to cycle. The master (the bridge's side, ``ctrl``) starts
accesses when the solver says, each a read or a write of any data at any of 16
addresses, held until its ``ack``; the target (the CSR bank's side, ``sync``) answers
after as many cycles as the solver says, a read with a value that depends on the address
and on a free key. Bounded, :data:`BMC_DEPTH` solver steps from reset (each step may move
either clock; a read's round trip through both entry crossings needs more than 24 steps:
the stale-answer bug below is refuted at 28, not at 24).

* the access the target holds is the master's access under way, with its address, its
  direction and (a write) its data;
* each access reaches the target once and is answered once: the accesses started, those
  the target answered and the answers the master took differ by at most one, in that
  order;
* a read's answer is the target's data for that read's address, never another access's;
* no answer reaches the master without an access under way.

Each planted bug must be refuted: an answer taken from the target before its ``ack``,
and an answer carrying the target's data of the cycle before its ``ack`` (found only on
a read completed through both crossings: the bound reaches one).
"""

import pytest
from amaranth.asserts import AnyConst, AnySeq
from amaranth.hdl import Assert, Signal

from formal_util import Harness, assert_proved, assert_refuted
from hw.bus.csr_crossing import CsrBusCrossing

pytestmark = pytest.mark.formal

#: Address bits the master varies (the others stay 0).
ADDR_BITS = 4
#: Solver steps of the bounded proof (each step may move either clock).
BMC_DEPTH = 32


class EarlyAnswerCrossing(CsrBusCrossing):
    """Planted bug: the answer is queued every cycle the target holds an access, not
    when it acknowledges it (the master gets whatever the target's data was then)."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        m.d.comb += m.submodules.answers.w_en.eq(self.target.r_stb | self.target.w_stb)
        return m


class StaleAnswerCrossing(CsrBusCrossing):
    """Planted bug: the answer carries the target's read data of the cycle before its
    ``ack`` (the previous access's data), as a crossing that registered it late would."""

    def elaborate(self, platform):
        m = super().elaborate(platform)
        stale = Signal(32)
        m.d[self.target_domain] += stale.eq(self.target.r_data)
        m.d.comb += m.submodules.answers.w_data.eq(stale)
        return m


class CrossingHarness(Harness):
    extra_domains = ("ctrl",)

    def __init__(self, crossing_class=CsrBusCrossing):
        super().__init__()
        self.crossing_class = crossing_class

    def build(self, m, platform):
        m.submodules.crossing = crossing = self.crossing_class(master_domain="ctrl",
                                                               target_domain="sync")
        bus, target = crossing.bus, crossing.target
        key = AnyConst(ADDR_BITS).replicate(32 // ADDR_BITS)

        def answer_of(addr):      # every bit depends on the address and the key
            return addr.replicate(32 // ADDR_BITS) ^ key

        # the master (control clock): one access at a time, held until its ack
        busy, write = Signal(), Signal()
        addr, w_data = Signal(ADDR_BITS), Signal(32)
        started, taken = Signal(4), Signal(4)
        m.d.comb += [bus.addr.eq(addr), bus.w_data.eq(w_data),
                     bus.r_stb.eq(busy & ~write), bus.w_stb.eq(busy & write)]
        with m.If(~busy):
            with m.If(AnySeq(1)):
                m.d.ctrl += [busy.eq(1), write.eq(AnySeq(1)), addr.eq(AnySeq(ADDR_BITS)),
                             w_data.eq(AnySeq(ADDR_BITS).replicate(32 // ADDR_BITS)),
                             started.eq(started + 1)]
        with m.Elif(bus.ack):
            m.d.ctrl += [busy.eq(0), taken.eq(taken + 1)]
        with m.If(bus.ack):
            m.d.comb += Assert(busy, "an answer reached the master with no access under way")
            with m.If(busy & ~write):
                m.d.comb += Assert(bus.r_data == answer_of(addr),
                                   "a read's answer is not its address's data")

        # the target (datapath clock): answers after a free delay
        ack, r_data = Signal(), Signal(32)
        answered = Signal(4)
        m.d.comb += [target.ack.eq(ack), target.r_data.eq(r_data)]
        m.d.sync += ack.eq(0)
        holding = target.r_stb | target.w_stb
        with m.If(holding):
            m.d.comb += [
                Assert(busy, "the target holds an access with none under way"),
                Assert(~(target.r_stb & target.w_stb), "a read and a write at once"),
                Assert(target.addr == addr, "the target's address is not the access's"),
                Assert(target.w_stb == write, "the target's direction is not the access's"),
                Assert(~write | (target.w_data == w_data),
                       "the target's write data is not the access's"),
            ]
        with m.If(holding & ~ack & AnySeq(1)):
            m.d.sync += [ack.eq(1), r_data.eq(answer_of(target.addr[:ADDR_BITS])),
                         answered.eq(answered + 1)]
        m.d.comb += [
            Assert((started - answered)[:4] <= 1, "an access reached the target twice "
                                                 "or not at all"),
            Assert((answered - taken)[:4] <= 1, "an answer was taken twice or lost"),
        ]


def test_each_access_crosses_once_and_gets_its_own_answer(tmp_path):
    assert_proved(CrossingHarness(), tmp_path, mode="bmc", depth=BMC_DEPTH)


@pytest.mark.parametrize("crossing_class", [EarlyAnswerCrossing, StaleAnswerCrossing],
                         ids=["early", "stale"])
def test_each_access_crosses_once_refutes_planted_bug(tmp_path, crossing_class):
    assert_refuted(CrossingHarness(crossing_class), tmp_path, mode="bmc",
                   depth=BMC_DEPTH, expect="a read's answer")

# SPDX-License-Identifier: BSD-2-Clause
"""Proof (SymbiYosys, bounded) that interval sequence numbers only move forward in marker
receive mode (:class:`hw.interval.interval_control.IntervalControl`, INTERVAL_MODE 3).

The harness holds the mode at 3 from reset and replaces the marker checker
(:class:`hw.inband.marker_watch.MarkerWatch`: header comparisons and the SipHash tag, too large
for the solver and not what is proved here) by a block whose outputs are free: any
marker sequence number, accepted, rejected or not, in any cycle, with one assumption that
the real checker keeps: two accepted markers are at least two cycles apart (a marker is
at least 60 bytes, several beats). The boundary requests the block issues then carry
sequence numbers that move forward: after the first accepted marker (which may set any
number), each ``boundary_seq`` is 1..2³¹ ahead of the previous one (serial number
arithmetic, as the block compares), and the block's ``seq`` follows them.

The planted bug accepts replayed markers (those behind the current interval), as a
checker without the comparison would; the same proof must refute it.
"""

from types import SimpleNamespace
from unittest.mock import patch

import pytest
from amaranth.asserts import AnySeq, Initial
from amaranth.hdl import Assert, Assume, Module, Signal
from amaranth.lib import wiring

import hw.interval.interval_control as interval_control_module
from formal_util import Harness, assert_proved, assert_refuted, free_inputs
from hw.interval.interval_control import MODE_MARKER_RECEIVE, IntervalControl
from hw.inband.marker_watch import MarkerWatch

pytestmark = pytest.mark.formal

DATA_WIDTH = 8
#: Cycles of the bounded proof: room for several accepted markers (two cycles apart at
#: the closest) and their boundaries.
DEPTH = 12


class FreeMarkerWatch(wiring.Component):
    """:class:`hw.inband.marker_watch.MarkerWatch`'s ports, every output free."""

    def __init__(self, *, data_width):
        real = MarkerWatch(data_width=data_width)
        real._MustUse__silence = True          # only its signature is used
        super().__init__(real.signature)

    def elaborate(self, platform):
        m = Module()
        for path, member, value in self.signature.flatten(self):
            if member.flow == wiring.Out:
                value = value.as_value() if hasattr(value, "as_value") else value
                m.d.comb += value.eq(AnySeq(len(value)))
        # the real checker's accepted markers are whole frames apart
        accepted_before = Signal()
        m.d.sync += accepted_before.eq(self.accepted)
        m.d.comb += Assume(~(self.accepted & accepted_before))
        return m


class ReplayingControl(IntervalControl):
    """Planted bug: a replayed (old) marker is accepted like a new one."""

    def _marker_receive(self, m, mw):
        r = super()._marker_receive(m, mw)
        accepted = Signal(name="accepted_or_replayed")
        m.d.comb += accepted.eq(r.accepted | r.replayed)
        return SimpleNamespace(**{**vars(r), "accepted": accepted})


class ForwardHarness(Harness):
    def __init__(self, control_cls):
        super().__init__()
        self.control_cls = control_cls

    def build(self, m, platform):
        with patch.object(interval_control_module, "MarkerWatch", FreeMarkerWatch):
            dut = self.control_cls(data_width=DATA_WIDTH)
            m.submodules.dut = dut_module = dut.elaborate(platform)
        dut._MustUse__silence = True            # elaborated above, by hand
        del dut_module
        # The timer's 64-bit inputs do not reach the sequence number in this mode.
        free_inputs(m, dut, skip=[("mode",), ("interval_ticks",), ("interval_start",),
                                  ("now",)])
        m.d.comb += [dut.mode.eq(MODE_MARKER_RECEIVE), dut.interval_ticks.eq(0),
                     dut.interval_start.eq(0), dut.now.eq(0)]
        # CONTROL.swap is ignored in mode 3, except in the first cycle after reset, when
        # the block's registered mode still is its initial "manual" (before any marker:
        # the first accepted marker may set any number anyway).
        m.d.comb += Assume(~(Initial() & dut.swap))
        last = Signal(32)
        have_last = Signal()
        with m.If(dut.boundary):
            m.d.sync += [last.eq(dut.boundary_seq), have_last.eq(1)]
            ahead = Signal(32)
            m.d.comb += ahead.eq(dut.boundary_seq - last - 1)
            with m.If(have_last):
                m.d.comb += Assert(~ahead[31], "a boundary's sequence number is not ahead")
            m.d.comb += Assert(dut.seq == dut.boundary_seq, "seq differs from the boundary's")
        with m.Elif(have_last):
            m.d.comb += Assert(dut.seq == last, "seq moved without a boundary")


def test_sequence_numbers_move_forward(tmp_path):
    assert_proved(ForwardHarness(IntervalControl), tmp_path, mode="bmc", depth=DEPTH)


def test_sequence_numbers_move_forward_refutes_planted_bug(tmp_path):
    assert_refuted(ForwardHarness(ReplayingControl), tmp_path, mode="bmc", depth=DEPTH,
                   expect="not ahead")

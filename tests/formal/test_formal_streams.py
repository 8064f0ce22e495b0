# SPDX-License-Identifier: BSD-2-Clause
"""Proofs (SymbiYosys, k-induction) of the stream rule on the blocks that drive the
core's output streams: once ``valid`` is high and ``ready`` low, ``valid`` and the
payload hold until the transfer.

The whole core is too large for the solver; the rule is proved on the block whose
registers drive each output port of :class:`hw.lda_pipeline.MeasurementCore`: ``m_axis`` (the
:class:`hw.frames.frame_merger.FrameMerger`'s ``source``), ``host_export`` (the exporter's
output slice, ``hw.inband.exporter._PortSlice``, which also drives the merger's export input)
and ``bus_tx`` (:class:`hw.bus.uartbone.UARTBoneBridge`'s ``tx``; in
``test_formal_uartbone.py``). Every input of the block is free (``AnySeq``): the rule
holds whatever its inputs do. Also bounded (16 cycles from reset): the rule on both ports
of :class:`hw.inband.control_frame_tx.BytePacker`, which feeds the exporter's slices and drives
the OPA record streamer's frames (``hw.opa.records.OpaRecordStreamer``, an input of the
merger). Each proof has a planted bug (an output register that reloads while stalled, a
packer that ignores ``ready``) that the same proof must refute.
"""

import pytest
from amaranth.asserts import AnyConst
from amaranth.hdl import Const, Signal

from formal_util import Harness, assert_proved, assert_refuted, assert_stream_holds, free_inputs
from hw.inband.control_frame_tx import BytePacker
from hw.inband.exporter import _PortSlice
from hw.frames.frame_merger import FrameMerger

pytestmark = pytest.mark.formal

#: k of the induction: the properties relate two consecutive cycles.
DEPTH = 3


class StreamHarness(Harness):
    """``component``'s inputs free, the stream rule asserted on its ``source``."""

    def __init__(self, component):
        super().__init__()
        self.dut = component

    def build(self, m, platform):
        m.submodules.dut = self.dut
        free_inputs(m, self.dut)
        assert_stream_holds(m, self.dut.source, "source")


class ReloadingMerger(FrameMerger):
    """Planted bug: the output register takes the granted beat every cycle, stalled or
    not (no hold, no skid)."""

    def _output(self, m, payload, offered, accept, skid_valid):
        out_payload = Signal.like(self.sink.payload, name="out_payload")
        m.d.comb += self.source.payload.eq(out_payload)
        m.d.sync += [out_payload.eq(payload), self.source.valid.eq(offered)]


class ReloadingSlice(_PortSlice):
    """Planted bug: the slice's output register reloads while stalled."""

    def elaborate(self, platform):
        from amaranth.hdl import Module
        m = Module()
        m.d.comb += self.sink.ready.eq(1)
        m.d.sync += [self.source.payload.eq(self.sink.payload),
                     self.source.valid.eq(self.sink.valid)]
        return m


def test_frame_merger_source_holds(tmp_path):
    assert_proved(StreamHarness(FrameMerger(data_width=8, inserts=2)), tmp_path,
                  mode="prove", depth=DEPTH)


def test_frame_merger_source_holds_refutes_planted_bug(tmp_path):
    assert_refuted(StreamHarness(ReloadingMerger(data_width=8, inserts=2)), tmp_path,
                   mode="prove", depth=DEPTH, expect="before the transfer")


def test_export_slice_source_holds(tmp_path):
    assert_proved(StreamHarness(_PortSlice(data_width=8)), tmp_path, mode="prove",
                  depth=DEPTH)


def test_export_slice_source_holds_refutes_planted_bug(tmp_path):
    assert_refuted(StreamHarness(ReloadingSlice(data_width=8)), tmp_path, mode="prove",
                   depth=DEPTH, expect="before the transfer")


class BlindPacker(BytePacker):
    """Planted bug: the packer's pop logic sees every port ready (it ignores the
    consumer's backpressure)."""

    def elaborate(self, platform):
        real = [port.ready for port in self.sources]
        for port in self.sources:
            port.ready = Const(1)
        try:
            return super().elaborate(platform)
        finally:
            for port, ready in zip(self.sources, real):
                port.ready = ready


class PackerHarness(Harness):
    """The packer's items free, its port enables constant (its contract: steady while
    beats flow); the stream rule on every port."""

    def __init__(self, packer):
        super().__init__()
        self.dut = packer

    def build(self, m, platform):
        m.submodules.dut = packer = self.dut
        free_inputs(m, packer, skip=[("enable",)])
        enable = Signal(len(packer.enable))
        m.d.comb += [enable.eq(AnyConst(len(enable))), packer.enable.eq(enable)]
        for k, port in enumerate(packer.sources):
            assert_stream_holds(m, port, f"source{k}")


def packer(cls=BytePacker):
    # the record streamer's and the exporter's packer, at 8 bits with small items
    return cls(data_width=8, item_bytes=2, item_sizes=(1, 2), ports=2)


#: The packer's hold rests on its duplicated steering flops agreeing: no short induction
#: closes, so its proof is bounded (cycles from reset: frames of several beats, stalls).
PACKER_DEPTH = 16


def test_byte_packer_sources_hold(tmp_path):
    assert_proved(PackerHarness(packer()), tmp_path, mode="bmc", depth=PACKER_DEPTH)


def test_byte_packer_sources_hold_refutes_planted_bug(tmp_path):
    assert_refuted(PackerHarness(packer(BlindPacker)), tmp_path, mode="bmc",
                   depth=PACKER_DEPTH,
                   expect="before the transfer")

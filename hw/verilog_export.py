# SPDX-License-Identifier: BSD-2-Clause
"""The measurement core as a Verilog module: flat AXI4-Stream ports and the export.

Where it sits (``docs/DESIGN.md``, "Data flow of a packet"): around
:class:`hw.lda_pipeline.LdaCore`, at the edge of the gateware — the ports of the Verilog
module ``lda_core`` that cocotb benches and other tools attach to, with the register map
exports (``csr.csv`` / ``csr.json``) written beside it. ``python -m hw.lda_pipeline``
is the command line.
"""

from pathlib import Path

from amaranth.back import verilog
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

__all__ = ["AxisTop", "export_verilog"]


class AxisTop(wiring.Component):
    """Flat AXI4-Stream port names around an :class:`hw.lda_pipeline.LdaCore`, for the
    Verilog export (cocotbext-axi attaches with the bus prefixes ``s_axis`` /
    ``m_axis``)."""

    def __init__(self, core):
        self.core = core
        w = core.data_width
        super().__init__({
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


def export_verilog(core, path, *, name: str = "lda_core") -> list[Path]:
    """Write ``core`` as Verilog module ``name`` to ``path`` and ``csr.csv`` /
    ``csr.json`` beside it; return the paths written."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = verilog.convert(AxisTop(core), name=name)
    path.write_text(text)
    csv_path, json_path = core.regmap.write_exports(path.parent)
    return [path, Path(csv_path), Path(json_path)]

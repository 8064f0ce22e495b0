# SPDX-License-Identifier: BSD-2-Clause
"""One frozen-copy read port shared by the bus's counter window and the exporter.

Where it sits (``docs/DESIGN.md``, "Data flow of a counter"): between the counter bank's
frozen read port (:func:`hw.counters.bank_layout.frozen_read_signature`) and its two readers, the
CSR bank's counter window (the host reading a snapshot over the bus) and the exporter
(:class:`hw.inband.exporter.Exporter`, streaming the snapshot as chunk frames).
:func:`hw.bus.core_registers.wire_frozen_reads` wires it into :class:`hw.lda_pipeline.MeasurementCore`.
"""

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

from hw.counters.counter_bank import CounterBank
from hw.counters.bank_layout import frozen_read_signature

__all__ = ["FrozenReadShare"]


class FrozenReadShare(wiring.Component):
    """The counter bank's frozen read port, shared: the bus first, the exporter after.

    The bus has priority: in a cycle the bus reads, ``exporter_hold`` is 1 (the exporter
    issues no read; it only slows down) and the bank's port takes the bus's address.
    Each answer comes back ``CounterBank.READ_LATENCY`` cycles after its request; a shift
    register of owners (bit k: the bus read k + 1 cycles ago) routes it to whoever asked.
    ``data`` and ``error`` go to both readers; only the asker's ``valid`` is 1.

    Parameters
    ----------
    config:
        The synopsis configuration (the port's address width and word layout).

    Members
    -------
    bus: In(frozen_read_signature(config))
        The counter window's reads (the CSR bank).
    exporter: In(frozen_read_signature(config))
        The exporter's reads; it must hold off while ``exporter_hold`` is 1.
    exporter_hold: Out(1)
        The bus reads in this cycle (combinational from ``bus.en``).
    bank: Out(frozen_read_signature(config))
        To the counter bank's frozen read port.

    Latency: none added (requests and answers pass combinationally; the owner register
    only tags the answers).
    """

    def __init__(self, *, config):
        self.config = config
        port = frozen_read_signature(config)
        super().__init__({
            "bus": In(port),
            "exporter": In(port),
            "exporter_hold": Out(1),
            "bank": Out(port),
        })

    def elaborate(self, platform):
        m = Module()
        bus_read = self.bus.en
        owners = Signal(CounterBank.READ_LATENCY)   # bit k: the bus read k + 1 cycles ago
        m.d.sync += owners.eq(Cat(bus_read, owners[:-1]))
        bus_answer = owners[-1]
        bank, bus, exporter = self.bank, self.bus, self.exporter
        m.d.comb += [
            self.exporter_hold.eq(bus_read),
            bank.addr.eq(Mux(bus_read, bus.addr, exporter.addr)),
            bank.en.eq(bus_read | exporter.en),
            bus.data.eq(bank.data),
            bus.valid.eq(bank.valid & bus_answer),
            bus.error.eq(bank.error),
            exporter.data.eq(bank.data),
            exporter.valid.eq(bank.valid & ~bus_answer),
            exporter.error.eq(bank.error),
        ]
        return m

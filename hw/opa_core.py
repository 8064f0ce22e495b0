# SPDX-License-Identifier: BSD-2-Clause
"""The OPA sender core on the register map: the double-buffered OPA words
(:class:`hw.opa_cah.OpaCah`) behind the CSR bank and the UARTBone bridge, so that the
host driver (:class:`host_sw.device.driver.Device`) reads an OPA interval's snapshot as
it reads the other kinds'.

Where it sits: the OPA counterpart of :class:`hw.lda_pipeline.LdaCore`'s bus and
counter-bank half. Its packets come as packet hashes (``packet``: valid, hash), not yet
from the header tap and hasher of the frame path; intervals end by CONTROL.swap only
(manual mode), and the timestamp layer and the receiver's records are not streamed yet.
The registers are the map's (:func:`host_sw.contracts.regmap.register_map` of an
:class:`~host_sw.contracts.config.OpaConfig`): STATUS, CONTROL, INTERVAL_SEQ,
FROZEN_SEQ/PACKETS/CONFIG_ID/TIMESTAMP, FROZEN_CHECK/UPDATES, TIMEBASE, and the frozen
words in the counter window (group ``g`` is word ``g``).
"""

from amaranth.hdl import Cat, Module, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out, connect

from host_sw.contracts.regmap import register_map
from hw.csr import CsrBank
from hw.interval_ledger import IntervalLedger
from hw.opa_cah import OpaCah
from hw.timebase import Timebase
from hw.uartbone import UARTBoneBridge, check_timeout_cycles

__all__ = ["OpaCore"]


class OpaCore(wiring.Component):
    """OPA sender words, double buffered, readable over the register map.

    Parameters
    ----------
    config : OpaConfig
    bridge_timeout : int
        UARTBone bridge timeout in cycles (:func:`hw.uartbone.check_timeout_cycles`).

    Members
    -------
    valid, packet_hash : In(1), In(64)
        One packet per clock (its 64-bit packet hash ``P``).
    bus_rx, bus_tx : In/Out(stream.Signature(8))
        Host → bridge and bridge → host bytes.
    """

    def __init__(self, *, config, bridge_timeout: int = 2000):
        check_timeout_cycles(bridge_timeout)
        self._words = OpaCah(config=config, double_buffered=True)   # checks config
        self.config = config
        self.regmap = register_map(config)
        self.bridge_timeout = bridge_timeout
        super().__init__({"valid": In(1), "packet_hash": In(64),
                          "bus_rx": In(stream.Signature(8)),
                          "bus_tx": Out(stream.Signature(8))})

    def elaborate(self, platform):
        m = Module()
        m.submodules.bridge = bridge = UARTBoneBridge(timeout_cycles=self.bridge_timeout)
        m.submodules.csr = csr = CsrBank(regmap=self.regmap)
        connect(m, wiring.flipped(self.bus_rx), bridge.rx)
        connect(m, bridge.tx, wiring.flipped(self.bus_tx))
        connect(m, bridge.bus, csr.bus)
        m.submodules.words = words = self._words
        m.submodules.timebase = timebase = Timebase(width=64)
        m.d.comb += [
            words.valid.eq(self.valid), words.packet_hash.eq(self.packet_hash),
            words.release.eq(csr.control.value.release),
            csr.timebase.current.ticks.eq(timebase.now),
            timebase.set.eq(csr.timebase.written),
            timebase.set_value.eq(csr.timebase.value.ticks),
        ]
        self._wire_window(m, csr.counters, words)
        self._wire_status(m, csr, words, timebase)
        return m

    @staticmethod
    def _wire_window(m, window, words):
        """The counter window reads the frozen copy through the core's read port (a
        fixed latency of two edges; ``error`` while no copy is FROZEN)."""
        m.d.comb += [words.read_en.eq(window.en), words.read_addr.eq(window.addr),
                     window.data.eq(words.read_data), window.valid.eq(words.read_valid),
                     window.error.eq(words.read_error)]

    @staticmethod
    def _wire_status(m, csr, words, timebase):
        """STATUS and the frozen interval's registers from the interval ledger
        (:class:`hw.interval_ledger.IntervalLedger`, reused): CONTROL.swap requests a
        boundary (sequence number + 1, the timebase), taken at once as a swap when the
        other copy is CLEAN, else counted as an overrun; each copy's sequence number,
        flags, CONFIG_ID and packets are the ledger's."""
        m.submodules.ledger = ledger = IntervalLedger()
        arrived = Signal()
        # A packet is counted two cycles after it enters, for the copy it was tagged
        # with: after the ledger zeroes the new copy's count (one cycle after the swap).
        counted, counted_copy = Signal(2), Signal(2)
        m.d.sync += [arrived.eq(ledger.swap),
                     counted.eq(Cat(words.valid, counted[0])),
                     counted_copy.eq(Cat(words.active_copy, counted_copy[0]))]
        m.d.comb += [
            ledger.request.eq(csr.control.value.swap),
            ledger.request_data.seq.eq(ledger.interval_seq + 1),
            ledger.request_data.timestamp.eq(timebase.now),
            ledger.frame_idle.eq(1), ledger.other_clean.eq(words.other_clean),
            ledger.swap_arrived.eq(arrived),
            ledger.counted.eq(counted[1]), ledger.counted_copy.eq(counted_copy[1]),
            ledger.config_id.eq(csr.config_id.value),
            ledger.config_id_written.eq(csr.config_id.written),
            ledger.frozen_copy.eq(~words.active_copy),
            words.swap.eq(ledger.swap),
        ]
        status, frozen = csr.status.value, ledger.frozen
        m.d.comb += [
            status.active_copy.eq(words.active_copy),
            status.frozen_ready.eq(words.frozen_ready),
            status.clearing.eq(words.clearing),
            status.frozen_overrun.eq(frozen.flags[0]),   # IntervalFlags.OVERRUN
            status.other_clean.eq(words.other_clean),
            csr.interval_seq.value.eq(ledger.interval_seq),
            csr.frozen_seq.value.eq(frozen.seq),
            csr.frozen_packets.value.eq(frozen.packets),
            csr.frozen_config_id.value.eq(frozen.config_id),
            csr.frozen_flags.value.eq(frozen.flags),
            csr.frozen_timestamp.value.ticks.eq(frozen.timestamp),
            csr.frozen_check.value.eq(words.frozen_check),
            csr.frozen_updates.value.eq(words.frozen_updates),
            csr.overruns.value.eq(ledger.overruns),
        ]

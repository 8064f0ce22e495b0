# SPDX-License-Identifier: BSD-2-Clause
"""The measurement path of LDA, RDA and LDS: tap records → H3 hasher → bucket selector →
double-buffered counter bank.

Where it sits (``docs/DESIGN.md``, "Data flow of a packet"): :class:`hw.lda_pipeline.MeasurementCore`
feeds it the header tap's records (:class:`hw.frames.header_tap.HeaderTap`; the interval
boundary travels in the record order as ``record.swap``) and wires its ports to the
interval ledger, the CSR bank and the exporter. Its ports are the *measurement path
interface* every kind's path has (:mod:`hw.measurement_path`); this module is the path of
the counter-bank kinds, whose facts come from :data:`hw.kinds.KINDS`.
"""

from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, connect

from hw.counters.bucket_select import BucketSelector
from hw.counters.counter_bank import CounterBank
from hw.counters.bank_layout import frozen_read_signature
from hw.hash_h3 import HASH_FAN_IN, PacketHasher
from hw.frames.header_tap import TapRecord

__all__ = ["CounterPath", "path_members", "PATH_STATUS"]

#: The status registers every measurement path drives (:mod:`hw.measurement_path`), by
#: register name (``register.field`` for one field), and the path members that drive them.
PATH_STATUS = {"status.active_copy": "active_copy", "status.frozen_ready": "frozen_ready",
               "status.clearing": "clearing", "status.other_clean": "other_clean",
               "frozen_check": "frozen_check", "frozen_updates": "frozen_updates"}


def path_members(config) -> dict:
    """The members every measurement path has (:mod:`hw.measurement_path`), for
    ``config``'s frozen read port.

    ``record`` in; ``release`` (a pulse: clear the frozen copy) in; ``frozen`` (the frozen
    copy's read port, bank side); and out: ``active_copy``, ``frozen_copy``,
    ``frozen_ready``, ``other_clean``, ``clearing``, ``sweeping``, ``frozen_check``,
    ``frozen_updates`` (as :class:`hw.counters.counter_bank.CounterBank`'s; ``sweeping``: the
    clearing sweep after reset runs, the core takes no frames), ``swap_arrived`` (the record order's swap
    reaches the bank this cycle), ``counted`` / ``counted_copy`` (a counted frame reaches
    the bank, for that copy) — what :class:`hw.interval.interval_ledger.IntervalLedger` and the
    status registers read.
    """
    return {
        "record": In(TapRecord(config.window_bytes, config.ts_bits)),
        "release": In(1),
        "frozen": In(frozen_read_signature(config)),
        "active_copy": Out(1), "frozen_copy": Out(1), "frozen_ready": Out(1),
        "other_clean": Out(1), "clearing": Out(1), "sweeping": Out(1),
        "frozen_check": Out(32), "frozen_updates": Out(32),
        "swap_arrived": Out(1), "counted": Out(1), "counted_copy": Out(1),
    }


class CounterPath(wiring.Component):
    """Hasher → selector → counter bank of an LDA, RDA or LDS configuration.

    Parameters
    ----------
    config : LdaConfig | RdaConfig | LdsConfig
    memory : "auto" | "generic" | "ecp5"
        The counter bank's RAMs (:class:`hw.counters.counter_bank.CounterBank`).
    data_width : int
        The core's frame width (part of the path interface; this path inserts no frames).
    hash_fan_in : int
        The hasher's trees' fan-in (:class:`hw.hash_h3.PacketHasher`).

    Members
    -------
    The measurement path interface (:func:`path_members`), plus the run-time
    configuration ports of the kind's components, under their names: the hasher's
    ``mask_*`` byte masks (the MASKS register) and the selector's ``thresholds`` (LDA) or
    ``row_thresholds`` (LDS) (the THRESHOLDS register).

    Attributes
    ----------
    latency : int
        Cycles from a tap record to its update request at the counter bank.
    """

    def __init__(self, *, config, memory: str = "auto", data_width: int = 64,
                 hash_fan_in: int = HASH_FAN_IN):
        self.config = config
        self.memory = memory
        self._hasher = PacketHasher(config=config, fan_in=hash_fan_in)
        self._selector = BucketSelector(config=config)
        self.latency = self._hasher.latency + self._selector.latency
        members = path_members(config)
        for part in (self._hasher, self._selector):
            for name, member in part.signature.members.items():
                if name.startswith("mask_") or name in ("thresholds", "row_thresholds"):
                    members[name] = member
        super().__init__(members)

    def status_sources(self) -> dict:
        """The status registers this path drives (:data:`PATH_STATUS`):
        :func:`hw.bus.core_registers.wire_status`."""
        return {name: getattr(self, member) for name, member in PATH_STATUS.items()}

    def elaborate(self, platform):
        m = Module()
        m.submodules.hasher = hasher = self._hasher
        m.submodules.selector = selector = self._selector
        m.submodules.counters = counters = CounterBank(config=self.config, drain_cycles=1,
                                                        memory=self.memory)
        connect(m, wiring.flipped(self.record), hasher.record)
        connect(m, hasher.hashed, selector.hashed)
        connect(m, selector.request, counters.update)
        connect(m, wiring.flipped(self.frozen), counters.frozen)
        for name in self.signature.members:
            if name.startswith("mask_"):
                m.d.comb += getattr(hasher, name).eq(getattr(self, name))
            elif name in ("thresholds", "row_thresholds"):
                m.d.comb += getattr(selector, name).eq(getattr(self, name))
        m.d.comb += [
            counters.swap.eq(selector.swap),
            counters.release.eq(self.release),
            self.swap_arrived.eq(selector.swap),
            self.counted.eq(selector.counted),
            self.counted_copy.eq(selector.request.copy),
        ]
        for name in ("active_copy", "frozen_copy", "frozen_ready", "other_clean",
                     "clearing", "sweeping", "frozen_check", "frozen_updates"):
            m.d.comb += getattr(self, name).eq(getattr(counters, name))
        return m

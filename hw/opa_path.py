# SPDX-License-Identifier: BSD-2-Clause
"""The measurement path of OPA: tap records → H3 packet hash → the sender's per-group
``(w, B_0..B_{k−1})`` words (:class:`hw.opa_cah.OpaCah`, double buffered).

Where it sits (``docs/DESIGN.md``, "Adding a synopsis kind"): :class:`hw.lda_pipeline.LdaCore`
of an :class:`~host_sw.contracts.config.OpaConfig` builds it in place of the counter path
of LDA/RDA/LDS (:data:`hw.measurement_path.PATHS`) and wires its ports — the *measurement
path interface* (:func:`hw.counter_path.path_members`) — to the interval ledger, the CSR
bank's counter window and the exporter, so intervals end as for every kind (manual, time,
marker send/receive), the frozen words are read over the bus (group ``G`` at word ``G``)
and exported as synopsis chunk frames, and FROZEN_CHECK / FROZEN_UPDATES / FROZEN_PACKETS
are the kind's (``docs/SPEC.md`` §8.3).

Counted frames are the other kinds': the tap's IPv4/IPv6 data frames (control, runt,
errored and non-IP frames pass uncounted). The interval boundary comes in record order
(``record.swap`` through the hasher's pipeline) and reaches :class:`~hw.opa_cah.OpaCah`
after the ending interval's last packet and before the next one's, so the copy a packet
is counted in is the one the tap tagged it with (``counted_copy``).

The per-packet records (the packet hash and its timestamp, streamed as control frames:
``hw/opa_records.py``, being written) plug in as this path's ``insert`` member
(:mod:`hw.measurement_path`: a third input of the frame merger, with ``now`` and the
frame MACs/CONFIG_ID/key by member name): the hashed record this path already has
(``packet_hash``, ``timestamp``, ``counted``, ``copy``) is what it streams.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import connect

from host_sw.contracts.config import OpaConfig
from hw.counter_bank import CounterBank
from hw.counter_path import path_members
from hw.hash_h3 import PacketHasher
from hw.opa_cah import OpaCah
from hw.stages import delayed

__all__ = ["OpaPath"]


class OpaPath(wiring.Component):
    """Hasher → OPA words of an :class:`~host_sw.contracts.config.OpaConfig`.

    Parameters
    ----------
    config : OpaConfig
    memory : "auto" | "generic" | "ecp5"
        The words' RAMs (:class:`hw.opa_cah.OpaCah`).
    data_width : int
        The core's frame width (part of the path interface; no frames inserted yet).

    Members
    -------
    The measurement path interface (:func:`hw.counter_path.path_members`): its frozen read
    port answers :attr:`hw.counter_bank.CounterBank.READ_LATENCY` cycles after a request,
    as the counter bank's (``OpaCah`` answers in two; two registers follow), so the
    frozen read share and the exporter serve every kind alike. Plus the hasher's
    ``mask_packet_ipv4`` / ``mask_packet_ipv6`` (the MASKS register).

    Attributes
    ----------
    latency : int
        Cycles from a tap record to its packet entering the words' pipeline.
    """

    def __init__(self, *, config, memory: str = "auto", data_width: int = 64):
        if not isinstance(config, OpaConfig):
            raise TypeError(f"config must be an OpaConfig, not {config!r}")
        self.config = config
        self.memory = memory
        self._hasher = PacketHasher(config=config)
        self._words = OpaCah(config=config, double_buffered=True, memory=memory)
        self.latency = self._hasher.latency
        members = path_members(config)
        for name, member in self._hasher.signature.members.items():
            if name.startswith("mask_"):
                members[name] = member
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        m.submodules.hasher = hasher = self._hasher
        m.submodules.words = words = self._words
        connect(m, wiring.flipped(self.record), hasher.record)
        for name in self.signature.members:
            if name.startswith("mask_"):
                m.d.comb += getattr(hasher, name).eq(getattr(self, name))
        hashed = hasher.hashed
        counted = hashed.valid & hashed.payload.counted
        m.d.comb += [
            words.valid.eq(counted),
            words.packet_hash.eq(hashed.payload.packet_hash),
            words.swap.eq(hashed.swap),
            words.release.eq(self.release),
            self.swap_arrived.eq(hashed.swap),
            self.counted.eq(counted),
            self.counted_copy.eq(hashed.payload.copy),
            self.frozen_copy.eq(~words.active_copy),
        ]
        for name in ("active_copy", "frozen_ready", "other_clean", "clearing",
                     "frozen_check", "frozen_updates"):
            m.d.comb += getattr(self, name).eq(getattr(words, name))
        self._frozen_port(m, words)
        return m

    def _frozen_port(self, m, words):
        """The frozen read port at the counter bank's latency: ``OpaCah``'s read (two
        edges), then two registers; an address beyond the groups (only ``groups == 1``
        has one: the port's address is at least one bit) answers ``error``."""
        port, groups = self.frozen, self.config.groups
        m.d.comb += [words.read_en.eq(port.en), words.read_addr.eq(port.addr)]
        beyond = Signal()
        if groups == 1:
            m.d.comb += beyond.eq(port.addr != 0)
        extra = CounterBank.READ_LATENCY - 2
        beyond_late = delayed(m, beyond, 2, name="frozen_beyond")
        valid = delayed(m, words.read_valid, extra, name="frozen_valid")
        error = delayed(m, words.read_error | (words.read_valid & beyond_late), extra,
                        name="frozen_error")
        data = delayed(m, Mux(beyond_late, 0, words.read_data), extra, name="frozen_data",
                       reset_less=True)
        m.d.comb += [port.valid.eq(valid), port.error.eq(error),
                     port.data.eq(data)]

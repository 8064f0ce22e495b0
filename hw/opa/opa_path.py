# SPDX-License-Identifier: BSD-2-Clause
"""The measurement path of OPA: tap records → H3 packet hash → the sender's per-group
``(w, B_0..B_{k−1})`` words (:class:`hw.opa.cah.OpaCah`, double buffered).

Where it sits (``docs/DESIGN.md``, "Adding a synopsis kind"): :class:`hw.lda_pipeline.MeasurementCore`
of an :class:`~host_sw.contracts.config.OpaConfig` builds it in place of the counter path
of LDA/RDA/LDS (:data:`hw.measurement_path.PATHS`) and wires its ports — the *measurement
path interface* (:func:`hw.counters.counter_path.path_members`) — to the interval ledger, the CSR
bank's counter window and the exporter, so intervals end as for every kind (manual, time,
marker send/receive), the frozen words are read over the bus (group ``G`` at word ``G``)
and exported as synopsis chunk frames, and FROZEN_CHECK / FROZEN_UPDATES / FROZEN_PACKETS
are the kind's (``docs/SPEC.md`` §8.3).

Counted frames are the other kinds': the tap's IPv4/IPv6 data frames (control, runt,
errored and non-IP frames pass uncounted). The interval boundary comes in record order
(``record.swap`` through the hasher's pipeline) and reaches :class:`~hw.opa.cah.OpaCah`
after the ending interval's last packet and before the next one's, so the copy a packet
is counted in is the one the tap tagged it with (``counted_copy``).

The per-packet records: :class:`hw.opa.records.OpaRecordStreamer` (its
point chosen at run time) takes the same counted packets and boundaries as the words,
with the interval ledger's number (``interval_seq``) as the new interval's, and its
frames leave, whole frames as OPA_RECORD_CONTROL.to_export says
(:class:`hw.frames.frame_route.FrameRoute`), by this path's ``insert`` member
(:mod:`hw.measurement_path`: a third input of the frame merger, the measured stream's
output) or its ``host_insert`` member (merged by the core with the exporter's frames
into the host export port); ``now`` and the frame MACs/CONFIG_ID/key by member name. Its
control is the OPA_RECORD_CONTROL register (enable, receiver point, the sender's
coding: rice and shift, record_groups;
latched at each boundary, nothing recorded before the first; to_export from the next
record frame on), its counters
OPA_RECORDS_DROPPED/MERGED/FRAMES (docs/SPEC.md §8.7). A record's timestamp is the
tap's (``ts_bits`` wide) widened to the timebase's 64 bits: the running ``now`` minus
how far its low bits are ahead of the record's.
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out, connect

from host_sw.contracts.config import OpaConfig
from host_sw.contracts.regmap import register_map
from host_sw.contracts.siphash import KEY_BYTES
from hw.counters.counter_bank import CounterBank
from hw.counters.counter_path import PATH_STATUS, path_members
from hw.bus.csr import register_layout
from hw.frames.frame import FrameStream
from hw.frames.frame_route import FrameRoute
from hw.hash_h3 import HASH_FAN_IN, PacketHasher
from hw.opa.cah import OpaCah
from hw.opa.records import OpaRecordStreamer
from hw.arith.stages import delayed

#: The streamer's counters and the read-only registers they drive.
_RECORD_COUNTERS = {"dropped": "opa_records_dropped", "merged": "opa_records_merged",
                    "frames": "opa_records_frames"}
#: The frame inputs a path that inserts frames takes (hw.measurement_path), and the
#: streamer's inputs they feed.
_FRAME_INPUTS = {"frame_src_mac": "src_mac", "frame_dst_mac": "dst_mac",
                 "frame_config_id": "config_id", "frame_key": "key", "frame_auth": "auth"}

__all__ = ["OpaPath"]


class OpaPath(wiring.Component):
    """Hasher → OPA words of an :class:`~host_sw.contracts.config.OpaConfig`.

    Parameters
    ----------
    config : OpaConfig
    memory : "auto" | "generic" | "ecp5"
        The words' RAMs (:class:`hw.opa.cah.OpaCah`).
    data_width : int
        The core's frame width (the record frames' ``insert`` stream).
    hash_fan_in : int
        The hasher's trees' fan-in (:class:`hw.hash_h3.PacketHasher`).

    Members
    -------
    The measurement path interface (:func:`hw.counters.counter_path.path_members`): its frozen read
    port answers :attr:`hw.counters.counter_bank.CounterBank.READ_LATENCY` cycles after a request,
    as the counter bank's (``OpaCah``'s own read latency, the RAMs and the read-out's
    reduction of the plain sums to the contract's words), so the
    frozen read share and the exporter serve every kind alike. Plus the hasher's
    ``mask_packet_ipv4`` / ``mask_packet_ipv6`` (the MASKS register). The record
    frames: ``insert`` and ``host_insert`` (``Out(FrameStream)``: the measured stream's
    output, the host export port), ``now``, ``interval_seq`` and the frame
    inputs (``frame_src_mac`` …), ``opa_record_control`` (In, the register's layout) and
    ``opa_records_dropped`` / ``_merged`` / ``_frames`` (Out(32)).

    Attributes
    ----------
    latency : int
        Cycles from a tap record to its packet entering the words' pipeline.
    """

    def __init__(self, *, config, memory: str = "auto", data_width: int = 64,
                 hash_fan_in: int = HASH_FAN_IN):
        if not isinstance(config, OpaConfig):
            raise TypeError(f"config must be an OpaConfig, not {config!r}")
        self.config = config
        self.memory = memory
        self._data_width = data_width
        self._hasher = PacketHasher(config=config, fan_in=hash_fan_in)
        self._words = OpaCah(config=config, double_buffered=True, memory=memory)
        self._records = OpaRecordStreamer(config=config, point=None, data_width=data_width,
                                          record_from_reset=False)
        self.latency = self._hasher.latency
        members = path_members(config)
        for name, member in self._hasher.signature.members.items():
            if name.startswith("mask_"):
                members[name] = member
        control = register_map(config, data_width=data_width)["opa_record_control"]
        members.update({
            "insert": Out(FrameStream(data_width)),
            "host_insert": Out(FrameStream(data_width)), "now": In(64), "interval_seq": In(32),
            "frame_src_mac": In(48), "frame_dst_mac": In(48), "frame_config_id": In(32),
            "frame_key": In(8 * KEY_BYTES), "frame_auth": In(1),
            "opa_record_control": In(register_layout(control)),
            **{name: Out(32) for name in _RECORD_COUNTERS.values()}})
        super().__init__(members)

    def status_sources(self) -> dict:
        """The status registers this path drives: the path interface's
        (:data:`hw.counters.counter_path.PATH_STATUS`) and the record streamer's counters
        (:func:`hw.bus.core_registers.wire_status`)."""
        return {name: getattr(self, member) for name, member in
                {**PATH_STATUS, **{n: n for n in _RECORD_COUNTERS.values()}}.items()}

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
        for name in ("active_copy", "frozen_ready", "other_clean", "clearing", "sweeping",
                     "frozen_check", "frozen_updates"):
            m.d.comb += getattr(self, name).eq(getattr(words, name))
        self._frozen_port(m, words)
        self._record_frames(m, hashed, counted)
        return m

    def _record_frames(self, m, hashed, counted):
        """The record streamer, one register stage behind the words' inputs (the
        timestamp's widening, module docstring)."""
        m.submodules.records = rec = self._records
        ts_bits = self.config.ts_bits
        lag, now = Signal(ts_bits), Signal(64)
        valid, packet_hash, boundary = Signal(), Signal(64), Signal()
        m.d.sync += [lag.eq(self.now[:ts_bits] - hashed.payload.timestamp),
                     now.eq(self.now), valid.eq(counted),
                     packet_hash.eq(hashed.payload.packet_hash), boundary.eq(hashed.swap)]
        control = self.opa_record_control
        m.d.comb += [
            rec.valid.eq(valid), rec.packet_hash.eq(packet_hash),
            rec.timestamp.eq(now - lag),
            rec.boundary.eq(boundary), rec.next_seq.eq(self.interval_seq),
            rec.enable.eq(control.enable), rec.receiver.eq(control.receiver),
            rec.rice.eq(control.rice), rec.shift.eq(control.shift),
            rec.record_groups.eq(control.record_groups),
        ]
        m.d.comb += [getattr(rec, port).eq(getattr(self, name))
                     for name, port in _FRAME_INPUTS.items()]
        m.d.comb += [getattr(self, name).eq(getattr(rec, port))
                     for port, name in _RECORD_COUNTERS.items()]
        m.submodules.record_route = route = FrameRoute(data_width=self._data_width)
        m.d.comb += route.select.eq(control.to_export)
        connect(m, rec.source, route.sink)
        connect(m, route.source[0], wiring.flipped(self.insert))
        connect(m, route.source[1], wiring.flipped(self.host_insert))

    def _frozen_port(self, m, words):
        """The frozen read port at the counter bank's latency: ``OpaCah``'s read (its
        RAMs, then the read-out's reduction: :attr:`~hw.opa.cah.OpaCah.READ_LATENCY`),
        then registers up to :attr:`CounterBank.READ_LATENCY` (none today); an address
        beyond the groups (only ``groups == 1`` has one: the port's address is at least
        one bit) answers ``error``."""
        port, groups = self.frozen, self.config.groups
        m.d.comb += [words.read_en.eq(port.en), words.read_addr.eq(port.addr)]
        beyond = Signal()
        if groups == 1:
            m.d.comb += beyond.eq(port.addr != 0)
        extra = CounterBank.READ_LATENCY - OpaCah.READ_LATENCY
        assert extra >= 0, "the OPA words answer later than the counter bank"
        beyond_late = delayed(m, beyond, OpaCah.READ_LATENCY, name="frozen_beyond")
        valid = delayed(m, words.read_valid, extra, name="frozen_valid")
        error = delayed(m, words.read_error | (words.read_valid & beyond_late), extra,
                        name="frozen_error")
        data = words.read_data if groups > 1 else Mux(beyond_late, 0, words.read_data)
        data = delayed(m, data, extra, name="frozen_data", reset_less=True)
        m.d.comb += [port.valid.eq(valid), port.error.eq(error),
                     port.data.eq(data)]

# SPDX-License-Identifier: BSD-2-Clause
"""The measurement path of RLI (kind ``rli``): the sender's reference frames and the
receiver's interpolation and per-flow counters, in one core.

:class:`hw.lda_pipeline.MeasurementCore` builds it from :data:`hw.measurement_path.PATHS`
and wires the interface that module documents. Inside: the receiving side (tap records ►
:class:`hw.rli.front.RliFront` ► :class:`hw.rli.receiver.RliReceiver`), the references' tag
check (a :class:`hw.inband.marker_watch.MarkerWatch` for type 3 on the undelayed
``watch`` copy, its verdict delayed to the frame's tap record) and the sending side
(:class:`hw.rli.reference_source.ReferenceFrameSource` on ``insert``). A core is a sender,
a receiver or both by configuration. How they fit, and what the interval ledger's inputs
mean for RLI: ``docs/DESIGN.md``, "Adding a synopsis kind", item 4; the contract:
``docs/SPEC.md`` "RLI".
"""

from amaranth.hdl import Module
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out, connect

from host_sw.contracts.config import RliConfig
from host_sw.contracts.frames.reference_frame import TYPE_REFERENCE
from host_sw.contracts.siphash import KEY_BYTES

from hw.counters.counter_path import PATH_STATUS, path_members
from hw.frames.frame import FrameMonitor, FrameStream
from hw.interval.interval_control import RECEIVE_LATENCY
from hw.inband.marker_watch import MarkerWatch
from hw.rli.reference_source import ReferenceFrameSource
from hw.hash_h3 import HASH_FAN_IN
from hw.rli.front import RliFront
from hw.rli.receiver import RliReceiver
from hw.arith.stages import delayed

__all__ = ["RliPath", "WATCH_LEAD"]

#: Cycles from a frame's EOF on ``watch`` to its tap record in :class:`hw.lda_pipeline.
#: MeasurementCore`: the tap's watch delay (``MeasurementCore.TAP_WATCH_DELAY`` = RECEIVE_LATENCY + 1)
#: and the tap's record register (1). The core checks it against its own figures.
WATCH_LEAD = RECEIVE_LATENCY + 2

_MASKS = ("packet_ipv4", "packet_ipv6", "flow_ipv4", "flow_ipv6")
#: The receiver's per-interval counts → their registers.
_FROZEN = ("references", "overflowed", "unreferenced", "refused")


class RliPath(wiring.Component):
    """Reference source, reference check, RLI front and receiver (module docstring).

    Parameters
    ----------
    config : RliConfig
    memory : "auto" | "generic" | "ecp5"
        The receiver's counter bank RAMs and multipliers (:class:`hw.rli.receiver.RliReceiver`).
    data_width : int
        The core's frame width (the references' beats, the watch copy).
    hash_fan_in : int
        The hasher's trees' fan-in (:class:`hw.hash_h3.PacketHasher`).

    Members
    -------
    The measurement path interface (:func:`hw.counters.counter_path.path_members`); ``mask_*``
    (MASKS); ``watch`` (the core's undelayed watch copy); ``insert`` and ``now``,
    ``frame_src_mac``, ``frame_dst_mac``, ``frame_config_id``, ``frame_key``,
    ``frame_auth`` (:mod:`hw.measurement_path`); registers: ``rli_reference_rate`` and
    ``marker_src_mac`` in, ``rli_references_sent``, ``rli_references_merged``,
    ``rli_references_bad_tag`` and ``rli_frozen_*`` out.

    Attributes
    ----------
    latency : int
        Cycles from a tap record to the receiver's input (the front's); a data packet's
        update then waits for the next reference.
    watch_lead : int
        :data:`WATCH_LEAD`, which the core checks.
    """

    def __init__(self, *, config, memory: str = "auto", data_width: int = 64,
                 hash_fan_in: int = HASH_FAN_IN):
        if not isinstance(config, RliConfig):
            raise ValueError(f"config must be an RliConfig, not {type(config).__name__}")
        self.config = config
        self._front = RliFront(config=config, hash_fan_in=hash_fan_in)
        self._receiver = RliReceiver(config=config, memory=memory)
        self._source = ReferenceFrameSource(config=config, data_width=data_width)
        self._check = MarkerWatch(data_width=data_width, frame_type=TYPE_REFERENCE)
        self.latency = self._front.latency
        self.watch_lead = WATCH_LEAD
        w = config.window_bytes
        members = path_members(config)
        members.update({f"mask_{n}": In(w) for n in _MASKS})
        members.update({
            "watch": In(FrameMonitor(data_width)),
            "insert": Out(FrameStream(data_width)),
            "now": In(64), "frame_src_mac": In(48), "frame_dst_mac": In(48),
            "frame_config_id": In(32), "frame_key": In(8 * KEY_BYTES), "frame_auth": In(1),
            "marker_src_mac": In(48),
            "rli_reference_rate": In(data.StructLayout({"every_packets": 32,
                                                        "period_ticks": 64})),
            "rli_references_sent": Out(32), "rli_references_merged": Out(32),
            "rli_references_bad_tag": Out(32),
        })
        members.update({f"rli_frozen_{n}": Out(32) for n in _FROZEN})
        super().__init__(members)

    def status_sources(self) -> dict:
        """The status registers this path drives: the path interface's
        (:data:`hw.counters.counter_path.PATH_STATUS`), the sender's and the receiver's
        counters (:func:`hw.bus.core_registers.wire_status`)."""
        own = [f"rli_references_{n}" for n in ("sent", "merged", "bad_tag")]
        own += [f"rli_frozen_{n}" for n in _FROZEN]
        return {name: getattr(self, member) for name, member in
                {**PATH_STATUS, **{n: n for n in own}}.items()}

    def elaborate(self, platform):
        m = Module()
        m.submodules.front = front = self._front
        m.submodules.receiver = rx = self._receiver
        m.submodules.references = source = self._source
        m.submodules.reference_check = check = self._check
        connect(m, wiring.flipped(self.record), front.record)
        for n in _MASKS:
            m.d.comb += getattr(front, f"mask_{n}").eq(getattr(self, f"mask_{n}"))
        self._elaborate_check(m, check, front)
        for n in ("valid", "is_ref", "arrival", "send", "cell", "digest"):
            m.d.comb += getattr(rx, f"packet_{n}").eq(getattr(front, f"packet_{n}"))
        connect(m, wiring.flipped(self.frozen), rx.frozen)
        m.d.comb += [
            rx.swap.eq(front.packet_swap),
            rx.release.eq(self.release),
            self.swap_arrived.eq(rx.swapped),
            self.counted.eq(rx.counted),
            self.counted_copy.eq(rx.counted_copy),
            self.rli_references_bad_tag.eq(front.references_bad_tag),
        ]
        for name in ("active_copy", "frozen_copy", "frozen_ready", "other_clean",
                     "clearing", "sweeping", "frozen_check", "frozen_updates"):
            m.d.comb += getattr(self, name).eq(getattr(rx, name))
        for n in _FROZEN:
            m.d.comb += getattr(self, f"rli_frozen_{n}").eq(getattr(rx, f"frozen_{n}"))
        self._elaborate_source(m, source, front)
        return m

    def _elaborate_check(self, m, check, front):
        """The reference check on the watch copy; its verdict (``accepted``, a pulse
        VERIFY_LATENCY cycles after the EOF) delayed to the frame's tap record."""
        m.d.comb += [
            check.watch.valid.eq(self.watch.valid),
            check.watch.ready.eq(self.watch.ready),
            check.watch.payload.eq(self.watch.payload),
            check.config_id.eq(self.frame_config_id),
            check.marker_src_mac.eq(self.marker_src_mac),
            check.key.eq(self.frame_key),
            check.auth.eq(self.frame_auth),
            front.tag_ok.eq(delayed(m, check.accepted,
                                    WATCH_LEAD - MarkerWatch.VERIFY_LATENCY,
                                    name="reference_verdict")),
        ]

    def _elaborate_source(self, m, source, front):
        """The sender's references: one after every N-th data frame of the core's own
        output (as its tap sees them) and/or each period."""
        connect(m, source.source, wiring.flipped(self.insert))
        rate = self.rli_reference_rate
        m.d.comb += [
            source.counted.eq(front.packet_valid & ~front.packet_is_ref),
            source.now.eq(self.now),
            source.every_packets.eq(rate.every_packets),
            source.period_ticks.eq(rate.period_ticks),
            source.src_mac.eq(self.frame_src_mac),
            source.dst_mac.eq(self.frame_dst_mac),
            source.config_id.eq(self.frame_config_id),
            source.key.eq(self.frame_key),
            source.auth.eq(self.frame_auth),
            self.rli_references_sent.eq(source.sent),
            self.rli_references_merged.eq(source.merged),
        ]

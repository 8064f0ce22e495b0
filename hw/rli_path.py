# SPDX-License-Identifier: BSD-2-Clause
"""The measurement path of RLI (kind ``rli``): the sender's reference frames and the
receiver's interpolation and per-flow counters, in one core.

Where it sits (``docs/DESIGN.md``, "Adding a synopsis kind"; ``docs/SPEC.md`` "RLI"):
:class:`hw.lda_pipeline.LdaCore` builds it from :data:`hw.measurement_path.PATHS` and
wires the interface that module documents. Inside:

* **receiving side** — tap records ► :class:`hw.rli_front.RliFront` (H3 flow hashes →
  cell and digest; :class:`hw.reference_watch.ReferenceWatch`: reference frames and their
  send ticks) ► :class:`hw.rli_receiver.RliReceiver` (interpolation, squarer,
  double-buffered per-flow counter bank);
* **reference check** — a :class:`hw.marker_watch.MarkerWatch` for type 3 on the core's
  undelayed watch copy of the stream (``watch``) checks each reference's header (source
  MARKER_SRC_MAC, CONFIG_ID, ``auth`` byte), length and SipHash tag (zero key or
  AUTH_KEY) :data:`hw.marker_watch.MarkerWatch.VERIFY_LATENCY` cycles after its EOF, and
  the verdict is delayed to the cycle of the frame's tap record (:data:`WATCH_LEAD` cycles
  after its EOF on ``watch``); a reference that fails is not used (RLI_REFERENCES_BAD_TAG);
* **sending side** — :class:`hw.reference_source.ReferenceFrameSource` on ``insert`` (the
  merger's third input), at the rate of RLI_REFERENCE_RATE, counting the data frames of
  the core's own output stream as its tap sees them.

A core is a sender, a receiver or both by configuration: a receiver sets
RLI_REFERENCE_RATE to 0 (it inserts nothing) and MARKER_SRC_MAC to the sender's
LOCAL_MAC (references from anywhere else are not used). A sender's own references pass
its own tap too: with MARKER_SRC_MAC other than its LOCAL_MAC they are refused there and
counted in its RLI_REFERENCES_BAD_TAG (one per reference sent; ``sim_tb/test_rli_pair.py``
checks it), and its cells count nothing (its data frames are unreferenced, or overflow
the interpolation buffer).

The interval ledger's inputs (:class:`hw.interval_ledger.IntervalLedger`) mean for RLI:

* the boundary travels in record order (``record.swap`` → ``packet_swap``) to the
  receiver, which makes it pending, flushes the interpolation buffer at the first idle
  cycle and swaps the bank once the flush has drained — so the packets of an interval
  are exactly the frames whose records came before the boundary;
* ``swap_arrived`` is that bank swap (not the boundary's arrival at the receiver): the
  ledger takes no further boundary while the flush drains;
* ``counted`` / ``counted_copy``: a data packet's update enters the bank, for that copy
  (FROZEN_PACKETS counts the packets in the counters; the interval's overflowed and
  unreferenced packets are RLI_FROZEN_OVERFLOWED / RLI_FROZEN_UNREFERENCED);
* ``other_clean`` is the bank's: the ledger decides swap or overrun at the boundary, and
  the other copy cannot leave CLEAN before the bank's swap (only a swap does), so the
  receiver's own refused-swap path (``overruns``) is never taken in a core.
"""

from amaranth.hdl import Module
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out, connect

from host_sw.contracts.config import RliConfig
from host_sw.contracts.reference_frame import TYPE_REFERENCE
from host_sw.contracts.siphash import KEY_BYTES

from .counter_path import path_members
from .frame import FrameMonitor, FrameStream
from .interval_control import RECEIVE_LATENCY
from .marker_watch import MarkerWatch
from .reference_source import ReferenceFrameSource
from .rli_front import RliFront
from .rli_receiver import RliReceiver
from .stages import delayed

__all__ = ["RliPath", "WATCH_LEAD"]

#: Cycles from a frame's EOF on ``watch`` to its tap record in :class:`hw.lda_pipeline.
#: LdaCore`: the tap's watch delay (``LdaCore.TAP_WATCH_DELAY`` = RECEIVE_LATENCY + 1)
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
        The receiver's counter bank RAMs.
    data_width : int
        The core's frame width (the references' beats, the watch copy).

    Members
    -------
    The measurement path interface (:func:`hw.counter_path.path_members`); ``mask_*``
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

    def __init__(self, *, config, memory: str = "auto", data_width: int = 64):
        if not isinstance(config, RliConfig):
            raise ValueError(f"config must be an RliConfig, not {type(config).__name__}")
        self.config = config
        self._front = RliFront(config=config)
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

# SPDX-License-Identifier: BSD-2-Clause
"""The flow-through measurement core (LDA / RDA / LDS) and its Verilog export.

Where it sits (``DESIGN.md``): this is the whole gateware data flow in one component —
frames in → pass-through (fixed latency, bit-exact) → frames out, and beside it the
measurement side that only *watches* the input transfers: header tap
(:class:`hw.header_tap.HeaderTap`) → H3 hasher (:class:`hw.hash_h3.PacketHasher`) →
bucket selection (:class:`hw.bucket_select.BucketSelector`) → counter bank
(:class:`hw.counter_bank.CounterBank`, double buffered), with the interval control
(:class:`hw.interval_control.IntervalControl`: manual / time / marker modes; swap /
overrun / sequence numbers), marker frames (:class:`hw.control_frame_tx.MarkerFrameSource`)
and the exporter (:class:`hw.exporter.Exporter`) put into the stream by the frame
merger (:class:`hw.frame_merger.FrameMerger`), and the CSR bank
(:class:`hw.csr.CsrBank`, generated from :func:`host_sw.contracts.regmap.register_map`) behind the
UARTBone bridge (:class:`hw.uartbone.UARTBoneBridge`).

Pass-through
------------
``s_axis``, the marker frames and the export frames → frame merger
(:class:`hw.frame_merger.FrameMerger`: registered output with a skid register, selection
between frames only) → ``m_axis``. Data frames are never altered, dropped or reordered,
and every beat leaves exactly :data:`PASSTHROUGH_LATENCY` (1) cycle after it was accepted
when ``m_axis`` is ready **except while an inserted frame (a marker or an in-band export
frame) is being sent**: then ``s_axis.ready`` is low for the inserted frame's duration and
the data beats behind it leave that much later (data and inserted frames alternate when
both wait, so a marker waits for at most one data frame and one export frame, and an
export cannot starve the data). The measurement side (tap, interval control) watches the
merger's copy of the accepted beats: the core's own markers and export frames pass its
tap as control frames (never counted). Besides ``m_axis`` there is a host export stream
(``host_export``, Verilog ``m_axis_export_*``).

Interval control (swap / overrun)
---------------------------------
:class:`hw.interval_control.IntervalControl` decides boundaries by INTERVAL_MODE.mode:
0 manual (``CONTROL.swap``), 1 time (the timebase reaches INTERVAL_START + i ·
INTERVAL_TICKS; the new interval's sequence number is ``i``; flag TIME_MODE), 2 marker
send (``CONTROL.swap`` or the interval timer inserts a marker frame carrying the ending
interval's sequence number, timestamp and flags; the boundary follows the marker's first
beat, so it falls between the same data frames as the marker), 3 marker receive (a
marker passing the input from MARKER_SRC_MAC with this CONFIG_ID ends the interval; the
new sequence number is the marker's + 1; a skipped number flags SEQUENCE_GAP; markers
from elsewhere are counted in MARKERS_REJECTED and ignored). Each boundary request
(with the new interval's sequence number, the flags and the timestamp of the interval
that ends) makes a swap *pending* (requests before the boundary merge into one: the
latest number and timestamp, the flags of all). It is executed at the next frame
boundary of the input stream (``HeaderTap.boundary_ok``: no frame open, computed one cycle
ahead into a register), so a frame's copy, latched at its SOF, is never split. (The tap
watches a registered copy of the merger's watch copy, so the decision depends on
registers only.) At that boundary:

* if the counter bank's other copy is CLEAN, the front copy flips (the SOF in that same
  cycle already takes the new copy), INTERVAL_SEQ takes the requested sequence number,
  the ending interval takes the request's flags and timestamp (FROZEN_FLAGS,
  FROZEN_TIMESTAMP once frozen), the new interval's status (sequence number, flags,
  packet count, CONFIG_ID) is reset,
  and a swap pulse enters the measurement pipeline *in order with the records* — it
  reaches the counter bank after the last update of the old copy and before the first of
  the new one, so the bank needs no long drain window;
* otherwise the boundary is an **overrun**: no swap, ``OVERRUNS`` counts up, INTERVAL_SEQ
  still takes the new number (so two measurement points stay aligned by sequence number),
  and the current interval is flagged OVERRUN (plus the request's flags) — the flag shows
  in ``FROZEN_FLAGS`` and ``STATUS.frozen_overrun`` when that interval is eventually
  frozen. Writing CONFIG_ID with a new value flags the current interval CONFIG_CHANGED.

While a swap travels through the pipeline no further boundary is taken (a pending request
waits). ``CONTROL.release`` goes straight to the bank (the frozen copy is cleared).
An interval's sequence number is INTERVAL_SEQ when it began (``FROZEN_SEQ`` for the frozen
copy); ``FROZEN_PACKETS`` counts the counted (IPv4/IPv6) frames of the frozen interval,
sampled or not.

Export
------
When a copy becomes FROZEN and INTERVAL_MODE has ``export_inband`` and/or
``export_host``, the exporter streams it as synopsis chunk frames
(``host_sw.contracts.control_frame.build_synopsis_frames``, byte for byte: FROZEN_SEQ / FLAGS /
TIMESTAMP / CONFIG_ID, LOCAL_MAC → EXPORT_DST_MAC) into the output stream (the
merger) and/or to ``host_export``; with ``auto_release`` it then releases the copy.
EXPORT_FRAMES counts the frames. The exporter shares the counter bank's frozen read port
with the bus's counter window: the bus has priority (the exporter skips a cycle the bus
reads) and each answer goes to whoever asked ``CounterBank.READ_LATENCY`` cycles before.
With only ``export_host``, a host port that is not ready only stalls the export. With
both ports, each beat goes to both: a stalled host port stalls the in-band frame in
progress too, and with it the data path behind it — keep ``m_axis_export_tready`` high
(or enable one port) when the data path must not wait on the host.

Latencies
---------
* pass-through: :data:`PASSTHROUGH_LATENCY` = 1 cycle, independent of the configuration;
* measurement: :attr:`LdaCore.measurement_latency` cycles from a frame's EOF acceptance to
  its update request at the counter bank (merger watch copy 1 + watch delay
  :attr:`LdaCore.TAP_WATCH_DELAY` (4) + tap 1 + hasher + selector 4; for the default LDA
  core with a 64-byte window 1 + 4 + 1 + 5 + 4 = 15), then
  ``CounterBank.UPDATE_LATENCY`` to the memory write.

Verilog export
--------------
::

    python -m hw.lda_pipeline --synopsis {lda,rda,lds} [--banks N] [--rows N]
        [--cells N] [--buckets N] [--vlda-cells N] [--thresholds a,b,..]
        [--digest-bits N] [--window-bytes N] [--data-width W] [--seed S]
        [--uart-timeout CYCLES] [--memory {generic,ecp5}] -o build/lda_core.v

writes the Verilog module ``lda_core`` (ports: ``clk``, ``rst``; ``s_axis_tdata``,
``s_axis_tkeep``, ``s_axis_tlast``, ``s_axis_tuser`` (frame error, with ``tlast``),
``s_axis_tvalid``, ``s_axis_tready``; the same ``m_axis_*``; ``bus_rx_tdata[7:0]``,
``bus_rx_tvalid``, ``bus_rx_tready``; ``bus_tx_tdata[7:0]``, ``bus_tx_tvalid``,
``bus_tx_tready``; the host export stream ``m_axis_export_tdata``, ``_tkeep``,
``_tlast``, ``_tuser`` (always 0), ``_tvalid``, ``_tready`` — tie ``m_axis_export_tready``
high if unused), and ``csr.csv`` / ``csr.json`` (``host_sw.contracts.regmap``) beside it, and
prints what it wrote. ``--banks`` is the LDA/RDA bank count, ``--rows`` the LDA rows or
the LDS rows, ``--cells`` the LDS cells, ``--buckets`` the RDA buckets per bank (also
accepted: ``--rows`` for RDA), ``--thresholds`` the LDA bank / LDS row thresholds
(reset values of the THRESHOLDS register).
"""

import argparse
import sys
from pathlib import Path

from amaranth.hdl import Cat, Module, Mux, Signal
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out, connect

from host_sw.contracts.config import LdaConfig, LdsConfig, RdaConfig, SynopsisConfig
from host_sw.contracts.hashing import default_masks
from host_sw.contracts.config_args import add_config_arguments, config_from_args
from host_sw.contracts.regmap import register_map

from host_sw.contracts.control_frame import IntervalFlags

from .bucket_select import BucketSelector
from .control_frame_tx import MarkerFrameSource
from .counter_bank import CounterBank
from .csr import CsrBank
from .exporter import Exporter
from .frame import FrameStream, check_data_width
from .frame_merger import FrameMerger
from .hash_h3 import PacketHasher
from .header_tap import HeaderTap
from .interval_control import RECEIVE_LATENCY, IntervalControl
from .timebase import Timebase
from .uartbone import UARTBoneBridge

__all__ = ["PASSTHROUGH_LATENCY", "LdaCore", "AxisTop", "export_verilog",
           "main"]

#: Cycles from a beat's transfer on ``s_axis`` to its ``m_axis.valid`` (no backpressure).
PASSTHROUGH_LATENCY = 1


def _reg_field(port, name="value"):
    return getattr(port.value, name)


def _config_copy(m: Module, value, name: str):
    """A registered copy of a configuration register's value, for a block far from the
    CSR bank (Fmax: the CSR bank's stored registers sit beside the bus logic, and a
    4 ns route from one straight into the interval timer's 64-bit adder was the whole
    core's critical path, 136.7 MHz). The copy follows one cycle later; write strobes
    that go with the value are delayed alike by the caller."""
    copy = Signal(value.shape(), name=name, reset_less=True)
    m.d.sync += copy.eq(value)
    return copy


class LdaCore(wiring.Component):
    """The measurement core: pass-through, measurement pipeline, counters and CSR bus.

    Parameters
    ----------
    config:
        :class:`~host_sw.contracts.config.LdaConfig`, :class:`~host_sw.contracts.config.RdaConfig` or
        :class:`~host_sw.contracts.config.LdsConfig`. Its run-time fields (thresholds, masks) are the
        reset values of the THRESHOLDS / MASKS registers.
    data_width:
        Frame data width in bits (a power of two, 8..1024).
    bridge_timeout_cycles:
        UARTBone: clocks after which a half-received command is dropped.
    memory:
        Counter RAM kind (:class:`hw.counter_bank.CounterBank`): ``"auto"`` (ECP5 block
        RAM with output register when elaborated for an ECP5 platform, else generic),
        ``"generic"`` or ``"ecp5"``.

    Members
    -------
    s_axis: In(FrameStream(data_width))
        Frames in.
    m_axis: Out(FrameStream(data_width))
        The same frames out, :data:`PASSTHROUGH_LATENCY` cycle later, with this core's
        marker and in-band export frames inserted between them (see the module
        docstring).
    bus_rx: In(stream.Signature(8))
        Host → bridge bytes (UARTBone protocol).
    bus_tx: Out(stream.Signature(8))
        Bridge → host bytes.
    host_export: Out(FrameStream(data_width))
        Synopsis chunk frames of each frozen interval when INTERVAL_MODE.export_host is
        set (the host export port).

    Attributes
    ----------
    regmap: host_sw.contracts.regmap.RegisterMap
    passthrough_latency: int
    measurement_latency: int
        Cycles from a frame's EOF transfer to its update request at the counter bank.
    export_frame_count: int
        Synopsis chunk frames per exported interval (at the default MTU).
    """

    #: Cycles from the merger's watch copy to the tap: a marker's boundary request
    #: (hw.interval_control.RECEIVE_LATENCY after its EOF on the watch copy), registered
    #: here (1), must reach the pending register before the tap sees the next SOF.
    TAP_WATCH_DELAY = RECEIVE_LATENCY + 1

    def __init__(self, *, config: SynopsisConfig, data_width: int = 64,
                 bridge_timeout_cycles: int = 100_000, memory: str = "auto"):
        if not isinstance(config, (LdaConfig, RdaConfig, LdsConfig)):
            raise ValueError(f"config must be an LdaConfig, RdaConfig or LdsConfig, "
                             f"not {type(config).__name__}")
        check_data_width(data_width)
        self.config = config
        self.data_width = data_width
        self.bridge_timeout_cycles = bridge_timeout_cycles
        self.memory = memory
        self.regmap = register_map(config, data_width=data_width)   # validates the width
        self._tap = HeaderTap(data_width=data_width, window_bytes=config.window_bytes,
                              ts_bits=config.ts_bits)
        self._hasher = PacketHasher(config=config)
        self._selector = BucketSelector(config=config)
        self._exporter = Exporter(config=config, data_width=data_width)
        self.export_frame_count = self._exporter.frame_count
        self.passthrough_latency = PASSTHROUGH_LATENCY
        self.measurement_latency = (1 + self.TAP_WATCH_DELAY + self._tap.latency
                                    + self._hasher.latency + self._selector.latency)
        super().__init__({
            "s_axis": In(FrameStream(data_width)),
            "m_axis": Out(FrameStream(data_width)),
            "bus_rx": In(stream.Signature(8)),
            "bus_tx": Out(stream.Signature(8)),
            "host_export": Out(FrameStream(data_width)),
        })

    def elaborate(self, platform):
        m = Module()
        config = self.config

        # -- data path -----------------------------------------------------------------
        # s_axis, markers, export frames → frame merger (registered: the pass-through)
        # → m_axis. The measurement side watches the merger's copy of what it accepted,
        # so the core's own markers and export frames pass its tap like any frame
        # (control frames: never counted).
        w = self.data_width
        m.submodules.merger = merger = FrameMerger(data_width=w, inserts=2)
        m.submodules.markers = markers = MarkerFrameSource(config=config, data_width=w)
        m.submodules.exporter = exporter = self._exporter
        connect(m, wiring.flipped(self.s_axis), merger.sink)
        connect(m, markers.source, merger.insert[0])
        connect(m, exporter.inband, merger.insert[1])
        connect(m, merger.source, wiring.flipped(self.m_axis))
        connect(m, exporter.host, wiring.flipped(self.host_export))

        # -- bus -----------------------------------------------------------------------
        m.submodules.bridge = bridge = UARTBoneBridge(
            timeout_cycles=self.bridge_timeout_cycles)
        m.submodules.csr = csr = CsrBank(regmap=self.regmap)
        connect(m, wiring.flipped(self.bus_rx), bridge.rx)
        connect(m, bridge.tx, wiring.flipped(self.bus_tx))
        connect(m, bridge.bus, csr.bus)

        # -- measurement side ----------------------------------------------------------
        m.submodules.timebase = timebase = Timebase(width=64)
        m.submodules.tap = tap = self._tap
        m.submodules.hasher = hasher = self._hasher
        m.submodules.selector = selector = self._selector
        m.submodules.counters = counters = CounterBank(config=config, drain_cycles=1,
                                                        memory=self.memory)

        # The interval control watches the merger's copy of the accepted beats (one
        # cycle after acceptance); its boundary requests are registered here (one cycle
        # more); the tap watches the same copy TAP_WATCH_DELAY cycles later, so every
        # request reaches the pending register before the tap sees the next frame's SOF,
        # as hw.interval_control requires. The timebase is delayed alike, so a frame's
        # timestamp is the tick of its SOF's acceptance. No path from the stream's pins
        # or from `ready` reaches the measurement side.
        stages = [(merger.watch_valid, merger.watch)]
        for k in range(self.TAP_WATCH_DELAY):
            valid, beat = Signal(name=f"watch{k}_valid"), Signal.like(merger.watch,
                                                                      name=f"watch{k}")
            m.d.sync += [valid.eq(stages[-1][0]), beat.eq(stages[-1][1])]
            stages.append((valid, beat))
        watch_valid, watch_payload = stages[-1]
        tap_next_valid, tap_next = stages[-2]         # the tap's beat of the next cycle
        now_line = [timebase.now[:config.ts_bits]]
        for k in range(self.TAP_WATCH_DELAY + 1):
            now_line.append(Signal(config.ts_bits, name=f"now_delayed{k}"))
            m.d.sync += now_line[-1].eq(now_line[-2])
        watch_now = now_line[-1]
        m.d.comb += [
            tap.watch.valid.eq(watch_valid),
            tap.watch.ready.eq(1),
            tap.watch.payload.eq(watch_payload),
            tap.now.eq(watch_now),
        ]
        connect(m, tap.record, hasher.record)
        connect(m, hasher.hashed, selector.hashed)
        connect(m, selector.request, counters.update)
        m.d.comb += counters.swap.eq(selector.swap)

        masks = _config_copy(m, csr.masks.value, "masks_copy")
        m.d.comb += [hasher.mask_packet_ipv4.eq(masks.packet_ipv4),
                     hasher.mask_packet_ipv6.eq(masks.packet_ipv6)]
        if isinstance(config, LdsConfig):
            m.d.comb += [hasher.mask_flow_ipv4.eq(masks.flow_ipv4),
                         hasher.mask_flow_ipv6.eq(masks.flow_ipv6)]
        if isinstance(config, (LdaConfig, LdsConfig)):
            thresholds = _config_copy(m, csr.thresholds.value, "thresholds_copy")
        if isinstance(config, LdaConfig):
            for j in range(config.banks):
                m.d.comb += selector.thresholds[j].eq(getattr(thresholds, f"bank{j}"))
        if isinstance(config, LdsConfig):
            for r in range(config.rows):
                m.d.comb += selector.row_thresholds[r].eq(getattr(thresholds, f"row{r}"))

        # Timebase over the bus: reads show the running count, writes set it.
        m.d.comb += [
            csr.timebase.current.ticks.eq(timebase.now),
            timebase.set.eq(csr.timebase.written),
            timebase.set_value.eq(csr.timebase.value.ticks),
        ]

        # Counter window reads (the bank's port carries a word layout; the CSR bank's a
        # plain word of the same width), shared with the exporter: the bus has priority
        # (the exporter holds off in a cycle the bus reads) and a shift register of
        # owners routes each answer READ_LATENCY cycles later to whoever asked.
        bus_read = csr.counters.en
        owners = Signal(CounterBank.READ_LATENCY)   # bit k: the bus read k + 1 cycles ago
        m.d.sync += owners.eq(Cat(bus_read, owners[:-1]))
        bus_answer = owners[-1]
        m.d.comb += [
            exporter.read_hold.eq(bus_read),
            counters.frozen.addr.eq(Mux(bus_read, csr.counters.addr, exporter.frozen.addr)),
            counters.frozen.en.eq(bus_read | exporter.frozen.en),
            csr.counters.data.eq(counters.frozen.data),
            csr.counters.valid.eq(counters.frozen.valid & bus_answer),
            csr.counters.error.eq(counters.frozen.error),
            exporter.frozen.data.eq(counters.frozen.data),
            exporter.frozen.valid.eq(counters.frozen.valid & ~bus_answer),
            exporter.frozen.error.eq(counters.frozen.error),
        ]
        # CONTROL.release, or the exporter's auto release after the last frame.
        m.d.comb += counters.release.eq(csr.control.value.release | exporter.release)

        # -- interval control: boundaries (IntervalControl), swap / overrun --------------
        m.submodules.interval_control = ic = IntervalControl(data_width=w)
        # Configuration copies beside their users; the rearm strobe follows them.
        mode = _config_copy(m, csr.interval_mode.value, "interval_mode_copy")
        rearm = Signal()
        m.d.sync += rearm.eq(csr.interval_mode.written | csr.interval_ticks.written
                             | csr.interval_start.written)
        config_id = _config_copy(m, csr.config_id.value, "config_id_copy")
        local_mac = _config_copy(m, csr.local_mac.value.mac, "local_mac_copy")
        export_dst_mac = _config_copy(m, csr.export_dst_mac.value.mac, "export_dst_mac_copy")
        m.d.comb += [
            ic.mode.eq(mode.mode),
            ic.rearm.eq(rearm),
            ic.interval_ticks.eq(_config_copy(m, csr.interval_ticks.value.ticks,
                                              "interval_ticks_copy")),
            ic.interval_start.eq(_config_copy(m, csr.interval_start.value.ticks,
                                              "interval_start_copy")),
            ic.now.eq(timebase.now),
            ic.swap.eq(csr.control.value.swap),
            ic.config_id.eq(config_id),
            ic.marker_src_mac.eq(_config_copy(m, csr.marker_src_mac.value.mac,
                                              "marker_src_mac_copy")),
            # the merger's watch copy, which the tap sees one cycle later
            ic.watch.valid.eq(merger.watch_valid),
            ic.watch.ready.eq(1),
            ic.watch.payload.eq(merger.watch),
            ic.marker_sent.eq(merger.inserted_sof[0]),
            markers.src_mac.eq(local_mac),
            markers.dst_mac.eq(export_dst_mac),
            markers.config_id.eq(config_id),
        ]
        connect(m, ic.marker, markers.request)

        swap_pending = Signal()
        swap_in_flight = Signal()       # a swap pulse is still in the record pipeline
        front_copy = Signal()           # the copy frames starting now are tagged with
        boundary_count = Signal(32)     # INTERVAL_SEQ
        overruns = Signal(32)
        interval_seq = Signal(data.ArrayLayout(32, 2))
        interval_flags = Signal(data.ArrayLayout(8, 2))
        interval_timestamp = Signal(data.ArrayLayout(64, 2))
        interval_packets = Signal(data.ArrayLayout(32, 2))
        interval_config_id = Signal(data.ArrayLayout(32, 2))
        # The pending boundary's request (IntervalControl.boundary_*), latched with it.
        pending_seq, pending_flags = Signal(32), Signal(8)
        pending_timestamp = Signal(64)

        # HeaderTap.boundary_ok one cycle ahead, registered (Fmax: the boundary decision
        # then takes registers only): the tap's next beat is in the watch delay line now,
        # and its frame-open state next cycle follows from this cycle's.
        tap_idle = Signal(init=1)           # == tap.boundary_ok
        next_open = Mux(watch_valid, ~watch_payload.last, tap.in_frame)
        m.d.sync += tap_idle.eq(~next_open & ~(tap_next_valid & tap_next.last))

        boundary = Signal()
        execute = Signal()
        m.d.comb += [
            boundary.eq(swap_pending & tap_idle & ~swap_in_flight),
            execute.eq(boundary & counters.other_clean),
        ]

        # The interval control's requests, registered (Fmax: its sequence-number adder
        # and comparisons stay off the pending registers' enables).
        ic_boundary, ic_seq, ic_flags = Signal(), Signal(32), Signal(8)
        ic_timestamp = Signal(64)
        m.d.sync += [ic_boundary.eq(ic.boundary), ic_seq.eq(ic.boundary_seq),
                     ic_flags.eq(ic.boundary_flags), ic_timestamp.eq(ic.boundary_timestamp)]
        with m.If(ic_boundary):
            # Requests before the boundary merge: the latest sequence number and
            # timestamp, the flags of all.
            m.d.sync += [swap_pending.eq(1), pending_seq.eq(ic_seq),
                         pending_timestamp.eq(ic_timestamp),
                         pending_flags.eq(Mux(swap_pending & ~boundary,
                                              pending_flags | ic_flags,
                                              ic_flags))]
        with m.Elif(boundary):
            m.d.sync += swap_pending.eq(0)

        with m.If(selector.swap):
            m.d.sync += swap_in_flight.eq(0)
        with m.If(execute):
            m.d.sync += swap_in_flight.eq(1)

        # The copy flips in the boundary's cycle (an SOF in that cycle takes the new one).
        new_copy = ~front_copy
        m.d.comb += [tap.swap.eq(execute), tap.copy.eq(Mux(execute, new_copy, front_copy))]
        with m.If(execute):
            m.d.sync += front_copy.eq(new_copy)

        # Interval bookkeeping, one cycle later (short paths): `front_copy` then already
        # names the new interval's copy on a swap, and still the current one on an overrun.
        boundary_done = Signal()
        swapped = Signal()
        taken_seq, taken_flags, taken_timestamp = Signal(32), Signal(8), Signal(64)
        m.d.sync += [boundary_done.eq(boundary), swapped.eq(execute)]
        with m.If(boundary):
            m.d.sync += [taken_seq.eq(pending_seq), taken_flags.eq(pending_flags),
                         taken_timestamp.eq(pending_timestamp)]
        # CONFIG_CHANGED: CONFIG_ID written with a new value during the interval.
        config_id_before = Signal(32)
        config_changed = Signal()
        m.d.sync += [config_id_before.eq(csr.config_id.value),
                     config_changed.eq(csr.config_id.written
                                       & (csr.config_id.value != config_id_before))]
        changed_flag = Mux(config_changed, int(IntervalFlags.CONFIG_CHANGED), 0)
        with m.If(boundary_done):
            m.d.sync += boundary_count.eq(taken_seq)
            with m.If(swapped):
                ended = ~front_copy
                m.d.sync += [
                    interval_flags[ended].eq(interval_flags[ended] | taken_flags
                                             | changed_flag),
                    interval_timestamp[ended].eq(taken_timestamp),
                    interval_seq[front_copy].eq(taken_seq),
                    interval_flags[front_copy].eq(0),
                    interval_config_id[front_copy].eq(csr.config_id.value),
                ]
            with m.Else():
                m.d.sync += [overruns.eq(overruns + 1),
                             interval_flags[front_copy].eq(
                                 interval_flags[front_copy] | taken_flags | changed_flag
                                 | int(IntervalFlags.OVERRUN))]
        with m.Elif(config_changed):
            m.d.sync += interval_flags[front_copy].eq(interval_flags[front_copy]
                                                      | int(IntervalFlags.CONFIG_CHANGED))
        m.d.comb += ic.ending_flags.eq(interval_flags[front_copy])

        # Packets per interval, counted where the records meet the counter bank (the new
        # interval's count starts from zero: its copy has no record in flight).
        request_copy = selector.request.copy
        for k in range(2):
            with m.If(swapped & (front_copy == k)):
                m.d.sync += interval_packets[k].eq(0)
            with m.Elif(selector.counted & (request_copy == k)):
                m.d.sync += interval_packets[k].eq(interval_packets[k] + 1)

        # -- export: each newly frozen copy, if INTERVAL_MODE asks --------------------
        frozen = counters.frozen_copy
        frozen_ready_before = Signal()
        m.d.sync += frozen_ready_before.eq(counters.frozen_ready)
        m.d.comb += [
            exporter.start.eq(counters.frozen_ready & ~frozen_ready_before
                              & (mode.export_inband | mode.export_host)),
            exporter.seq.eq(interval_seq[frozen]),
            exporter.flags.eq(interval_flags[frozen]),
            exporter.timestamp.eq(interval_timestamp[frozen]),
            exporter.config_id.eq(interval_config_id[frozen]),
            exporter.src_mac.eq(local_mac),
            exporter.dst_mac.eq(export_dst_mac),
            exporter.to_inband.eq(mode.export_inband),
            exporter.to_host.eq(mode.export_host),
            exporter.auto_release.eq(mode.auto_release),
        ]

        # At reset copy 0 is ACTIVE: the interval with sequence number 0.
        status = csr.status.value
        m.d.comb += [
            status.active_copy.eq(counters.active_copy),
            status.frozen_ready.eq(counters.frozen_ready),
            status.clearing.eq(counters.clearing),
            status.frozen_overrun.eq(interval_flags[frozen][0]),   # IntervalFlags.OVERRUN
            status.other_clean.eq(counters.other_clean),
            csr.interval_seq.value.eq(boundary_count),
            csr.frozen_seq.value.eq(interval_seq[frozen]),
            csr.frozen_packets.value.eq(interval_packets[frozen]),
            csr.frozen_config_id.value.eq(interval_config_id[frozen]),
            csr.frozen_flags.value.eq(interval_flags[frozen]),
            csr.frozen_timestamp.value.ticks.eq(interval_timestamp[frozen]),
            csr.overruns.value.eq(overruns),
            csr.markers_sent.value.eq(ic.markers_sent),
            csr.markers_accepted.value.eq(ic.markers_accepted),
            csr.markers_rejected.value.eq(ic.markers_rejected),
            csr.sequence_gaps.value.eq(ic.sequence_gaps),
            csr.export_frames.value.eq(exporter.frames),
            csr.frames_seen.value.eq(tap.status.frames),
            csr.frames_counted.value.eq(tap.status.counted),
            csr.frames_errored.value.eq(tap.status.errored),
            csr.frames_runt.value.eq(tap.status.runt),
            csr.frames_non_ip.value.eq(tap.status.non_ip),
            csr.frames_control.value.eq(tap.status.control),
        ]
        return m


class AxisTop(wiring.Component):
    """Flat AXI4-Stream port names around an :class:`LdaCore`, for the Verilog export
    (cocotbext-axi attaches with the bus prefixes ``s_axis`` / ``m_axis``)."""

    def __init__(self, core: LdaCore):
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


def export_verilog(core: LdaCore, path, *, name: str = "lda_core") -> list[Path]:
    """Write ``core`` as Verilog module ``name`` to ``path`` and ``csr.csv`` /
    ``csr.json`` beside it; return the paths written."""
    from amaranth.back import verilog
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    text = verilog.convert(AxisTop(core), name=name)
    path.write_text(text)
    csv_path, json_path = core.regmap.write_exports(path.parent)
    return [path, Path(csv_path), Path(json_path)]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m hw.lda_pipeline",
        description="Export the LDA/RDA/LDS measurement core as Verilog (module lda_core) "
                    "with csr.csv/csr.json beside it.")
    add_config_arguments(parser)
    parser.add_argument("--data-width", type=int, default=64, help="frame data width, bits")
    parser.add_argument("--uart-timeout", type=int, default=100_000,
                        help="UARTBone half-command timeout in clocks")
    parser.add_argument("--memory", choices=("generic", "ecp5"), default="generic",
                        help="counter RAMs: generic (any simulator/tool) or ECP5 DP16KD")
    parser.add_argument("-o", "--output", default="build/lda_core.v")
    args = parser.parse_args(argv)
    try:
        config = config_from_args(args)
        core = LdaCore(config=config, data_width=args.data_width,
                       bridge_timeout_cycles=args.uart_timeout, memory=args.memory)
    except ValueError as exc:
        parser.error(str(exc))
    written = export_verilog(core, args.output)
    print(f"{config.kind} core: shape {config.shape}, data width {args.data_width}, "
          f"config ID {config.config_id:#010x}, register map ID {core.regmap.id_value:#010x}")
    print(f"pass-through latency {core.passthrough_latency} cycle(s), measurement latency "
          f"{core.measurement_latency} cycles (EOF to update request)")
    for path in written:
        print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

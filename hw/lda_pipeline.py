# SPDX-License-Identifier: BSD-2-Clause
"""The measurement core of every synopsis kind with gateware, and its Verilog export.

:class:`MeasurementCore` is the gateware's composition root: frames in → frame merger
(the pass-through, :data:`PASSTHROUGH_LATENCY` cycle, inserting the core's marker, export
and path frames between data frames) → frames out, and beside it the measurement side,
which only watches the accepted beats: header tap → the kind's measurement path
(:mod:`hw.measurement_path`), interval control and ledger, exporter, and the CSR bank
behind the UARTBone bridge. The domain logic lives in those components; this module
creates and wires them. How packets, intervals and exports move through them and the
core's latencies: ``docs/DESIGN.md``, "Data flow of a packet", "Data flow of a counter"
and "The core's latencies".

``python -m hw.lda_pipeline --synopsis KIND [options] -o build/lda_core.v`` writes the
Verilog module and ``csr.csv`` / ``csr.json`` beside it (options:
:mod:`hw.verilog_export`; ports, clock, reset and timestamp: ``docs/CORE_INTERFACE.md``).
"""

import sys
from types import SimpleNamespace

from amaranth.hdl import C, Cat, DomainRenamer, Module, Mux, Signal
from amaranth.lib import stream, wiring
from amaranth.lib.wiring import In, Out, connect

from host_sw.contracts.config import CONFIG_CLASSES
from host_sw.contracts.check_value import header_bits
from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.frames.frame_format import ROLE_FROM_MODE, ROLE_SETTINGS, Role
from host_sw.contracts.regmap import register_map

from hw.bus.core_registers import config_copy, wire_frozen_reads, wire_path_registers, wire_runtime_config, wire_status
from hw.bus.csr import CsrBank
from hw.bus.csr_crossing import CsrBusCrossing
from hw.inband.exporter import Exporter
from hw.inband.exporter_crossing import ExporterCrossing
from hw.frames.frame import FrameStream, check_data_width
from hw.frames.frame_merger import FrameMerger
from hw.frames.header_tap import HeaderTap
from hw.hash_h3 import HASH_FAN_IN
from hw.interval.interval_control import RECEIVE_LATENCY, IntervalControl
from hw.interval.interval_ledger import IntervalLedger
from hw.inband.marker_crossing import MarkerSourceCrossing
from hw.inband.marker_source import MarkerFrameSource
from hw.measurement_path import measurement_path
from hw.arith.stages import delayed
from hw.frames.tap_watch import wire_tap_watch
from hw.frames.timebase import Timebase
from hw.counters.freeze_check import RecordCheck
from hw.bus.uartbone import DEFAULT_TIMEOUT, UARTBoneBridge, check_timeout_cycles, timeout_to_cycles
from hw.verilog_export import export_main

__all__ = ["PASSTHROUGH_LATENCY", "DEFAULT_CLK_FREQ", "MeasurementCore", "main"]

#: Cycles from a beat's transfer on ``s_axis`` to its ``m_axis.valid`` (no backpressure).
PASSTHROUGH_LATENCY = 1
#: The clock (Hz) the bridge's default timeout assumes when nothing says otherwise (the
#: Verilog export without ``--clk-freq``).
DEFAULT_CLK_FREQ = 100e6


class MeasurementCore(wiring.Component):
    """The measurement core: pass-through, measurement pipeline, counters and CSR bus.

    A composition root: it creates the components of the module docstring and wires
    them; the domain logic lives in the components (the interval bookkeeping in
    :class:`hw.interval.interval_ledger.IntervalLedger`).

    Parameters
    ----------
    config:
        A synopsis configuration (``host_sw.contracts.config.CONFIG_CLASSES``) of a kind
        with a measurement path (:data:`hw.measurement_path.PATHS`). Its run-time fields
        (thresholds, masks) are the reset values of the THRESHOLDS / MASKS registers.
    data_width:
        Frame data width in bits (a power of two, 8..1024).
    bridge_timeout_cycles:
        UARTBone: clocks without a byte after which a half-received command is dropped.
        Default (``None``): :data:`hw.bus.uartbone.DEFAULT_TIMEOUT` (100 ms, as LiteX's
        UARTBone) at ``clk_freq``.
    clk_freq:
        The bridge's clock in Hz (the core's clock; the control clock when
        ``control_domain`` is not ``"sync"``), for the bridge's default timeout. Default
        (``None``): the platform's ``default_clk_frequency`` when elaborated for a board
        (the core's ``sync`` domain there), else :data:`DEFAULT_CLK_FREQ`.
    memory:
        Counter RAM kind (:class:`hw.counters.counter_bank.CounterBank`): ``"auto"`` (ECP5 block
        RAM with output register when elaborated for an ECP5 platform, else generic),
        ``"generic"`` or ``"ecp5"``.
    hash_fan_in:
        The hasher's trees' fan-in (:class:`hw.hash_h3.PacketHasher`):
        :data:`~hw.hash_h3.HASH_FAN_IN` (default) for the fast datapath clock,
        :data:`~hw.hash_h3.COMPACT_HASH_FAN_IN` for fewer flip-flops at a slow one.
    compact_reads:
        The CSR bank's read multiplexer with its first level unregistered
        (:class:`hw.bus.csr_decode.CsrReadMux`'s ``compact``): one flip-flop fewer per
        readable register bit, for a bank clocked slowly (the boards' 62.5 MHz); default
        ``False``.
    control_domain:
        The clock domain of the control side: the UARTBone bridge and with it ``bus_rx`` /
        ``bus_tx``, and the exporter. ``"sync"`` (default): one clock for the whole core.
        Another name (``"ctrl"``): the bridge runs in that domain and each bus access
        crosses into ``sync`` (the frame datapath, the CSR bank and everything else)
        through :class:`hw.bus.csr_crossing.CsrBusCrossing`; the exporter runs there behind
        :class:`hw.inband.exporter_crossing.ExporterCrossing` (``docs/DESIGN.md``, "Clock
        domains").

    Members
    -------
    s_axis: In(FrameStream(data_width))
        Frames in.
    m_axis: Out(FrameStream(data_width))
        The same frames out, :data:`PASSTHROUGH_LATENCY` cycle later, with this core's
        marker and in-band export frames inserted between them (``docs/DESIGN.md``,
        "Data flow of a packet", step 5).
    bus_rx: In(stream.Signature(8))
        Host → bridge bytes (UARTBone protocol), in ``control_domain``.
    bus_tx: Out(stream.Signature(8))
        Bridge → host bytes, in ``control_domain``.
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
    #: (hw.interval.interval_control.RECEIVE_LATENCY after its EOF on the watch copy), registered
    #: here (1), must reach the pending register before the tap sees the next SOF.
    TAP_WATCH_DELAY = RECEIVE_LATENCY + 1
    #: Cycles from an inserted marker's SOF on the watch copy to the sender's boundary
    #: request (marker-send mode): the request must become pending after the tap has seen
    #: every frame accepted before the marker and before it sees the marker's SOF — the
    #: marker is the boundary on the wire, so both points split the stream at it. Two
    #: registers follow (interval control, ledger), so the request is pending two cycles
    #: before the tap sees the marker, as with a four-cycle tap delay.
    MARKER_SENT_DELAY = TAP_WATCH_DELAY - 4
    #: The exporter's reads in flight when it runs in the control domain (its reads and
    #: their answers cross twice; ``docs/DESIGN.md``, "Clock domains").
    CROSSING_READ_AHEAD = 16

    def __init__(self, *, config: SynopsisConfig, data_width: int = 64,
                 bridge_timeout_cycles: int | None = None, clk_freq: float | None = None,
                 memory: str = "auto", control_domain: str = "sync",
                 hash_fan_in: int = HASH_FAN_IN, compact_reads: bool = False):
        if CONFIG_CLASSES.get(getattr(config, "kind", None)) is not type(config):
            raise ValueError(f"config must be a synopsis configuration "
                             f"(host_sw.contracts.config.CONFIG_CLASSES), "
                             f"not {type(config).__name__}")
        check_data_width(data_width)
        self.config = config
        self.data_width = data_width
        if bridge_timeout_cycles is not None:
            check_timeout_cycles(bridge_timeout_cycles)
        if clk_freq is not None:
            timeout_to_cycles(clk_freq)                             # validates it
        self.bridge_timeout_cycles = bridge_timeout_cycles
        self.clk_freq = clk_freq
        self.memory = memory
        if not (isinstance(control_domain, str) and control_domain.isidentifier()):
            raise ValueError(f"control_domain must be a clock domain name, "
                             f"not {control_domain!r}")
        self.control_domain = control_domain
        self.regmap = register_map(config, data_width=data_width)   # validates the width
        self._tap = HeaderTap(data_width=data_width, window_bytes=config.window_bytes,
                              ts_bits=config.ts_bits)
        self.hash_fan_in = hash_fan_in         # (checked by the hasher's trees)
        if not isinstance(compact_reads, bool):
            raise ValueError(f"compact_reads must be a bool, not {compact_reads!r}")
        self.compact_reads = compact_reads
        self._path = measurement_path(config, memory=memory, data_width=data_width,
                                      hash_fan_in=hash_fan_in)
        # In a two-domain core the exporter's reads make a round trip through the
        # crossing (hw.inband.exporter_crossing): more of them in flight keep frames going.
        self._exporter = Exporter(config=config, data_width=data_width,
                                  **({} if control_domain == "sync"
                                     else {"read_ahead": self.CROSSING_READ_AHEAD}))
        self.export_frame_count = self._exporter.frame_count
        self.passthrough_latency = PASSTHROUGH_LATENCY
        self.measurement_latency = (1 + self.TAP_WATCH_DELAY + self._tap.latency
                                    + self._path.latency)
        if ("watch" in self._path.signature.members
                and self._path.watch_lead != self.TAP_WATCH_DELAY + self._tap.latency):
            raise ValueError(f"the {config.kind} path expects its tap records "
                             f"{self._path.watch_lead} cycles after the watch copy, the core "
                             f"gives {self.TAP_WATCH_DELAY + self._tap.latency}")
        super().__init__({
            "s_axis": In(FrameStream(data_width)),
            "m_axis": Out(FrameStream(data_width)),
            "bus_rx": In(stream.Signature(8)),
            "bus_tx": Out(stream.Signature(8)),
            "host_export": Out(FrameStream(data_width)),
        })

    def elaborate(self, platform):
        m = Module()
        w, config = self.data_width, self.config
        # Data path: s_axis, markers, export frames → frame merger (registered: the
        # pass-through) → m_axis; the exporter's other port is the host export stream
        # (with the path's host frames merged in, where it has them).
        path_inserts = "insert" in self._path.signature.members
        m.submodules.merger = merger = FrameMerger(data_width=w, inserts=2 + path_inserts)
        one_clock = self.control_domain == "sync"
        # The marker source, like the exporter, in the control domain when there is one.
        markers = MarkerFrameSource(config=config, data_width=w)
        m.submodules.markers = markers = (
            markers if one_clock
            else MarkerSourceCrossing(markers, control_domain=self.control_domain))
        # The exporter (and its SipHash tagger) in the control domain when there is one,
        # behind the crossing that gives it the exporter's members in ``sync``.
        m.submodules.exporter = exporter = (
            self._exporter if one_clock
            else ExporterCrossing(self._exporter, control_domain=self.control_domain))
        # No frame enters while the clearing sweep after reset runs (block RAM keeps its
        # counts over a reset; the sweep clears both copies, hw.counters.copy_control).
        sweeping = self._path.sweeping
        m.d.comb += [merger.sink.payload.eq(self.s_axis.payload),
                     merger.sink.valid.eq(self.s_axis.valid & ~sweeping),
                     self.s_axis.ready.eq(merger.sink.ready & ~sweeping)]
        connect(m, markers.source, merger.insert[0])
        connect(m, exporter.inband, merger.insert[1])
        if path_inserts:                     # the kind's own frames (RLI's references)
            connect(m, self._path.insert, merger.insert[2])
        connect(m, merger.source, wiring.flipped(self.m_axis))
        if "host_insert" in self._path.signature.members:
            # the kind's frames for the host (OPA's records, as the register says) join
            # the exporter's, whole frames (the exporter's first after each of them)
            m.submodules.host_merger = host_merger = FrameMerger(data_width=w, inserts=1)
            connect(m, exporter.host, host_merger.sink)
            connect(m, self._path.host_insert, host_merger.insert[0])
            connect(m, host_merger.source, wiring.flipped(self.host_export))
        else:
            connect(m, exporter.host, wiring.flipped(self.host_export))
        # Bus: UARTBone bridge (control domain) → CSR bank (through the crossing when the
        # control domain is not the datapath's).
        bridge = UARTBoneBridge(timeout_cycles=self.bridge_timeout_for(platform))
        m.submodules.bridge = bridge if one_clock else DomainRenamer(self.control_domain)(bridge)
        m.submodules.csr = csr = CsrBank(regmap=self.regmap, compact_reads=self.compact_reads)
        connect(m, wiring.flipped(self.bus_rx), bridge.rx)
        connect(m, bridge.tx, wiring.flipped(self.bus_tx))
        if one_clock:
            connect(m, bridge.bus, csr.bus)
        else:
            m.submodules.bus_crossing = crossing = CsrBusCrossing(
                master_domain=self.control_domain, target_domain="sync")
            connect(m, bridge.bus, crossing.bus)
            connect(m, crossing.target, csr.bus)
        # Measurement side: tap → the kind's measurement path (hw.measurement_path).
        m.submodules.timebase = timebase = Timebase(width=64)
        m.submodules.tap = tap = self._tap
        m.submodules.path = path = self._path
        frame_idle = wire_tap_watch(m, merger, tap, timebase, delay=self.TAP_WATCH_DELAY,
                                    ts_bits=config.ts_bits)
        if "watch" in path.signature.members:  # the undelayed watch copy (hw.measurement_path)
            m.d.comb += [path.watch.valid.eq(merger.watch_valid), path.watch.ready.eq(1),
                         path.watch.payload.eq(merger.watch)]
        connect(m, tap.record, path.record)
        wire_runtime_config(m, csr, path)
        wire_path_registers(m, csr, path, self.regmap)
        # Timebase over the bus: reads show the running count (its status_sources), writes
        # set it.
        m.d.comb += [
            timebase.set.eq(csr.timebase.written),
            timebase.set_value.eq(csr.timebase.value.ticks),
        ]
        wire_frozen_reads(m, csr, path, exporter, config)
        # CONTROL.release, or the exporter's auto release after the last frame.
        m.d.comb += path.release.eq(csr.control.value.release | exporter.release)
        # Intervals: the control decides boundaries, the ledger executes them.
        m.submodules.interval_control = ic = IntervalControl(data_width=w)
        m.submodules.ledger = ledger = IntervalLedger()
        copies = self._wire_interval_control(m, csr, ic, merger, markers, timebase)
        self._wire_ledger(m, ledger, ic, csr, tap, path, frame_idle, copies)
        self._wire_export(m, exporter, ledger, path, copies)
        self._wire_path_frames(m, path, timebase, copies, ledger)
        # FROZEN_CHECK covers the whole interval record: the path's CRC of the words with
        # the ledger's header folded in; STATUS.frozen_ready waits for it.
        record_check, path_status = self._wire_record_check(m, ledger, path, config)
        # The registers the bank reads from the core, from the parts' tables; AUTH_KEY
        # is write-only: its reads return 0.
        wire_status(m, csr, self.regmap, {
            "ledger": ledger.status_sources(), "interval_control": ic.status_sources(),
            "exporter": exporter.status_sources(), "tap": tap.status_sources(),
            "timebase": timebase.status_sources(), "path": path_status,
            "record_check": record_check,
            "core": {"auth_key": C(0, self.regmap["auth_key"].width)}})
        return m

    @staticmethod
    def _wire_record_check(m, ledger, path, config):
        """:class:`hw.counters.freeze_check.RecordCheck` over the path's words CRC and the
        frozen interval's header (``docs/SPEC.md`` §4.4: the
        :func:`~host_sw.contracts.check_value.header_fields` of the kind, RLI's frozen
        counts after the rest). Returns its status table (FROZEN_CHECK,
        STATUS.frozen_ready) and the path's table without those two."""
        m.submodules.record_check = rc = RecordCheck(header_bits=header_bits(config))
        frozen = ledger.frozen
        rli = ([getattr(path, f"rli_frozen_{n}") for n in
                ("references", "overflowed", "unreferenced", "refused")]
               if config.kind == "rli" else [])
        m.d.comb += [rc.words_check.eq(path.frozen_check),
                     rc.header.eq(Cat(frozen.seq, frozen.flags, frozen.packets,
                                      frozen.config_id, frozen.timestamp, frozen.role,
                                      frozen.src_mac, *rli)),
                     rc.frozen_ready.eq(path.frozen_ready)]
        path_status = dict(path.status_sources())
        del path_status["frozen_check"], path_status["status.frozen_ready"]
        return {"frozen_check": rc.value, "status.frozen_ready": rc.ready}, path_status

    def bridge_timeout_for(self, platform=None) -> int:
        """The bridge's half-command timeout in clocks when elaborated for ``platform``
        (see the ``bridge_timeout_cycles`` and ``clk_freq`` parameters)."""
        if self.bridge_timeout_cycles is not None:
            return self.bridge_timeout_cycles
        clk_freq = self.clk_freq
        if clk_freq is None:
            clk_freq = getattr(platform, "default_clk_frequency", None) or DEFAULT_CLK_FREQ
        return timeout_to_cycles(clk_freq, DEFAULT_TIMEOUT)

    def _wire_path_frames(self, m, path, timebase, copies, ledger):
        """What a path that inserts frames of its own (``insert``) or stamps ticks needs
        from the core, by member name (hw.measurement_path): ``now`` (the timebase),
        ``interval_seq`` (the ledger's current interval number),
        ``frame_src_mac`` / ``frame_dst_mac`` (LOCAL_MAC / EXPORT_DST_MAC),
        ``frame_config_id`` (CONFIG_ID), ``frame_key`` / ``frame_auth`` (AUTH_KEY /
        AUTH_MODE.enable) — the registered copies the markers and the exporter use."""
        sources = {"now": timebase.now, "interval_seq": ledger.interval_seq,
                   "frame_src_mac": copies.local_mac,
                   "frame_dst_mac": copies.export_dst_mac,
                   "frame_config_id": copies.config_id, "frame_key": copies.auth.key,
                   "frame_auth": copies.auth.enable}
        for name, value in sources.items():
            if name in path.signature.members:
                m.d.comb += getattr(path, name).eq(value)

    def _wire_interval_control(self, m, csr, ic, merger, markers, timebase):
        """The interval control and the marker source, from registered copies of their
        configuration registers (beside their users; the rearm strobe follows them).
        Returns the copies the exporter and the path share (mode, MACs, auth, CONFIG_ID)."""
        mode = config_copy(m, csr.interval_mode.value, "interval_mode_copy")
        rearm = Signal()
        m.d.sync += rearm.eq(csr.interval_mode.written | csr.interval_ticks.written
                             | csr.interval_start.written)
        config_id = config_copy(m, csr.config_id.value, "config_id_copy")
        local_mac = config_copy(m, csr.local_mac.value.mac, "local_mac_copy")
        export_dst_mac = config_copy(m, csr.export_dst_mac.value.mac, "export_dst_mac_copy")
        # AUTH_MODE/AUTH_KEY for the markers' and exports' tags (docs/SPEC.md §6 "Tag").
        auth = SimpleNamespace(
            enable=config_copy(m, csr.auth_mode.value.enable, "auth_enable_copy"),
            key=config_copy(m, csr.auth_key.value.key, "auth_key_copy"))
        m.d.comb += [
            ic.key.eq(auth.key), ic.auth.eq(auth.enable),
            markers.key.eq(auth.key), markers.auth.eq(auth.enable),
            ic.mode.eq(mode.mode),
            ic.rearm.eq(rearm),
            ic.interval_ticks.eq(config_copy(m, csr.interval_ticks.value.ticks,
                                              "interval_ticks_copy")),
            ic.interval_start.eq(config_copy(m, csr.interval_start.value.ticks,
                                              "interval_start_copy")),
            ic.now.eq(timebase.now),
            ic.swap.eq(csr.control.value.swap),
            ic.config_id.eq(config_id),
            ic.marker_src_mac.eq(config_copy(m, csr.marker_src_mac.value.mac,
                                              "marker_src_mac_copy")),
            # the merger's watch copy, which the tap sees later
            ic.watch.valid.eq(merger.watch_valid),
            ic.watch.ready.eq(1),
            ic.watch.payload.eq(merger.watch),
            ic.marker_sent.eq(delayed(m, merger.inserted_sof[0], self.MARKER_SENT_DELAY,
                                      name="marker_sent")),
            markers.src_mac.eq(local_mac),
            markers.dst_mac.eq(export_dst_mac),
            markers.config_id.eq(config_id),
        ]
        connect(m, ic.marker, markers.request)
        return SimpleNamespace(mode=mode, local_mac=local_mac, export_dst_mac=export_dst_mac,
                               auth=auth, config_id=config_id)

    @staticmethod
    def _role(m, csr, copies):
        """The point's role (:func:`host_sw.contracts.frames.frame_format.effective_role`
        of ROLE.role and INTERVAL_MODE.mode), registered."""
        setting = config_copy(m, csr.role.value.role, "role_copy")
        implied = C(0, 8)
        for mode, role in ROLE_FROM_MODE.items():
            implied = Mux(copies.mode.mode == mode, int(role), implied)
        role = Signal(8, name="role")
        m.d.sync += role.eq(Mux(setting == ROLE_SETTINGS["auto"], implied,
                                Mux(setting == ROLE_SETTINGS["none"], int(Role.NONE),
                                    setting)))
        return role

    def _wire_ledger(self, m, ledger, ic, csr, tap, path, frame_idle, copies):
        """The interval control's boundary requests → the ledger → the tap's swap/copy;
        the ledger watches the records meeting the counter bank and CONFIG_ID, and records
        the point's role and LOCAL_MAC into each interval that ends."""
        m.d.comb += [
            ledger.request.eq(ic.boundary),
            ledger.request_data.seq.eq(ic.boundary_seq),
            ledger.request_data.flags.eq(ic.boundary_flags),
            ledger.request_data.timestamp.eq(ic.boundary_timestamp),
            ledger.frame_idle.eq(frame_idle),
            ledger.other_clean.eq(path.other_clean),
            ledger.swap_arrived.eq(path.swap_arrived),
            ledger.counted.eq(path.counted),
            ledger.counted_copy.eq(path.counted_copy),
            ledger.config_id.eq(csr.config_id.value),
            ledger.config_id_written.eq(csr.config_id.written),
            ledger.frozen_copy.eq(path.frozen_copy),
            ledger.role.eq(self._role(m, csr, copies)),
            ledger.src_mac.eq(copies.local_mac),
            tap.swap.eq(ledger.swap),
            tap.copy.eq(ledger.copy),
            ic.ending_flags.eq(ledger.ending_flags),
        ]

    def _wire_export(self, m, exporter, ledger, path, copies):
        """Export each newly frozen copy, with its interval's status, if INTERVAL_MODE
        asks."""
        mode, export_dst_mac, auth = copies.mode, copies.export_dst_mac, copies.auth
        frozen = ledger.frozen
        frozen_ready_before = Signal()
        m.d.sync += frozen_ready_before.eq(path.frozen_ready)
        m.d.comb += [
            exporter.start.eq(path.frozen_ready & ~frozen_ready_before
                              & (mode.export_inband | mode.export_host)),
            exporter.seq.eq(frozen.seq),
            exporter.flags.eq(frozen.flags),
            exporter.timestamp.eq(frozen.timestamp),
            exporter.config_id.eq(frozen.config_id),
            exporter.role.eq(frozen.role),
            exporter.src_mac.eq(frozen.src_mac),
            exporter.dst_mac.eq(export_dst_mac),
            exporter.key.eq(auth.key),
            exporter.auth.eq(auth.enable),
            exporter.to_inband.eq(mode.export_inband),
            exporter.to_host.eq(mode.export_host),
            exporter.auto_release.eq(mode.auto_release),
        ]


def main(argv=None) -> int:
    """``python -m hw.lda_pipeline``: :func:`hw.verilog_export.export_main` for
    :class:`MeasurementCore`."""
    return export_main(argv, make_core=MeasurementCore)


if __name__ == "__main__":
    sys.exit(main())

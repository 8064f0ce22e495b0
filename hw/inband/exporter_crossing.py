# SPDX-License-Identifier: BSD-2-Clause
"""The exporter in the control clock domain, seen from the datapath as an exporter.

Where it sits (``docs/DESIGN.md``, "Clock domains"): in a two-domain core
(:class:`hw.lda_pipeline.MeasurementCore` with ``control_domain="ctrl"``) in place of the
:class:`hw.inband.exporter.Exporter`, with the same members, all in the datapath domain.
Inside, the exporter (with its SipHash tagger) runs in the control domain and everything
it exchanges with the datapath crosses through clock-crossing FIFOs
(:class:`hw.arith.async_fifo.RegisteredAsyncFIFO`) and :mod:`amaranth.lib.cdc`:

- **the start**: the export's parameters (the frozen interval's header fields, the MACs,
  the key, the ports), one entry per export, datapath → control
  (:class:`hw.bus.entry_crossing.EntryCrossing`);
- **the counter reads**: each read's address control → datapath, where it takes the
  frozen copy's shared read port (:class:`hw.counters.frozen_read_share.FrozenReadShare`,
  the bus first, as on one clock), and each answer (word and error bit) back. The
  exporter bounds the reads in flight by its ``read_ahead``, so neither FIFO fills;
- **the frames**, per port, control → datapath, **stored and forwarded**
  (:func:`hw.frames.frame_crossing.store_and_forward`), so a frame leaves on consecutive
  clocks whatever the two clocks' ratio.

The datapath side keeps the exporter's status as on one clock: ``busy`` from ``start``
until the last frame has left every enabled port, then ``done`` (and ``release``),
EXPORT_FRAMES counted as frames leave (on the in-band port when it is enabled, else the
host port), ``read_error`` from the answers it passes. No value crosses otherwise.
"""

from amaranth.hdl import Cat, DomainRenamer, Module, Signal
from amaranth.lib import wiring

from host_sw.contracts.hashing import MIN_FRAME_BYTES
from host_sw.contracts.siphash import TAG_BYTES

from hw.arith.async_fifo import RegisteredAsyncFIFO
from hw.arith.stages import kept_reset_domain
from hw.bus.entry_crossing import EntryCrossing, split_entry
from hw.frames.frame import RegisterSlice
from hw.frames.frame_crossing import frame_depths, store_and_forward
from hw.inband.control_frame_tx import HEADER_BYTES

__all__ = ["ExporterCrossing", "PARAMETERS"]

#: The exporter's inputs sampled at ``start``, crossing as one entry per export.
PARAMETERS = ("seq", "flags", "timestamp", "config_id", "role", "src_mac", "dst_mac",
              "key", "auth", "to_inband", "to_host", "auto_release")


class ExporterCrossing(wiring.Component):
    """An :class:`hw.inband.exporter.Exporter` run in another clock domain.

    Parameters
    ----------
    exporter : hw.inband.exporter.Exporter
        The exporter to run in ``control_domain`` (its ``read_ahead`` covers the reads'
        round trip through the crossing: the core gives it 16).
    control_domain : str
        Where the exporter runs (default ``"ctrl"``).
    datapath_domain : str
        The domain of every member (default ``"sync"``).

    Members
    -------
    The exporter's, with its meaning (:class:`hw.inband.exporter.Exporter`), in
    ``datapath_domain``. What differs: the first beat leaves some clocks of each domain
    later, and a frame only once it is whole in the crossing (then on consecutive clocks
    while the port is ready); ``frames`` counts a frame as it leaves.

    Attributes
    ----------
    depths : hw.frames.frame_crossing.FrameDepths
        Beats of the longest frame, and the depths of each port's beat FIFO and of its
        token FIFO (:func:`hw.frames.frame_crossing.store_and_forward`).

    Reset: each FIFO is emptied by its writing domain's reset; reset both domains together
    (``docs/CORE_INTERFACE.md``, "Two clocks").
    """

    def __init__(self, exporter, *, control_domain: str = "ctrl",
                 datapath_domain: str = "sync"):
        if control_domain == datapath_domain:
            raise ValueError(f"a crossing needs two domains, not {control_domain!r} twice")
        self.exporter = exporter
        self.control_domain = control_domain
        self.datapath_domain = datapath_domain
        self.config = exporter.config
        self.frame_count = exporter.frame_count
        self.depths = frame_depths(
            longest_bytes=HEADER_BYTES + exporter.words_per_frame * exporter.word_bytes
            + TAG_BYTES, shortest_bytes=MIN_FRAME_BYTES, data_width=exporter.data_width)
        super().__init__(dict(exporter.signature.members.items()))

    def status_sources(self) -> dict:
        """EXPORT_FRAMES: :func:`hw.bus.core_registers.wire_status`."""
        return {"export_frames": self.frames}

    def elaborate(self, platform):
        m = Module()
        ctrl, fast = self.control_domain, self.datapath_domain
        inner = self.exporter
        m.submodules.exporter = DomainRenamer({"sync": ctrl})(inner)
        m.d.comb += inner.read_hold.eq(0)           # the datapath side holds the reads
        enabled = self._start(m, inner, ctrl, fast)
        self._reads(m, inner, ctrl, fast)
        left = [store_and_forward(m, getattr(inner, name), getattr(self, name),
                                  depths=self.depths, data_width=inner.data_width,
                                  w_domain=ctrl, r_domain=fast, name=name)
                for name in ("inband", "host")]
        self._status(m, fast, enabled, left)
        return m

    def _start(self, m, inner, ctrl, fast):
        """``start`` (not while busy, a port enabled) → the parameters' crossing → the
        exporter's ``start`` once it is idle. Returns the sampled ports and release."""
        values = [getattr(self, name) for name in PARAMETERS]
        m.submodules.parameters = crossing = EntryCrossing(
            width=sum(len(v) for v in values), w_domain=fast, r_domain=ctrl)
        starts = self.start & ~self.busy & (self.to_inband | self.to_host)
        m.d.comb += [crossing.w_en.eq(starts), crossing.w_data.eq(Cat(*values)),
                     crossing.r_en.eq(~inner.busy),
                     inner.start.eq(crossing.r_rdy & ~inner.busy)]
        split_entry(m, crossing.r_data, [getattr(inner, name) for name in PARAMETERS])
        enabled = Signal(2, name="ports_enabled")          # in-band, host
        auto_release = Signal(name="auto_release_sampled")
        with m.If(self.start & ~self.busy):
            m.d[fast] += [enabled.eq(Cat(self.to_inband, self.to_host)),
                          auto_release.eq(self.auto_release)]
        return enabled, auto_release, starts

    def _reads(self, m, inner, ctrl, fast):
        """The exporter's reads: address control → datapath (issued on the shared port
        when the bus does not hold it), answer datapath → control."""
        port, out = inner.frozen, self.frozen
        word_bits = len(port.data.as_value())
        # Both FIFOs have registered flags (:class:`hw.arith.async_fifo.RegisteredAsyncFIFO`):
        # with :class:`amaranth.lib.fifo.AsyncFIFO`, a pointer's comparison, increment and
        # Gray encoding in one clock were the critical paths of both domains on several
        # placements of the two-clock LDS, RDA and LDA cores (``docs/HARDWARE.md``).
        # Neither FIFO's writer looks at ``w_rdy``: the exporter bounds its reads in flight
        # (issued, answer not yet taken) by ``read_ahead``, so neither FIFO holds more.
        # A writer sees the other side's pointer late (its synchroniser, the registered
        # flag), but a freed entry reaches it before the read that entry lets the
        # exporter issue can come round; the FIFOs have twice ``read_ahead`` entries, so
        # that ordering is margin, not a requirement. (With fewer entries than reads in
        # flight, exports hang: ``tests/hw/inband/test_hw_exporter_crossing.py``.)
        depth = 1 << (2 * inner.read_ahead - 1).bit_length()
        # The requests' FIFO is written in a domain of its own, as the frame crossings'
        # FIFOs (:func:`hw.arith.stages.kept_reset_domain`; the exporter reads only in an
        # export, which starts after its parameters have crossed, so never in the clock
        # the FIFO's reset outlasts ``ctrl``'s).
        m.submodules.read_requests = requests = RegisteredAsyncFIFO(
            width=len(port.addr), depth=depth,
            w_domain=kept_reset_domain(m, ctrl, name="read_requests_write"), r_domain=fast)
        m.submodules.read_answers = answers = RegisteredAsyncFIFO(
            width=word_bits + 1, depth=depth, w_domain=fast, r_domain=ctrl)
        # Each request and each answer registered once more before its FIFO: the route
        # from the counter bank's read register by the RAMs to the FIFO's write data was
        # the two-clock LDS core's datapath critical path on one placement (7.0 ns of
        # routing), the exporter's count of reads in flight into the FIFO's write pointer
        # its control clock's on another (``docs/HARDWARE.md``). The reads in flight are
        # counted as before, so the registers add a clock each, not an entry.
        request_valid = Signal()
        request = Signal(len(port.addr), reset_less=True)
        m.d[ctrl] += [request_valid.eq(port.en), request.eq(port.addr)]
        answer_valid = Signal()
        answer = Signal(word_bits + 1, reset_less=True)
        m.d[fast] += [answer_valid.eq(out.valid),
                      answer.eq(Cat(out.data.as_value(), out.error))]
        # The addresses leave the FIFO through a register slice, so ``read_hold`` (the
        # bus's read of the shared port, from the CSR bank) reaches the slice, not the
        # FIFO's read pointer: its route into the pointer's increment was the two-clock
        # LDA core's datapath critical path on one placement (a 5.0 ns net,
        # ``docs/HARDWARE.md``).
        slot = RegisterSlice(shape=len(port.addr))
        m.submodules.read_slot = DomainRenamer({"sync": fast})(slot)
        m.d.comb += [
            requests.w_en.eq(request_valid), requests.w_data.eq(request),
            requests.r_en.eq(slot.sink.ready), slot.sink.valid.eq(requests.r_rdy),
            slot.sink.payload.eq(requests.r_data),
            slot.source.ready.eq(~self.read_hold),
            out.en.eq(slot.source.valid & ~self.read_hold), out.addr.eq(slot.source.payload),
            answers.w_en.eq(answer_valid), answers.w_data.eq(answer),
            answers.r_en.eq(1),
            port.valid.eq(answers.r_rdy),
            port.data.as_value().eq(answers.r_data[:word_bits]),
            port.error.eq(answers.r_data[word_bits]),
        ]

    def _status(self, m, fast, sampled, leaving):
        """busy, done, release, frames and read_error in the datapath domain."""
        enabled, auto_release, starts = sampled
        count = self.frame_count
        # A frame's leaving registered, then counted: the port's ready (the frame merger's
        # grant) into EXPORT_FRAMES's enable was the two-clock LDS core's datapath critical
        # path on one placement (5.4 ns, 89 % routing; ``docs/HARDWARE.md``).
        gones = [Signal(name=f"{name}_frame_left") for name in ("inband", "host")]
        m.d[fast] += [g.eq(now) for g, now in zip(gones, leaving)]
        left = [Signal(range(count + 1), name=f"{name}_frames_left")
                for name in ("inband", "host")]
        for k, (n, gone) in enumerate(zip(left, gones)):
            with m.If(starts):
                m.d[fast] += n.eq(Cat(self.to_inband, self.to_host)[k] * count)
            with m.Elif(gone & (n != 0)):
                m.d[fast] += n.eq(n - 1)
        counted = Signal()
        m.d.comb += counted.eq(enabled[0] & gones[0] | ~enabled[0] & gones[1])
        with m.If(self.busy & counted):
            m.d[fast] += self.frames.eq(self.frames + 1)
        m.d[fast] += [self.done.eq(0), self.release.eq(0)]
        with m.If(self.start & ~self.busy):
            m.d[fast] += self.read_error.eq(0)
            with m.If(self.to_inband | self.to_host):
                m.d[fast] += self.busy.eq(1)
            with m.Else():
                m.d[fast] += [self.done.eq(1), self.release.eq(self.auto_release)]
        with m.Elif(self.busy & (left[0] == 0) & (left[1] == 0) & ~self.done):
            m.d[fast] += [self.busy.eq(0), self.done.eq(1), self.release.eq(auto_release)]
        with m.If(self.frozen.valid & self.frozen.error):
            m.d[fast] += self.read_error.eq(1)

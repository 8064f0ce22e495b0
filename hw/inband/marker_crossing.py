# SPDX-License-Identifier: BSD-2-Clause
"""The marker source in the control clock domain, seen from the datapath as a marker source.

Where it sits (``docs/DESIGN.md``, "Clock domains"): in a two-domain core
(:class:`hw.lda_pipeline.MeasurementCore` with ``control_domain="ctrl"``) in place of the
:class:`hw.inband.marker_source.MarkerFrameSource`, with the same members, all in the
datapath domain. Inside, the source (its 60-byte frame register and its SipHash engine)
runs in the control domain:

- **the request** (the marker's number, timestamp and flags, with the MACs, CONFIG_ID and
  the key it is built with: every input the source samples with a request) crosses
  datapath → control as one entry (:class:`hw.bus.entry_crossing.EntryCrossing`);
- **the frame** crosses back stored and forwarded
  (:func:`hw.frames.frame_crossing.store_and_forward`): it leaves on consecutive datapath
  clocks whatever the two clocks' ratio.

Why: the source's SipHash adds and its frame register's shift enable were the two-clock
LDA and RDA cores' datapath critical paths on ECP5 (``docs/HARDWARE.md``). A boundary is
still where the marker leaves (the merger's ``inserted_sof``), so the crossing's latency
moves no packet between intervals; it only delays the marker.
"""

from amaranth.hdl import Cat, DomainRenamer, Module
from amaranth.lib import wiring

from host_sw.contracts.hashing import MIN_FRAME_BYTES

from hw.bus.entry_crossing import EntryCrossing, split_entry
from hw.frames.frame_crossing import frame_depths, store_and_forward
from hw.inband.control_frame_tx import MARKER_FRAME_BYTES

__all__ = ["MarkerSourceCrossing", "SAMPLED"]

#: The source's inputs sampled with a request, crossing in its entry.
SAMPLED = ("src_mac", "dst_mac", "config_id", "key", "auth")


class MarkerSourceCrossing(wiring.Component):
    """A :class:`hw.inband.marker_source.MarkerFrameSource` run in another clock domain.

    Parameters
    ----------
    source : hw.inband.marker_source.MarkerFrameSource
        The marker source to run in ``control_domain``.
    control_domain : str
        Where the source runs (default ``"ctrl"``).
    datapath_domain : str
        The domain of every member (default ``"sync"``).

    Members
    -------
    The source's, with its meaning, in ``datapath_domain``. What differs: ``request`` is
    taken while the request crossing has room (two requests can wait), and the
    frame's first beat leaves some clocks of each domain after the source's, once the
    whole frame is in the crossing.

    Reset: each crossing is emptied by its domains' resets; reset both domains together
    (``docs/CORE_INTERFACE.md``, "Two clocks").
    """

    def __init__(self, source, *, control_domain: str = "ctrl",
                 datapath_domain: str = "sync"):
        if control_domain == datapath_domain:
            raise ValueError(f"a crossing needs two domains, not {control_domain!r} twice")
        self.inner = source
        self.control_domain = control_domain
        self.datapath_domain = datapath_domain
        self.depths = frame_depths(longest_bytes=MARKER_FRAME_BYTES,
                                   shortest_bytes=MIN_FRAME_BYTES,
                                   data_width=source.data_width)
        super().__init__(dict(source.signature.members.items()))

    def elaborate(self, platform):
        m = Module()
        ctrl, fast = self.control_domain, self.datapath_domain
        inner = self.inner
        m.submodules.source = DomainRenamer({"sync": ctrl})(inner)
        request = self.request
        values = [request.payload.as_value(), *(getattr(self, name) for name in SAMPLED)]
        m.submodules.requests = crossing = EntryCrossing(
            width=sum(len(v) for v in values), w_domain=fast, r_domain=ctrl)
        m.d.comb += [request.ready.eq(crossing.w_rdy),
                     crossing.w_en.eq(request.valid), crossing.w_data.eq(Cat(*values)),
                     inner.request.valid.eq(crossing.r_rdy),
                     crossing.r_en.eq(inner.request.ready)]
        split_entry(m, crossing.r_data, [inner.request.payload.as_value(),
                                         *(getattr(inner, name) for name in SAMPLED)])
        store_and_forward(m, inner.source, self.source, depths=self.depths,
                          data_width=inner.data_width, w_domain=ctrl, r_domain=fast,
                          name="frames")
        return m

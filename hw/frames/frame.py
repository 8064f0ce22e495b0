# SPDX-License-Identifier: BSD-2-Clause
"""The frame stream: AXI4-Stream-like beats of an Ethernet frame (without FCS).

Where it sits (``docs/DESIGN.md``, "Data flow of a packet"): the shape of "frames in"
and "frames out" of the pass-through, and of what the header tap watches.

A beat is ``{data, keep, last, error}`` (:func:`frame_beat_layout`); the stream is an
``amaranth.lib.stream`` signature (valid/ready/payload; valid never waits for ready;
payload and valid hold until the transfer). Byte lane 0 (``data[7:0]``) carries the
earliest byte; ``keep`` is contiguous from lane 0 and only the ``last`` beat may have a
partial ``keep``. ``error`` (AXIS ``tuser``) is read on the ``last`` beat only.

Besides the gateware shapes, this module has the plain-Python conversion between frames
and beats that the simulation tests and testbenches use (:func:`frame_to_beats`,
:func:`beats_to_frames`).
"""

from amaranth.hdl import Module, Signal, unsigned
from amaranth.lib import data, stream, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["check_data_width", "frame_beat_layout", "FrameStream", "FrameMonitor",
           "RegisterSlice",
           "frame_to_beats", "beats_to_frames"]


def check_data_width(data_width) -> int:
    """Validate a stream data width (bits): a multiple of 8, at least 8."""
    if not isinstance(data_width, int) or data_width < 8 or data_width % 8:
        raise ValueError(f"data_width must be a positive multiple of 8 bits, not {data_width!r}")
    return data_width


def frame_beat_layout(data_width: int) -> data.StructLayout:
    """The payload of one beat: ``data`` (``data_width`` bits), ``keep`` (one bit per byte
    lane), ``last`` and ``error`` (valid with ``last``)."""
    check_data_width(data_width)
    return data.StructLayout({
        "data": unsigned(data_width),
        "keep": unsigned(data_width // 8),
        "last": unsigned(1),
        "error": unsigned(1),
    })


def FrameStream(data_width: int) -> stream.Signature:
    """The frame stream signature of a given data width (the source's view)."""
    return stream.Signature(frame_beat_layout(data_width))


def FrameMonitor(data_width: int) -> wiring.Signature:
    """A passive view of a frame stream: ``valid``, ``ready`` and ``payload``, all driven
    by the stream's owner (use it flipped, ``In(FrameMonitor(w))``, in a block that only
    watches transfers and never drives ``ready``)."""
    return wiring.Signature({
        "valid": Out(1),
        "ready": Out(1),
        "payload": Out(frame_beat_layout(data_width)),
    })


def frame_to_beats(frame: bytes, data_width: int, *, error: bool = False) -> list[dict]:
    """Split one frame into beats: a list of ``{"data", "keep", "last", "error"}`` ints.

    Unused lanes of the last beat carry zero data and a clear ``keep`` bit.
    """
    check_data_width(data_width)
    if len(frame) == 0:
        raise ValueError("a frame must have at least one byte")
    lanes = data_width // 8
    beats = []
    for start in range(0, len(frame), lanes):
        chunk = frame[start:start + lanes]
        last = start + lanes >= len(frame)
        beats.append({
            "data": int.from_bytes(chunk, "little"),
            "keep": (1 << len(chunk)) - 1,
            "last": int(last),
            "error": int(bool(error) and last),
        })
    return beats


def beats_to_frames(beats, data_width: int) -> list[tuple[bytes, bool]]:
    """Reassemble beats (dicts as from :func:`frame_to_beats`) into ``(frame, error)``
    pairs; a trailing unfinished frame is dropped."""
    check_data_width(data_width)
    lanes = data_width // 8
    frames, current = [], bytearray()
    for beat in beats:
        keep, raw = beat["keep"], beat["data"].to_bytes(lanes, "little")
        current += bytes(raw[i] for i in range(lanes) if (keep >> i) & 1)
        if beat["last"]:
            frames.append((bytes(current), bool(beat["error"])))
            current = bytearray()
    return frames


class RegisterSlice(wiring.Component):
    """A full-throughput register slice (output register + one skid register): cuts the
    combinational paths of a frame stream in both directions.

    Parameters
    ----------
    data_width:
        Frame stream data width.
    shape:
        Instead of ``data_width``: any payload shape (the slice of a
        ``stream.Signature(shape)``, e.g. a byte stream).

    Members
    -------
    sink: In(FrameStream(data_width))
    source: Out(FrameStream(data_width))

    A beat transferred on ``sink`` in cycle ``t`` is valid on ``source`` in cycle ``t + 1``
    unless ``source`` is stalled; ``sink.ready`` is registered (it falls one cycle after
    ``source`` stalls with a beat held, the skid register taking the beat in flight).
    """

    def __init__(self, *, data_width: int | None = None, shape=None):
        if (data_width is None) == (shape is None):
            raise ValueError("give one of data_width and shape")
        if shape is None:
            check_data_width(data_width)
            signature = FrameStream(data_width)
        else:
            signature = stream.Signature(shape)
        self.data_width = data_width
        #: Cycles from a ``sink`` transfer to ``source.valid`` when not stalled.
        self.latency = 1
        super().__init__({"sink": In(signature), "source": Out(signature)})

    def elaborate(self, platform):
        m = Module()
        skid_valid = Signal()
        # The payload registers have no reset (only the valid bits do): they are read
        # only with their valid bit, and a reset reaching every data bit fans out wide.
        skid = Signal.like(self.sink.payload, reset_less=True)
        payload = Signal.like(self.sink.payload, reset_less=True)
        m.d.comb += [self.sink.ready.eq(~skid_valid), self.source.payload.eq(payload)]
        with m.If(~self.source.valid | self.source.ready):
            # The output register moves: take the skid beat first, else the input.
            with m.If(skid_valid):
                m.d.sync += [payload.eq(skid), self.source.valid.eq(1), skid_valid.eq(0)]
            with m.Else():
                m.d.sync += [payload.eq(self.sink.payload),
                             self.source.valid.eq(self.sink.valid)]
        with m.Elif(self.sink.valid & self.sink.ready):
            # Output stalled with a beat held: the beat in flight stays in the skid.
            m.d.sync += skid_valid.eq(1)
        # The skid register loads every cycle while it is empty, so its enable is a
        # register output, not a function of the stream handshakes.
        with m.If(~skid_valid):
            m.d.sync += skid.eq(self.sink.payload)
        return m

# SPDX-License-Identifier: BSD-2-Clause
"""Hostile pcapng files (issue 23, item 5): a timestamp's high word of 2^31 or more, a
block shorter than its fixed fields, an ``if_tsoffset`` of 2^62, interfaces of different
link types (every one checked, not only the first), a packet block announcing more bytes
than it holds — each is a :class:`CaptureError` naming the file in all three readers
(whole file :func:`read_pcap`, streamed :func:`iter_capture`, incremental
:class:`CaptureParser` of ``watch --records``), never another exception; and generated
block sequences give a capture or a CaptureError, nothing else."""

import struct

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from host_sw.model.pcap import CaptureError, read_pcap
from host_sw.model.pcap_live import CaptureParser
from host_sw.model.pcap_stream import iter_capture

FRAME = bytes(range(6)) * 2 + b"\x08\x00" + bytes(46)


def _block(btype: int, body: bytes, length: int | None = None) -> bytes:
    body += bytes(-len(body) % 4)
    n = len(body) + 12 if length is None else length
    return struct.pack("<II", btype, n) + body + struct.pack("<I", n)


def shb() -> bytes:
    return _block(0x0A0D0D0A, struct.pack("<IHHq", 0x1A2B3C4D, 1, 0, -1))


def idb(linktype: int = 1, *, tsresol: int | None = 9, tsoffset: int | None = None) -> bytes:
    opts = b""
    if tsresol is not None:
        opts += struct.pack("<HH", 9, 1) + bytes([tsresol]) + bytes(3)
    if tsoffset is not None:
        opts += struct.pack("<HHq", 14, 8, tsoffset)
    if opts:
        opts += struct.pack("<HH", 0, 0)
    return _block(1, struct.pack("<HHI", linktype, 0, 65535) + opts)


def epb(ticks: int, frame: bytes = FRAME, iface: int = 0, caplen: int | None = None) -> bytes:
    cap = len(frame) if caplen is None else caplen
    return _block(6, struct.pack("<IIIII", iface, ticks >> 32, ticks & 0xFFFFFFFF, cap,
                                 len(frame)) + frame)


def _readers(path):
    """Each reader's result (a list of ns timestamps) or its exception."""
    def whole():
        return read_pcap(path).timestamps_ns.tolist()

    def streamed():
        return [t for c in iter_capture(path) for t in c.timestamps_ns.tolist()]

    def live():
        p = CaptureParser(str(path))
        out = [t for t, _ in p.feed(path.read_bytes())]
        p.finish()
        return out
    return {"read_pcap": whole, "iter_capture": streamed, "CaptureParser": live}


def test_a_good_file_reads_alike(tmp_path):
    path = tmp_path / "good.pcapng"
    path.write_bytes(shb() + idb() + epb(1_000) + epb(2_000) + idb(1, tsresol=6)
                     + epb(3, iface=1))
    for name, read in _readers(path).items():
        assert read() == [1_000, 2_000, 3_000], name


_HOSTILE = {
    "high word 2^31": (shb() + idb() + epb(1 << 63), r"2\^63 ticks or more|64-bit ns range"),
    "high word 2^32-1": (shb() + idb() + epb((1 << 64) - 1), r"2\^63 ticks or more|64-bit"),
    "tsoffset 2^62": (shb() + idb(tsoffset=1 << 62) + epb(5), "64-bit ns range"),
    "tsoffset -2^62": (shb() + idb(tsoffset=-(1 << 62)) + epb(5), "64-bit ns range"),
    "microsecond overflow": (shb() + idb(tsresol=None) + epb((1 << 62)), "64-bit ns range"),
    "short EPB": (shb() + idb() + _block(6, bytes(8)), "shorter than its fixed fields|corrupt"),
    "short IDB": (shb() + _block(1, b"") + epb(1), "shorter than its fixed fields|corrupt"),
    "caplen past block": (shb() + idb() + epb(1, caplen=4000),
                          "announces 4000 captured bytes|corrupt"),
    "second interface link type 101": (shb() + idb(1) + epb(1) + idb(101) + epb(2, iface=1),
                                       "different link types|link type 101"),
    "second section link type 101": (shb() + idb(1) + epb(1) + shb() + idb(101) + epb(2),
                                     "different link types|link type 101"),
    "unused interface of link type 0": (shb() + idb(1) + idb(0) + epb(1),
                                        "different link types|link type 0"),
}


@pytest.mark.parametrize("case", sorted(_HOSTILE))
@pytest.mark.parametrize("reader", ["read_pcap", "iter_capture", "CaptureParser"])
def test_hostile_pcapng_is_a_capture_error(tmp_path, case, reader):
    data, pattern = _HOSTILE[case]
    path = tmp_path / "hostile.pcapng"
    path.write_bytes(data)
    with pytest.raises(CaptureError, match=pattern) as e:
        _readers(path)[reader]()
    assert str(path) in str(e.value)


_BLOCKS = st.one_of(
    st.builds(idb, st.sampled_from([1, 1, 1, 101, 0]), tsresol=st.none() | st.integers(0, 255),
              tsoffset=st.none() | st.integers(-(1 << 63), (1 << 63) - 1)),
    st.builds(epb, st.integers(0, (1 << 64) - 1), st.binary(max_size=80),
              st.integers(0, 2), st.none() | st.integers(0, 200)),
    st.builds(_block, st.sampled_from([1, 2, 3, 5, 6, 0x0A0D0D0A]), st.binary(max_size=40),
              st.none() | st.integers(0, 64).map(lambda n: n * 4)),
    st.just(shb()))


@settings(max_examples=150, deadline=None, derandomize=True, database=None,
          suppress_health_check=list(HealthCheck))
@given(st.lists(_BLOCKS, max_size=6))
def test_generated_pcapng_blocks_read_or_fail_cleanly(tmp_path_factory, blocks):
    path = tmp_path_factory.mktemp("gen") / "g.pcapng"
    path.write_bytes(shb() + idb() + b"".join(blocks))
    for name, read in _readers(path).items():
        try:
            ts = read()
        except CaptureError:
            continue
        assert all(-(1 << 63) <= t < 1 << 63 for t in ts), name

# SPDX-License-Identifier: BSD-2-Clause
"""The incremental capture parser (``ldactl watch --records``): fed a classic pcap or a
pcapng stream in arbitrary pieces, it gives the same records (exact ns timestamps, the
frames' bytes) as the whole-file reader; a stream cut inside a record is an error at its
end, a stream that is no capture at once."""

import io

import dpkt
import numpy as np
import pytest

from host_sw.model.pcap import CaptureError, read_pcap, write_pcap
from host_sw.model.pcap_live import CaptureParser

FRAMES = [bytes([i]) * (60 + 7 * i) for i in range(40)]
TS = 1_700_000_000_123_456_789 + np.arange(40, dtype=np.int64) * 1_000_003


def _pieces(data: bytes, seed: int):
    rng = np.random.default_rng(seed)
    cuts = np.sort(rng.choice(np.arange(1, len(data)), size=25, replace=False))
    return [data[a:b] for a, b in zip([0, *cuts], [*cuts, len(data)])]


def _parse(data, seed):
    p = CaptureParser("test")
    out = [rec for piece in _pieces(data, seed) for rec in p.feed(piece)]
    p.finish()
    return out


@pytest.mark.parametrize("seed", range(3))
def test_classic_in_pieces_equals_whole_file(tmp_path, seed):
    write_pcap(tmp_path / "a.pcap", FRAMES, TS)
    cap = read_pcap(tmp_path / "a.pcap")
    got = _parse((tmp_path / "a.pcap").read_bytes(), seed)
    assert [f for _, f in got] == [bytes(f) for f in cap.frames] == FRAMES
    assert [t for t, _ in got] == cap.timestamps_ns.tolist() == TS.tolist()


def test_pcapng_in_pieces_equals_whole_file(tmp_path):
    opts = [dpkt.pcapng.PcapngOptionLE(code=dpkt.pcapng.PCAPNG_OPT_IF_TSRESOL, data=b"\x09"),
            dpkt.pcapng.PcapngOptionLE(code=dpkt.pcapng.PCAPNG_OPT_ENDOFOPT)]
    idb = dpkt.pcapng.InterfaceDescriptionBlockLE(snaplen=65535, linktype=1, opts=opts)
    buf = io.BytesIO()
    w = dpkt.pcapng.Writer(buf, idb=idb)        # if_tsresol 9: exact ns
    for f, t in zip(FRAMES, TS.tolist()):
        w.writepkt(dpkt.pcapng.EnhancedPacketBlockLE(pkt_data=f, ts_high=t >> 32,
                                                     ts_low=t & 0xFFFFFFFF, caplen=len(f),
                                                     pkt_len=len(f)))
    data = buf.getvalue()
    (tmp_path / "a.pcapng").write_bytes(data)
    cap = read_pcap(tmp_path / "a.pcapng")
    got = _parse(data, 5)
    assert [f for _, f in got] == FRAMES
    assert [t for t, _ in got] == cap.timestamps_ns.tolist() == TS.tolist()


def test_truncated_and_foreign_streams(tmp_path):
    write_pcap(tmp_path / "a.pcap", FRAMES, TS)
    data = (tmp_path / "a.pcap").read_bytes()
    p = CaptureParser("cut")
    assert len(p.feed(data[:-5])) == len(FRAMES) - 1
    with pytest.raises(CaptureError, match="cut: the stream ended inside a record"):
        p.finish()
    with pytest.raises(CaptureError, match="not a pcap or pcapng"):
        CaptureParser("text").feed(b"hello world, not a capture")

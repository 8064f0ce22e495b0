# SPDX-License-Identifier: BSD-2-Clause
"""The streaming capture reader gives exactly what the whole-file reader gives (frames'
windows, classes, lengths, exact ns timestamps) for pcap (µs, ns, big-endian) and pcapng,
whatever the block size: records cut by a block's end, records larger than a block,
and payload bytes that look like record headers (the guessed record starts must be the
real chain or be walked)."""

import struct

import numpy as np
import pytest

from host_sw.contracts.hashing import classify_frame, header_windows
from host_sw.model.pcap import CaptureError, read_pcap, write_pcap
from host_sw.model.pcap_stream import (ByteRange, _guess_classic, capture_linktype,
                                       classic_ranges, iter_capture, ranges_chain,
                                       record_start, walk_classic)
from host_sw.model.traffic import synthetic_trace

from tests.model.test_pcap import _pcapng


@pytest.fixture(scope="module")
def trace():
    return synthetic_trace(packets=3000, flows=30, seed=4)


def _joined(path, **kw):
    chunks = list(iter_capture(path, **kw))
    cat = {k: np.concatenate([getattr(c, k) for c in chunks])
           for k in ("timestamps_ns", "windows", "classes", "lengths", "original_lengths")}
    return cat, len(chunks)


def _assert_same(path, window=64, **kw):
    cap = read_pcap(path)
    got, n = _joined(path, window_bytes=window, **kw)
    assert np.array_equal(got["timestamps_ns"], cap.timestamps_ns)
    assert np.array_equal(got["windows"], header_windows(cap.frames, window))
    assert got["classes"].tolist() == [int(classify_frame(f)) for f in cap.frames]
    assert got["lengths"].tolist() == [len(f) for f in cap.frames]
    assert np.array_equal(got["original_lengths"], cap.original_lengths)
    return n


@pytest.mark.parametrize("nano", [True, False], ids=["ns", "us"])
@pytest.mark.parametrize("chunk", [1 << 16, 1 << 25])
def test_pcap_matches_the_whole_file_reader(tmp_path, trace, nano, chunk):
    ts = trace.timestamps if nano else trace.timestamps // 1000 * 1000
    write_pcap(tmp_path / "a.pcap", trace.frames(), ts, nano=nano)
    n = _assert_same(tmp_path / "a.pcap", chunk_bytes=chunk)
    assert n > 1 if chunk == 1 << 16 else n == 1


def test_big_endian_and_a_record_larger_than_a_block(tmp_path, trace):
    frames = trace.frames(range(50)) + [bytes(range(256)) * 300] + trace.frames(range(50, 60))
    ts = list(range(10**18, 10**18 + 61 * 1000, 1000))
    head = struct.pack(">IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1)
    recs = b"".join(struct.pack(">IIII", t // 10**9, t % 10**9, len(f), len(f)) + f
                    for f, t in zip(frames, ts))
    (tmp_path / "be.pcap").write_bytes(head + recs)
    _assert_same(tmp_path / "be.pcap", chunk_bytes=1 << 16)
    _assert_same(tmp_path / "be.pcap", window=72, chunk_bytes=1 << 16)


@pytest.mark.parametrize("start_s", [0, 1_700_000_000])
def test_payload_that_looks_like_record_headers(tmp_path, start_s):
    """Frames whose payload repeats a record header: the guessed starts include false
    ones, the guess still finds the chain (no walk) — except for seconds below 65 536,
    whose high bytes (zero) match nearly every payload position: there the guess gives up
    and the walk reads the block — and the records are the file's."""
    tr = synthetic_trace(packets=400, flows=30, seed=4, start_ns=start_s * 10**9 + 1000)
    ts = tr.timestamps
    frames = []
    for i, f in enumerate(tr.frames()):
        fake = struct.pack("<IIII", int(ts[i]) // 10**9, 5, 60, 60)
        frames.append(f[:42] + fake * 3 + f[42 + 48:] if len(f) >= 42 + 48 else f)
    write_pcap(tmp_path / "fp.pcap", frames, ts)
    _assert_same(tmp_path / "fp.pcap", chunk_bytes=1 << 16)
    data = (tmp_path / "fp.pcap").read_bytes()[24:]
    buf = np.zeros(len(data) + 80, np.uint8)
    buf[:len(data)] = np.frombuffer(data, np.uint8)
    guessed, walked = _guess_classic(buf, len(data), True, 10**9), walk_classic(data, True)
    assert walked[1] == len(data) and len(walked[0]) == 400
    if start_s == 0:
        assert guessed is None
    else:
        assert guessed is not None and np.array_equal(guessed[0], walked[0])
        assert guessed[1] == walked[1]


def test_pcapng_matches_the_whole_file_reader(tmp_path, trace):
    frames = trace.frames(range(2000))
    _pcapng(tmp_path / "ns.pcapng", frames, trace.timestamps[:2000].tolist(), tsresol=9)
    assert _assert_same(tmp_path / "ns.pcapng", chunk_bytes=1 << 16) > 1
    _pcapng(tmp_path / "p2.pcapng", frames[:1], [3 << 20], tsresol=0x80 | 20)
    got, _ = _joined(tmp_path / "p2.pcapng")
    assert got["timestamps_ns"].tolist() == [3_000_000_000]
    assert capture_linktype(tmp_path / "ns.pcapng") == 1


def test_errors(tmp_path, trace):
    write_pcap(tmp_path / "a.pcap", trace.frames(range(100)), trace.timestamps[:100])
    data = (tmp_path / "a.pcap").read_bytes()
    (tmp_path / "cut.pcap").write_bytes(data[:-7])
    with pytest.raises(CaptureError, match="truncated packet record"):
        list(iter_capture(tmp_path / "cut.pcap", chunk_bytes=1 << 16))
    (tmp_path / "text.pcap").write_bytes(b"hello, world")
    with pytest.raises(CaptureError, match="not a pcap"):
        list(iter_capture(tmp_path / "text.pcap"))
    with pytest.raises(CaptureError, match="does not exist"):
        list(iter_capture(tmp_path / "nope.pcap"))
    bad = bytearray(data)
    bad[24 + 4:24 + 8] = struct.pack("<I", 2_000_000_000)     # fraction ≥ 1 s
    (tmp_path / "frac.pcap").write_bytes(bytes(bad))
    with pytest.raises(CaptureError, match="corrupt timestamp fraction"):
        list(iter_capture(tmp_path / "frac.pcap"))
    _pcapng(tmp_path / "n.pcapng", trace.frames(range(10)), list(range(10)), tsresol=9)
    (tmp_path / "ncut.pcapng").write_bytes((tmp_path / "n.pcapng").read_bytes()[:-5])
    with pytest.raises(CaptureError, match="truncated pcapng block"):
        list(iter_capture(tmp_path / "ncut.pcapng"))


@pytest.mark.parametrize("order", ["<", ">"], ids=["little", "big"])
def test_compiled_reader_gives_the_whole_file_readers_records(tmp_path, monkeypatch, order):
    """Blocks of at least a MiB are walked and extracted by the compiled loops (C, or numba):
    the same records as the whole-file reader and as numpy's guess and gathers, frames
    shorter and longer than the window, records cut by the blocks' ends."""
    from host_sw.model import pcap_stream
    if pcap_stream._compiled_reader() is None:
        pytest.skip("no compiled loops (neither the C library nor numba)")
    tr = synthetic_trace(packets=12000, flows=40, seed=9)
    frames = [f[:20 + i % 90] if i % 7 == 0 else f for i, f in enumerate(tr.frames())]
    ts = tr.timestamps
    head = struct.pack(order + "IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, 1)
    recs = b"".join(struct.pack(order + "IIII", int(t) // 10**9, int(t) % 10**9, len(f),
                                len(f) + 4) + f for f, t in zip(frames, ts))
    path = tmp_path / "c.pcap"
    path.write_bytes(head + recs)
    assert len(recs) > 3 * pcap_stream._COMPILED_MIN_BYTES
    compiled_run, n = _joined(path, chunk_bytes=1 << 20)
    assert n > 1 and len(compiled_run["timestamps_ns"]) == len(frames)
    _assert_same(path, chunk_bytes=1 << 20)
    monkeypatch.setattr(pcap_stream, "_compiled_reader", lambda: None)
    numpy_run, _ = _joined(path, chunk_bytes=1 << 20)
    for k in compiled_run:
        assert np.array_equal(compiled_run[k], numpy_run[k]), k


@pytest.mark.parametrize("keep", [False, True], ids=["hashes-only", "with-windows"])
@pytest.mark.parametrize("config", ["lda", "lds"])
def test_hashes_computed_while_extracting_equal_hash_windows(tmp_path, monkeypatch, keep,
                                                             config):
    """The compiled extraction that also hashes (:class:`WindowHashes`) gives the frame
    classes and the packet and LDS row hashes of :func:`hash_windows` on the whole-file
    reader's windows: IPv4, IPv6, frames cut before the EtherType and runts; the numpy
    path (small blocks) gives the same bits."""
    from host_sw.contracts.config import LdaConfig, LdsConfig
    from host_sw.model import pcap_stream
    from host_sw.model.golden_lda_rda_lds import Hashers, hash_windows, split_window_hashes
    if pcap_stream._compiled_reader() is None:
        pytest.skip("no compiled loops (neither the C library nor numba)")
    cfg = LdaConfig() if config == "lda" else LdsConfig()
    tr = synthetic_trace(packets=6000, flows=40, ipv6_fraction=0.3, seed=11)
    frames = [f[:5 + i % 80] if i % 9 == 0 else f for i, f in enumerate(tr.frames())]
    frames = [f[:12] + b"\x08\x06" + f[14:] if i % 13 == 1 else      # ARP: not counted
              f[:14] + b"\x65" + f[15:] if i % 17 == 1 else f          # IP, version 6
              for i, f in enumerate(frames)]
    path = tmp_path / "h.pcap"
    write_pcap(path, frames, tr.timestamps)
    hashers = Hashers(cfg)
    spec = pcap_stream.WindowHashes.of(hashers.window_tables(), keep_windows=keep)
    cap = read_pcap(path)
    windows = header_windows(cap.frames, cfg.window_bytes)
    classes = np.array([int(classify_frame(f)) for f in cap.frames])
    want = hash_windows(cfg, windows, classes, hashers)
    assert {0, 1, 2, 3} <= set(classes.tolist())

    def run():
        chunks = list(iter_capture(path, hashes=spec, chunk_bytes=1 << 16))
        got = split_window_hashes(cfg, np.concatenate([c.hashes for c in chunks], axis=1),
                                  np.concatenate([c.classes for c in chunks]))
        assert np.array_equal(np.concatenate([c.classes for c in chunks]), classes)
        assert np.array_equal(got.packet, want.packet)
        assert np.array_equal(got.counted, want.counted)
        if want.flow is not None:
            assert np.array_equal(got.flow, want.flow)
        return chunks

    monkeypatch.setattr(pcap_stream, "_COMPILED_MIN_BYTES", 1 << 12)
    monkeypatch.setattr(pcap_stream, "_COMPILED_MIN_RECORDS", 64)
    compiled_chunks = run()
    # blocks of 64 records or more went through the compiled pass (no windows kept
    # unless asked; a shorter last block is extracted by numpy)
    assert sum(c.windows is None for c in compiled_chunks) == (
        0 if keep else sum(len(c) >= 64 for c in compiled_chunks))
    assert sum(len(c) >= 64 for c in compiled_chunks) >= 2
    if keep:
        assert np.array_equal(np.concatenate([c.windows for c in compiled_chunks]), windows)
    monkeypatch.setattr(pcap_stream, "_compiled_reader", lambda: None)
    assert all(c.windows is not None for c in run())


def _varied_capture(path, n=3000, seed=7, fake_headers=True, le=True):
    """A classic ns pcap of ``n`` records of 1 to 1514 captured bytes (on-wire up to 64
    more), payload random, each frame longer than 80 bytes holding a plausible record
    header; returns the records' start offsets and the file size."""
    rng = np.random.default_rng(seed)
    e = "<" if le else ">"
    caps = rng.choice([1, 14, 59, 60, 61, 96, 333, 590, 1514], n) + rng.integers(0, 7, n)
    caps = np.minimum(caps, 1514)
    t = 1_700_000_000 * 10**9 + np.cumsum(rng.integers(1, 5000, n))
    parts, starts, off = [struct.pack(e + "IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 65535, 1)], [], 24
    for i, c in enumerate(caps.tolist()):
        frame = bytearray(rng.integers(0, 256, c, dtype=np.uint8).tobytes())
        if fake_headers and c > 80:     # a header that chains to nowhere in particular
            frame[40:56] = struct.pack(e + "IIII", int(t[i]) // 10**9, 7, 60, 60)
        head = struct.pack(e + "IIII", int(t[i]) // 10**9, int(t[i]) % 10**9, c,
                           c + int(rng.integers(0, 65)))
        starts.append(off)
        parts += [head, bytes(frame)]
        off += 16 + c
    path.write_bytes(b"".join(parts))
    return np.array(starts), off


@pytest.mark.parametrize("le", [True, False], ids=["le", "be"])
def test_record_start_from_any_byte(tmp_path, le):
    """From any byte — a record header's first byte, its middle, a frame's payload
    (which holds a fake header) — the start of the record holding it."""
    starts, size = _varied_capture(tmp_path / "v.pcap", n=400, le=le)
    data = np.frombuffer((tmp_path / "v.pcap").read_bytes(), np.uint8)
    ends = np.r_[starts[1:], size]
    rng = np.random.default_rng(1)
    positions = np.r_[starts[5:40], starts[5:40] + 7, starts[5:40] + 16 + 41,
                      rng.integers(starts[3], size - 1, 300)]
    for pos in positions.tolist():
        lo = max(24, pos - 5000)
        want = int(starts[np.searchsorted(ends, pos, side="right")])
        got = record_start(data[lo:], pos - lo, le, 10**9, True)
        assert got is not None and lo + got == want, pos


@pytest.mark.parametrize("parts", [2, 3, 5])
@pytest.mark.parametrize("chunk", [1 << 16, 3 << 16])
def test_byte_ranges_give_the_chunks_of_one_pass(tmp_path, parts, chunk):
    """A capture of varied record lengths read in byte ranges of whole blocks: each range
    starts at a record (found from the middle of one), the ranges chain, and their chunks
    are the one pass's, record for record."""
    starts, size = _varied_capture(tmp_path / "v.pcap")
    path = tmp_path / "v.pcap"
    ranges = classic_ranges(path, parts, chunk)
    assert [r.first_block for r in ranges][0] == 0 and len(ranges) == parts
    assert ranges[-1].blocks is None
    split_points = [24 + r.first_block * chunk for r in ranges[1:]]
    assert all(r.start in set(starts.tolist()) for r in ranges)
    assert any(r.start < p for r, p in zip(ranges[1:], split_points))   # mid-record
    one = list(iter_capture(path, chunk_bytes=chunk))
    got = [c for r in ranges for c in iter_capture(path, chunk_bytes=chunk, byte_range=r)]
    assert ranges_chain(ranges) and ranges[-1].end == size
    assert [len(c) for c in got] == [len(c) for c in one]
    for a, b in zip(one, got):
        for k in ("timestamps_ns", "windows", "classes", "lengths", "original_lengths"):
            assert np.array_equal(getattr(a, k), getattr(b, k))
    assert sum(len(c) for c in got) == len(starts)


def test_a_wrong_range_start_does_not_chain(tmp_path):
    """A range started inside a record (a wrong guess) reads records that do not end
    where the next range starts: :func:`ranges_chain` says so."""
    starts, size = _varied_capture(tmp_path / "v.pcap")
    ranges = classic_ranges(tmp_path / "v.pcap", 3, 1 << 16)
    wrong = [ByteRange(r.start, r.first_block, r.blocks) for r in ranges]
    wrong[1].start += 16 + 41        # the fake header in the payload
    for r in wrong:
        try:
            for _ in iter_capture(tmp_path / "v.pcap", chunk_bytes=1 << 16, byte_range=r):
                pass
        except CaptureError:          # a wrong chain may also read nonsense
            r.end = -1
    assert not ranges_chain(wrong)


def test_too_small_or_pcapng_files_are_not_split(tmp_path, trace):
    _varied_capture(tmp_path / "v.pcap", n=50)
    assert classic_ranges(tmp_path / "v.pcap", 4, 1 << 16) is None
    _pcapng(tmp_path / "a.pcapng", trace.frames(range(2000)),
            trace.timestamps[:2000].tolist(), tsresol=9)
    assert classic_ranges(tmp_path / "a.pcapng", 4, 1 << 16) is None
    with pytest.raises(ValueError):
        next(iter_capture(tmp_path / "a.pcapng", byte_range=ByteRange(24, 0, 1)))


def test_block_buffer_is_made_once_a_pass(monkeypatch):
    """Each block's unread tail (a record cut by the block's end) moves to the front
    and the next block is read after it into the same buffer: no new buffer per block
    (each one a fresh mapping of a block's size faulted in), however long the tails, up to a
    record of the largest captured length."""
    import io
    from host_sw.model import pcap_stream
    rng = np.random.default_rng(3)
    data = rng.integers(0, 256, 50 * 4096 + 123).astype(np.uint8).tobytes()
    blocks = pcap_stream._Blocks(io.BytesIO(data), 4096, 80, b"", None)
    buf = blocks.buf
    got = bytearray()
    while blocks.read():
        cut = blocks.end - int(rng.integers(1, 16 + pcap_stream._MAX_CAPLEN))
        cut = max(cut, 0)
        got += bytes(blocks.buf[:cut])
        blocks.consume(cut)
        assert blocks.buf is buf
    got += bytes(blocks.buf[:blocks.end])
    assert bytes(got) == data

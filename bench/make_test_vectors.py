# SPDX-License-Identifier: BSD-2-Clause
"""Test vectors of the hash contract for other implementations (gateware, C, …): a few
frames with their packet hash ``P`` and the field split for the default LDA, RDA and LDS
configurations (``docs/SPEC.md`` §3, "Test vectors").

Everything is computed by ``host_sw`` (the golden model), so the table cannot drift from
the code; ``tests/test_golden.py`` checks that the table printed in ``docs/SPEC.md`` is
the one :func:`markdown` renders.

Usage::

    .venv/bin/python bench/make_test_vectors.py          # print the Markdown section
    .venv/bin/python bench/make_test_vectors.py --write  # replace it in docs/SPEC.md
"""

from __future__ import annotations

import argparse
import struct
import sys
from pathlib import Path


ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from host_sw.contracts.config import LdaConfig, LdsConfig, RdaConfig  # noqa: E402
from host_sw.model.golden import Hashers, bucket_indices, hash_frames  # noqa: E402
from host_sw.contracts.hashing import (  # noqa: E402
    classify_frame, lda_bank, lda_row, lda_sign, leading_zeros32,
)

BEGIN = "<!-- test-vectors:begin -->"
END = "<!-- test-vectors:end -->"


def _checksum(header: bytes) -> int:
    total = sum(struct.unpack(f"!{len(header) // 2}H", header))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


def ipv4_udp(*, ip_id: int, ttl: int = 64, tos: int = 0, src_mac: bytes = bytes(6),
             dst_mac: bytes = bytes(6), length: int = 60) -> bytes:
    """Ethernet + option-less IPv4 + UDP 10.0.0.1:1234 → 10.0.0.2:5678, zero payload."""
    ip_len = length - 14
    header = struct.pack("!BBHHHBBH4s4s", 0x45, tos, ip_len, ip_id, 0x4000, ttl, 17, 0,
                         bytes([10, 0, 0, 1]), bytes([10, 0, 0, 2]))
    header = header[:10] + _checksum(header).to_bytes(2, "big") + header[12:]
    udp = struct.pack("!HHHH", 1234, 5678, ip_len - 20, 0)
    frame = dst_mac + src_mac + b"\x08\x00" + header + udp
    return frame + bytes(length - len(frame))


def ipv6_tcp(*, length: int = 86) -> bytes:
    """Ethernet + IPv6 + TCP 2001:db8::1:40000 → 2001:db8::2:443 (SYN), zero payload."""
    src = bytes.fromhex("20010db8000000000000000000000001")
    dst = bytes.fromhex("20010db8000000000000000000000002")
    ip = struct.pack("!IHBB16s16s", 0x6000_0000, length - 54, 6, 64, src, dst)
    tcp = struct.pack("!HHIIHHHH", 40000, 443, 1, 0, 0x5002, 65535, 0, 0)
    frame = bytes.fromhex("020000000001020000000002") + b"\x86\xdd" + ip + tcp
    return frame + bytes(length - len(frame))


def frames() -> list[tuple[str, bytes]]:
    """The vectors' frames (bytes without FCS), with a one-line description."""
    lda = LdaConfig()
    hashers = Hashers(lda)
    first = ipv4_udp(ip_id=1)
    # the first IP ID whose packet falls into LDA bank 1 of the default configuration
    ip_id = 2
    while True:
        candidate = ipv4_udp(ip_id=ip_id, length=80)
        p = hash_frames(lda, [candidate], hashers=hashers).packet
        if lda_bank(p, lda.thresholds)[0] == 1:
            break
        ip_id += 1
    return [
        ("IPv4/UDP, 60 bytes (window bytes 60–63 read as zero)", first),
        ("frame 1 after a router: TTL 63, TOS 0x10, new checksum and MACs", ipv4_udp(
            ip_id=1, ttl=63, tos=0x10, src_mac=bytes.fromhex("020000000099"),
            dst_mac=bytes.fromhex("0200000000aa"))),
        (f"IPv4/UDP, 80 bytes, IP ID {ip_id:#06x} (first ID ≥ 2 sampled by bank 1)",
         candidate),
        ("IPv6/TCP, 86 bytes", ipv6_tcp()),
    ]


def vectors() -> list[dict]:
    """One dict per frame: class, P, leading zeros, LDA bank/row/sign, RDA buckets, LDS
    flow hash (row 0) and cells, for the default configurations."""
    lda, rda, lds = LdaConfig(), RdaConfig(), LdsConfig()
    items = frames()
    data = [f for _, f in items]
    h_lda = hash_frames(lda, data)
    h_lds = hash_frames(lds, data)
    _, rda_cols, _ = bucket_indices(rda, hash_frames(rda, data))
    lds_rows, lds_cols, lds_who = bucket_indices(lds, h_lds)
    out = []
    for i, (what, frame) in enumerate(items):
        p = h_lda.packet[i:i + 1]
        row = lda_row(p, lda.rows)
        out.append({
            "frame": i + 1, "what": what, "bytes": frame.hex(),
            "class": classify_frame(frame).name,
            "P": int(p[0]), "lz": int(leading_zeros32(p)[0]),
            "lda_bank": int(lda_bank(p, lda.thresholds)[0]), "lda_row": int(row[0]),
            "lda_sign": int(lda_sign(row)[0]),
            "rda_buckets": [int(rda_cols[l * len(items) + i]) for l in range(rda.banks)],
            "lds_flow0": int(h_lds.flow[0, i]),
            "lds_cells": [int(c) for r, c, w in zip(lds_rows, lds_cols, lds_who) if w == i],
        })
    return out


def markdown() -> str:
    """The test-vector section of docs/SPEC.md (between its markers)."""
    lda, rda, lds = LdaConfig(), RdaConfig(), LdsConfig()
    vs = vectors()
    lines = [BEGIN, "",
             "Generated by `python bench/make_test_vectors.py` (do not edit by hand; "
             "`tests/test_golden.py` checks it). Default configurations: LDA "
             f"{lda.banks}×{lda.rows}, thresholds {lda.thresholds}; RDA k={rda.banks}, "
             f"m={rda.buckets_per_bank}; LDS R={lds.rows}, C={lds.cells}, "
             f"k={lds.vlda_cells}; seed {lda.seed:#x}.", "",
             "Frames (hex, without FCS, 32 bytes a line):", "", "```"]
    for v in vs:
        raw = v["bytes"]
        lines.append(f"# frame {v['frame']}: {v['what']}")
        lines += [raw[i:i + 64] for i in range(0, len(raw), 64)]
    lines += ["```", "",
              "| frame | class | P (packet hash) | lz(P[63:32]) | LDA bank | LDA row | sign "
              "| RDA buckets (l=0, 1) | LDS flow hash row 0 | LDS cells (rows 0–3) |",
              "|---|---|---|---:|---:|---:|---:|---|---|---|"]
    for v in vs:
        lines.append(
            f"| {v['frame']} | {v['class']} | `{v['P']:#018x}` | {v['lz']} | {v['lda_bank']} "
            f"| {v['lda_row']} | {v['lda_sign']:+d} | {', '.join(map(str, v['rda_buckets']))} "
            f"| `{v['lds_flow0']:#010x}` | {', '.join(map(str, v['lds_cells']))} |")
    lines += ["", END]
    return "\n".join(lines) + "\n"


def write(path: Path) -> None:
    text = path.read_text()
    if BEGIN not in text or END not in text:
        raise SystemExit(f"{path} has no {BEGIN} … {END} section")
    head, rest = text.split(BEGIN, 1)
    tail = rest.split(END, 1)[1]
    path.write_text(head + markdown().rstrip("\n") + tail)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true",
                        help="replace the section in docs/SPEC.md")
    args = parser.parse_args(argv)
    if args.write:
        write(ROOT / "docs" / "SPEC.md")
        print("updated docs/SPEC.md")
    else:
        print(markdown(), end="")


if __name__ == "__main__":
    main()

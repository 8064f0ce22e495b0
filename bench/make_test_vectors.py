# SPDX-License-Identifier: BSD-2-Clause
"""Test vectors of the contracts for other implementations (gateware, C, …): a few frames
with their packet hash ``P`` and the field split for the default LDA, RDA and LDS
configurations (``docs/SPEC.md`` §3, "Test vectors"), the check value of interval records
(§4.4), the configuration IDs of the default OPA and RLI configurations (§5), and the
register maps of the default configurations with their IDs (``docs/SPEC.md`` §7).

Everything is computed by ``host_sw`` (the golden model, the register map), so the tables
cannot drift from the code; ``tests/model/test_golden.py`` checks that the sections printed in
``docs/SPEC.md`` are the ones :func:`markdown` and :func:`regmap_markdown` render, and
``tests/contracts/test_regmap.py`` recomputes the register-map IDs from the printed tables by the
algorithm SPEC §7.3 writes down; ``tests/contracts/test_config.py`` checks the §5 block
(:func:`config_id_markdown`) and recomputes its IDs from the printed canonical JSON;
``tests/contracts/test_check_value.py`` checks the §4.4 block (:func:`check_value_markdown`)
and recomputes its check values from the printed bytes with ``zlib``.

Usage::

    .venv/bin/python -m bench.make_test_vectors          # print the Markdown sections
    .venv/bin/python -m bench.make_test_vectors --write  # replace them in docs/SPEC.md
"""

from __future__ import annotations

import argparse
import hashlib
import struct
from pathlib import Path

import numpy as np

from host_sw.contracts.check_value import (RecordHeader, count_total, counter_bytes,
                                           header_bytes, check_value, words_check)
from host_sw.contracts.config import LdaConfig, LdsConfig, OpaConfig, RdaConfig, RliConfig
from host_sw.contracts.config_base import canonical_json
from host_sw.contracts.hashing import (
    classify_frame,
)
from host_sw.contracts.hash_fields import (
    field_hash, lda_bank, lda_row, lda_sign, lds_digest, lds_offset, leading_zeros32,
)
from host_sw.contracts.frames.frame_format import IntervalFlags
from host_sw.contracts.regmap import REGISTERS, register_map
from host_sw.contracts.synopsis import Synopsis
from host_sw.model.golden_lda_rda_lds import Hashers, bucket_indices, hash_frames

from bench import ROOT

BEGIN = "<!-- test-vectors:begin -->"
END = "<!-- test-vectors:end -->"
REGMAP_BEGIN = "<!-- register-map:begin -->"
REGMAP_END = "<!-- register-map:end -->"
CONFIG_ID_BEGIN = "<!-- config-id-vectors:begin -->"
CONFIG_ID_END = "<!-- config-id-vectors:end -->"
CHECK_BEGIN = "<!-- check-value-vectors:begin -->"
CHECK_END = "<!-- check-value-vectors:end -->"
#: Register descriptions longer than this are cut in the table (the csr.json has them all).
DESCRIPTION_CHARS = 110


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
        if lda_bank(field_hash(p, lda.seed), lda.thresholds)[0] == 1:
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
    """One dict per frame: class, P, the field hash F, leading zeros of F, LDA
    bank/row/sign, RDA buckets, LDS flow hash (row 0), offsets, digest and cells, for the
    default configurations."""
    lda, rda, lds = LdaConfig(), RdaConfig(), LdsConfig()
    items = frames()
    data = [f for _, f in items]
    h_lda = hash_frames(lda, data)
    h_lds = hash_frames(lds, data)
    _, rda_cols, _ = bucket_indices(rda, hash_frames(rda, data))
    lds_rows, lds_cols, lds_who = bucket_indices(lds, h_lds)
    offsets = Hashers(lds).lds_offset_hashes(h_lds.packet)
    out = []
    for i, (what, frame) in enumerate(items):
        p = h_lda.packet[i:i + 1]
        f = field_hash(p, lda.seed)
        row = lda_row(f, lda.rows)
        out.append({
            "frame": i + 1, "what": what, "bytes": frame.hex(),
            "class": classify_frame(frame).name,
            "P": int(p[0]), "F": int(f[0]), "lz": int(leading_zeros32(f)[0]),
            "lda_bank": int(lda_bank(f, lda.thresholds)[0]), "lda_row": int(row[0]),
            "lda_sign": int(lda_sign(row)[0]),
            "lds_offsets": [int(lds_offset(offsets[r][i:i + 1], lds.vlda_cells)[0])
                            for r in range(lds.rows)],
            "lds_digest": int(lds_digest(field_hash(h_lds.packet[i:i + 1], lds.seed),
                                         lds.digest_bits)[0]),
            "rda_buckets": [int(rda_cols[l * len(items) + i]) for l in range(rda.banks)],
            "lds_flow0": int(h_lds.flow[0, i]),
            "lds_cells": [int(c) for r, c, w in zip(lds_rows, lds_cols, lds_who) if w == i],
        })
    return out


#: Windows of the "other window sizes" vectors (SPEC §2): shorter and longer than 64.
OTHER_WINDOWS = (32, 72)


def window_vectors() -> list[dict]:
    """The default masks and the packet hash of every vector frame for the
    :data:`OTHER_WINDOWS` (LDA configuration with only ``window_bytes`` changed)."""
    data = [f for _, f in frames()]
    out = []
    for w in OTHER_WINDOWS:
        config = LdaConfig(window_bytes=w)
        out.append({"window": w, "masks": [config.mask_packet_ipv4, config.mask_packet_ipv6,
                                           config.mask_flow_ipv4, config.mask_flow_ipv6],
                    "P": [int(p) for p in hash_frames(config, data).packet]})
    return out


def markdown() -> str:
    """The test-vector section of docs/SPEC.md (between its markers)."""
    lda, rda, lds = LdaConfig(), RdaConfig(), LdsConfig()
    vs = vectors()
    lines = [BEGIN, "",
             "Generated by `python -m bench.make_test_vectors` (do not edit by hand; "
             "`tests/model/test_golden.py` checks it). Default configurations: LDA "
             f"{lda.banks}×{lda.rows}, thresholds {lda.thresholds}; RDA k={rda.banks}, "
             f"m={rda.buckets_per_bank}; LDS R={lds.rows}, C={lds.cells}, "
             f"k={lds.vlda_cells}; seed {lda.seed:#x}.", "",
             "Frames (hex, without FCS, 32 bytes a line):", "", "```"]
    for v in vs:
        raw = v["bytes"]
        lines.append(f"# frame {v['frame']}: {v['what']}")
        lines += [raw[i:i + 64] for i in range(0, len(raw), 64)]
    lines += ["```", "",
              "| frame | class | P (packet hash) | F (field hash) | lz(F[63:32]) | LDA bank "
              "| LDA row | sign | RDA buckets (l=0, 1) | LDS flow hash row 0 "
              "| LDS offsets (rows 0–3) | LDS digest | LDS cells (rows 0–3) |",
              "|---|---|---|---|---:|---:|---:|---:|---|---|---|---|---|"]
    for v in vs:
        lines.append(
            f"| {v['frame']} | {v['class']} | `{v['P']:#018x}` | `{v['F']:#018x}` "
            f"| {v['lz']} | {v['lda_bank']} "
            f"| {v['lda_row']} | {v['lda_sign']:+d} | {', '.join(map(str, v['rda_buckets']))} "
            f"| `{v['lds_flow0']:#010x}` | {', '.join(map(str, v['lds_offsets']))} "
            f"| `{v['lds_digest']:#010x}` | {', '.join(map(str, v['lds_cells']))} |")
    lines += ["", "Other window sizes (§2): the default masks of `LdaConfig(window_bytes=w)` "
              "and the packet hash `P` of frames 1–4 (same seed and frames):", "",
              "| window_bytes | mask_packet_ipv4 | mask_packet_ipv6 | mask_flow_ipv4 "
              "| mask_flow_ipv6 | P of frames 1, 2, 3, 4 |", "|---:|---|---|---|---|---|"]
    for v in window_vectors():
        masks = " | ".join(f"`{m:#x}`" for m in v["masks"])
        hashes = ", ".join(f"`{p:#018x}`" for p in v["P"])
        lines.append(f"| {v['window']} | {masks} | {hashes} |")
    lines += ["", END]
    return "\n".join(lines) + "\n"


def config_id_markdown() -> str:
    """The configuration-ID vectors of docs/SPEC.md §5 (between their markers): the
    canonical JSON, its SHA-256 and the ID of the default OPA and RLI configurations."""
    lines = [CONFIG_ID_BEGIN, "",
             "Generated by `python -m bench.make_test_vectors` (do not edit by hand; "
             "`tests/contracts/test_config.py` checks it). The default `OpaConfig()` and "
             "`RliConfig()`:"]
    for config in (OpaConfig(), RliConfig()):
        text = canonical_json(config)
        lines += ["", "```", text, f"SHA-256 = {hashlib.sha256(text.encode()).hexdigest()}",
                  f"config_id = {config.config_id:#010x}", "```"]
    lines += ["", CONFIG_ID_END]
    return "\n".join(lines) + "\n"


def check_records() -> list[tuple[str, object, list[int], RecordHeader]]:
    """The interval records of the §4.4 vectors: (description, configuration, words in
    memory order, header)."""
    lda = LdaConfig(banks=2, rows=2, thresholds=(0, 1))
    lda_words = Synopsis(lda, {
        "count": np.array([[1, 0], [3, 0xFFFFFFFF]], dtype=np.uint64),
        "ts_sum": np.array([[100, 0], [0x123456789A, 0xFFFFFFFFFF]], dtype=np.uint64),
    }).words()
    rda = RdaConfig(banks=2, buckets_per_bank=1)
    rda_words = Synopsis(rda, {
        "count": np.array([[2], [2]], dtype=np.uint64),
        "ts_sum": np.array([[10], [10]], dtype=np.uint64),
        "id_xor": np.array([[0x0123456789ABCDEF], [0]], dtype=np.uint64)}).words()
    zero = LdaConfig(banks=1, rows=4, thresholds=(0,))
    rli = RliConfig(cells=2)
    rli_words = Synopsis(rli, {
        name: np.array([[1, 0]], dtype=np.uint64) for name in rli.layout.names}).words()
    flags = int(IntervalFlags.CONFIG_CHANGED | IntervalFlags.OVERRUN)
    return [
        ("LDA, `banks = 2`, `rows = 2`, 32-bit counts, 40-bit sums: `count` = "
         "`[[1, 0], [3, 0xFFFFFFFF]]`, `ts_sum` = `[[100, 0], [0x123456789A, 0xFFFFFFFFFF]]`;"
         f" interval 7, flags `{flags:#04x}` (CONFIG_CHANGED | OVERRUN), 4 packets, the "
         "configuration's ID, timestamp `0x0123456789abcdef`, a sender (role 1) of source MAC "
         "`02:00:00:00:00:01`",
         lda, lda_words, RecordHeader(seq=7, flags=flags, packets=4,
                                      config_id=lda.config_id, timestamp=0x0123456789ABCDEF,
                                      role=1, src_mac=0x020000000001)),
        ("RDA, `banks = 2`, `m = 1`: `count` `[[2], [2]]`, `ts_sum` `[[10], [10]]`, "
         "`id_xor` `[[0x0123456789ABCDEF], [0]]`; interval `0xfffffffe`, no flags, 2 packets, "
         "the configuration's ID, timestamp 1000, a receiver (role 2) of source MAC "
         "`02:00:00:00:00:02`",
         rda, rda_words, RecordHeader(seq=0xFFFFFFFE, flags=0, packets=2,
                                      config_id=rda.config_id, timestamp=1000,
                                      role=2, src_mac=0x020000000002)),
        ("An all-zero LDA copy of 4 words (`banks = 1`, `rows = 4`) with an all-zero header",
         zero, [0] * 4, RecordHeader(seq=0, flags=0, packets=0, config_id=0, timestamp=0,
                                     role=0, src_mac=0)),
        ("RLI, `cells = 2`: every field `[[1, 0]]`; interval 3, no flags, 1 "
         "packet, the configuration's ID, timestamp 500, a receiver of source MAC "
         "`02:00:00:00:00:02`; its frozen counts: 4 references, 5 overflowed, 6 "
         "unreferenced, 7 refused (after the rest of the header)",
         rli, rli_words, RecordHeader(seq=3, flags=0, packets=1, config_id=rli.config_id,
                                      timestamp=500, role=2, src_mac=0x020000000002,
                                      rli_references=4, rli_overflowed=5,
                                      rli_unreferenced=6, rli_refused=7)),
    ]


def check_value_markdown() -> str:
    """The check-value vectors of docs/SPEC.md §4.4 (between their markers): each record's
    words, its bytes (words, then the header), the words' CRC, the check value and the
    count total."""
    lines = [CHECK_BEGIN, "",
             "Generated by `python -m bench.make_test_vectors` (do not edit by hand; "
             "`tests/contracts/test_check_value.py` checks it and recomputes each check value "
             "from the printed bytes with `zlib.crc32`)."]
    for what, config, words, header in check_records():
        syn = Synopsis.from_words(config, words)
        n = len(counter_bytes(config, words[:1]))
        lines += ["", what + ":", "", "```",
                  "words (memory order)  " + "  ".join(f"{w:#x}" for w in words)]
        raw = counter_bytes(config, words)
        for k in range(len(words)):
            label = "word bytes" if k == 0 else ""
            lines.append(f"{label:21} " + raw[k * n:(k + 1) * n].hex(" "))
        hb = header_bytes(header)
        cuts, at = [], 0
        for _, bits in header.fields:
            cuts.append(hb[at:at + bits // 8])
            at += bits // 8
        lines += [f"{'header bytes':21} " + " | ".join(part.hex(" ") for part in cuts),
                  f"{'':21} ({' | '.join(name for name, _ in header.fields)})",
                  f"{'words CRC':21} {words_check(config, words):#010x}",
                  f"{'check value':21} {check_value(config, words, header):#010x}",
                  f"{'count total':21} {count_total(config, syn.count)}",
                  "```"]
    lines += ["", CHECK_END]
    return "\n".join(lines) + "\n"


def _bits(f) -> str:
    hi = f.offset + f.width - 1
    return f"{f.name}[{hi}]" if f.width == 1 else f"{f.name}[{hi}:{f.offset}]"


def _register_row(r) -> str:
    fields = ", ".join(_bits(f) + ("" if f.access == r.access else f" {f.access}")
                       for f in r.fields)
    flags = "constant" if r.constant else ("volatile" if r.volatile else "")
    text = r.description
    if len(text) > DESCRIPTION_CHARS:
        text = text[:DESCRIPTION_CHARS].rsplit(" ", 1)[0] + " …"
    return (f"| `{r.name}` | {r.address:#06x} | {r.words} | {r.access} | {flags} | {fields} "
            f"| {text} |")


def regmap_markdown() -> str:
    """The register-map section of docs/SPEC.md §7 (between its markers): the default LDA
    map register by register, then the default maps' run-time registers, windows and IDs."""
    lda = register_map(LdaConfig(), data_width=64)
    lines = [REGMAP_BEGIN, "",
             "Generated by `python -m bench.make_test_vectors` (do not edit by hand; "
             "`tests/model/test_golden.py` checks it, `tests/contracts/test_regmap.py` recomputes the IDs "
             "from it by §7.3). The default LDA core (2 × 1024, 64-bit data path), "
             "`register_map(LdaConfig())`:", "",
             "| register | word address | words | access | flags | fields (bits; access "
             "when not the register's) | description |",
             "|---|---:|---:|---|---|---|---|"]
    lines += [_register_row(r) for r in lda]
    w = lda.window
    lines.append(f"| `{w.name}` (window) | {w.address:#06x} | {w.words} | ro | span "
                 f"{w.span} | — | {w.buckets} counter words × {w.chunks} chunks; counter i "
                 f"chunk c at {w.address:#x} + {w.chunks}i + c |")
    last_fixed = REGISTERS[-1].name
    lines += ["", "The default configuration of each kind (64-bit data path): registers `id` "
              f"… `{last_fixed}` are laid out as above in every core (only `config`'s "
              "values differ); the run-time registers and the window follow §7.1–§7.2:", "",
              "| kind | run-time registers (address, words) | counter window: address, "
              "words (buckets × chunks), span | register-map ID |",
              "|---|---|---|---|"]
    for config in (LdaConfig(), RdaConfig(), LdsConfig(), OpaConfig(), RliConfig()):
        rmap = register_map(config, data_width=64)
        runtime = [r for r in rmap if r.address > rmap[last_fixed].address]
        regs = "; ".join(f"`{r.name}` {r.address:#06x}, {r.words} ("
                         + ", ".join(_bits(f) for f in r.fields) + ")" for r in runtime)
        w = rmap.window
        lines.append(f"| {config.kind.upper()} | {regs} | {w.address:#06x}, {w.words} "
                     f"({w.buckets} × {w.chunks}), {w.span} | `{rmap.id_value:#010x}` |")
    lines += ["", REGMAP_END]
    return "\n".join(lines) + "\n"


def _replace(text: str, begin: str, end: str, section: str, path) -> str:
    if begin not in text or end not in text:
        raise SystemExit(f"{path} has no {begin} … {end} section")
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    return head + section.rstrip("\n") + tail


def write(path: Path) -> None:
    text = _replace(path.read_text(), BEGIN, END, markdown(), path)
    text = _replace(text, CONFIG_ID_BEGIN, CONFIG_ID_END, config_id_markdown(), path)
    text = _replace(text, CHECK_BEGIN, CHECK_END, check_value_markdown(), path)
    path.write_text(_replace(text, REGMAP_BEGIN, REGMAP_END, regmap_markdown(), path))


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
        print()
        print(config_id_markdown(), end="")
        print()
        print(check_value_markdown(), end="")
        print()
        print(regmap_markdown(), end="")


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: BSD-2-Clause
"""Register map: layout invariants, LiteX-style exports, ID sensitivity, counter window;
and the host side of the UARTBone byte protocol (exact bytes)."""

import csv
import hashlib
import io
import json
import re
from dataclasses import fields
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

from host_sw.contracts import uartbone as ub
from host_sw.contracts.config import LdaConfig, LdsConfig, OpaConfig, RdaConfig
from host_sw.contracts.registers import BUS_DATA_BITS, Register, RegField
from host_sw.contracts.regmap import (
    HOST_FIELDS, RUNTIME_FIELDS, register_map, static_config_dict,
)
from host_sw.contracts.csr_export import parse_csr_csv, parse_csr_json

ROOT = Path(__file__).resolve().parents[2]

CONFIGS = [
    LdaConfig(), LdaConfig(banks=16, rows=2, thresholds=tuple(range(0, 32, 2))),
    LdaConfig(banks=1, rows=1 << 20, thresholds=(0,)),
    RdaConfig(), RdaConfig(banks=8, buckets_per_bank=3),
    LdsConfig(), LdsConfig(rows=8, cells=1000, vlda_cells=7, row_thresholds=(0,) * 8),
    LdaConfig(window_bytes=128),
]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.kind}")
def test_no_overlapping_addresses_and_fields_fit(config):
    rmap = register_map(config)
    used = {}
    for reg in rmap:
        for a in range(reg.address, reg.address + reg.words):
            assert a not in used, f"{reg.name} overlaps {used[a]} at {a:#x}"
            used[a] = reg.name
        assert reg.width == reg.words * BUS_DATA_BITS
        bits = 0
        for f in reg.fields:
            assert 0 <= f.offset and f.offset + f.width <= reg.width, (reg.name, f.name)
            assert bits & f.mask == 0, (reg.name, f.name)
            bits |= f.mask
            assert f.reset < (1 << f.width)
    w = rmap.window
    assert w.address % w.span == 0 and w.span >= w.words
    assert all(not (w.address <= a < w.address + w.span) for a in used)
    assert rmap.address_bits >= (w.address + w.words - 1).bit_length()
    # Fixed registers keep their addresses across configurations (discovery).
    assert [rmap[n].address for n in ("id", "version", "config")] == [0, 1, 2]


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: f"{c.kind}")
def test_counter_window_size_and_addressing(config):
    rmap = register_map(config)
    w = rmap.window
    assert w.words == config.buckets * config.layout.chunks
    assert w.chunks == config.layout.chunks
    assert w.address_of(0, 0) == w.address
    last = config.buckets - 1
    assert w.address_of(last, w.chunks - 1) == w.address + w.words - 1
    assert w.locate(w.address_of(last, 1)) == (last, 1)
    words = [(1 << config.layout.width) - 1 - i for i in range(3)]
    bus = [c for word in words for c in config.layout.to_chunks(word)]
    assert w.words_from_bus(bus) == words
    with pytest.raises(ValueError):
        w.address_of(config.buckets)


def test_default_lda_addresses_and_csv_lines():
    """Pin the default LDA map: host tools and docs quote these addresses."""
    rmap = register_map(LdaConfig(), data_width=64)
    assert {r.name: (r.address, r.words, r.access) for r in rmap} == {
        "id": (0, 1, "ro"), "version": (1, 1, "ro"), "config": (2, 5, "ro"),
        "config_id": (7, 1, "rw"), "control": (8, 1, "rw"), "status": (9, 1, "ro"),
        "timebase": (10, 2, "rw"), "interval_seq": (12, 1, "ro"),
        "frozen_seq": (13, 1, "ro"), "frozen_packets": (14, 1, "ro"),
        "frozen_config_id": (15, 1, "ro"), "overruns": (16, 1, "ro"),
        "frames_seen": (17, 1, "ro"), "frames_counted": (18, 1, "ro"),
        "frames_errored": (19, 1, "ro"), "frames_runt": (20, 1, "ro"),
        "frames_non_ip": (21, 1, "ro"), "frames_control": (22, 1, "ro"),
        "interval_mode": (23, 1, "rw"), "interval_ticks": (24, 2, "rw"),
        "interval_start": (26, 2, "rw"), "local_mac": (28, 2, "rw"),
        "export_dst_mac": (30, 2, "rw"), "marker_src_mac": (32, 2, "rw"),
        "frozen_flags": (34, 1, "ro"), "frozen_timestamp": (35, 2, "ro"),
        "markers_sent": (37, 1, "ro"), "markers_accepted": (38, 1, "ro"),
        "markers_rejected": (39, 1, "ro"), "sequence_gaps": (40, 1, "ro"),
        "export_frames": (41, 1, "ro"), "frozen_check": (42, 1, "ro"),
        "frozen_updates": (43, 1, "ro"),
        "markers_runt": (44, 1, "ro"), "markers_bad_tag": (45, 1, "ro"),
        "markers_replayed": (46, 1, "ro"), "auth_mode": (47, 1, "rw"),
        "auth_key": (48, 4, "rw"), "role": (52, 1, "rw"), "frozen_role": (53, 1, "ro"),
        "frozen_src_mac": (54, 2, "ro"),
        "thresholds": (56, 1, "rw"), "masks": (57, 8, "rw")}
    assert (rmap.window.address, rmap.window.words) == (0x2000, 2048 * 3)
    lines = rmap.csr_csv().splitlines()
    assert "csr_base,lda,0x00000000,," in lines
    assert "csr_register,lda_timebase,0x00000028,2,rw" in lines
    assert "csr_register,lda_masks,0x000000e4,8,rw" in lines
    assert "memory_region,lda_counters,0x00008000,24576,io" in lines
    assert "constant,config_csr_data_width,32,," in lines


@pytest.mark.parametrize("config", CONFIGS[::2], ids=lambda c: f"{c.kind}")
def test_csv_and_json_round_trip(config, tmp_path):
    rmap = register_map(config)
    csv_path, json_path = rmap.write_exports(tmp_path)
    from_csv = parse_csr_csv(csv_path.read_text())
    from_json = parse_csr_json(json_path.read_text())
    for d in (from_csv, from_json):
        assert set(d["csr_registers"]) == {f"{config.kind}_{r.name}" for r in rmap}
        for r in rmap:
            entry = d["csr_registers"][f"{config.kind}_{r.name}"]
            assert entry == {"addr": 4 * r.address, "size": r.words, "type": r.access}
        mem = d["memories"][f"{config.kind}_counters"]
        assert mem == {"base": 4 * rmap.window.address, "size": 4 * rmap.window.words,
                       "type": "io"}
        assert d["constants"]["config_csr_data_width"] == 32
        assert d["constants"]["config_regmap_id"] == rmap.id_value
        assert d["constants"]["config_synopsis_kind"] == config.kind
    # Every csv line has LiteX's 5 columns (LiteX's CSRBuilder unpacks exactly 5).
    rows = [r for r in csv.reader(io.StringIO(csv_path.read_text())) if r[0][0] != "#"]
    assert all(len(r) == 5 for r in rows)
    # Field descriptions travel in the json.
    fj = from_json["csr_fields"][f"{config.kind}_masks"]["fields"]
    assert fj["flow_ipv6"]["offset"] == 3 * config.window_bytes
    assert fj["packet_ipv4"]["reset"] == config.mask_packet_ipv4
    json.dumps(from_json)  # plain JSON types only


def _changed(config, name):
    """A valid configuration differing from ``config`` in static parameter ``name``."""
    value = getattr(config, name)
    if name == "banks" and isinstance(config, LdaConfig):
        return config.replace(banks=3, thresholds=(0, 4, 8))
    if name == "rows" and isinstance(config, LdsConfig):
        return config.replace(rows=3, row_thresholds=(0, 0, 0))
    if name == "window_bytes":
        return config.replace(window_bytes=value + 8)
    if name in ("rows", "cells", "buckets_per_bank"):
        return config.replace(**{name: value * 2})
    if name == "vlda_cells":
        return config.replace(vlda_cells=value + 1)
    if name == "id_bits":
        return None  # fixed at 64 by RdaConfig
    return config.replace(**{name: value + 1})


@pytest.mark.parametrize("config", [LdaConfig(), RdaConfig(), LdsConfig()],
                         ids=lambda c: c.kind)
def test_id_changes_with_every_static_parameter(config):
    base = register_map(config).id_value
    static = set(static_config_dict(config)) - {"kind"}
    assert static == {f.name for f in fields(config)} - RUNTIME_FIELDS - HOST_FIELDS
    tested = 0
    for name in sorted(static):
        other = _changed(config, name)
        if other is None:
            continue
        assert register_map(other).id_value != base, name
        tested += 1
    assert tested >= len(static) - 1
    # Data width and kind are part of the ID too.
    assert register_map(config, data_width=128).id_value != base
    assert len({register_map(c).id_value for c in (LdaConfig(), RdaConfig(), LdsConfig())}) == 3


def test_id_ignores_runtime_and_host_fields():
    base = LdaConfig()
    same = base.replace(thresholds=(1, 9), mask_packet_ipv4=0xFF, tick_ns=5.0)
    assert base.config_id != same.config_id
    assert register_map(base).id_value == register_map(same).id_value
    # ... but the run-time fields' resets follow the config.
    assert register_map(same)["thresholds"].decode(register_map(same)["thresholds"].reset) \
        == {"bank0": 1, "bank1": 9}


def test_lookup_and_field_decoding():
    rmap = register_map(LdsConfig(rows=2, row_thresholds=(0, 5)))
    assert rmap["TIMEBASE"] is rmap["timebase"]
    assert "status" in rmap and "thresholds" in rmap
    assert "thresholds" not in register_map(RdaConfig())
    with pytest.raises(KeyError, match="no register"):
        rmap["nope"]
    status = rmap["status"]
    assert status.decode(status.encode(frozen_ready=1, frozen_overrun=1)) == {
        "active_copy": 0, "frozen_ready": 1, "clearing": 0, "frozen_overrun": 1,
        "other_clean": 1}           # fields not given take their reset (other_clean: 1)
    tb = rmap["timebase"]
    assert tb.to_words(0x1122334455667788) == [0x11223344, 0x55667788]  # MS word first
    assert tb.from_words([0x11223344, 0x55667788]) == 0x1122334455667788
    assert rmap.decode("thresholds", [rmap["thresholds"].reset]) == {"row0": 0, "row1": 5}
    cfg = rmap["config"].decode(rmap["config"].reset)
    assert (cfg["kind"], cfg["dim0"], cfg["dim1"], cfg["vlda_cells"], cfg["xor_bits"]) == \
        (3, 2, 1024, 1, 32)
    assert rmap.at(rmap["masks"].address + 3) is rmap["masks"]
    assert rmap.at(rmap.window.address + 5) is rmap.window
    with pytest.raises(ValueError, match="does not fit"):
        status.encode(active_copy=2)


def test_register_validation():
    with pytest.raises(ValueError, match="does not fit"):
        Register(name="x", address=0, width=32, access="rw",
                 fields=(RegField("a", 30, 4, "rw"),))
    with pytest.raises(ValueError, match="overlap"):
        Register(name="x", address=0, width=32, access="rw",
                 fields=(RegField("a", 0, 4, "rw"), RegField("b", 3, 4, "rw")))
    with pytest.raises(ValueError, match="data_width"):
        register_map(LdaConfig(), data_width=48)


# -- host side of the UARTBone protocol ---------------------------------------------------

def test_uartbone_exact_bytes():
    assert ub.encode_read(0x2000) == bytes([0x02, 0x01, 0x00, 0x00, 0x20, 0x00])
    assert ub.encode_read(0x10, 4, incrementing=False) == bytes([0x04, 4, 0, 0, 0, 0x10])
    assert ub.encode_write(8, [1]) == bytes([0x01, 1, 0, 0, 0, 8, 0, 0, 0, 1])
    assert ub.encode_write(0xA0B0C0D0, [0x01020304, 0xFFFFFFFF], incrementing=False) == \
        bytes([0x03, 2, 0xA0, 0xB0, 0xC0, 0xD0, 1, 2, 3, 4, 0xFF, 0xFF, 0xFF, 0xFF])
    assert ub.decode_read_reply(bytes([0, 0, 1, 0, 0xDE, 0xAD, 0xBE, 0xEF])) == \
        [0x100, 0xDEADBEEF]
    assert ub.read_reply_length(7) == 28


def test_uartbone_splits_long_bursts():
    cmd = ub.encode_read(100, 300)
    assert cmd == bytes([0x02, 255, 0, 0, 0, 100]) + bytes([0x02, 45, 0, 0, 1, 99])
    cmd = ub.encode_read(100, 300, incrementing=False)
    assert cmd == bytes([0x04, 255, 0, 0, 0, 100]) + bytes([0x04, 45, 0, 0, 0, 100])
    cmd = ub.encode_write(0, list(range(10)), max_burst=8)
    assert cmd[:6] == bytes([0x01, 8, 0, 0, 0, 0]) and len(cmd) == 6 + 32 + 6 + 8
    assert cmd[38:44] == bytes([0x01, 2, 0, 0, 0, 8])


def test_uartbone_rejects_bad_arguments():
    with pytest.raises(ValueError):
        ub.encode_read(1 << 32)
    with pytest.raises(ValueError):
        ub.encode_read(0, 0)
    with pytest.raises(ValueError):
        ub.encode_write(0, [1 << 32])
    with pytest.raises(ValueError):
        ub.encode_write(0, [])
    with pytest.raises(ValueError):
        ub.decode_read_reply(b"\x00\x01\x02")
    with pytest.raises(ValueError):
        ub.decode_read_reply(b"\x00" * 8, 1)


@settings(max_examples=50, deadline=None)
@given(st.integers(0, (1 << 32) - 300), st.lists(st.integers(0, (1 << 32) - 1), min_size=1,
                                                 max_size=300))
def test_uartbone_write_parses_back(address, words):
    data = ub.encode_write(address, words)
    got, k = [], 0
    while k < len(data):
        assert data[k] == ub.CMD_WRITE_INCR
        n = data[k + 1]
        a = int.from_bytes(data[k + 2:k + 6], "big")
        assert a == address + len(got)
        got += ub.decode_read_reply(data[k + 6:k + 6 + 4 * n], n)
        k += 6 + 4 * n
    assert got == words


# -- docs/SPEC.md §7: the ID recomputed from the printed tables -------------------------------

def _spec_fields(text: str, access: str) -> list:
    """``name[hi:lo] pulse, …`` of a SPEC §7.4 table cell → ``[[name, offset, width,
    access], …]`` (a field's access is the register's unless the cell names it)."""
    out = []
    for item in filter(None, (x.strip() for x in text.split(","))):
        m = re.fullmatch(r"(\w+)\[(\d+)(?::(\d+))?\](?: (ro|rw|pulse|wo))?", item)
        assert m, item
        hi = int(m.group(2))
        lo = int(m.group(3)) if m.group(3) is not None else hi
        out.append([m.group(1), lo, hi - lo + 1, m.group(4) or access])
    return out


def _spec_register(name, address, words, access, flags, fields) -> dict:
    return {"name": name, "address": address, "width": 32 * words, "access": access,
            "constant": flags == "constant", "volatile": flags == "volatile",
            "fields": _spec_fields(fields, access)}


def test_register_map_ids_follow_the_spec_algorithm():
    """SPEC §7.3's algorithm applied to SPEC §7.4's tables and §5's canonical JSON (no
    regmap code) gives the IDs printed there, and those are the code's IDs."""
    spec = (ROOT / "docs" / "SPEC.md").read_text()
    section = spec.split("<!-- register-map:begin -->")[1].split("<!-- register-map:end -->")[0]
    rows = [[c.strip() for c in line.strip().strip("|").split("|")]
            for line in section.splitlines() if line.startswith("| `")]
    fixed = [_spec_register(r[0].strip("`"), int(r[1], 16), int(r[2]), r[3], r[4], r[5])
             for r in rows if len(r) == 7 and "(window)" not in r[0]]
    first_runtime = next(i for i, r in enumerate(fixed) if r["name"] == "thresholds")
    fixed = fixed[:first_runtime]
    assert [r["name"] for r in fixed][:3] == ["id", "version", "config"]
    kinds = {r[0]: r for r in ([c.strip() for c in line.strip().strip("|").split("|")]
                                for line in section.splitlines()
                                if re.match(r"\| (LDA|RDA|LDS) \|", line))}
    assert set(kinds) == {"LDA", "RDA", "LDS"}
    lda_json = json.loads(re.search(r'\n(\{"banks":2.*\})\n', spec).group(1))
    static_of = {"LDA": lda_json, "RDA": RdaConfig().to_dict(), "LDS": LdsConfig().to_dict()}
    dropped = {"thresholds", "row_thresholds", "tick_ns", "mask_packet_ipv4",
               "mask_packet_ipv6", "mask_flow_ipv4", "mask_flow_ipv6"}
    for kind, (_, runtime, window, printed_id) in kinds.items():
        registers = list(fixed)
        for part in runtime.split("; "):
            m = re.fullmatch(r"`(\w+)` (0x[0-9a-f]+), (\d+) \((.*)\)", part)
            registers.append(_spec_register(m.group(1), int(m.group(2), 16),
                                            int(m.group(3)), "rw", "", m.group(4)))
        m = re.fullmatch(r"(0x[0-9a-f]+), (\d+) \((\d+) × (\d+)\), (\d+)", window)
        base, words, buckets, chunks, span = int(m.group(1), 16), *map(int, m.groups()[1:])
        assert words == buckets * chunks and span == 1 << (words - 1).bit_length()
        end = registers[-1]["address"] + registers[-1]["width"] // 32
        assert base == max(span, 1 << (end - 1).bit_length())          # SPEC §7.2
        static = {k: v for k, v in static_of[kind].items() if k not in dropped}
        desc = {"data_width": 64,
                "map": {"regmap_version": [2, 0], "bus_data_bits": 32,
                        "registers": registers,
                        "window": {"name": "counters", "address": base, "buckets": buckets,
                                   "chunks": chunks, "span": span}},
                "static": static}
        text = json.dumps(desc, sort_keys=True, separators=(",", ":"))
        value = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "big")
        assert f"`{value:#010x}`" == printed_id, kind
        config = {"LDA": LdaConfig(), "RDA": RdaConfig(), "LDS": LdsConfig()}[kind]
        assert register_map(config, data_width=64).id_value == value
    assert "0x8335d56f" in spec.split("### §7.3")[1].split("### §7.4")[0]


@pytest.mark.parametrize("config", [
    LdaConfig(banks=1, rows=2, thresholds=(0,)), LdaConfig(window_bytes=16),
    LdsConfig(rows=8, row_thresholds=(0,) * 8), RdaConfig(banks=8, buckets_per_bank=1 << 20),
], ids=["tiny", "window16", "lds8", "rda-large"])
def test_counter_window_alignment_rule(config):
    """SPEC §7.2: span = next power of two of the window's words; base = max(span, next
    power of two of the registers' end); masks take window_bytes / 8 words."""
    rmap = register_map(config)
    end = max(r.address + r.words for r in rmap)
    words = config.buckets * config.layout.chunks
    span = 1 << (words - 1).bit_length()
    assert (rmap.window.span, rmap.window.address) == (
        span, max(span, 1 << (end - 1).bit_length()))
    assert rmap["masks"].words == config.window_bytes // 8
    if "thresholds" in rmap:
        assert rmap["thresholds"].words == (len(config.sampling_thresholds) * 6 + 31) // 32


@pytest.mark.parametrize("config", [
    LdaConfig(seed=0xFEDCBA9876543210), RdaConfig(seed=7, banks=3),
    LdsConfig(seed=0x1DA5EED, rows=2, cells=100, vlda_cells=3, row_thresholds=(0, 1)),
    OpaConfig(seed=1, groups=64, rows=3)],
    ids=lambda c: c.kind)
def test_hash_seed_is_exported_as_a_constant(config, tmp_path):
    """The H3 seed is in no register: csr.csv and csr.json carry it as the constant
    ``config_seed`` (SPEC §7), so that with CONFIG's constants an integrator rebuilds the
    static configuration the register-map ID covers without reading code."""
    rmap = register_map(config)
    csv_path, json_path = rmap.write_exports(tmp_path)
    assert f"constant,config_seed,{config.seed},," in csv_path.read_text().splitlines()
    for d in (parse_csr_csv(csv_path.read_text()), parse_csr_json(json_path.read_text())):
        c = d["constants"]
        assert c["config_seed"] == config.seed
        names = {"lda": ("banks", "rows", None, None), "rda": ("banks", "buckets_per_bank",
                                                                 "id_bits", None),
                 "lds": ("rows", "cells", "digest_bits", "vlda_cells"),
                 "opa": ("rows", "groups", None, None)}[config.kind]
        static = {"kind": c["config_synopsis_kind"], "seed": c["config_seed"],
                  "count_bits": c["config_count_bits"], "ts_bits": c["config_ts_bits"],
                  "window_bytes": c["config_window_bytes"]}
        for name, value in zip(names, ("config_dim0", "config_dim1", "config_xor_bits",
                                       "config_vlda_cells")):
            if name is not None:
                static[name] = c[value]
        assert static == static_config_dict(config)

# SPDX-License-Identifier: BSD-2-Clause
"""Configurations in canonical form (docs/SPEC.md §5) and the default masks of any window
(SPEC §2): equal configurations have one ID, the masks follow the window."""

from pathlib import Path

import numpy as np
import pytest

from host_sw.contracts.config import (
    LdaConfig, LdsConfig, OpaConfig, RliConfig, check_comparable, config_from_dict,
)
from host_sw.contracts.config_base import canonical_json

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("written", [{"tick_ns": 1}, {"tick_ns": 1.0}, {"seed": 0x1DA5EED}])
def test_equal_configurations_have_equal_ids(written):
    """Issue 12: values that compare equal are one configuration (canonical form, SPEC §5):
    ``"tick_ns": 1`` is the default 1.0, not another ID that check_comparable rejects."""
    config = config_from_dict({"kind": "lda", **written})
    assert config == LdaConfig()
    assert config.config_id == LdaConfig().config_id == 0xA862EF21
    assert canonical_json(config) == canonical_json(LdaConfig())
    assert type(config.tick_ns) is float and type(config.rows) is int
    check_comparable(config, LdaConfig())


@pytest.mark.parametrize("given", [
    {"rows": 1024.0}, {"thresholds": (0.0, 6)}, {"banks": np.int64(2)}, {"window_bytes": 64.0},
])
def test_integral_values_of_other_types_are_the_same_configuration(given):
    """In Python, an integral float or a numpy integer given for an integer parameter is
    the same configuration (same canonical form and ID); a JSON file must write integers
    (``config_from_dict`` refuses a float where an integer belongs, never truncating)."""
    config = LdaConfig(**given)
    assert config == LdaConfig() and config.config_id == 0xA862EF21
    assert type(config.rows) is int and all(type(z) is int for z in config.thresholds)
    if not any(isinstance(v, np.integer) for v in given.values()):
        with pytest.raises(ValueError, match="must be"):
            config_from_dict({"kind": "lda", **{k: list(v) if isinstance(v, tuple) else v
                                                for k, v in given.items()}})


@pytest.mark.parametrize("tick_ns, text", [
    (1, "1.0"), (0.5, "0.5"), (6.4, "6.4"), (1e-05, "1e-05"), (1e16, "1e+16"),
    (0.1 + 0.2, "0.30000000000000004")])
def test_tick_ns_canonical_text(tick_ns, text):
    """SPEC §5: tick_ns is written as the shortest decimal that reads back as the same
    double (Python's repr)."""
    assert f'"tick_ns":{text},' in canonical_json(LdaConfig(tick_ns=tick_ns))


def test_default_masks_follow_the_window():
    """SPEC §2, "Windows other than 64 bytes": packet masks run to the window's end, flow
    masks stay; a shorter window cuts them; LDS refuses a cut default flow key."""
    wide = LdaConfig(window_bytes=72)
    assert wide.mask_packet_ipv4 == 0xFFFFFFFFFFFCBF7000     # bytes 64–71 hashed too
    assert wide.mask_packet_ipv6 == 0xFFFFFFFFFFFFDF3000
    assert (wide.mask_flow_ipv4, wide.mask_flow_ipv6) == (0x3FFC800000, 0x3FFFFFFFFD00000)
    assert wide.config_id == 0x290AF5E5                     # SPEC §5's second example
    assert "0x290af5e5" in (ROOT / "docs" / "SPEC.md").read_text()
    assert LdaConfig().replace(window_bytes=72) == wide     # default masks follow replace
    explicit = LdaConfig().replace(window_bytes=72, mask_packet_ipv4=1)
    assert explicit.mask_packet_ipv4 == 1
    narrow = LdaConfig(window_bytes=32)
    assert (narrow.mask_packet_ipv4, narrow.mask_packet_ipv6) == (0xFCBF7000, 0xFFDF3000)
    assert (narrow.mask_flow_ipv4, narrow.mask_flow_ipv6) == (0xFC800000, 0xFFD00000)
    assert LdsConfig(window_bytes=40, mask_flow_ipv4=0x3FFC800000,
                     mask_flow_ipv6=0).window_bytes == 40
    assert LdsConfig(window_bytes=72).mask_packet_ipv4 == wide.mask_packet_ipv4
    assert RliConfig(window_bytes=48, mask_flow_ipv4=0x3FFC800000,
                     mask_flow_ipv6=0).window_bytes == 48
    assert OpaConfig(window_bytes=24).window_bytes == 24     # no flow hash: no flow key


def _spec_section_5():
    doc = (ROOT / "docs" / "SPEC.md").read_text()
    return doc.split("## §5 ")[1].split("## §6 ")[0]


def test_spec_config_id_vectors_are_the_code_s():
    """SPEC §5's OPA and RLI vectors: the block is what the generator renders, and each
    printed canonical JSON hashes (recomputed here with hashlib alone) to the printed
    SHA-256 and ID, which are the defaults' IDs."""
    import hashlib
    import json
    from bench.make_test_vectors import CONFIG_ID_BEGIN, CONFIG_ID_END, config_id_markdown
    section = _spec_section_5()
    block = CONFIG_ID_BEGIN + section.partition(CONFIG_ID_BEGIN)[2].partition(
        CONFIG_ID_END)[0] + CONFIG_ID_END
    assert block + "\n" == config_id_markdown()
    vectors = [part.split("```")[0].strip().splitlines()
               for part in block.split("```\n")[1::2]]
    assert len(vectors) == 2
    got = {}
    for text, sha, ident in vectors:
        digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
        assert sha == f"SHA-256 = {digest}"
        assert ident == f"config_id = 0x{digest[:8]}"
        got[config_from_dict(json.loads(text)).kind] = int(digest[:8], 16)
    assert got == {"opa": OpaConfig().config_id, "rli": RliConfig().config_id}
    assert got == {"opa": 0x43E0538F, "rli": 0x99F7FB61}


def test_spec_field_table_names_every_field_of_every_kind():
    """SPEC §5's table: one row per field of each kind (``all`` for the shared ones) with
    the field's type and its default as the code has them."""
    import dataclasses
    from host_sw.contracts.config import CONFIG_CLASSES
    from host_sw.contracts.config_base import MASK_FIELDS
    from host_sw.contracts.config_base import SynopsisConfig
    rows = {}
    for line in _spec_section_5().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 6 or not cells[0].startswith("`"):
            continue
        for name in cells[0].replace("`", "").split(", "):
            rows[(name, cells[1])] = (cells[2], cells[3].split("`")[1])
    shared = {f.name for f in dataclasses.fields(SynopsisConfig)}
    assert SynopsisConfig.seed == 0x1DA5EED
    want = {}
    for kind, cls in CONFIG_CLASSES.items():
        for f in dataclasses.fields(cls):
            key = (f.name, "all" if f.name in shared else kind)
            ftype = f.type if isinstance(f.type, str) else f.type.__name__
            ftype = {"int | None": "int", "tuple[int, ...]": "tuple[int]"}.get(ftype, ftype)
            default = ("default_masks(window_bytes)" if f.name in MASK_FIELDS else
                       "0x1DA5EED" if f.name == "seed" else repr(f.default))
            want[key] = (ftype, default)
    assert rows == want

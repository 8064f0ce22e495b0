# SPDX-License-Identifier: BSD-2-Clause
"""The OPA core — hw.lda_pipeline.MeasurementCore of an OpaConfig (hw.opa.opa_path.OpaPath) — on
Amaranth's simulator with the host driver: frames in, the driver discovers the OPA
configuration from CONFIG (rows from dim0, groups from dim1) and reads two intervals'
snapshots through the CSR window; each equals the golden model's words
(host_sw.model.golden_opa.opa_synopsis of the counted frames' packet hashes), passes the
integrity check (FROZEN_CHECK, FROZEN_UPDATES) and carries the interval's packets and
sequence number. A 16-byte header window keeps the simulation small."""

import gc
import random
import warnings

import pytest
from amaranth.hdl import UnusedElaboratable

from host_sw.contracts.config import LdaConfig, OpaConfig
from host_sw.contracts.regmap import register_map
from host_sw.contracts.hashing import default_masks
from host_sw.model.golden_lda_rda_lds import hash_frames
from host_sw.model.golden_opa import opa_synopsis
from hw.lda_pipeline import main as export_main
from hw.measurement_path import measurement_path
from hw.opa.opa_path import OpaPath
from sim_tb.lib.amaranth_host import SimulatedHost
from tests.hw.test_hw_core import CoreTraffic, check_passthrough, make_frame, mixed_frames

WINDOW = {"window_bytes": 16, **{f"mask_{name}": mask.as_int()
                                 for name, mask in default_masks(16).items()}}


def opa_golden(config, sent):
    """The golden words of the frames ``sent`` ((frame, error, sof) in input order)."""
    hashes = hash_frames(config, [f for f, _, _ in sent], [e for _, e, _ in sent])
    return opa_synopsis(config, hashes.packet[hashes.counted])


def one_group_frames(config, rng, n):
    """``n`` IPv4 frames whose packet hashes fall in one group (back to back at the
    words: the read-modify-write forwarding of one group's count and B)."""
    out = []
    while len(out) < n:
        frame = make_frame(rng, 60)
        hashes = hash_frames(config, [frame])
        if int(hashes.packet[0]) >> (64 - (config.groups.bit_length() - 1)) == 3:
            out.append((frame, False))
    return out


def test_measurement_path_of_opa_is_the_opa_path():
    config = OpaConfig(groups=8, rows=3, **WINDOW)
    assert isinstance(measurement_path(config), OpaPath)
    with pytest.raises(TypeError, match="OpaConfig"):
        OpaPath(config=object())


def test_opa_path_inserts_record_frames_with_its_registers():
    """The record streamer is the path's merger insert; its control and counters are
    members named as OPA registers (wired by name by the core), which only OPA maps
    have."""
    config = OpaConfig(groups=8, rows=3, **WINDOW)
    with warnings.catch_warnings():          # built for its signature only
        warnings.simplefilter("ignore", UnusedElaboratable)
        members = OpaPath(config=config, data_width=64).signature.members
        gc.collect()
    names = {r.name for r in register_map(config).registers}
    for name in ("insert", "now", "interval_seq", "frame_src_mac", "frame_key",
                 "opa_record_control", "opa_records_dropped", "opa_records_merged",
                 "opa_records_frames"):
        assert name in members, name
    assert {n for n in members if n.startswith("opa_")} <= names
    assert not any(r.name.startswith("opa_")
                   for r in register_map(LdaConfig(**WINDOW)).registers)


def test_driver_reads_opa_core_snapshots_equal_to_golden():
    config = OpaConfig(groups=8, rows=3, **WINDOW)
    bench = CoreTraffic(config, 64, seed=5)
    bench.p_valid = 1.0                 # frames back to back
    host = SimulatedHost(bench.dut)
    rng = random.Random(6)
    intervals = [mixed_frames(rng, 20) + one_group_frames(config, rng, 4),
                 one_group_frames(config, rng, 3) + mixed_frames(rng, 8)]
    out = {"snaps": []}

    async def main(ctx):
        device = await host.connect(ctx, None)          # discovered from CONFIG
        out["discovered"] = device.config
        await host.call(ctx, device.program)             # CONFIG_ID, masks
        done = 0
        for frames in intervals:
            bench.to_send += frames
            done += len(frames)
            await bench.wait_frames_done(ctx, done)
            await host.call(ctx, device.swap)
            out["snaps"].append(await host.call(ctx, device.read_snapshot, release=True,
                                                poll=0))

    bench.run(main)
    check_passthrough(bench, 0)
    assert out["discovered"] == config
    start = 0
    for k, (snap, frames) in enumerate(zip(out["snaps"], intervals)):
        sent = bench.sent[start:start + len(frames)]
        start += len(frames)
        golden = opa_golden(config, sent)
        assert snap.synopsis.words() == golden.words(), f"interval {k}"
        assert int(golden.count[0, 3]) >= 3             # the one-group run is in there
        assert snap.integrity_problem is None
        assert (snap.seq, snap.packets) == (k, int(golden.count.sum()))
        assert snap.config_id == (0 if k == 0 else config.config_id)


def test_export_writes_an_opa_core(tmp_path, capsys):
    out = tmp_path / "opa_core.v"
    assert export_main(["--synopsis", "opa", "--groups", "4", "--rows", "2",
                        "--window-bytes", "16", "-o", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "opa core: shape (1, 4)" in printed
    assert "module lda_core" in out.read_text()
    assert "opa core" in (tmp_path / "csr.csv").read_text()

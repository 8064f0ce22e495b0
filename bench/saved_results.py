# SPDX-License-Identifier: BSD-2-Clause
"""The saved timing results of ``docs/hardware/`` read back, without running a tool: one
summary line per core kind and clock domain and per board build, and the figures table
that ``docs/HARDWARE.md`` embeds.

Where it sits: ``python -m bench.synth_core --summary [--markdown]`` prints what this
module computes; ``tests/test_hardware_figures.py`` checks that the page's table is what
it generates now, so the page cannot keep figures the saved results no longer say.

The files it reads (written by ``python -m bench.synth_core --save`` and by a board
command's ``build/<board>/summary.json``, copied):

* ``synth_core_<kind>[_ctrl]_speed<S>_seed<N>.json``: ``bench.synth_core``'s output for
  one seed of one whole core (``{"results": [...]}``, ``control_domain`` ``"ctrl"`` for
  the two-clock core; each device entry has ``speed``, ``seed``, ``routed`` and
  ``fmax_by_domain``, and since the seed loop ``domains``: per clock domain its Fmax,
  constraint, slack and critical path). The seeds of one kind, speed grade and core are
  one row: median, min and max over the seeds that routed;
* ``<board>[_<kind>]_summary_seed<N>.json``: a board build, the ``summary.json`` of
  its build folder (``board``, ``kind``, ``seed``, ``fmax_mhz`` of ``{"achieved",
  "constraint"}`` per nextpnr clock net — or, in older files, ``fmax_by_domain`` per clock
  domain —, ``resources``). A build is met when every clock meets its constraint and
  the core clock with :data:`CORE_MARGIN` to spare. A board command that refused the
  kind (``refused``: its message, e.g. the resources the design needs past the device's)
  is a row too (:mod:`bench.board_builds`).

A result measured on a core that has since changed says so in ``earlier_core``: the
oldest change the core it was measured on lacks, in words (it lacks every later one too);
the table and the summary mark it instead of presenting it as current.
"""

from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

from bench import ROOT
from boards.top import CORE_MARGIN, clock_domain, missed_clocks

__all__ = ["KINDS", "SAVED", "board_rows", "core_rows", "figures_table", "summary_lines"]

#: Where the saved results are.
SAVED = ROOT / "docs" / "hardware"
#: The core kinds the table has a row for, measured or not (``bench.synth_core.CORES``).
KINDS = ("lda", "rda", "lds", "opa", "rli")


def _cell(name: str | None) -> str:
    """A cell of a critical path without the harness prefix and the mapped cell suffix
    (``dut.now_delayed27_TRELLIS_FF_Q_34`` → ``now_delayed27``)."""
    if not name:
        return "?"
    name = name.removeprefix("dut.")
    return re.split(r"_TRELLIS_|\$", name)[0] or name


#: The nextpnr router that a saved whole-core file's name and its row leave unnamed
#: (router2's runs, saved before ``bench.synth_core``'s default router became router1,
#: ``ROUTER`` there); a file and a row of another router name it. Also the router of a
#: run whose command names none.
UNNAMED_ROUTER = "router2"


def run_router(entry: dict) -> str:
    """The nextpnr router of one saved place-and-route run (from its command)."""
    found = re.search(r"--router (\S+)", entry.get("command", ""))
    return found.group(1) if found else UNNAMED_ROUTER


def core_rows(folder: Path = SAVED) -> list[dict]:
    """One row per (kind, speed grade, core measured, clocks, router), over the saved
    whole-core files: Fmax per clock domain over the routed seeds, resources and critical
    path of the best routed seed (else of the first), and the files."""
    groups: dict[tuple, list] = {}
    for path in sorted(folder.glob("synth_core_*.json")):
        for res in json.loads(path.read_text())["results"]:
            for speed, entry in res["devices"].items():
                key = (res["kind"], str(entry.get("speed", speed)), res.get("earlier_core"),
                       res.get("control_domain", "sync"), run_router(entry))
                groups.setdefault(key, []).append((path.name, res, entry))
    rows = []
    for (kind, speed, earlier, control, router), items in sorted(
            groups.items(), key=lambda kv: (KINDS.index(kv[0][0]) if kv[0][0] in KINDS
                                            else len(KINDS), kv[0][0], -int(kv[0][1]),
                                            kv[0][3] != "sync", kv[0][2] or "",
                                            kv[0][4] != UNNAMED_ROUTER, kv[0][4])):
        domains: dict[str, list] = {}
        for _, _, entry in items:
            for domain, mhz in entry.get("fmax_by_domain", {}).items():
                domains.setdefault(domain, []).append(mhz)
        routed = [it for it in items if it[2].get("fmax_by_domain")]
        best = max(routed, key=lambda it: min(it[2]["fmax_by_domain"].values())) \
            if routed else items[0]
        _, res, entry = best
        cells = res.get("yosys_cells", {})
        rows.append({
            "kind": kind, "speed": speed, "earlier_core": earlier, "control_domain": control,
            "clocks": 1 if control == "sync" else 2, "router": router,
            "device": entry["device"], "files": [it[0] for it in items],
            "seeds": sorted(it[2]["seed"] for it in items),
            "routed_seeds": sorted(it[2]["seed"] for it in routed),
            "fmax": {d: sorted(v) for d, v in domains.items()},
            "placement_estimate_mhz": entry.get("placement_estimate_mhz"),
            "error": entry.get("error"),
            "lut4": cells.get("LUT4"), "trellis_comb": entry.get("luts")
            or entry.get("trellis_comb"), "ff": cells.get("TRELLIS_FF") or entry.get("ffs"),
            "dp16kd": cells.get("DP16KD"), "mult18": cells.get("MULT18X18D", 0),
            "critical_path": entry.get("critical_path"), "best_seed": entry["seed"],
            "domain_paths": {d: f["critical_path"] for d, f in entry.get("domains", {}).items()
                             if f.get("critical_path")},
        })
    return rows


def board_rows(folder: Path = SAVED) -> list[dict]:
    """One row per saved board build (``*_summary_*.json``)."""
    rows = []
    for path in sorted(folder.glob("*_summary_*.json")):
        data = json.loads(path.read_text())
        if "refused" in data:
            rows.append({"board": data["board"], "kind": data["kind"], "seed": data["seed"],
                         "device": data.get("device", "–"), "file": path.name,
                         "earlier_core": data.get("earlier_core"), "domains": {},
                         "met": False, "slack_ns": None, "core_margin": None,
                         "refused": data["refused"], "resources": {}})
            continue
        domains = data.get("fmax_by_domain") or {
            clock_domain(net): v for net, v in data["fmax_mhz"].items()}
        slack = min(1000 / d["constraint"] - 1000 / d["achieved"] for d in domains.values())
        margin = domains["core"]["achieved"] / domains["core"]["constraint"] - 1
        rows.append({
            "board": data["board"], "kind": data["kind"], "seed": data["seed"],
            "stalled_seeds": data.get("stalled_seeds", []),
            "unrouted_seeds": data.get("unrouted_seeds", []),
            "missed_seeds": data.get("missed_seeds", []),
            "device": data["device"], "file": path.name,
            "earlier_core": data.get("earlier_core"), "domains": domains,
            "met": not missed_clocks(domains),
            "slack_ns": slack, "core_margin": margin, "resources": data["resources"],
        })
    return rows


def _mhz(value) -> str:
    return "-" if value is None else f"{value:.1f}"


def summary_lines(folder: Path = SAVED) -> list[str]:
    """``core KIND DOMAIN median=… min=… max=… seeds=N [unrouted=K] clocks=C speed=S
    [router=R] measured=current|earlier`` per core kind, clocks of the core (1, or 2 with
    a control domain), speed grade, router (named when not :data:`UNNAMED_ROUTER`) and
    clock domain, then ``board BOARD KIND met=yes|no slack=NS
    core_margin=P% measured=…`` per board build (slack: the worst clock's, ns; met: every
    clock met and the core clock with :data:`CORE_MARGIN` to spare).

    ``seeds`` counts the seeds that routed (the median, min and max are over them);
    ``unrouted`` the saved seeds that did not route, when there are any; a kind saved but
    never routed has one line with ``-`` figures."""
    lines = []
    for row in core_rows(folder):
        measured = "earlier" if row["earlier_core"] else "current"
        domains = row["fmax"] or {"core": []}
        unrouted = len(row["seeds"]) - len(row["routed_seeds"])
        for domain, values in domains.items():
            median = statistics.median(values) if values else None
            lines.append(f"core {row['kind']} {domain} median={_mhz(median)} "
                         f"min={_mhz(min(values, default=None))} "
                         f"max={_mhz(max(values, default=None))} seeds={len(values)} "
                         + (f"unrouted={unrouted} " if unrouted else "")
                         + f"clocks={row['clocks']} speed={row['speed']} "
                         + (f"router={row['router']} " if row["router"] != UNNAMED_ROUTER
                            else "")
                         + f"measured={measured}")
    for row in board_rows(folder):
        measured = "earlier" if row["earlier_core"] else "current"
        if row.get("refused"):
            lines.append(f"board {row['board']} {row['kind']} met=no slack=- "
                         f"refused={json.dumps(row['refused'])} measured={measured}")
            continue
        lines.append(f"board {row['board']} {row['kind']} met={'yes' if row['met'] else 'no'} "
                     f"slack={row['slack_ns']:.2f} core_margin={100 * row['core_margin']:.0f}% "
                     f"measured={measured}")
    return lines


def _num(value) -> str:
    return "–" if value is None else f"{value:,}".replace(",", " ")


def _core_fmax(row) -> str:
    if not row["fmax"]:
        estimate = row["placement_estimate_mhz"]
        return ("not routed" + (f" (placement estimate {estimate:.1f})" if estimate else ""))
    parts = []
    for domain, values in row["fmax"].items():
        if len(values) == 1:
            parts.append(f"{domain} **{values[0]:.1f}** (seed {row['routed_seeds'][0]})")
        else:
            parts.append(f"{domain} **{statistics.median(values):.1f}** median, "
                         f"{values[0]:.1f}–{values[-1]:.1f} over {len(values)} seeds")
    return "; ".join(parts)


def _path_text(crit, seed) -> str:
    share = crit["routing_ns"] / crit["total_ns"] if crit["total_ns"] else 0
    return (f"`{_cell(crit['start_cell'])}` → `{_cell(crit['end_cell'])}` "
            f"({crit['total_ns']:.2f} ns: {crit['logic_ns']:.2f} logic, "
            f"{crit['routing_ns']:.2f} routing = {share:.0%}; seed {seed})")


def _core_limit(row) -> str:
    if row["domain_paths"]:
        return "; ".join(f"{d}: {_path_text(crit, row['best_seed'])}"
                         for d, crit in row["domain_paths"].items())
    crit = row["critical_path"]
    if not crit:
        error = row["error"] or ""
        return "not routed: " + error.split(", from")[0].replace("ERROR: ", "") \
            if error else "–"
    return _path_text(crit, row["best_seed"])


def figures_table(folder: Path = SAVED) -> str:
    """The Markdown table of ``docs/HARDWARE.md`` ("Current figures") and its notes: one
    row per whole core kind and speed grade and per board build, from the saved results
    only. Results measured on an earlier core are marked and their notes say what
    differs."""
    notes: list[str] = []

    def measured(earlier):
        if not earlier:
            return "current core"
        if earlier not in notes:
            notes.append(earlier)
        return f"earlier core ({notes.index(earlier) + 1})"

    lines = [("| design | device | measured on | Fmax per clock domain (MHz) | LUT4 | "
              "TRELLIS_COMB | FF | DP16KD | MULT18X18D | what limits it now | saved in |"),
             "|---|---|---|---|---|---|---|---|---|---|---|"]
    for row in core_rows(folder):
        files = ", ".join(f"`docs/hardware/{f}`" for f in row["files"])
        lines.append(
            f"| {row['kind'].upper()} core"
            f"{' (two clocks)' if row['clocks'] == 2 else ''} "
            f"(registered harness, 300 MHz constraint"
            f"{'' if row['router'] == UNNAMED_ROUTER else ', ' + row['router']}) | "
            f"{row['device']} | {measured(row['earlier_core'])} | {_core_fmax(row)} | "
            f"{_num(row['lut4'])} | {_num(row['trellis_comb'])} | {_num(row['ff'])} | "
            f"{_num(row['dp16kd'])} | {_num(row['mult18'])} | {_core_limit(row)} | {files} |")
    measured_kinds = {row["kind"] for row in core_rows(folder)}
    for kind in KINDS:
        if kind not in measured_kinds:
            lines.append(f"| {kind.upper()} core | – | – | no saved result | – | – | – | – | "
                         f"– | – | – |")
    for row in board_rows(folder):
        if row.get("refused"):
            lines.append(
                f"| board `{row['board']}`, {row['kind'].upper()} core(s), seed {row['seed']} | "
                f"{row['device']} | {measured(row['earlier_core'])} | – | – | – | – | – | "
                f"– | refused: {row['refused']} | `docs/hardware/{row['file']}` |")
            continue
        clocks = ", ".join(f"{d} {v['achieved']:.1f} / {v['constraint']}"
                           for d, v in row["domains"].items())
        missed = [d for d, v in row["domains"].items() if v["achieved"] < v["constraint"]]
        margin = f"core clock {100 * row['core_margin']:.0f} % over its constraint"
        limit = ("misses its constraint in " + ", ".join(missed)) if missed \
            else (f"meets every constraint (worst slack {row['slack_ns']:.2f} ns; "
                  f"{margin}" + ("" if row["met"] else f", under the "
                                f"{100 * CORE_MARGIN:.0f} % margin") + ")")
        res = row["resources"]
        stalled, unrouted = row["stalled_seeds"], row["unrouted_seeds"]
        before = ([f"the router stalled at {', '.join(map(str, stalled))}"] if stalled
                  else []) + ([f"no route at {', '.join(map(str, unrouted))}"] if unrouted
                              else []) + [
            f"missed at {m['seed']}: " + ", ".join(
                f"{clock_domain(net)} {f['achieved']:.1f} / {f['constraint']:g}"
                for net, f in m["fmax_mhz"].items()) for m in row["missed_seeds"]]
        seed = f"seed {row['seed']}" + (f" ({'; '.join(before)})" if before else "")
        lines.append(
            f"| board `{row['board']}`, {row['kind'].upper()} core(s), {seed} | "
            f"{row['device']} | {measured(row['earlier_core'])} | {clocks} | – | "
            f"{_num(res.get('TRELLIS_COMB'))} | {_num(res.get('TRELLIS_FF'))} | "
            f"{_num(res.get('DP16KD'))} | {_num(res.get('MULT18X18D'))} | {limit} | "
            f"`docs/hardware/{row['file']}` |")
    if notes:
        lines += ["", "Earlier cores, each by the oldest change it lacks (it lacks every later "
                  "one too; `docs/CHANGES.md` lists them in order):", ""]
        lines += [f"- ({i}) {note}." for i, note in enumerate(notes, 1)]
    return "\n".join(lines) + "\n"

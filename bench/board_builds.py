# SPDX-License-Identifier: BSD-2-Clause
"""The board × kind matrix: each board command at each kind's defaults, built, and its
outcome saved as a row of ``python -m bench.synth_core --summary``.

Where it sits (``docs/HARDWARE.md``, "Current figures"): the board rows of the figures
table come from here. For each board and kind it runs ``python -m boards.<board>
--synopsis KIND --build-dir <build>/<board>_<kind>`` (the command a user runs; its own
defaults: placement seeds, placer, router, directions, the 62.5 MHz core clock; with
``--seed N``, that seed alone) and keeps what came of it:

* a build: the folder's ``summary.json`` (Fmax per clock, resources, kind, cores, core
  clock, nextpnr's options) with the commit its gateware was built from and the tools'
  versions (:func:`bench.synth_runner.tool_versions`);
* a refusal (the design does not fit the device, or a step failed): the command's
  one-line message, exit status 1 — a board that cannot take a kind at its defaults says
  so, and the row says what it needs.

``--save`` writes each outcome to ``docs/hardware/<board>_<kind>_summary_seed<N>.json``
(``N``: the seed asked for, the board's own by default; the outcome names the seed that
built and those at which the router stalled);
``--collect`` runs nothing and takes the outcomes already in the build folders (a build
run by hand, or by an earlier run of this command); ``--jobs N`` runs N board commands at
once. Slow (a place and route per board
and kind, 10–60 minutes each here): run it by hand, not in the test suite.

Usage::

    .venv/bin/python -m bench.board_builds [--boards ecpix5 versa_ecp5 colorlight_5a75b]
        [--kinds lda rda lds opa rli] [--seed N] [--jobs 1] [--build build/boards]
        [--collect] [--save]
"""

from __future__ import annotations

import argparse
import importlib
import json
import re
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench import ROOT
from bench.saved_results import SAVED, KINDS
from bench.synth_runner import git_describe, shown, tool_versions
from boards.top import device_name

__all__ = ["BOARDS", "board_outcome", "run_board", "saved_name", "main"]

#: The board commands (``python -m boards.<name>``).
BOARDS = ("ecpix5", "versa_ecp5", "colorlight_5a75b")
#: Where a run's outcome is kept in its build folder.
OUTCOME = "outcome.json"


def saved_name(board: str, kind: str, seed: int) -> str:
    """The saved outcome's file name: named after the seed its build stands at (a board
    command that built at a later seed saves under that seed; the seeds before it are in
    the outcome), as ``tests/test_hardware_figures.py`` checks."""
    return f"{board}_{kind}_summary_seed{seed}.json"


def default_seed(board: str) -> int:
    """The placement seed the board's command uses unless told (``SEED``, else 1)."""
    return getattr(importlib.import_module(f"boards.{board}"), "SEED", 1)


def board_outcome(folder: Path, board: str, kind: str, seed: int, *, returncode: int,
                  stderr: str, git: str) -> dict:
    """What one board command left in ``folder``: its build summary, or its refusal."""
    summary = Path(folder) / board / "summary.json"
    if returncode == 0 and summary.exists():
        data = json.loads(summary.read_text())
        if data.get("kind") != kind:
            raise ValueError(f"{summary} is a {data.get('kind')} build, not {kind}")
        return data | {"git": git, "tools": tool_versions()}
    message = (stderr.strip().splitlines() or [f"exit {returncode}"])[-1]
    message = re.sub(r"; see \S+$", "", message)        # the log's path is this machine's
    platform = importlib.import_module(f"boards.{board}").Platform()
    return {"board": board, "kind": kind, "seed": seed, "git": git, "tools": tool_versions(),
            "device": device_name(platform),
            "refused": message.removeprefix(f"python -m boards.{board}: ")}


def run_board(board: str, kind: str, seed: int, build: Path, *, own_seeds: bool = False
              ) -> dict:
    """Run one board command (at ``seed``, or with ``own_seeds`` at the command's own
    seeds, the next tried while the router stalls, finds no route or a clock misses); its
    outcome, also written to the folder's outcome.json."""
    folder = build / f"{board}_{kind}"
    git = git_describe()
    seeds = [] if own_seeds else ["--seed", str(seed)]
    proc = subprocess.run([sys.executable, "-m", f"boards.{board}", "--synopsis", kind,
                           *seeds, "--build-dir", str(folder)],
                          cwd=ROOT, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"python -m boards.{board} --synopsis {kind}: exit "
                         f"{proc.returncode}\n{proc.stderr[-2000:]}")
    outcome = board_outcome(folder, board, kind, seed, returncode=proc.returncode,
                            stderr=proc.stderr, git=git)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / OUTCOME).write_text(json.dumps(outcome, indent=2) + "\n")
    return outcome


def _collected(board: str, kind: str, seed: int, build: Path) -> dict | None:
    folder = build / f"{board}_{kind}"
    if (folder / OUTCOME).exists():
        return json.loads((folder / OUTCOME).read_text())
    if (folder / board / "summary.json").exists():
        return board_outcome(folder, board, kind, seed, returncode=0, stderr="",
                             git=git_describe())
    return None


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.board_builds",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--boards", nargs="+", choices=BOARDS, default=list(BOARDS))
    parser.add_argument("--kinds", nargs="+", choices=KINDS, default=list(KINDS))
    parser.add_argument("--seed", type=int, default=None,
                        help="nextpnr placement seed, alone (default: the board command's "
                             "own, the next tried while the router stalls, finds no route "
                             "or a clock misses)")
    parser.add_argument("--build", type=Path, default=ROOT / "build" / "boards")
    parser.add_argument("--collect", action="store_true",
                        help="run nothing: take the outcomes in the build folders")
    parser.add_argument("--save", action="store_true",
                        help=f"write each outcome to {shown(SAVED)}/")
    parser.add_argument("--jobs", "-j", type=int, default=1,
                        help="builds at once (each is Yosys, then nextpnr: one thread each)")
    args = parser.parse_args(argv)
    todo = [(board, kind, default_seed(board) if args.seed is None else args.seed)
            for board in args.boards for kind in args.kinds]

    def outcome_of(build):
        board, kind, seed = build
        if args.collect:
            return _collected(board, kind, seed, args.build)
        return run_board(board, kind, seed, args.build, own_seeds=args.seed is None)

    # Threads suffice: each waits on its board command's process. Each outcome is shown
    # (and saved) as soon as it and those before it are in.
    with ThreadPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        for (board, kind, seed), outcome in zip(todo, pool.map(outcome_of, todo)):
            if outcome is None:
                print(f"{board} {kind}: no build in {args.build / f'{board}_{kind}'}")
                continue
            if "refused" in outcome:
                print(f"{board} {kind}: refused: {outcome['refused']}")
            else:
                clocks = ", ".join(f"{net} {v['achieved']} / {v['constraint']} MHz"
                                   for net, v in outcome["fmax_mhz"].items())
                stalled = outcome.get("stalled_seeds")
                unrouted = outcome.get("unrouted_seeds")
                before = ([f"the router stalled at seed {', '.join(map(str, stalled))}"]
                          if stalled else []) + (
                    [f"no route at seed {', '.join(map(str, unrouted))}"] if unrouted
                    else []) + [
                    f"seed {m['seed']} missed " + ", ".join(
                        f"{net} {f['achieved']} / {f['constraint']} MHz"
                        for net, f in m["fmax_mhz"].items())
                    for m in outcome.get("missed_seeds", [])]
                seed_note = (f" (seed {outcome['seed']}; {'; '.join(before)})" if before
                             else "")
                print(f"{board} {kind}: {clocks}{seed_note}", flush=True)
            if args.save:
                path = SAVED / saved_name(board, kind, outcome.get("seed", seed))
                path.write_text(json.dumps(outcome, indent=2) + "\n")
                print(f"  saved {shown(path)}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

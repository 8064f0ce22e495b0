#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Set up what is missing, then run the whole test suite (unit tests, Amaranth simulations,
# cocotb testbenches of the exported Verilog). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
exec .venv/bin/python -m pytest -n "${LDA_TEST_JOBS:-2}" -q "$@"

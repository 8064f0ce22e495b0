#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Set up what is missing, then run the main job: the demo (docs/DEMO.md) — two simulated
# LDA cores (sender → channel with Weibull delays and ~1 % loss → receiver) under Icarus,
# both read over their TCP bridges by the host driver, estimates printed beside the truth,
# plot in build/demo/demo.png. Extra arguments go to the demo (--help lists them).
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
exec .venv/bin/python -m sim_tb.demo "$@"

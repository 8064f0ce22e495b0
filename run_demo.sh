#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Set up what is missing, then run the main job: the default measurement scenario through
# the golden model and the estimators (ldactl simulate). Extra arguments go to ldactl.
set -euo pipefail
cd "$(dirname "$0")"
bash scripts/setup.sh
exec .venv/bin/ldactl simulate "$@"

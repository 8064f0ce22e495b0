# SPDX-License-Identifier: BSD-2-Clause
"""``python -m sim_tb.demo``: the demo (:func:`sim_tb.demo.demo.main`)."""

import sys

from sim_tb.demo.demo import main

sys.exit(main())

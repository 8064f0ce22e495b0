# SPDX-License-Identifier: BSD-2-Clause
"""``python -m host_sw.cli``: the same as the ``ldactl`` console script."""

import sys

from host_sw.cli.main import main

sys.exit(main())

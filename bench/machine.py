# SPDX-License-Identifier: BSD-2-Clause
"""What a benchmark's figures were measured on: the machine description every
``bench/`` script saves beside its figures (``bench/out/*.json``) and the docs quote
(``docs/BENCHMARKS.md``, ``docs/ACCURACY.md``: "2 vCPU AMD EPYC KVM, Debian 12, Python
3.11").

Where it sits (``docs/DESIGN.md``, "Layers"): the benchmarks' layer, beside
:mod:`bench.accuracy_common` (which hands it to the accuracy benchmarks).
"""

import os
import platform

import numpy as np

__all__ = ["machine"]


def machine() -> dict:
    """CPU model, cores (``nproc``), Python and numpy versions, platform, and the load
    average when called (the machine is shared: the load says how far to trust a time)."""
    model = platform.processor() or "unknown"
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f
                          if line.startswith("model name")), model)
    except OSError:  # pragma: no cover - non-Linux
        pass
    load = os.getloadavg() if hasattr(os, "getloadavg") else None
    return {"cpu": model, "nproc": os.cpu_count(), "python": platform.python_version(),
            "numpy": np.__version__, "platform": platform.platform(),
            "load_average": None if load is None else [round(x, 2) for x in load]}

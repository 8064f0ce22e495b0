# SPDX-License-Identifier: BSD-2-Clause
"""pytest entry of the OPA core's cocotb tests (``sim_tb/cocotb_opa_core.py``): the
exported ``hw.lda_pipeline`` of kind ``opa`` (:data:`sim_tb.runner.OPA_PARAMS`), its
frozen words against the golden model over the bus and over the host export."""

import pytest

from sim_tb.runner import OPA_PARAMS, run_core_tests

pytestmark = pytest.mark.cocotb


@pytest.mark.parametrize("params", OPA_PARAMS, ids=lambda p: p.param_id)
def test_opa_core(params):
    results = run_core_tests(params, "sim_tb.cocotb_opa_core")
    assert set(results.tests) >= {"manual_intervals", "timer_intervals_exported",
                                 "ldactl_reads_opa_core"}, \
        sorted(results.tests)

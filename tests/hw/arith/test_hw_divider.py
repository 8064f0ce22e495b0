# SPDX-License-Identifier: BSD-2-Clause
"""hw.arith.divider.Divider on Amaranth's simulator: quotient and remainder equal Python's
``divmod`` for any operands (hypothesis), ``done`` exactly ``dividend_bits`` clocks after
``busy`` rises, a ``start`` while busy ignored, results held until the next ``start``."""

import gc
import warnings

import pytest
from amaranth.hdl import UnusedElaboratable
from hypothesis import given, settings, strategies as st

from hw.arith.divider import Divider
from sim_tb.lib.amaranth_streams import simulate


def _divide_all(dut, pairs, *, start_while_busy=False):
    """Run each ``(dividend, divisor)`` through ``dut``; ``(quotient, remainder, clocks
    from start to done)`` per pair."""
    results = []

    async def main(ctx):
        for dividend, divisor in pairs:
            ctx.set(dut.dividend, dividend)
            ctx.set(dut.divisor, divisor)
            ctx.set(dut.start, 1)
            await ctx.tick()
            ctx.set(dut.start, int(start_while_busy))
            ctx.set(dut.dividend, 0)           # sampled at start only
            ctx.set(dut.divisor, 1)
            clocks = 1
            while not ctx.get(dut.done):
                assert ctx.get(dut.busy)
                await ctx.tick()
                clocks += 1
            ctx.set(dut.start, 0)
            assert not ctx.get(dut.busy)
            await ctx.tick().repeat(2)           # results hold after done
            results.append((ctx.get(dut.quotient), ctx.get(dut.remainder), clocks))

    simulate(dut, main)
    return results


@settings(max_examples=25, deadline=None)
@given(st.integers(1, 64).flatmap(lambda nb: st.integers(1, 48).flatmap(lambda db: st.tuples(
    st.just(nb), st.just(db),
    st.lists(st.tuples(st.integers(0, (1 << nb) - 1), st.integers(1, (1 << db) - 1)),
             min_size=1, max_size=4)))))
def test_results_equal_python_divmod(case):
    nb, db, pairs = case
    got = _divide_all(Divider(dividend_bits=nb, divisor_bits=db), pairs)
    assert got == [(*divmod(a, b), nb + 1) for a, b in pairs]


def test_edge_operands_and_start_while_busy():
    nb, db = 58, 40
    pairs = [((1 << nb) - 1, 1), ((1 << nb) - 1, (1 << db) - 1), (0, 7), (12345, 12346),
             ((1 << 57) + 3, 1 << 39)]
    got = _divide_all(Divider(dividend_bits=nb, divisor_bits=db), pairs,
                      start_while_busy=True)
    assert got == [(*divmod(a, b), nb + 1) for a, b in pairs]


def test_zero_divisor_gives_all_ones():
    (quotient, _, _), = _divide_all(Divider(dividend_bits=12, divisor_bits=5), [(100, 0)])
    assert quotient == (1 << 12) - 1


@pytest.mark.parametrize("kwargs", [{"dividend_bits": 0, "divisor_bits": 4},
                                    {"dividend_bits": 8, "divisor_bits": 2.5},
                                    {"dividend_bits": True, "divisor_bits": 4}])
def test_rejects_bad_parameters(kwargs):
    with warnings.catch_warnings():  # the rejected objects are never elaborated
        warnings.simplefilter("ignore", UnusedElaboratable)
        with pytest.raises(ValueError, match="must be a positive integer"):
            Divider(**kwargs)
        gc.collect()

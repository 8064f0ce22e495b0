# SPDX-License-Identifier: BSD-2-Clause
"""Proofs (SymbiYosys) on the counter bank :class:`hw.counters.counter_bank.CounterBank`
with its copy control (:class:`hw.counters.copy_control.CopyControl`) and freeze check
(:class:`hw.counters.freeze_check.FreezeCheck`), at a small configuration (LDA, one bank of two
rows, 8-bit counts, 16-bit timestamp sums; no drain window beyond the pipeline's flush).

Every input of the bank is free (``AnySeq``): update requests of any copy and address in
any cycle, swaps, releases and frozen reads at any time. The harness elaborates the bank
itself, recording the RAMs it builds, so that it can watch their write ports.

* No update lands in a frozen copy: a copy's RAM is never written while the copy is
  FROZEN (k-induction).
* A copy is FROZEN only after its check value covers its final contents: from the cycle
  the freeze check starts (``check_start``) through CHECKING and FROZEN, its RAM is not
  written, and the copy becomes FROZEN only the cycle after the check's ``done``
  (k-induction). The check sweep reads the RAM after ``check_start``, so it reads the
  final contents.
* Same-row back-to-back updates never lose one: for one tracked address (any) per copy,
  every write of the update pipeline carries the count of the writes before it plus one
  (so a write that read a stale word shows) and the count of the updates accepted up to
  its own request (so an update never written shows), and there are never more writes
  than accepted updates; the counts restart when the copy is cleared (bounded).

The inductions carry helper assertions that the copy control's state registers agree
(each state is kept both in ``other`` and one-hot); they are proved with the property.
Each proof has planted bugs that the same properties must fail on, in a bounded run
from reset long enough to reach the failure.
"""

from unittest.mock import patch

import pytest
from amaranth.asserts import AnyConst
from amaranth.hdl import Assert, Assume, Const, Mux, Signal

import hw.counters.counter_bank as counter_bank_module
from formal_util import Harness, assert_proved, assert_refuted, free_inputs
from host_sw.contracts.config import LdaConfig
from hw.counters.copy_control import CopyControl, CopyState
from hw.counters.counter_bank import CounterBank

pytestmark = pytest.mark.formal

CONFIG = LdaConfig(banks=1, rows=2, thresholds=(0,), count_bits=8, ts_bits=16)
#: k of the inductions: longer than the update pipeline, so that every write in the
#: induction's last step comes from a request accepted within its window.
INDUCTION = 10
#: Cycles of the bounded runs that refute the planted bugs, a little more than the
#: earliest failure, the clearing sweep after reset included: a write into a FROZEN copy
#: (a swap, the drain, the check sweep, then a request's way through the pipeline),
#: FROZEN without the check, a write after the check started.
LEAK_DEPTH, UNCHECKED_DEPTH, EARLY_CHECK_DEPTH = 32, 16, 12
#: Cycles of the bounded proof of the updates: a few updates and their writes, a swap.
SHADOW_DEPTH = 12


class BankHarness(Harness):
    """The bank (elaborated here, its RAMs recorded), inputs free; subclasses add the
    properties in :meth:`properties`."""

    def __init__(self, bank):
        super().__init__()
        self.dut = bank

    def build(self, m, platform):
        rams = []
        real_counter_ram = counter_bank_module.counter_ram

        def recording_ram(**kwargs):
            ram = real_counter_ram(**kwargs)
            rams.append(ram)
            return ram

        with patch.object(counter_bank_module, "counter_ram", recording_ram):
            bank_module = self.dut.elaborate(platform)
        self.dut._MustUse__silence = True       # elaborated above, by hand
        m.submodules.bank = bank_module
        # The timestamps only feed the ts_sum adders (data, not control): held at 0,
        # which spares the solver 16 free bits per cycle.
        free_inputs(m, self.dut, skip=[("update", "timestamp")])
        m.d.comb += self.dut.update.timestamp.eq(0)
        lanes = self.dut.lanes
        # ram[k][lane]: created copy-major (CounterBank.elaborate)
        ram = [rams[k * lanes:(k + 1) * lanes] for k in range(2)]
        self.rams = ram
        writes = [Signal(name=f"copy{k}_written") for k in range(2)]
        for k in range(2):
            m.d.comb += writes[k].eq(sum(r.w_en for r in ram[k]) != 0)
        # The core takes no frame while the clearing sweep after reset runs (it holds
        # s_axis: hw/lda_pipeline.py), so the bank sees no update request meanwhile.
        copies = bank_module.submodules.copies
        m.d.comb += Assume(~(self.dut.update.valid & copies.sweeping))
        self.properties(m, bank_module, writes)

    def properties(self, m, bank_module, writes):  # pragma: no cover - abstract
        raise NotImplementedError


def copy_control_invariants(m, bank, copies):
    """The copy control's state registers agree (each state is kept twice, as
    ``other`` and one-hot): helper assertions that make the induction close; they are
    proved along with the property."""
    other = copies.other
    m.d.comb += [
        Assert(copies.other_clean == (other == CopyState.CLEAN), "other_clean one-hot"),
        Assert(copies.draining == (other == CopyState.DRAINING), "draining one-hot"),
        Assert(copies.frozen == (other == CopyState.FROZEN), "frozen one-hot"),
        Assert(copies.clearing == (other == CopyState.CLEARING), "clearing one-hot"),
        Assert(~copies.checking | copies.draining, "checking while not draining"),
        Assert(copies.clearing_copy == Mux(copies.sweeping, 0b11,
                                           Mux(copies.clearing, Mux(bank.active_copy, 1, 2), 0)),
               "clearing_copy"),
        Assert(~copies.sweeping | copies.clearing, "sweeping while the other copy not CLEARING"),
    ]


class FrozenHarness(BankHarness):
    def properties(self, m, bank_module, writes):
        copy_control_invariants(m, self.dut, bank_module.submodules.copies)
        for k in range(2):
            with m.If(self.dut.copy_state[k] == CopyState.FROZEN):
                m.d.comb += Assert(~writes[k], f"copy {k} written while FROZEN")


class SealedHarness(BankHarness):
    """From the cycle the check starts (``check_start``) through CHECKING and FROZEN, the
    copy is not written; FROZEN begins only the cycle after the check's ``done``."""

    def properties(self, m, bank_module, writes):
        copies = bank_module.submodules.copies
        check = bank_module.submodules.freeze_check
        bank = self.dut
        copy_control_invariants(m, bank, copies)
        done_before = Signal()
        m.d.sync += done_before.eq(copies.checking & check.done)
        for k in range(2):
            frozen_now = bank.copy_state[k] == CopyState.FROZEN
            frozen_before = Signal(name=f"copy{k}_frozen_before")
            m.d.sync += frozen_before.eq(frozen_now)
            sealed = (bank.frozen_copy == k) & (copies.check_start | copies.checking
                                                 | copies.frozen)
            with m.If(sealed):
                m.d.comb += Assert(~writes[k], f"copy {k} written after its check started")
            with m.If(frozen_now & ~frozen_before):
                m.d.comb += Assert(done_before, f"copy {k} FROZEN before its check was done")


class ShadowHarness(BankHarness):
    """One tracked address per copy: every write of the update pipeline to it carries the
    count of the writes before it plus one and of the updates accepted up to its own
    request, and no more writes than those."""

    def properties(self, m, bank_module, writes):
        bank = self.dut
        req = bank.update
        copies = bank_module.submodules.copies
        tracked = Signal(len(req.lane_address[0]))
        m.d.comb += tracked.eq(AnyConst(len(tracked)))
        count_bits = CONFIG.count_bits
        accepted = req.valid & ~bank.dropped & req.lane_enable[0] \
            & (req.lane_address[0] == tracked)
        for k, ram in enumerate(self.rams):
            ram = ram[0]                            # one lane
            taken = Signal(count_bits, name=f"copy{k}_accepted")
            written = Signal(count_bits, name=f"copy{k}_written_count")
            # the bank writes a clear a clock after the copy control's clear state
            clearing = Signal(name=f"copy{k}_clear_written", init=1)   # as after a reset
            m.d.sync += clearing.eq(copies.clearing_copy[k])
            cleared = copies.clearing_copy[k] & (copies.clear_addr == tracked)
            update_write = ram.w_en & ~clearing & (ram.w_addr == tracked)
            with m.If(cleared):
                m.d.sync += [taken.eq(0), written.eq(0)]
            with m.Else():
                m.d.sync += [taken.eq(taken + (accepted & (req.copy == k))),
                             written.eq(written + update_write)]
            # the accepted count as it was just after the request now written (a request
            # accepted in cycle t is written in cycle t + UPDATE_LATENCY - 1)
            lag = [Signal(count_bits, name=f"copy{k}_accepted_lag{i}")
                   for i in range(bank.UPDATE_LATENCY - 2)]
            m.d.sync += [lag[0].eq(taken)] + [b.eq(a) for a, b in zip(lag, lag[1:])]
            with m.If(update_write):
                m.d.comb += [
                    Assert(ram.w_data[:count_bits] == written + 1,
                           f"copy {k}: a write lost an earlier update"),
                    Assert(ram.w_data[:count_bits] == lag[-1],
                           f"copy {k}: a write's count is not its accepted updates"),
                    Assert(written != taken, f"copy {k}: more writes than updates"),
                ]


class LeakyCopyControl(CopyControl):
    """Planted bug: the drain window never closes for a FROZEN copy (requests tagged with
    it are still accepted)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._drain_open = self.drain_open
        self.drain_open = Signal(name="leaky_drain_open")

    def elaborate(self, platform):
        leaky, self.drain_open = self.drain_open, self._drain_open
        try:
            m = super().elaborate(platform)
        finally:
            self.drain_open = leaky
        m.d.comb += leaky.eq(self._drain_open | self.frozen)
        return m


class UncheckedCopyControl(CopyControl):
    """Planted bug: the copy control ignores the check (FROZEN right after the drain)."""

    def __init__(self, **kwargs):
        super().__init__(**{**kwargs, "check": False})


class EarlyCheckBank(CounterBank):
    """Planted bug: the drain's flush is shorter than the update pipeline (the check
    starts while the last accepted updates are still to be written)."""
    UPDATE_LATENCY = 2


class NoForwardingBank(CounterBank):
    """Planted bug: no forwarding from the request just ahead (S4 to S3): two updates of
    one word in consecutive cycles count once."""

    def _elaborate_update(self, m, lane, s4_word, s3_base, match, s3, kind):
        super()._elaborate_update(m, lane, s4_word, s3_base, Const(0), s3, kind)


def bank(cls=CounterBank):
    # drain_cycles = 0: the drain is the pipeline's flush alone (a window of 4096 cycles
    # is out of reach of a bounded proof, and of a short induction)
    return cls(config=CONFIG, drain_cycles=0, memory="generic")


def test_no_update_lands_in_a_frozen_copy(tmp_path):
    assert_proved(FrozenHarness(bank()), tmp_path, mode="prove", depth=INDUCTION)


def test_no_update_lands_in_a_frozen_copy_refutes_planted_bug(tmp_path):
    with patch.object(counter_bank_module, "CopyControl", LeakyCopyControl):
        harness = FrozenHarness(bank())
        assert_refuted(harness, tmp_path, mode="bmc", depth=LEAK_DEPTH,
                       expect="written while FROZEN")


def test_frozen_only_after_the_check(tmp_path):
    assert_proved(SealedHarness(bank()), tmp_path, mode="prove", depth=INDUCTION)


def test_frozen_only_after_the_check_refutes_planted_bug(tmp_path):
    with patch.object(counter_bank_module, "CopyControl", UncheckedCopyControl):
        harness = SealedHarness(bank())
        assert_refuted(harness, tmp_path, mode="bmc", depth=UNCHECKED_DEPTH,
                       expect="FROZEN before its check was done")


def test_frozen_only_after_the_check_refutes_early_check(tmp_path):
    assert_refuted(SealedHarness(bank(EarlyCheckBank)), tmp_path, mode="bmc",
                   depth=EARLY_CHECK_DEPTH, expect="written after its check started")


def test_back_to_back_updates_never_lose_one(tmp_path):
    assert_proved(ShadowHarness(bank()), tmp_path, mode="bmc", depth=SHADOW_DEPTH)


def test_back_to_back_updates_never_lose_one_refutes_planted_bug(tmp_path):
    assert_refuted(ShadowHarness(bank(NoForwardingBank)), tmp_path, mode="bmc",
                   depth=SHADOW_DEPTH, expect="lost an earlier update")

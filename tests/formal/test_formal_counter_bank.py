# SPDX-License-Identifier: BSD-2-Clause
"""Proofs (SymbiYosys, bounded) on the counter bank :class:`hw.counter_bank.CounterBank`
with its copy control (:class:`hw.copy_control.CopyControl`) and freeze check
(:class:`hw.freeze_check.FreezeCheck`), at a small configuration (LDA, one bank of two
rows, 8-bit counts, 16-bit timestamp sums; no drain window beyond the pipeline's flush).

Every input of the bank is free (``AnySeq``): update requests of any copy and address in
any cycle, swaps, releases and frozen reads at any time. The harness elaborates the bank
itself, recording the RAMs it builds, so that it can watch their write ports.

* No update lands in a frozen copy: a copy's RAM is never written while the copy is
  FROZEN.
* A copy is FROZEN only after its check value covers its final contents: from the cycle
  the freeze check starts until the copy is released, its RAM is not written, and the
  copy becomes FROZEN only after the check reported ``done`` (since its swap).
* Same-row back-to-back updates never lose one: a shadow count of one tracked address
  per copy, incremented at each accepted request and cleared with the copy, equals the
  count the frozen read port returns for it.

Each proof has a planted bug that the same proof must refute.
"""

from unittest.mock import patch

import pytest
from amaranth.asserts import AnyConst
from amaranth.hdl import Assert, Assume, Cat, Const, Mux, Signal

import hw.counter_bank as counter_bank_module
from formal_util import Harness, assert_proved, assert_refuted, free_inputs
from host_sw.contracts.config import LdaConfig
from hw.copy_control import CopyControl, CopyState
from hw.counter_bank import CounterBank

pytestmark = pytest.mark.formal

CONFIG = LdaConfig(banks=1, rows=2, thresholds=(0,), count_bits=8, ts_bits=16)
#: Cycles of the bounded proofs: a swap, the drain (the pipeline's flush), the check
#: sweep, FROZEN and a read of the frozen copy, with a few updates before.
DEPTH = 28


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
        m.submodules.bank = bank_module
        # The timestamps only feed the ts_sum adders (data, not control): held at 0,
        # which spares the solver 16 free bits per cycle.
        free_inputs(m, self.dut, skip=[("update", "timestamp")])
        m.d.comb += self.dut.update.timestamp.eq(0)
        lanes = self.dut.lanes
        # ram[k][lane]: created copy-major (CounterBank.elaborate)
        ram = [rams[k * lanes:(k + 1) * lanes] for k in range(2)]
        writes = [Signal(name=f"copy{k}_written") for k in range(2)]
        for k in range(2):
            m.d.comb += writes[k].eq(sum(r.w_en for r in ram[k]) != 0)
        self.properties(m, bank_module, writes)

    def properties(self, m, bank_module, writes):  # pragma: no cover - abstract
        raise NotImplementedError


class FrozenHarness(BankHarness):
    def properties(self, m, bank_module, writes):
        for k in range(2):
            with m.If(self.dut.copy_state[k] == CopyState.FROZEN):
                m.d.comb += Assert(~writes[k], f"copy {k} written while FROZEN")


class SealedHarness(BankHarness):
    def properties(self, m, bank_module, writes):
        copies = bank_module.submodules.copies
        check = bank_module.submodules.freeze_check
        bank = self.dut
        # per copy: the freeze check has started (until the copy is released), and it
        # has reported done since the copy's swap
        sealed = [Signal(name=f"copy{k}_sealed") for k in range(2)]
        checked = [Signal(name=f"copy{k}_checked") for k in range(2)]
        frozen_before = [Signal(name=f"copy{k}_frozen_before") for k in range(2)]
        for k in range(2):
            other_is_k = bank.frozen_copy == k
            frozen_now = bank.copy_state[k] == CopyState.FROZEN
            m.d.sync += frozen_before[k].eq(frozen_now)
            with m.If(copies.check_start & other_is_k):
                m.d.sync += sealed[k].eq(1)
            with m.Elif(copies.clearing_copy[k]):
                m.d.sync += sealed[k].eq(0)
            with m.If(check.done & copies.checking & other_is_k):
                m.d.sync += checked[k].eq(1)
            with m.Elif(bank.copy_state[k] == CopyState.ACTIVE):
                m.d.sync += checked[k].eq(0)
            with m.If(sealed[k] | (copies.check_start & other_is_k)):
                m.d.comb += Assert(~writes[k], f"copy {k} written after its check started")
            with m.If(frozen_now & ~frozen_before[k]):
                m.d.comb += Assert(checked[k], f"copy {k} FROZEN before its check was done")


class ShadowHarness(BankHarness):
    """One tracked address: its count per copy, as the requests accepted for it add up."""

    def properties(self, m, bank_module, writes):
        bank = self.dut
        req, port = bank.update, bank.frozen
        copies = bank_module.submodules.copies
        tracked = Signal(len(req.lane_address[0]))
        m.d.comb += tracked.eq(AnyConst(len(tracked)))
        count_bits = CONFIG.count_bits
        shadow = [Signal(count_bits, name=f"shadow{k}") for k in range(2)]
        accepted = req.valid & ~bank.dropped & req.lane_enable[0] \
            & (req.lane_address[0] == tracked)
        for k in range(2):
            with m.If(copies.clearing_copy[k] & (copies.clear_addr == tracked)):
                m.d.sync += shadow[k].eq(0)
            with m.Elif(accepted & (req.copy == k)):
                m.d.sync += shadow[k].eq(shadow[k] + 1)
        # The frozen reads in flight: any, and the tracked address's (with the copy read).
        # The bank's contract: no release while frozen reads are in flight.
        in_flight = Signal(bank.READ_LATENCY)
        asked = Signal(bank.READ_LATENCY)
        asked_copy = Signal(bank.READ_LATENCY)
        m.d.sync += [in_flight.eq(Cat(port.en, in_flight[:-1])),
                     asked.eq(Cat(port.en & (port.addr == tracked), asked[:-1])),
                     asked_copy.eq(Cat(bank.frozen_copy, asked_copy[:-1]))]
        m.d.comb += Assume(~(bank.release & (in_flight.any() | port.en)))
        with m.If(port.valid & ~port.error & asked[-1]):
            m.d.comb += Assert(port.data.count == Mux(asked_copy[-1], shadow[1], shadow[0]),
                               "the frozen count differs from the accepted updates")


class UncheckedCopyControl(CopyControl):
    """Planted bug: the copy control ignores the check (FROZEN right after the drain)."""

    def __init__(self, **kwargs):
        super().__init__(**{**kwargs, "check": False})


class EarlyFreezeBank(CounterBank):
    """Planted bug: the flush is shorter than the update pipeline (the last accepted
    updates are written after the copy froze)."""
    UPDATE_LATENCY = 2


class NoForwardingBank(CounterBank):
    """Planted bug: no forwarding from the request just ahead (S4 to S3): two updates of
    one word in consecutive cycles count once."""

    def _elaborate_update(self, m, lane, s4_word, s3_base, match, s3, kind):
        super()._elaborate_update(m, lane, s4_word, s3_base, Const(0), s3, kind)


def bank(cls=CounterBank):
    return cls(config=CONFIG, drain_cycles=0, memory="generic")


def test_no_update_lands_in_a_frozen_copy(tmp_path):
    assert_proved(FrozenHarness(bank()), tmp_path, mode="bmc", depth=DEPTH)


def test_no_update_lands_in_a_frozen_copy_refutes_planted_bug(tmp_path):
    assert_refuted(FrozenHarness(bank(EarlyFreezeBank)), tmp_path, mode="bmc", depth=DEPTH,
                   expect="written while FROZEN")


def test_frozen_only_after_the_check(tmp_path):
    assert_proved(SealedHarness(bank()), tmp_path, mode="bmc", depth=DEPTH)


def test_frozen_only_after_the_check_refutes_planted_bug(tmp_path):
    with patch.object(counter_bank_module, "CopyControl", UncheckedCopyControl):
        harness = SealedHarness(bank())
        assert_refuted(harness, tmp_path, mode="bmc", depth=DEPTH,
                       expect="FROZEN before its check was done")


def test_back_to_back_updates_never_lose_one(tmp_path):
    assert_proved(ShadowHarness(bank()), tmp_path, mode="bmc", depth=DEPTH)


def test_back_to_back_updates_never_lose_one_refutes_planted_bug(tmp_path):
    assert_refuted(ShadowHarness(bank(NoForwardingBank)), tmp_path, mode="bmc",
                   depth=DEPTH, expect="differs from the accepted updates")

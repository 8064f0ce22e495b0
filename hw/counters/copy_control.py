# SPDX-License-Identifier: BSD-2-Clause
"""The life cycle of the counter bank's two copies.

Part of :class:`hw.counters.counter_bank.CounterBank` (docs/DESIGN.md, "Data flow of a counter"):
one copy takes updates while the other drains the requests still tagged with it, is
frozen for the bus to read, and is cleared for the next interval. The interval control
drives ``swap`` and ``release``; the bank's update pipeline, frozen read port and RAM
port multiplexers follow these states.

Block RAM keeps its contents over a reset, so a reset starts a clearing sweep over both
copies at once (the sweep a release starts, with both copies' write ports): until it
ends, ``sweeping`` is high, the other copy is CLEARING (not CLEAN) and the active copy
must take no updates (the core holds its input meanwhile).
"""

from amaranth.hdl import Module, Mux, Signal
from amaranth.lib import enum, wiring
from amaranth.lib.wiring import In, Out

__all__ = ["CopyState", "CopyControl"]


class CopyState(enum.Enum, shape=3):
    """Life cycle of one counter copy."""
    CLEAN = 0      #: all zero, may become ACTIVE at the next swap
    ACTIVE = 1     #: taking updates
    DRAINING = 2   #: swapped out; late requests tagged with it and in-flight ones finish
    FROZEN = 3     #: readable over the bus, waiting for ``release``
    CLEARING = 4   #: hardware writes zeros, one word per clock per lane


class CopyControl(wiring.Component):
    """The life cycle of the two counter copies (:class:`CopyState`): which copy is active,
    and the other one's drain, freeze and clearing.

    Every state is also kept one-hot in a register of its own (``draining``, ``frozen``,
    ``clearing``, ``other_clean``), and the end conditions of the drain and clear counts
    are registered, so each transition's enable is one LUT of registers.

    Parameters
    ----------
    depth : int
        Words per lane (the clear count).
    drain_cycles : int
        Cycles after a swap during which requests for the old copy are still accepted.
    flush : int
        Further cycles until the last accepted request is written
        (:attr:`CounterBank.UPDATE_LATENCY`).
    check : bool
        After the flush, the copy stays DRAINING (``checking``) until ``check_done``: the
        counter bank computes the copy's check value then
        (:class:`hw.counters.freeze_check.FreezeCheck`), so that FROZEN means "readable, and its
        check value ready".

    Members
    -------
    swap, release : In(1)
        As :class:`CounterBank`'s.
    active : Out(1)
        The copy taking updates.
    other : Out(CopyState)
        The state of the other copy.
    other_clean, draining, frozen, clearing : Out(1)
        ``other`` is CLEAN / DRAINING / FROZEN / CLEARING.
    drain_open : Out(1)
        The other copy still accepts requests (DRAINING, within ``drain_cycles``).
    clearing_copy : Out(2)
        Bit ``k``: copy ``k`` is CLEARING (it drives the RAM write port multiplexers);
        both bits during the sweep after reset.
    sweeping : Out(1)
        The sweep after reset is clearing both copies (``depth`` cycles from reset):
        the active copy takes no updates yet, and the other is not yet CLEAN.
    clear_addr : Out(range(depth))
        The word being cleared.
    check_start : Out(1)
        One cycle, with ``check``: the drain is over, the check sweep may start.
    checking : Out(1)
        The other copy is DRAINING and waits for ``check_done``.
    check_done : In(1)
        The check value is complete: the copy becomes FROZEN.
    """

    def __init__(self, *, depth: int, drain_cycles: int, flush: int, check: bool = False):
        for name, value, low in (("depth", depth, 1), ("drain_cycles", drain_cycles, 0),
                                 ("flush", flush, 1)):
            if not isinstance(value, int) or value < low:
                raise ValueError(f"{name} must be an integer of at least {low}, not {value!r}")
        if not isinstance(check, bool):
            raise ValueError(f"check must be a bool, not {check!r}")
        self.depth, self.drain_cycles, self.flush = depth, drain_cycles, flush
        self.check = check
        super().__init__({
            "swap": In(1), "release": In(1),
            # Reset state: the sweep over both copies (block RAM survives a reset).
            "active": Out(1), "other": Out(CopyState, init=CopyState.CLEARING),
            "other_clean": Out(1, init=0), "draining": Out(1), "frozen": Out(1),
            "clearing": Out(1, init=1), "drain_open": Out(1),
            "clearing_copy": Out(2, init=0b11), "sweeping": Out(1, init=1),
            "clear_addr": Out(range(depth)),
            "check_start": Out(1), "checking": Out(1), "check_done": In(1),
        })

    def elaborate(self, platform):
        m = Module()
        depth, flush, active = self.depth, self.flush, self.active
        drain_count = Signal(range(self.drain_cycles + flush + 1))
        drain_done = Signal()
        clear_done = Signal(init=depth == 1)
        clear_addr = self.clear_addr
        # The drain window is registered (computed from the next state) to keep the
        # counter compare off the request acceptance path.
        m.d.sync += self.drain_open.eq(Mux(self.swap & self.other_clean, self.drain_cycles > 0,
                                           self.draining & (drain_count > flush + 1)))
        with m.If(self.other_clean & self.swap):
            m.d.sync += [active.eq(~active), self.other.eq(CopyState.DRAINING),
                         self.other_clean.eq(0), self.draining.eq(1),
                         drain_count.eq(self.drain_cycles + flush),
                         drain_done.eq(0)]  # drain_cycles + flush > 0
        freeze = [self.other.eq(CopyState.FROZEN), self.draining.eq(0), self.frozen.eq(1)]
        with m.If(self.draining & ~self.checking):
            with m.If(drain_done):
                if self.check:
                    m.d.comb += self.check_start.eq(1)
                    m.d.sync += self.checking.eq(1)
                else:
                    m.d.sync += freeze
            with m.Else():
                m.d.sync += [drain_count.eq(drain_count - 1),
                             drain_done.eq(drain_count == 1)]
        with m.If(self.checking & self.check_done):
            m.d.sync += [*freeze, self.checking.eq(0)]
        with m.If(self.frozen & self.release):
            m.d.sync += [self.other.eq(CopyState.CLEARING), self.frozen.eq(0),
                         self.clearing.eq(1), clear_addr.eq(0), clear_done.eq(depth == 1)]
            m.d.sync += [self.clearing_copy[k].eq(active != k) for k in range(2)]
        with m.If(self.clearing):
            m.d.sync += [clear_addr.eq(clear_addr + 1),
                         clear_done.eq(clear_addr == depth - 2)]
            with m.If(clear_done):
                m.d.sync += [self.other.eq(CopyState.CLEAN), self.other_clean.eq(1),
                             self.clearing.eq(0), self.sweeping.eq(0)]
                m.d.sync += [self.clearing_copy[k].eq(0) for k in range(2)]
        return m

# SPDX-License-Identifier: BSD-2-Clause
"""hw.bus.core_registers.wire_status: the registers the CSR bank reads from the core come
from the parts' ``status_sources()`` tables, and a register without a source, or a
source without a register, fails the core's elaboration."""

import gc
import re
import warnings

import pytest
from amaranth.hdl import Fragment, Module, UnusedElaboratable, Value
from amaranth.sim import Simulator

from host_sw.contracts.config import LdaConfig, OpaConfig, RliConfig
from host_sw.contracts.regmap import register_map
from hw.bus.core_registers import wire_status
from hw.bus.csr import CsrBank
from hw.frames.header_tap import HeaderTap
from hw.frames.timebase import Timebase
from hw.inband.exporter import Exporter
from hw.interval.interval_control import IntervalControl
from hw.interval.interval_ledger import IntervalLedger
from hw.lda_pipeline import MeasurementCore
from hw.measurement_path import measurement_path


@pytest.fixture(autouse=True)
def unelaborated_parts_are_expected():
    """The parts here are built and never elaborated (or their core's elaboration
    fails): collect them without Amaranth's warning."""
    yield
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UnusedElaboratable)
        gc.collect()


def parts_and_tables(config):
    """The parts the core builds (not elaborated: the test drives their outputs) and
    their tables, as the core passes them."""
    parts = {
        "ledger": IntervalLedger(),
        "interval_control": IntervalControl(data_width=64),
        "exporter": Exporter(config=config, data_width=64),
        "tap": HeaderTap(data_width=64, window_bytes=config.window_bytes,
                         ts_bits=config.ts_bits),
        "timebase": Timebase(width=64),
        "path": measurement_path(config, data_width=64),
    }
    return parts, {name: part.status_sources() for name, part in parts.items()}


@pytest.mark.parametrize("config", [LdaConfig(), OpaConfig(), RliConfig()],
                         ids=lambda c: c.kind)
def test_status_registers_read_their_parts_signals(config):
    regmap = register_map(config, data_width=64)
    csr = CsrBank(regmap=regmap)
    parts, tables = parts_and_tables(config)
    tables["core"] = {"auth_key": 0}     # AUTH_KEY reads 0: the core's own entry
    m = Module()
    wire_status(m, csr, regmap, tables)
    ledger, ic, tap, path = (parts["ledger"], parts["interval_control"], parts["tap"],
                             parts["path"])
    own = {"lda": ("frozen_check", 0x0C0FFEE5),
           "opa": ("opa_records_frames", 0x0A0A0A0A),
           "rli": ("rli_frozen_refused", 0x000E0F00)}[config.kind]
    checked = []

    async def testbench(ctx):
        ctx.set(ledger.frozen, {"seq": 0x11, "flags": 0b101, "timestamp": 0x1_2345_6789,
                                "packets": 0x22, "config_id": 0x33})
        ctx.set(ledger.interval_seq, 0x44)
        ctx.set(ledger.overruns, 0x55)
        ctx.set(ic.markers_replayed, 0x66)
        ctx.set(ic.sequence_gaps, 0x77)
        ctx.set(parts["exporter"].frames, 0x88)
        ctx.set(tap.status.frames, 0x99)
        ctx.set(tap.status.control, 0xAA)
        ctx.set(parts["timebase"].now, 0xBB_0000_0001)
        ctx.set(path.active_copy, 1)
        ctx.set(path.other_clean, 1)
        ctx.set(getattr(path, own[0]), own[1])
        expected = {
            "frozen_seq": 0x11, "frozen_flags": 0b101, "frozen_packets": 0x22,
            "frozen_config_id": 0x33, "interval_seq": 0x44, "overruns": 0x55,
            "markers_replayed": 0x66, "sequence_gaps": 0x77, "export_frames": 0x88,
            "frames_seen": 0x99, "frames_control": 0xAA, "frames_runt": 0,
            "markers_sent": 0, own[0]: own[1],
        }
        for name, value in expected.items():
            assert ctx.get(Value.cast(getattr(csr, name).value)) == value, name
            checked.append(name)
        assert ctx.get(csr.frozen_timestamp.value.ticks) == 0x1_2345_6789
        assert ctx.get(csr.timebase.current.ticks) == 0xBB_0000_0001
        assert ctx.get(Value.cast(csr.auth_key.current)) == 0
        status = csr.status.value
        # copy 1 active, other copy clean; the frozen interval flagged OVERRUN (bit 0)
        assert [ctx.get(getattr(status, f)) for f in
                ("active_copy", "frozen_ready", "clearing", "frozen_overrun",
                 "other_clean")] == [1, 0, 0, 1, 1]
        checked.append("status")

    sim = Simulator(m)
    sim.add_testbench(testbench)
    sim.run()
    assert len(checked) == 15


def core(kind):
    return MeasurementCore(config={"lda": LdaConfig, "rli": RliConfig}[kind]())


@pytest.mark.parametrize("kind", ["lda", "rli"])
def test_a_register_without_a_source_fails_elaboration(kind, monkeypatch):
    original = IntervalControl.status_sources

    def without_replayed(self):
        table = original(self)
        del table["markers_replayed"]
        return table

    monkeypatch.setattr(IntervalControl, "status_sources", without_replayed)
    with pytest.raises(ValueError, match=r"no status source for register\(s\) "
                                         r"markers_replayed of the " + kind):
        Fragment.get(core(kind), None)


def test_a_field_without_a_source_fails_elaboration(monkeypatch):
    original = IntervalLedger.status_sources

    def without_overrun(self):
        table = original(self)
        del table["status.frozen_overrun"]
        return table

    monkeypatch.setattr(IntervalLedger, "status_sources", without_overrun)
    with pytest.raises(ValueError, match=r"register\(s\) status\.frozen_overrun "):
        Fragment.get(core("lda"), None)


@pytest.mark.parametrize("name", [
    "export_bytes",            # no such register
    "config_id",               # a register the host writes, not read from the core
    "status.no_such_field",    # no such field
    "rli_frozen_refused",      # another kind's register (the LDA map lacks it)
])
def test_a_source_without_a_register_fails_elaboration(name, monkeypatch):
    original = Exporter.status_sources

    def with_extra(self):
        return {**original(self), name: self.frames}

    monkeypatch.setattr(Exporter, "status_sources", with_extra)
    with pytest.raises(ValueError, match=r"name no register .* " + re.escape(f"{name!r} (exporter)")):
        Fragment.get(core("lda"), None)


def test_a_register_with_two_sources_fails_elaboration(monkeypatch):
    original = Exporter.status_sources

    def with_tap_counter(self):
        return {**original(self), "frames_seen": self.frames}

    monkeypatch.setattr(Exporter, "status_sources", with_tap_counter)
    with pytest.raises(ValueError, match="'frames_seen' has two sources: exporter and tap"):
        Fragment.get(core("lda"), None)

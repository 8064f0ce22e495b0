# SPDX-License-Identifier: BSD-2-Clause
"""The core's register wiring: the CSR bank's registers to and from the core's parts.

Where it sits (``docs/DESIGN.md``, "Data flow of a counter", step 3, and "Adding a
synopsis kind", item 4): between the CSR bank (:class:`hw.bus.csr.CsrBank`, generated from
the register map) and the components :class:`hw.lda_pipeline.MeasurementCore` composes — the
run-time configuration (MASKS, THRESHOLDS) and the kind's own registers into the
measurement path (:mod:`hw.measurement_path`), the counter window's reads through the
shared frozen read port, and the read-only status registers out of the ledger, the
interval control, the exporter, the tap and the path. Each function adds its
connections (and registered copies) to the core's module; the core calls them from its
``elaborate``. The interval control's and the exporter's configuration stays in the core,
beside their other connections.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib.wiring import Out, connect

from hw.counters.frozen_read_share import FrozenReadShare

__all__ = ["config_copy", "wire_runtime_config", "wire_path_registers",
           "wire_frozen_reads", "wire_status"]


def config_copy(m: Module, value, name: str):
    """A registered copy of a configuration register's value, for a block far from the
    CSR bank: the CSR bank's stored registers sit beside the bus logic, and a route from
    one straight into a distant block (the interval timer's 64-bit adder) would be the
    core's critical path. The copy follows one cycle later; write strobes that go with
    the value are delayed alike by the caller."""
    copy = Signal(value.shape(), name=name, reset_less=True)
    m.d.sync += copy.eq(value)
    return copy


def wire_runtime_config(m: Module, csr, path):
    """The run-time configuration registers (MASKS, THRESHOLDS) → the path's mask
    and threshold ports, whichever the kind's path has (its signature follows the
    configuration)."""
    members = path.signature.members
    if any(name.startswith("mask_") for name in members):
        masks = config_copy(m, csr.masks.value, "masks_copy")
    for name in ("packet_ipv4", "packet_ipv6", "flow_ipv4", "flow_ipv6"):
        if f"mask_{name}" in members:
            m.d.comb += getattr(path, f"mask_{name}").eq(getattr(masks, name))
    ports = [n for n in ("thresholds", "row_thresholds") if n in members]
    if ports:
        thresholds = config_copy(m, csr.thresholds.value, "thresholds_copy")
        fields = sorted(thresholds.shape(), key=lambda item: item[1].offset)
        port = getattr(path, ports[0])
        for j, (name, _) in enumerate(fields):   # bank0.. (LDA) / row0.. (LDS)
            m.d.comb += port[j].eq(getattr(thresholds, name))


def wire_path_registers(m: Module, csr, path, regmap):
    """The path's members named as registers of the map ``regmap`` (hw.measurement_path):
    an ``Out`` member drives its read-only register, an ``In`` member takes a registered
    copy of its configuration register."""
    names = {reg.name for reg in regmap.registers}
    for name, member in path.signature.members.items():
        if name not in names:
            continue
        if member.flow == Out:
            m.d.comb += getattr(csr, name).value.eq(getattr(path, name))
        else:
            m.d.comb += getattr(path, name).eq(
                config_copy(m, getattr(csr, name).value, f"{name}_copy"))


def wire_frozen_reads(m: Module, csr, path, exporter, config):
    """The counter window's reads (the CSR bank) and the exporter share the bank's
    frozen read port (:class:`hw.counters.frozen_read_share.FrozenReadShare`: the bus first).
    The bank's port carries a word layout, the CSR bank's a plain word of the same
    width."""
    m.submodules.frozen_reads = share = FrozenReadShare(config=config)
    window = csr.counters
    m.d.comb += [
        share.bus.addr.eq(window.addr),
        share.bus.en.eq(window.en),
        window.data.eq(share.bus.data),
        window.valid.eq(share.bus.valid),
        window.error.eq(share.bus.error),
        exporter.read_hold.eq(share.exporter_hold),
    ]
    connect(m, exporter.frozen, share.exporter)
    connect(m, share.bank, path.frozen)


def wire_status(m: Module, csr, ledger, ic, exporter, tap, path):
    """The read-only status registers."""
    status, frozen = csr.status.value, ledger.frozen
    m.d.comb += [
        status.active_copy.eq(path.active_copy),
        status.frozen_ready.eq(path.frozen_ready),
        status.clearing.eq(path.clearing),
        status.frozen_overrun.eq(frozen.flags[0]),   # IntervalFlags.OVERRUN
        status.other_clean.eq(path.other_clean),
        csr.interval_seq.value.eq(ledger.interval_seq),
        csr.frozen_seq.value.eq(frozen.seq),
        csr.frozen_packets.value.eq(frozen.packets),
        csr.frozen_check.value.eq(path.frozen_check),
        csr.frozen_updates.value.eq(path.frozen_updates),
        csr.frozen_config_id.value.eq(frozen.config_id),
        csr.frozen_flags.value.eq(frozen.flags),
        csr.frozen_timestamp.value.ticks.eq(frozen.timestamp),
        csr.overruns.value.eq(ledger.overruns),
        csr.markers_sent.value.eq(ic.markers_sent),
        csr.markers_accepted.value.eq(ic.markers_accepted),
        csr.markers_rejected.value.eq(ic.markers_rejected),
        csr.sequence_gaps.value.eq(ic.sequence_gaps),
        csr.markers_runt.value.eq(ic.markers_runt),
        csr.markers_bad_tag.value.eq(ic.markers_bad_tag),
        csr.markers_replayed.value.eq(ic.markers_replayed),
        csr.export_frames.value.eq(exporter.frames),
        csr.frames_seen.value.eq(tap.status.frames),
        csr.frames_counted.value.eq(tap.status.counted),
        csr.frames_errored.value.eq(tap.status.errored),
        csr.frames_runt.value.eq(tap.status.runt),
        csr.frames_non_ip.value.eq(tap.status.non_ip),
        csr.frames_control.value.eq(tap.status.control),
    ]

# SPDX-License-Identifier: BSD-2-Clause
"""The core's register wiring: the CSR bank's registers to and from the core's parts.

Where it sits (``docs/DESIGN.md``, "Data flow of a counter", step 3, and "Adding a
synopsis kind", item 4): between the CSR bank (:class:`hw.bus.csr.CsrBank`, generated from
the register map) and the components :class:`hw.lda_pipeline.MeasurementCore` composes — the
run-time configuration (MASKS, THRESHOLDS) and the kind's own registers into the
measurement path (:mod:`hw.measurement_path`), the counter window's reads through the
shared frozen read port, and the registers the bank reads from the core (read-only
and volatile) from the tables of the parts that drive them (``status_sources()`` of the
ledger, the interval control, the exporter, the tap, the timebase and the path). Each
function adds its connections (and registered copies) to the core's module; the core
calls them from its ``elaborate``. The interval control's and the exporter's configuration stays in the core,
beside their other connections.
"""

from amaranth.hdl import Module, Signal
from amaranth.lib.wiring import In, connect

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
    """The path's ``In`` members named as registers of the map ``regmap``
    (hw.measurement_path): each takes a registered copy of its configuration register.
    (The registers a path drives are in its ``status_sources()``: :func:`wire_status`.)"""
    names = {reg.name for reg in regmap.registers}
    for name, member in path.signature.members.items():
        if name in names and member.flow == In:
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


def wire_status(m: Module, csr, regmap, tables: dict):
    """The registers the CSR bank reads from the core, wired from the parts' tables.

    ``tables`` maps each part's name (for the messages) to its table, ``part.status_sources()``:
    register name → the value that drives it, or ``register.field`` → the value of one field
    (STATUS). Walking the map ``regmap`` as the CSR bank does, every read-only register
    takes its ``value`` and every volatile one its ``current`` from the tables. A register
    (or field) without a source, a name with two, or a name of no such register raises
    ``ValueError``, so a register added to the map or a part renamed fails at elaboration
    instead of reading 0.
    """
    sources, owners = {}, {}
    for owner, table in tables.items():
        for name, value in table.items():
            if name in sources:
                raise ValueError(f"status register {name!r} has two sources: "
                                 f"{owners[name]} and {owner}")
            sources[name], owners[name] = value, owner
    missing = []
    for reg in regmap:
        if reg.constant or not (reg.access == "ro" or reg.volatile):
            continue
        port = getattr(csr, reg.name)
        target = port.value if reg.access == "ro" else port.current
        if reg.name in sources:
            m.d.comb += target.eq(sources.pop(reg.name))
        elif len(reg.fields) == 1 and reg.fields[0].name == "value":   # no fields
            missing.append(reg.name)
        else:
            for field in reg.fields:
                name = f"{reg.name}.{field.name}"
                if name in sources:
                    m.d.comb += getattr(target, field.name).eq(sources.pop(name))
                else:
                    missing.append(name)
    if missing:
        raise ValueError(f"no status source for register(s) {', '.join(missing)} of the "
                         f"{regmap.config.kind} register map (declare it in a part's "
                         f"status_sources())")
    if sources:
        unknown = ", ".join(f"{name!r} ({owners[name]})" for name in sources)
        raise ValueError(f"status sources name no register the core reads in the "
                         f"{regmap.config.kind} register map (read-only or volatile, each "
                         f"once, or each of its fields once): {unknown}")

# SPDX-License-Identifier: BSD-2-Clause
"""The counter bank's ports and geometry: word layout, lanes × depth, the update request
and the frozen read port (:class:`hw.counters.counter_bank.CounterBank`, docs/DESIGN.md "Data flow
of a counter"). Apart from the bank so that its producers and readers (bucket selector,
frozen read share, CSR window, exporter) see the signatures without the update engine;
:mod:`hw.counters.counter_bank` re-exports them.
"""

from amaranth.hdl import unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.config_base import SynopsisConfig

from hw.kinds import kind_gateware

__all__ = ["frozen_read_signature", "lane_geometry", "update_request_signature",
           "word_layout"]


def check_config(config):
    if not isinstance(config, SynopsisConfig):
        raise TypeError(f"config must be an LdaConfig, RdaConfig or LdsConfig, "
                        f"not {config!r}")


def word_layout(config: SynopsisConfig) -> data.StructLayout:
    """The ``amaranth.lib.data`` layout of one counter word.

    Built from ``config.layout`` (:class:`host_sw.contracts.layouts.WordLayout`): one unsigned member
    per field, in field order, LSB first — bit-identical to ``WordLayout.pack``.
    """
    check_config(config)
    return data.StructLayout({f.name: unsigned(f.width) for f in config.layout.fields})


def lane_geometry(config: SynopsisConfig) -> tuple[int, int]:
    """``(lanes, depth)``: how many words one request can update in parallel, and the
    words per lane of one copy (``lanes * depth == config.buckets``)."""
    check_config(config)
    return kind_gateware(config).lane_geometry(config)


def bits_for(n: int) -> int:
    """Address bits for ``n`` entries (at least 1)."""
    return max(1, (n - 1).bit_length())


def xor_field_of(config):
    xor_fields = [f for f in config.layout.fields if f.combine == "xor"]
    if len(xor_fields) > 1:
        raise ValueError(f"at most one XOR field is supported, not {len(xor_fields)}")
    return xor_fields[0] if xor_fields else None


def field_names(config):
    return [f.name for f in config.layout.fields]


def other_sums(config):
    """Summed fields other than ``count`` and ``ts_sum``: their increments come with the
    request (RLI's delay, squared delay and digest, :mod:`hw.rli.receiver`)."""
    return [f for f in config.layout.fields
            if f.combine != "xor" and f.name not in ("count", "ts_sum")]


def update_request_signature(config: SynopsisConfig) -> wiring.Signature:
    """The per-packet update request, from the producer's (bucket selector's) side.

    The producer uses ``Out(update_request_signature(config))``; the :class:`CounterBank`
    uses ``In(...)``, so every member is an input of the bank. No backpressure: a request
    is taken in the cycle ``valid`` is high.

    Members
    -------
    valid : 1
        One packet's update this cycle.
    copy : 1
        The copy (0/1) the packet belongs to, latched at its start of frame.
    timestamp : ts_bits
        Added to the ``ts_sum`` field.
    lane_enable : lanes
        Which lanes this packet updates (LDA: lane 0; RDA: all; LDS: the sampled rows).
    lane_address : ArrayLayout(unsigned(addr_bits), lanes)
        Word address within each lane's copy, below depth (LDA: ``bank*rows + row``).
    xor_value : id_bits / digest_bits
        XORed into the XOR field (RDA ``id_xor``: the packet hash; LDS ``digest``).
        Absent for LDA.
    <field>_increment : the field's width
        Added to each other summed field (RLI: ``delay_sum_increment``,
        ``delay_sq_sum_increment``, ``digest_sum_increment``; :func:`other_sums`).
    """
    check_config(config)
    lanes, depth = lane_geometry(config)
    members = {
        "valid": Out(1),
        "copy": Out(1),
        "lane_enable": Out(lanes),
        "lane_address": Out(data.ArrayLayout(unsigned(bits_for(depth)), lanes)),
    }
    if "ts_sum" in field_names(config):
        members["timestamp"] = Out(config.layout.field("ts_sum").width)
    for fld in other_sums(config):
        members[f"{fld.name}_increment"] = Out(fld.width)
    xor_field = xor_field_of(config)
    if xor_field is not None:
        members["xor_value"] = Out(xor_field.width)
    return wiring.Signature(members)


def frozen_read_signature(config: SynopsisConfig) -> wiring.Signature:
    """The bus read port of the frozen copy, from the reader's (bus) side.

    Members
    -------
    addr : flat index bits (Out)
        Flat word index, lane-major: ``lane*depth + address``.
    en : 1 (Out)
        Read request (one per clock allowed).
    data : word width (In)
        The word, :attr:`CounterBank.READ_LATENCY` cycles after ``en``; zero on error.
    valid : 1 (In)
        High for one cycle when ``data``/``error`` answer a request.
    error : 1 (In)
        The copy was not FROZEN when ``en`` was sampled, or ``addr`` is out of range.
    """
    check_config(config)
    lanes, depth = lane_geometry(config)
    return wiring.Signature({
        "addr": Out(bits_for(lanes * depth)),
        "en": Out(1),
        "data": In(word_layout(config)),
        "valid": In(1),
        "error": In(1),
    })

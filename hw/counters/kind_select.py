# SPDX-License-Identifier: BSD-2-Clause
"""Each synopsis kind's bucket selection: from a hashed record to its counter update.

The kind-specific part of :class:`hw.counters.bucket_select.BucketSelector` (docs/DESIGN.md, "Data
flow of a packet": H3 hasher → **bucket selection** → update pipeline), one function per
kind, reached through :data:`hw.kinds.KINDS`. Each adds to the selector's module the
stages 1..4 of its kind and drives the request's ``valid``, ``lane_enable``,
``lane_address`` and (RDA, LDS) ``xor_value`` in the output register, 4 cycles after the
record. The field split is the one of :mod:`host_sw.contracts.hash_fields`.

Arguments of every function: ``m`` the module, ``config``, ``rec`` the hashed record's
payload, ``valid`` the record's valid bit delayed to stage 3 (a counted frame), the
run-time threshold port (``None`` for a kind without one) and ``req`` the request port.
The stages' registers have no reset: they are data qualified by ``valid``, and a reset
would only load the reset net, which nextpnr routes through the fabric.
"""

from amaranth.hdl import Cat, Const, Mux, Signal
from amaranth.utils import ceil_log2

from hw.arith.stages import delayed, leading_zeros_pipelined, range_reduce

__all__ = ["select_lda", "select_rda", "select_lds", "select_rli"]


def select_lda(m, config, rec, valid, thresholds, req):
    """LDA: the leading zeros ``lz`` of ``F[63:32]`` (the field hash) pick the bank with
    the largest threshold ``z_j <= lz`` (none: not sampled); the row is the low
    ``log2(rows)`` bits of ``F``; one lane, address ``bank * rows + row``."""
    lz = leading_zeros_pipelined(m, rec.field_hash[32:64])         # stage 2
    row_bits = ceil_log2(config.rows)
    row = delayed(m, rec.field_hash[:row_bits], 3, name="row", reset_less=True)  # stage 3
    sampled_by = Signal(config.banks, reset_less=True)
    m.d.sync += sampled_by.eq(Cat(lz >= thresholds[j]
                                  for j in range(config.banks)))  # stage 3
    bank = Const(0, range(config.banks))
    for j in range(config.banks):     # the highest sampling bank wins
        bank = Mux(sampled_by[j], j, bank)
    with m.If(valid):
        m.d.sync += req.lane_enable.eq(sampled_by.any())
    with m.Else():
        m.d.sync += req.lane_enable.eq(0)
    m.d.sync += [
        req.valid.eq(valid & sampled_by.any()),
        req.lane_address[0].eq(Cat(row, bank) if config.banks > 1 else row),
    ]


def select_rda(m, config, rec, valid, thresholds, req):
    """RDA: every counted packet updates bucket ``(h_l * m) >> 32`` of each bank ``l``
    (``h_l`` the bank's bucket hash from the hasher); the XOR value is ``P``."""
    buckets = []
    for l in range(config.banks):
        reduced = range_reduce(m, rec.bucket_hash[l], config.buckets_per_bank,
                               name=f"bucket{l}")                   # stage 2
        buckets.append(delayed(m, reduced, 1, name=f"bucket{l}",
                               reset_less=True))                    # stage 3
    xor_value = delayed(m, rec.packet_hash, 3, name="id", reset_less=True)
    m.d.sync += [
        req.valid.eq(valid),
        req.lane_enable.eq(Mux(valid, (1 << config.banks) - 1, 0)),
        req.xor_value.eq(xor_value),
    ]
    for l in range(config.banks):
        m.d.sync += req.lane_address[l].eq(buckets[l])


def select_lds(m, config, rec, valid, thresholds, req):
    """LDS: row ``r`` is sampled when ``lz >= row_threshold[r]`` (``lz`` of ``F[63:32]``,
    the field hash); its cell is ``(base_r + offset_r) mod C`` with
    ``base_r = (flow_r * C) >> 32`` and ``offset_r = (h'_r * k) >> 32`` (the row's offset
    hash); the XOR value is the digest (low bits of ``F``)."""
    lz = leading_zeros_pipelined(m, rec.field_hash[32:64])         # stage 2
    sampled_rows = Signal(config.rows, reset_less=True)
    m.d.sync += sampled_rows.eq(Cat(lz >= thresholds[r]
                                    for r in range(config.rows)))   # stage 3
    cells = config.cells
    sum_width = ceil_log2(2 * cells) + 1
    digest = delayed(m, rec.field_hash[:config.digest_bits], 3, name="digest",
                     reset_less=True)
    enable = Mux(valid, sampled_rows, 0)
    m.d.sync += [
        req.valid.eq(enable.any()),
        req.lane_enable.eq(enable),
        req.xor_value.eq(digest),
    ]
    for r in range(config.rows):
        base = range_reduce(m, rec.flow_hash[r], cells, name=f"base{r}")  # stage 2
        offset = range_reduce(m, rec.offset_hash[r], config.vlda_cells,
                              name=f"offset{r}")                          # stage 2
        cell_sum = Signal(sum_width, name=f"cell_sum{r}", reset_less=True)
        m.d.sync += cell_sum.eq(base + offset)                              # stage 3
        m.d.sync += req.lane_address[r].eq(
            Mux(cell_sum >= cells, cell_sum - cells, cell_sum))            # stage 4


def select_rli(m, config, rec, valid, thresholds, req):
    """RLI: not a bucket selection of the core's pipeline yet. A packet's RLI update
    depends on the reference frames around it, so its cell, digest and arrival go to
    :class:`hw.rli.receiver.RliReceiver` (interpolation, then the counter bank); the core
    (:mod:`hw.lda_pipeline`) does not compose that path yet (docs/SPEC.md "RLI")."""
    raise ValueError("the RLI kind's updates come from hw.rli.receiver.RliReceiver; "
                     "the core's bucket selector does not build it")

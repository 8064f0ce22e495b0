# SPDX-License-Identifier: BSD-2-Clause
"""Bucket selection: from a packet's hashes to the counter update it causes.

Where it sits (``DESIGN.md``): H3 hasher → **classifier / sampler** → update pipeline
(:class:`hw.counter_bank.CounterBank`). The field split is the one of
:mod:`host_sw.contracts.hashing` and :func:`host_sw.model.golden.bucket_indices`:

* LDA: the leading zeros ``lz`` of ``P[63:32]`` pick the bank with the largest run-time
  threshold ``z_j <= lz`` (none: not sampled); the row is the low ``log2(rows)`` bits of
  ``P``; one lane, address ``bank * rows + row``;
* RDA: every counted packet updates bucket ``(h_l * m) >> 32`` of each bank ``l``
  (``h_l`` the bank's bucket hash from the hasher); the XOR value is ``P``;
* LDS: row ``r`` is sampled when ``lz >= row_threshold[r]``; its cell is
  ``(base_r + offset) mod C`` with ``base_r = (flow_r * C) >> 32`` and
  ``offset = (P[31:0] * k) >> 32``; the XOR value is the digest (low bits of ``P``).

Pipeline (:attr:`BucketSelector.latency` = 4 register stages for every kind, so no
64-bit leading-zero chain or wide multiply sits in one stage): (1) leading zeros of each
byte of the sampling word / products; (2) the 0..32 leading-zero count / the sum
of the partial products; (3) threshold compares / the base+offset sum or the bucket; (4) the bank
priority and address / the modulo-C reduction, into the output register.
"""

from amaranth.hdl import Cat, Const, Module, Mux, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out
from amaranth.utils import ceil_log2

from host_sw.contracts.config import LdaConfig, LdsConfig, RdaConfig, SynopsisConfig, is_power_of_two

from .hash_h3 import HashedRecord, delayed

__all__ = ["THRESHOLD_BITS", "BucketSelector", "leading_zeros_pipelined", "range_reduce"]

#: Width of a leading-zero threshold (0..32).
THRESHOLD_BITS = 6


def request_signature(config):
    """The UpdateRequest signature, as :mod:`hw.counter_bank` defines it."""
    from .counter_bank import update_request_signature
    return update_request_signature(config)


def leading_zeros_pipelined(m: Module, word, *, name: str = "lz"):
    """Leading zeros (0..32) of a 32-bit ``word`` in two register stages: per byte, then
    the combination. Returns the register holding the count (valid 2 cycles later).

    The registers have no reset (data, qualified by the caller's valid): with one, Yosys
    folded the reset into the priority logic it maps onto the flip-flops' set/reset
    input, and the reset net's route plus four LUT levels was the whole core's critical
    path (159 MHz)."""
    assert len(word) == 32
    byte_lz = []
    byte_nonzero = []
    for b in range(4):
        byte = word[8 * b:8 * b + 8]
        lz = Signal(range(9), name=f"{name}_byte{b}", reset_less=True)
        nz = Signal(name=f"{name}_nonzero{b}", reset_less=True)
        value = Const(8, range(9))
        for bit in range(8):                # the highest set bit wins
            value = Mux(byte[bit], 7 - bit, value)
        m.d.sync += [lz.eq(value), nz.eq(byte.any())]
        byte_lz.append(lz)
        byte_nonzero.append(nz)
    count = Signal(range(33), name=name, reset_less=True)
    value = Const(32, range(33))
    for b in range(4):                      # the most significant non-zero byte wins
        value = Mux(byte_nonzero[b], (3 - b) * 8 + byte_lz[b], value)
    m.d.sync += count.eq(value)
    return count


def range_reduce(m: Module, hash32, size: int, *, name: str = "reduced"):
    """``(hash32 * size) >> 32`` (:func:`host_sw.contracts.hashing.range_reduce32`) in two register
    stages. Returns the register (valid 2 cycles after ``hash32``).

    A power-of-two ``size`` takes the top bits of the hash. Otherwise the product is split
    into two 16-bit halves of the hash (two small multipliers, registered), whose sum
    forms the second stage.
    """
    width = max(1, ceil_log2(size))
    out = Signal(width, name=name)
    if size == 1:
        m.d.sync += out.eq(0)
        return out
    if is_power_of_two(size):
        top = delayed(m, hash32[32 - ceil_log2(size):32], 1, name=f"{name}_top")
        m.d.sync += out.eq(top)
        return out
    size_bits = size.bit_length()
    product_high = Signal(16 + size_bits, name=f"{name}_high")
    product_low = Signal(16 + size_bits, name=f"{name}_low")
    m.d.sync += [product_high.eq(hash32[16:32] * size), product_low.eq(hash32[:16] * size)]
    total = (product_high << 16) + product_low
    m.d.sync += out.eq(total[32:32 + width])
    return out


class BucketSelector(wiring.Component):
    """Turns hashed records into UpdateRequests for the counter bank.

    Parameters
    ----------
    config:
        The synopsis configuration (kind and dimensions).

    Members
    -------
    hashed: In(HashedRecord(config))
        From :class:`hw.hash_h3.PacketHasher`.
    thresholds: In(ArrayLayout(6, banks))
        LDA bank thresholds (CSRs).
    row_thresholds: In(ArrayLayout(6, rows))
        LDS row sampling thresholds (CSRs).
    request: Out(update_request_signature(config))
        One update (or none) per record, :attr:`latency` cycles after it; ``copy`` and
        ``timestamp`` are driven even when ``valid`` is low.
    swap: Out(1)
        The interval boundary pulse, in order with the requests.
    counted: Out(1)
        A counted (IPv4/IPv6) frame's record reached the output this cycle (whether
        sampled or not); its copy is ``request.copy``.
    """

    def __init__(self, *, config: SynopsisConfig):
        if not isinstance(config, (LdaConfig, RdaConfig, LdsConfig)):
            raise ValueError(f"config must be an LdaConfig, RdaConfig or LdsConfig, "
                             f"not {type(config).__name__}")
        self.config = config
        #: Cycles from ``hashed`` to ``request``.
        self.latency = 4
        members = {
            "hashed": In(HashedRecord(config)),
            "request": Out(request_signature(config)),
            "swap": Out(1),
            "counted": Out(1),
        }
        if isinstance(config, LdaConfig):
            members["thresholds"] = In(data.ArrayLayout(unsigned(THRESHOLD_BITS),
                                                        config.banks))
        if isinstance(config, LdsConfig):
            members["row_thresholds"] = In(data.ArrayLayout(unsigned(THRESHOLD_BITS),
                                                            config.rows))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        config = self.config
        rec = self.hashed.payload
        req = self.request
        hashed_valid = self.hashed.valid & rec.counted

        side = Signal(data.StructLayout({
            "valid": 1, "swap": 1, "copy": 1, "timestamp": config.ts_bits}))
        m.d.comb += [side.valid.eq(hashed_valid), side.swap.eq(self.hashed.swap),
                     side.copy.eq(rec.copy), side.timestamp.eq(rec.timestamp)]
        side3 = delayed(m, side, 3, name="side")     # stage 3 values

        if isinstance(config, LdaConfig):
            lz = leading_zeros_pipelined(m, rec.packet_hash[32:64])        # stage 2
            row_bits = ceil_log2(config.rows)
            row = delayed(m, rec.packet_hash[:row_bits], 3, name="row")   # stage 3
            sampled_by = Signal(config.banks)
            m.d.sync += sampled_by.eq(Cat(lz >= self.thresholds[j]
                                          for j in range(config.banks)))  # stage 3
            bank = Const(0, range(config.banks))
            for j in range(config.banks):     # the highest sampling bank wins
                bank = Mux(sampled_by[j], j, bank)
            with m.If(side3.valid):
                m.d.sync += req.lane_enable.eq(sampled_by.any())
            with m.Else():
                m.d.sync += req.lane_enable.eq(0)
            m.d.sync += [
                req.valid.eq(side3.valid & sampled_by.any()),
                req.lane_address[0].eq(Cat(row, bank) if config.banks > 1 else row),
            ]

        elif isinstance(config, RdaConfig):
            buckets = []
            for l in range(config.banks):
                reduced = range_reduce(m, rec.bucket_hash[l], config.buckets_per_bank,
                                       name=f"bucket{l}")                   # stage 2
                buckets.append(delayed(m, reduced, 1, name=f"bucket{l}"))  # stage 3
            xor_value = delayed(m, rec.packet_hash, 3, name="id")
            m.d.sync += [
                req.valid.eq(side3.valid),
                req.lane_enable.eq(Mux(side3.valid, (1 << config.banks) - 1, 0)),
                req.xor_value.eq(xor_value),
            ]
            for l in range(config.banks):
                m.d.sync += req.lane_address[l].eq(buckets[l])

        elif isinstance(config, LdsConfig):
            lz = leading_zeros_pipelined(m, rec.packet_hash[32:64])        # stage 2
            sampled_rows = Signal(config.rows)
            m.d.sync += sampled_rows.eq(Cat(lz >= self.row_thresholds[r]
                                            for r in range(config.rows)))   # stage 3
            offset = range_reduce(m, rec.packet_hash[:32], config.vlda_cells,
                                  name="offset")                            # stage 2
            cells = config.cells
            sum_width = ceil_log2(2 * cells) + 1
            digest_bits = config.digest_bits
            digest = delayed(m, rec.packet_hash[:digest_bits], 3, name="digest")
            enable = Mux(side3.valid, sampled_rows, 0)
            m.d.sync += [
                req.valid.eq(enable.any()),
                req.lane_enable.eq(enable),
                req.xor_value.eq(digest),
            ]
            for r in range(config.rows):
                base = range_reduce(m, rec.flow_hash[r], cells, name=f"base{r}")  # stage 2
                cell_sum = Signal(sum_width, name=f"cell_sum{r}")
                m.d.sync += cell_sum.eq(base + offset)                              # stage 3
                m.d.sync += req.lane_address[r].eq(
                    Mux(cell_sum >= cells, cell_sum - cells, cell_sum))            # stage 4

        m.d.sync += [
            req.copy.eq(side3.copy),
            req.timestamp.eq(side3.timestamp),
            self.swap.eq(side3.swap),
        ]
        counted3 = delayed(m, self.hashed.valid & rec.counted, 3, name="counted")
        m.d.sync += self.counted.eq(counted3)
        return m

# SPDX-License-Identifier: BSD-2-Clause
"""Bucket selection: from a packet's hashes to the counter update it causes.

Where it sits (docs/DESIGN.md, "Data flow of a packet"): H3 hasher (:mod:`hw.hash_h3`) →
**bucket selection** → update pipeline (:class:`hw.counters.counter_bank.CounterBank`). The field
split is the one of :mod:`host_sw.contracts.hash_fields` and
:func:`host_sw.model.golden_lda_rda_lds.bucket_indices`; each kind's part is a function of
:mod:`hw.counters.kind_select`, found through :data:`hw.kinds.KINDS` (LDA: leading zeros pick the
bank, low hash bits the row; RDA: one range-reduced bucket hash per bank; LDS: one sampled
cell per row, flow base plus virtual-LDA offset).

Pipeline (:attr:`BucketSelector.latency` = 4 register stages for every kind, so no
64-bit leading-zero chain or wide multiply sits in one stage): (1) leading zeros of each
byte of the sampling word / products; (2) the 0..32 leading-zero count / the sum
of the partial products; (3) threshold compares / the base+offset sum or the bucket; (4) the bank
priority and address / the modulo-C reduction, into the output register.
"""

from amaranth.hdl import Module, Signal, unsigned
from amaranth.lib import data, wiring
from amaranth.lib.wiring import In, Out

from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.config_base import THRESHOLD_BITS
from hw.counters.bank_layout import update_request_signature
from hw.hash_h3 import HashedRecord
from hw.kinds import kind_gateware
from hw.arith.stages import delayed

__all__ = ["BucketSelector"]


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
        self._kind = kind_gateware(config)
        self.config = config
        #: Cycles from ``hashed`` to ``request``.
        self.latency = 4
        members = {
            "hashed": In(HashedRecord(config)),
            "request": Out(update_request_signature(config)),
            "swap": Out(1),
            "counted": Out(1),
        }
        thresholds = self._kind.thresholds(config)
        if thresholds is not None:
            name, count = thresholds
            members[name] = In(data.ArrayLayout(unsigned(THRESHOLD_BITS), count))
        super().__init__(members)

    def elaborate(self, platform):
        m = Module()
        config = self.config
        rec = self.hashed.payload
        req = self.request
        hashed_valid = self.hashed.valid & rec.counted

        # Stage 3 values: the strobes with a reset, the data they qualify without one.
        strobes = Signal(data.StructLayout({"valid": 1, "swap": 1}))
        fields = Signal(data.StructLayout({"copy": 1, "timestamp": config.ts_bits}))
        m.d.comb += [strobes.valid.eq(hashed_valid), strobes.swap.eq(self.hashed.swap),
                     fields.copy.eq(rec.copy), fields.timestamp.eq(rec.timestamp)]
        strobes3 = delayed(m, strobes, 3, name="side")
        fields3 = delayed(m, fields, 3, name="side_data", reset_less=True)

        thresholds = self._kind.thresholds(config)
        self._kind.select(m, config, rec, strobes3.valid,
                          getattr(self, thresholds[0]) if thresholds else None, req)

        m.d.sync += [
            req.copy.eq(fields3.copy),
            req.timestamp.eq(fields3.timestamp),
            self.swap.eq(strobes3.swap),
        ]
        counted3 = delayed(m, self.hashed.valid & rec.counted, 3, name="counted")
        m.d.sync += self.counted.eq(counted3)
        return m

# SPDX-License-Identifier: BSD-2-Clause
"""Which measurement path a core of each synopsis kind builds, and the interface they share.

:class:`hw.lda_pipeline.MeasurementCore` is one core for every kind: pass-through and frame merger,
header tap, interval control and ledger, CSR bank and bridge, exporter. What differs by kind
is the *measurement path* between the tap's records and the frozen copy the bus and the
exporter read: :data:`PATHS` names it by ``config.kind`` (docs/DESIGN.md, "Adding a
synopsis kind"). A path is a :class:`amaranth.lib.wiring.Component` built as
``path_class(config=config, memory=memory, data_width=data_width)`` with

* the members of :func:`hw.counters.counter_path.path_members` (records in, the frozen read port,
  the copy states and the ledger's inputs out), wired by the core to the ledger, the CSR
  bank and the exporter;
* an attribute ``latency`` (cycles from a tap record to the bank);
* a method ``status_sources()``: the read-only registers it drives, register name (or
  ``register.field``) → value — :data:`hw.counters.counter_path.PATH_STATUS` and the
  kind's own (:func:`hw.bus.core_registers.wire_status`; the kind's register map,
  :func:`host_sw.contracts.regmap.register_map`, must have a source for each);
* optionally run-time configuration ports named as the hasher's and selector's
  (``mask_*``, ``thresholds``, ``row_thresholds``: the MASKS and THRESHOLDS registers);
* optionally ``In`` members named as configuration registers of the kind's register map:
  each takes a registered copy of its register;
* optionally ``insert`` (``Out(FrameStream(data_width))``: frames of the kind's own, such as
  RLI's reference frames, a third input of the frame merger) and the inputs such frames
  need, by name: ``now`` (``In(64)``, the timebase), ``interval_seq`` (``In(32)``, the
  ledger's current interval number: at a swap arriving from the path's pipeline it is
  already the new interval's), ``frame_src_mac`` / ``frame_dst_mac``
  (``In(48)``: LOCAL_MAC / EXPORT_DST_MAC), ``frame_config_id`` (``In(32)``),
  ``frame_key`` (``In(128)``) / ``frame_auth`` (``In(1)``) (AUTH_KEY / AUTH_MODE.enable);
* optionally ``host_insert`` (``Out(FrameStream(data_width))``: frames of the kind's own
  for the host export port, merged there with the exporter's frames by a frame merger:
  OPA's records when OPA_RECORD_CONTROL.to_export is set);
* optionally ``watch`` (``In(FrameMonitor(data_width))``): the merger's undelayed watch
  copy of the output stream, which the tap sees ``MeasurementCore.TAP_WATCH_DELAY`` cycles later
  (a frame's tap record comes ``TAP_WATCH_DELAY + 1`` cycles after its EOF there), for
  checks that must be done before the frame's record (RLI's reference tags); such a path
  has the attribute ``watch_lead`` (that figure as it assumes it; the core checks it).
"""

from hw.counters.counter_path import CounterPath
from hw.hash_h3 import HASH_FAN_IN
from hw.opa.opa_path import OpaPath
from hw.rli.rli_path import RliPath

__all__ = ["PATHS", "measurement_path"]

#: The measurement path class of each kind, by ``config.kind``.
PATHS = {"lda": CounterPath, "rda": CounterPath, "lds": CounterPath, "opa": OpaPath,
         "rli": RliPath}


def measurement_path(config, *, memory: str = "auto", data_width: int = 64,
                     hash_fan_in: int = HASH_FAN_IN):
    """The measurement path of ``config``'s kind (``ValueError`` for a kind without
    one); ``hash_fan_in``: its hasher's (:class:`hw.hash_h3.PacketHasher`)."""
    kind = getattr(config, "kind", None)
    if kind not in PATHS:
        raise ValueError(f"no core gateware for synopsis kind {kind!r} "
                         f"(kinds with one: {', '.join(sorted(PATHS))})")
    return PATHS[kind](config=config, memory=memory, data_width=data_width,
                       hash_fan_in=hash_fan_in)

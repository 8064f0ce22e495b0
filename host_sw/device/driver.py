# SPDX-License-Identifier: BSD-2-Clause
"""The device driver: one core's registers by name, its configuration, and consistent
snapshots of its intervals.

In ``docs/DESIGN.md``'s host data flow this is "device driver built from the register map ►
snapshot of an interval": every address comes from
:func:`host_sw.contracts.regmap.register_map` (none is typed here), bus words move through a
:class:`~host_sw.device.transport_base.Transport`.

On connect (:class:`Device`) the driver reads ID, VERSION and CONFIG (fixed at words 0, 1,
2..6 in every map), installs them as the link's resynchronisation probe and reads them
again behind it (fenced; they must read the same), discovers the static configuration, and
checks the ID against the expected configuration (:class:`DeviceMismatch` names the
differing parameters). Discovered run-time registers (THRESHOLDS, MASKS) are read behind
the fence, twice, and taken only when both reads agree (:data:`DISCOVERY_READS`); a
discovered configuration is also bound to every snapshot by its configuration ID, which
the check value covers (FROZEN_CONFIG_ID). It then
programs the run-time part (thresholds, masks, CONFIG_ID; :meth:`Device.program`) and the
interval control (:meth:`Device.set_intervals`), and reads an interval's
:class:`Snapshot` consistently (:meth:`Device.read_snapshot`): wait for
``STATUS.frozen_ready``; read FROZEN_SEQ, flags, packets, config ID and timestamp and the
counter window in bursts of whole words (≤ 255 bus words); check the whole record against
the device's check value and the counts against its update count (FROZEN_CHECK,
FROZEN_UPDATES, :mod:`host_sw.contracts.check_value`), reading header and window again (up
to :data:`READ_ATTEMPTS` times in all) until they match, else :class:`SnapshotIntegrityError`;
re-read FROZEN_SEQ and STATUS and reject the snapshot if the frozen copy changed
meanwhile; then release it. Status
counters are 32-bit and wrap; :func:`counter_deltas` takes differences modulo 2^32.
"""

from __future__ import annotations

import time
from host_sw.contracts.check_value import HEADER_REGISTERS, RecordHeader, header_fields
from host_sw.contracts.config import CONFIG_CLASSES, KIND_CODES, LdaConfig
from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.frames.frame_format import IntervalFlags, Role, mac_to_bytes
from host_sw.contracts.hashing import DEFAULT_WINDOW_BYTES, default_masks
from host_sw.contracts.regmap import REGMAP_VERSION, RUNTIME_FIELDS, register_map
from host_sw.contracts.synopsis import Synopsis
from host_sw.contracts.uartbone import MAX_BURST
from host_sw.device.snapshot import Snapshot, integrity_problem
from host_sw.device.transport_base import Transport

__all__ = ["DeviceError", "DeviceMismatch", "SnapshotError", "SnapshotIntegrityError",
           "Device", "STATUS_COUNTERS", "INTERVAL_MODES", "counter_deltas",
           "READ_ATTEMPTS", "DISCOVERY_READS"]

#: The 32-bit wrapping status counters (register names).
STATUS_COUNTERS = ("frames_seen", "frames_counted", "frames_errored", "frames_runt",
                   "frames_non_ip", "frames_control", "overruns", "markers_sent",
                   "markers_accepted", "markers_rejected", "sequence_gaps", "export_frames")
#: INTERVAL_MODE.mode values.
INTERVAL_MODES = {"manual": 0, "time": 1, "marker-send": 2, "marker-receive": 3}
_KIND_NAMES = {v: k for k, v in KIND_CODES.items()}
_M32 = (1 << 32) - 1
#: The run-time threshold tuples a configuration may have (LDA ``thresholds``, LDS
#: ``row_thresholds``): the run-time fields that are not hash masks.
_THRESHOLD_FIELDS = tuple(sorted(f for f in RUNTIME_FIELDS if not f.startswith("mask_")))
#: Each kind's parameters from the CONFIG register's fields (the inverse of the register
#: map's CONFIG register), with placeholder thresholds (the run-time ones are read from
#: THRESHOLDS).
_FROM_CONFIG_REGISTER = {
    "lda": lambda s: {"banks": s["dim0"], "rows": s["dim1"],
                      "thresholds": tuple(range(s["dim0"]))},
    "rda": lambda s: {"banks": s["dim0"], "buckets_per_bank": s["dim1"],
                      "id_bits": s["xor_bits"]},
    "lds": lambda s: {"rows": s["dim0"], "cells": s["dim1"], "vlda_cells": s["vlda_cells"],
                      "digest_bits": s["xor_bits"], "row_thresholds": (0,) * s["dim0"]},
    "opa": lambda s: {"rows": s["dim0"], "groups": s["dim1"]},
    "rli": lambda s: {"cells": s["dim1"], "digest_bits": s["xor_bits"]},
}


def _threshold_field(config: SynopsisConfig) -> str | None:
    """The name of ``config``'s run-time threshold tuple, or None (RDA samples nothing)."""
    return next((f for f in _THRESHOLD_FIELDS if hasattr(config, f)), None)


class DeviceError(RuntimeError):
    """The device is not in the expected state or answered inconsistently."""


class DeviceMismatch(DeviceError):
    """The device is another build than the expected configuration (ID or VERSION)."""


class SnapshotError(DeviceError):
    """An interval's snapshot could not be read consistently."""


class SnapshotIntegrityError(SnapshotError):
    """The interval record read (header and counter words) never matched the device's
    check value and update count (FROZEN_CHECK, FROZEN_UPDATES), however often it was read
    again."""


#: Reads of the interval record (header, check registers, counter window) before a
#: snapshot that does not match the device's check is given up
#: (:class:`SnapshotIntegrityError`).
READ_ATTEMPTS = 3
#: Pairs of reads of a discovered register before disagreeing reads are given up
#: (:class:`DeviceError`): a register is taken when two reads in a row agree.
DISCOVERY_READS = 3


def counter_deltas(new: dict, old: dict) -> dict:
    """``new - old`` of 32-bit wrapping counters (each delta in 0..2^32-1)."""
    return {k: (int(new[k]) - int(old[k])) & _M32 for k in new if k in old}


class Device:
    """One core behind a transport.

    Parameters
    ----------
    transport : Transport
    config : SynopsisConfig, optional
        The expected configuration. Its static part must match the device's ID; it is the
        configuration :meth:`program` writes and snapshots decode with. Without it the
        static part is discovered from CONFIG and the run-time part read from THRESHOLDS
        and MASKS, with ``seed`` and ``tick_ns`` as given.
    seed, tick_ns :
        For discovery only (they are not readable from the device).
    check_id : bool
        Raise :class:`DeviceMismatch` when the ID does not match (default True).
    """

    def __init__(self, transport: Transport, *, config: SynopsisConfig | None = None,
                 seed: int | None = None, tick_ns: float | None = None,
                 check_id: bool = True):
        self.transport = transport
        probe = register_map(LdaConfig())    # ID, VERSION, CONFIG: the same in every map
        head = [probe[n] for n in ("id", "version", "config")]
        lo = head[0].address
        n = sum(r.words for r in head)
        words = transport.read_words(lo, n)
        # ID, VERSION and CONFIG are constants: the link reads them to resynchronise and
        # fences every read with them. Read again behind the fence, they must not change
        # (a garbled or late first reply fails the fence or this comparison).
        transport.set_resync_probe(lo, words)
        again = transport.read_words(lo, n)
        if again != words:
            raise DeviceError(f"ID, VERSION and CONFIG read differently twice "
                              f"({[f'{w:#x}' for w in words]} then "
                              f"{[f'{w:#x}' for w in again]}): the link is unreliable")
        values, k = {}, 0
        for r in head:
            values[r.name] = r.from_words(words[k:k + r.words])
            k += r.words
        self.id_value = values["id"]
        self.version = probe["version"].decode(values["version"])
        self.static = probe["config"].decode(values["config"])
        if self.version["major"] != REGMAP_VERSION[0]:
            raise DeviceMismatch(f"register map version {self.version['major']}."
                                 f"{self.version['minor']} on the device; this host speaks "
                                 f"{REGMAP_VERSION[0]}.x")
        kind = _KIND_NAMES.get(self.static["kind"])
        if kind is None:
            raise DeviceMismatch(f"CONFIG.kind is {self.static['kind']}, not a synopsis kind "
                                 f"(1 LDA, 2 RDA, 3 LDS): is this a synopsis core?")
        self.kind = kind
        self.data_width = self.static["data_width"]
        discovered = self._static_config(seed, tick_ns)
        if config is not None:
            self._check_against(config, discovered, check_id)
            self.config = config
            self.map = register_map(config, data_width=self.data_width)
        else:
            self.map = register_map(discovered, data_width=self.data_width)
            if check_id and self.map.id_value != self.id_value:
                raise DeviceMismatch(
                    f"device ID {self.id_value:#010x} does not match the discovered "
                    f"{kind.upper()} configuration ({self.map.id_value:#010x}): its seed or "
                    f"another static parameter differs from the defaults; give the "
                    f"configuration (--config FILE)")
            self.config = self._with_runtime(discovered)
        self._last_seq: int | None = None

    # -- discovery -----------------------------------------------------------------------
    def _static_config(self, seed, tick_ns) -> SynopsisConfig:
        s = self.static
        common = {"count_bits": s["count_bits"], "ts_bits": s["ts_bits"],
                  "window_bytes": s["window_bytes"]}
        if seed is not None:
            common["seed"] = seed
        if tick_ns is not None:
            common["tick_ns"] = tick_ns
        if s["window_bytes"] != DEFAULT_WINDOW_BYTES:
            # placeholder masks that fit the window (the run-time ones are read later)
            common.update({f"mask_{k}": m.as_int()
                           for k, m in default_masks(s["window_bytes"]).items()})
        try:
            return CONFIG_CLASSES[self.kind](**_FROM_CONFIG_REGISTER[self.kind](s), **common)
        except ValueError as e:
            raise DeviceMismatch(f"the device's CONFIG register describes no valid "
                                 f"{self.kind.upper()} configuration: {e}") from None

    def _check_against(self, config, discovered, check_id):
        if config.kind != self.kind:
            raise DeviceMismatch(f"the device is an {self.kind.upper()} core, the expected "
                                 f"configuration is {config.kind.upper()}")
        expected_map = register_map(config, data_width=self.data_width)
        if check_id and expected_map.id_value != self.id_value:
            a, b = config.to_dict(), discovered.to_dict()
            diff = sorted(k for k in a if k not in RUNTIME_FIELDS and k != "tick_ns"
                          and k != "seed" and a.get(k) != b.get(k))
            why = ("differing parameters: " + ", ".join(
                f"{k} (device {b.get(k)}, expected {a.get(k)})" for k in diff)) if diff \
                else "the seed or the register map version differs"
            raise DeviceMismatch(f"device ID {self.id_value:#010x} does not match the "
                                 f"expected configuration's {expected_map.id_value:#010x}; "
                                 f"{why}")

    def _read_agreed(self, name: str) -> dict:
        """A discovered register's fields, from two fenced reads in a row that agree (up
        to :data:`DISCOVERY_READS` pairs), so that no single garbled reply is taken."""
        seen = []
        for _ in range(DISCOVERY_READS):
            first, second = self.read(name), self.read(name)
            if first == second:
                return self.map[name].decode(first)
            seen += [first, second]
        raise DeviceError(f"{self.map[name].name.upper()} read differently every time "
                          f"({', '.join(f'{v:#x}' for v in seen)}): the link is unreliable")

    def _with_runtime(self, static: SynopsisConfig) -> SynopsisConfig:
        masks = self._read_agreed("masks")
        changes = {f"mask_{k}": v for k, v in masks.items()}
        thresholds = _threshold_field(static)
        if thresholds is not None:
            t = self._read_agreed("thresholds")
            changes[thresholds] = tuple(t[f.name] for f in self.map["thresholds"].fields)
        try:
            return static.replace(**changes)
        except ValueError as e:
            raise DeviceError(f"the device's run-time registers hold no valid "
                              f"configuration: {e}") from None

    # -- registers -----------------------------------------------------------------------
    def read(self, name: str) -> int:
        """A register's value (its words in one burst: atomic)."""
        reg = self.map[name]
        return reg.from_words(self.transport.read_words(reg.address, reg.words))

    def read_fields(self, name: str) -> dict:
        return self.map[name].decode(self.read(name))

    def write(self, name: str, value: int | None = None, *, verify: bool = True,
              **fields) -> None:
        """Write a register (a value or fields; other fields at reset). ``rw`` registers
        without pulse fields are read back and compared (a lost write raises)."""
        reg = self.map[name]
        if reg.access != "rw":
            raise ValueError(f"register {reg.name} is read-only")
        if value is None:
            value = reg.encode(**fields)
        elif fields:
            raise ValueError("give a value or fields, not both")
        self.transport.write_words(reg.address, reg.to_words(value))
        pulses = any(f.access == "pulse" for f in reg.fields)
        if verify and not pulses and not reg.volatile:
            back = self.read(name)
            if back != value:
                raise DeviceError(f"{reg.name} reads back {back:#x} after writing "
                                  f"{value:#x}")

    def status(self) -> dict:
        return self.read_fields("status")

    def status_counters(self) -> dict:
        """All status counters in one burst."""
        regs = [self.map[n] for n in STATUS_COUNTERS if n in self.map]
        lo = min(r.address for r in regs)
        hi = max(r.address + r.words for r in regs)
        words = self.transport.read_words(lo, hi - lo)
        return {r.name: r.from_words(words[r.address - lo:r.address - lo + r.words])
                for r in regs}

    def info(self) -> dict:
        """ID, version, the static configuration and the live state."""
        return {"id": f"{self.id_value:#010x}",
                "version": f"{self.version['major']}.{self.version['minor']}",
                "kind": self.kind, "data_width": self.data_width, "static": dict(self.static),
                "config_id_expected": f"{self.config.config_id:#010x}",
                "config_id_device": f"{self.read('config_id'):#010x}",
                "interval_seq": self.read("interval_seq"), "status": self.status(),
                "interval_mode": self.read_fields("interval_mode"),
                "timebase": self.read("timebase"), "counters": self.status_counters()}

    # -- programming ---------------------------------------------------------------------
    def program(self, config: SynopsisConfig | None = None) -> None:
        """Write the run-time part of ``config`` (default: the driver's) — thresholds,
        masks — then CONFIG_ID. The static part must match the device."""
        config = config or self.config
        if config is not self.config:
            self._check_against(config, self._static_config(None, None), True)
        changes = {}
        masks = self.map["masks"]
        self.write("masks", masks.encode(**{f.name: getattr(config, f"mask_{f.name}")
                                            for f in masks.fields}))
        if "thresholds" in self.map:
            values = getattr(config, _threshold_field(config))
            reg = self.map["thresholds"]
            for f, v in zip(reg.fields, values):
                if v >= (1 << f.width):
                    raise ValueError(f"threshold {v} does not fit {f.width} bits")
                changes[f.name] = v
            self.write("thresholds", reg.encode(**changes))
        self.write("config_id", config.config_id)
        self.config = config
        self.map = register_map(config, data_width=self.data_width)

    def set_intervals(self, *, mode: str = "manual", ticks: int = 0, start: int = 0,
                      export_inband: bool = False, export_host: bool = False,
                      auto_release: bool = False, local_mac=None, export_dst_mac=None,
                      marker_src_mac=None) -> None:
        """Program interval control (INTERVAL_MODE, INTERVAL_TICKS/START, MACs)."""
        if mode not in INTERVAL_MODES:
            raise ValueError(f"mode must be one of {sorted(INTERVAL_MODES)}, not {mode!r}")
        if ticks < 0 or start < 0:
            raise ValueError("interval ticks and start must be non-negative")
        if mode == "time" and ticks == 0:
            raise ValueError("time mode needs an interval length (ticks > 0)")
        for name, mac in (("local_mac", local_mac), ("export_dst_mac", export_dst_mac),
                          ("marker_src_mac", marker_src_mac)):
            if mac is not None:
                self.write(name, mac=int.from_bytes(mac_to_bytes(mac), "big"))
        self.write("interval_ticks", ticks=ticks)
        self.write("interval_start", ticks=start)
        self.write("interval_mode", mode=INTERVAL_MODES[mode],
                   export_inband=int(export_inband), export_host=int(export_host),
                   auto_release=int(auto_release))

    def swap(self) -> None:
        self.write("control", swap=1)

    def release(self) -> None:
        self.write("control", release=1)

    # -- snapshots -----------------------------------------------------------------------
    def wait_frozen(self, *, timeout: float = 10.0, poll: float = 0.02) -> dict:
        """Poll STATUS until ``frozen_ready``; return the status."""
        deadline = time.monotonic() + timeout
        while True:
            st = self.status()
            if st["frozen_ready"]:
                return st
            if time.monotonic() >= deadline:
                raise SnapshotError(f"no frozen interval within {timeout:g} s "
                                    f"(STATUS {st})")
            time.sleep(poll)

    def read_record_header(self) -> RecordHeader:
        """The frozen interval's header as the device stamped it (FROZEN_SEQ, FROZEN_FLAGS,
        FROZEN_PACKETS, FROZEN_CONFIG_ID, FROZEN_TIMESTAMP, FROZEN_ROLE, FROZEN_SRC_MAC;
        on RLI its RLI_FROZEN_* counts): what the check value covers beside the counter
        words (:func:`host_sw.contracts.check_value.header_fields`)."""
        return RecordHeader(**{name: self.read(HEADER_REGISTERS[name])
                               for name, _ in header_fields(self.config)})

    def read_counter_words(self) -> list[int]:
        """The frozen copy's counter words (bursts of whole words, ≤ 255 bus words)."""
        w = self.map.window
        per = max(1, MAX_BURST // w.chunks)
        out: list[int] = []
        for first in range(0, w.buckets, per):
            n = min(per, w.buckets - first)
            out += w.words_from_bus(self.transport.read_words(w.address_of(first),
                                                              n * w.chunks))
        return out

    def _check_registers(self) -> dict:
        """FROZEN_CHECK and FROZEN_UPDATES (adjacent: one burst)."""
        regs = [self.map[n] for n in ("frozen_check", "frozen_updates")]
        lo = min(r.address for r in regs)
        words = self.transport.read_words(lo, max(r.address + r.words for r in regs) - lo)
        return {r.name: r.from_words(words[r.address - lo:r.address - lo + r.words])
                for r in regs}

    def _checked_record(self, attempts: int = READ_ATTEMPTS
                        ) -> tuple[RecordHeader, list[int], dict]:
        """The interval's header, counter words and the check registers they match; each
        failed match reads all again (a garbled or shifted word, or a garbled header or
        check register, does not come back the same way twice), up to ``attempts``
        times."""
        problems = []
        for _ in range(attempts):
            try:
                header = self.read_record_header()
            except ValueError as e:        # a garbled bit above a field (FROZEN_ROLE's 8)
                problems.append(f"the header read is out of range: {e}")
                continue
            check = self._check_registers()
            words = self.read_counter_words()
            problem = integrity_problem(self.config, words, header, check["frozen_check"],
                                        check["frozen_updates"])
            if problem is None:
                return header, words, check
            problems.append(problem)
        raise SnapshotIntegrityError(
            f"the interval record read never matched the device's check ({attempts} "
            f"reads); "
            f"last: {problems[-1]}; the snapshot is discarded")

    def read_snapshot(self, *, release: bool = True, timeout: float = 10.0,
                      poll: float = 0.02) -> Snapshot:
        """The frozen interval, read consistently (see the module docstring), then
        released (unless ``release=False``)."""
        self.wait_frozen(timeout=timeout, poll=poll)
        header, words, check = self._checked_record()
        seq_after = self.read("frozen_seq")
        st = self.status()
        if seq_after != header.seq or not st["frozen_ready"]:
            raise SnapshotError(f"the frozen interval changed during the read (sequence "
                                f"{header.seq} → {seq_after}, frozen_ready "
                                f"{st['frozen_ready']}); the snapshot is discarded")
        status = self.status_counters()
        # the source whose markers a receiver accepts (read beside the record: the
        # pairing checks it against the sender's FROZEN_SRC_MAC); 0: never programmed
        marker_src_mac = (self.read("marker_src_mac") if header.role == Role.RECEIVER
                          else None) or None
        if release:
            self.release()
        seq = header.seq
        flags = IntervalFlags(header.flags & sum(f.value for f in IntervalFlags))
        notes = []
        if st.get("frozen_overrun"):
            flags |= IntervalFlags.OVERRUN
        if self._last_seq is not None and seq != ((self._last_seq + 1) & _M32):
            missed = (seq - self._last_seq - 1) & _M32
            flags |= IntervalFlags.SEQUENCE_GAP
            notes.append(f"sequence gap: {missed} interval(s) between {self._last_seq} "
                         f"and {seq} were not read")
        self._last_seq = seq
        if flags & IntervalFlags.OVERRUN:
            notes.append("overrun: a boundary found the previous interval unreleased; "
                         "the counters span more than one interval")
        if flags & IntervalFlags.CONFIG_CHANGED:
            notes.append("the configuration changed during the interval")
        if header.config_id != self.config.config_id:
            notes.append(f"the interval's config ID {header.config_id:#010x} is "
                         f"not the configuration's {self.config.config_id:#010x}")
        return Snapshot(seq=seq, flags=flags, config=self.config,
                        synopsis=Synopsis.from_words(self.config, words),
                        packets=header.packets, config_id=header.config_id,
                        timestamp=header.timestamp, status=status,
                        read_time=time.time(), notes=notes,
                        check_value=check["frozen_check"], updates=check["frozen_updates"],
                        device_flags=header.flags, role=header.role,
                        src_mac=header.src_mac, rli=Snapshot.rli_of(header),
                        marker_src_mac=marker_src_mac)

    def close(self) -> None:
        self.transport.close()

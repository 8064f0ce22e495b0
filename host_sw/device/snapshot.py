# SPDX-License-Identifier: BSD-2-Clause
"""One interval of one device as the host read it: counters, status, and whether every
word of it is covered by a check that passed.

In ``docs/DESIGN.md``'s host data flow this is the "snapshot of an interval" that the
driver (:meth:`host_sw.device.driver.Device.read_snapshot`) returns and ``ldactl read``
writes as JSON, and that ``ldactl estimate``/``watch`` turn into records. A snapshot is
:attr:`Snapshot.valid` only when its interval carries no invalidating flag, its config ID
is the configuration's, and its whole interval record — words, sequence number, the
device's flags, packets, config ID, timestamp, the point's role and source MAC (and an
RLI core's frozen counts) — matches the device's check value, and its
counts the update count (:mod:`host_sw.contracts.check_value`): the check is recomputed
from the record each time, so a JSON file edited after the read is invalid too.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from host_sw.contracts.check_value import (RLI_HEADER_FIELDS, RecordHeader, check_value,
                                           plausibility_problem)
from host_sw.contracts.config_base import SynopsisConfig
from host_sw.contracts.config import config_from_dict
from host_sw.contracts.frames.frame_format import (INVALID_FLAGS, ROLE_NAMES, IntervalFlags,
                                                   Role, mac_to_bytes, mac_to_str)
from host_sw.contracts.synopsis import Synopsis

__all__ = ["Snapshot", "integrity_problem"]

_M32 = (1 << 32) - 1
_ALL_FLAGS = sum(f.value for f in IntervalFlags)


def integrity_problem(config: SynopsisConfig, words, header: RecordHeader,
                      check: int | None, updates: int | None, counts=None) -> str | None:
    """Why ``words`` (memory order) and ``header`` are not the interval record the device
    described with FROZEN_CHECK ``check`` and FROZEN_UPDATES ``updates``, or None when both
    checks pass."""
    if check is None or updates is None:
        return "no check value: the interval record is not covered by a device check"
    computed = check_value(config, words, header)
    if computed != check:
        return (f"check value mismatch: the interval record read (header and words) gives "
                f"{computed:#010x}, the device's FROZEN_CHECK is {check:#010x}")
    if counts is None:
        counts = config.layout.unpack(list(words))["count"]
    return plausibility_problem(config, counts, updates)


@dataclass
class Snapshot:
    """One interval of one device, read consistently.

    Attributes
    ----------
    seq : int
        Interval sequence number (FROZEN_SEQ).
    flags : IntervalFlags
        The device's FROZEN_FLAGS, plus SEQUENCE_GAP when the host saw the sequence skip.
    config : SynopsisConfig
    synopsis : Synopsis
    packets : int
        FROZEN_PACKETS (packets counted into the interval).
    config_id : int
        FROZEN_CONFIG_ID (CONFIG_ID when the interval began).
    timestamp : int
        FROZEN_TIMESTAMP: ticks at the boundary that ended the interval.
    status : dict
        Status counters at the read.
    read_time : float
        Host time (s since the epoch) of the read.
    notes : list of str
        Why the snapshot is invalid, if it is.
    check_value : int or None
        FROZEN_CHECK: the device's CRC-32 of the copy (None: no check, not valid).
    updates : int or None
        FROZEN_UPDATES: word updates applied to the copy (the plausibility total).
    device_flags : int or None
        FROZEN_FLAGS as the device stamped it (the byte the check value covers; ``flags``
        holds every one of them, and the host's own). None: ``flags`` is the device's.
    role : int or None
        FROZEN_ROLE (:class:`~host_sw.contracts.frames.frame_format.Role`); None: not
        known (then no check value can cover the record).
    src_mac : int or None
        FROZEN_SRC_MAC: the point's LOCAL_MAC as the interval froze (48 bits).
    rli : dict or None
        An RLI core's RLI_FROZEN_* counts (``references``, ``overflowed``,
        ``unreferenced``, ``refused``); None on other kinds.
    marker_src_mac : int or None
        A receiver's MARKER_SRC_MAC at the read (the sender whose markers it accepts; read
        beside the record, not covered by its check); None: not known.
    """
    seq: int
    flags: IntervalFlags
    config: SynopsisConfig
    synopsis: Synopsis
    packets: int = 0
    config_id: int = 0
    timestamp: int = 0
    status: dict = field(default_factory=dict)
    read_time: float = 0.0
    notes: list = field(default_factory=list)
    check_value: int | None = None
    updates: int | None = None
    device_flags: int | None = None
    role: int | None = None
    src_mac: int | None = None
    rli: dict | None = None
    marker_src_mac: int | None = None

    @staticmethod
    def rli_of(header: RecordHeader) -> dict | None:
        """The RLI counts of ``header`` by short name, or None (not an RLI header)."""
        if header.rli_references is None:
            return None
        return {name[4:]: getattr(header, name) for name, _ in RLI_HEADER_FIELDS}

    @property
    def role_name(self) -> str:
        """``sender``, ``receiver``, ``none``, or ``unknown`` (no role recorded)."""
        return "unknown" if self.role not in tuple(Role) else ROLE_NAMES[Role(self.role)]

    @property
    def overrun(self) -> bool:
        return bool(self.flags & IntervalFlags.OVERRUN)

    @property
    def header(self) -> RecordHeader:
        """The interval's header as the device stamped it (what the check value covers)."""
        device = int(self.flags) if self.device_flags is None else self.device_flags
        rli = {f"rli_{k}": v for k, v in (self.rli or {}).items()}
        return RecordHeader(seq=self.seq, flags=device, packets=self.packets,
                            config_id=self.config_id, timestamp=self.timestamp,
                            role=self.role, src_mac=self.src_mac, **rli)

    @property
    def integrity_problem(self) -> str | None:
        """Why the interval record (header and counters) is not covered by a passing check
        (None: it is)."""
        try:
            header = self.header
        except ValueError as e:
            return f"the interval header is out of range: {e}"
        if header.flags & ~int(self.flags):
            return (f"the flags {int(self.flags):#04x} drop device flags "
                    f"{header.flags & ~int(self.flags):#04x} (FROZEN_FLAGS {header.flags:#04x})")
        return integrity_problem(self.config, self.synopsis.words(), header,
                                 self.check_value, self.updates, self.synopsis.count)

    @property
    def valid(self) -> bool:
        """No invalidating flag, the interval's config ID is the configuration's, and
        every counter word is covered by the device's check value (and its update count)."""
        return (not (self.flags & INVALID_FLAGS) and self.config_id == self.config.config_id
                and self.integrity_problem is None)

    def to_json(self) -> dict:
        problem = self.integrity_problem
        notes = list(self.notes) + ([problem] if problem and problem not in self.notes else [])
        return {"seq": self.seq, "flags": int(self.flags),
                "flag_names": [f.name.lower() for f in IntervalFlags
                               if f.value and self.flags & f],
                "valid": self.valid, "overrun": self.overrun, "packets": self.packets,
                "config_id": f"{self.config_id:#010x}", "timestamp": self.timestamp,
                "check_value": (None if self.check_value is None
                                else f"{self.check_value:#010x}"),
                "updates": self.updates, "device_flags": self.device_flags,
                "role": self.role, "role_name": self.role_name,
                "src_mac": None if self.src_mac is None else _mac_text(self.src_mac),
                "marker_src_mac": (None if self.marker_src_mac is None
                                   else _mac_text(self.marker_src_mac)),
                "rli": None if self.rli is None else dict(self.rli),
                "read_time": self.read_time, "status": dict(self.status),
                "notes": notes, "config": self.config.to_dict(),
                "fields": {k: [int(x) for x in np.asarray(v).ravel()]
                           for k, v in self.synopsis.fields.items()}}

    @classmethod
    def from_json(cls, d: dict) -> "Snapshot":
        """Inverse of :meth:`to_json`. Every number is checked for its type and range: a
        float, a boolean or a string where an integer belongs is a ``ValueError``, never
        truncated (the check value and config ID are hexadecimal strings, as written)."""
        if not isinstance(d, dict):
            raise ValueError(f"a snapshot is a JSON object, not {type(d).__name__}")
        try:
            config = config_from_dict(d["config"])
            fields = _fields(config, d["fields"])
            flags = _int(d, "flags", bits=8)
            if flags & ~_ALL_FLAGS:
                raise ValueError(f"flags {flags:#x} has bits no interval flag uses")
            return cls(seq=_int(d, "seq", bits=32), flags=IntervalFlags(flags),
                       config=config, synopsis=Synopsis(config, fields),
                       packets=_int(d, "packets", 0, bits=32),
                       config_id=_hex(d, "config_id"),
                       timestamp=_int(d, "timestamp", 0, bits=64),
                       status=_status(d.get("status", {})),
                       read_time=_number(d, "read_time", 0.0),
                       notes=_notes(d.get("notes", [])),
                       check_value=_hex(d, "check_value", optional=True),
                       updates=_int(d, "updates", None, bits=32),
                       device_flags=_int(d, "device_flags", None, bits=8),
                       role=_int(d, "role", None, bits=8),
                       src_mac=_mac(d, "src_mac"),
                       marker_src_mac=_mac(d, "marker_src_mac"),
                       rli=_rli(d.get("rli")))
        except KeyError as e:
            raise ValueError(f"not a snapshot document: missing {e}") from None


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _int(d: dict, key: str, default=..., *, bits: int):
    """``d[key]`` as an integer in ``[0, 2^bits)`` (``default`` when absent, if given)."""
    if key not in d and default is not ...:
        return default
    v = d[key]
    if v is None and default is None:
        return None
    if not _is_int(v) or not 0 <= v < (1 << bits):
        raise ValueError(f"snapshot {key} must be an integer in 0..2^{bits}-1, not {v!r}")
    return v


def _hex(d: dict, key: str, *, optional: bool = False):
    """A 32-bit value written as a ``0x`` string (or a plain integer)."""
    v = d.get(key) if optional else d[key]
    if v is None and optional:
        return None
    if isinstance(v, str):
        try:
            v = int(v, 16) if v.lower().startswith("0x") else int(v, 10)
        except ValueError:
            raise ValueError(f"snapshot {key} must be a 32-bit number, not {v!r}") from None
    if not _is_int(v) or not 0 <= v <= _M32:
        raise ValueError(f"snapshot {key} must be a 32-bit number, not {v!r}")
    return v


def _mac_text(mac: int) -> str:
    return mac_to_str(mac.to_bytes(6, "big"))


def _mac(d: dict, key: str) -> int | None:
    """A MAC address written as ``"02:00:00:00:00:01"`` (None when absent or null)."""
    v = d.get(key)
    if v is None:
        return None
    if not isinstance(v, str):
        raise ValueError(f"snapshot {key} must be a MAC address string, not {v!r}")
    return int.from_bytes(mac_to_bytes(v), "big")


def _rli(doc) -> dict | None:
    """RLI's frozen counts: an object of the four 32-bit counts, or None."""
    if doc is None:
        return None
    names = [name[4:] for name, _ in RLI_HEADER_FIELDS]
    if (not isinstance(doc, dict) or sorted(doc) != sorted(names)
            or not all(_is_int(v) and 0 <= v <= _M32 for v in doc.values())):
        raise ValueError(f"snapshot rli must map {names} to 32-bit integers")
    return {n: doc[n] for n in names}


def _number(d: dict, key: str, default: float) -> float:
    v = d.get(key, default)
    if isinstance(v, bool) or not isinstance(v, (int, float)) or not np.isfinite(v):
        raise ValueError(f"snapshot {key} must be a finite number, not {v!r}")
    return float(v)


def _fields(config: SynopsisConfig, doc) -> dict:
    if not isinstance(doc, dict):
        raise ValueError("snapshot fields must be an object of arrays")
    out = {}
    for f in config.layout.fields:
        values = doc[f.name]
        if not isinstance(values, list) or len(values) != config.buckets:
            n = len(values) if isinstance(values, list) else type(values).__name__
            raise ValueError(f"field {f.name} has {n} values, the configuration has "
                             f"{config.buckets} buckets")
        bad = [v for v in values if not (_is_int(v) and 0 <= v < (1 << f.width))]
        if bad:
            raise ValueError(f"field {f.name} holds {bad[0]!r}: its values must be integers "
                             f"in 0..2^{f.width}-1")
        out[f.name] = np.array(values, dtype=np.uint64).reshape(config.shape)
    return out


def _status(doc) -> dict:
    if not isinstance(doc, dict) or not all(
            isinstance(k, str) and _is_int(v) and 0 <= v <= _M32 for k, v in doc.items()):
        raise ValueError("snapshot status must map counter names to 32-bit integers")
    return dict(doc)


def _notes(doc) -> list:
    if not isinstance(doc, list) or not all(isinstance(n, str) for n in doc):
        raise ValueError("snapshot notes must be a list of strings")
    return list(doc)

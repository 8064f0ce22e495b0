# SPDX-License-Identifier: BSD-2-Clause
"""The tag of marker and export frames: SipHash-2-4 with 64-bit output, and its key.

In the data flow (``docs/DESIGN.md``, "Data flow of a counter") this is the check on the
"exporter ► control frames" and "marker" edges: the sender's gateware appends the tag,
the receiving core (markers, :mod:`hw.inband.siphash`) and the host (export frames,
:mod:`host_sw.contracts.frames.control_frame`) recompute and compare it (docs/SPEC.md §6,
"Tag"). Contracts layer; no Amaranth import here.

SipHash-2-4 is the keyed pseudo-random function of Aumasson and Bernstein (2012); we use
the PyPI package ``siphash24`` (a maintained C implementation with the reference test
vectors) rather than re-writing it; :data:`PAPER_VECTOR` is the paper's Appendix A
vector, checked by the tests. The tag is the 8 bytes ``siphash24(message,
key).digest()``: SipHash's 64-bit result, **little-endian** (as the reference
implementation writes it), so the paper's vector reads ``e5 45 be 49 61 ca 29 a1``.

The key is 16 bytes ``K[0..15]`` (the paper's ``k0`` = ``K[0..7]`` little-endian, ``k1``
= ``K[8..15]``). Its text form (``--key-file``, the AUTH_KEY register's value) is the
32 hex digits of ``K[0]`` … ``K[15]`` in that order; as a 128-bit number (the register),
``K[0]`` is the most significant byte. Without authentication the tag is computed with
the all-zero key (:data:`ZERO_KEY`): an integrity check (any change of the content is
caught, except with probability 2⁻⁶⁴), not a proof of origin.
"""

from __future__ import annotations

import re
from pathlib import Path

from siphash24 import siphash24

__all__ = ["KEY_BYTES", "TAG_BYTES", "ZERO_KEY", "PAPER_VECTOR", "siphash_tag",
           "key_from_hex", "key_from_int", "key_to_int", "read_key_file"]

#: Bytes of a key and of a tag.
KEY_BYTES = 16
TAG_BYTES = 8
#: The key of the unauthenticated (integrity-only) mode.
ZERO_KEY = bytes(KEY_BYTES)
#: The paper's vector (Appendix A): key 00..0f, message 00..0e → 0xa129ca6149be45e5,
#: as ``(key, message, tag bytes)``.
PAPER_VECTOR = (bytes(range(16)), bytes(range(15)), bytes.fromhex("e545be4961ca29a1"))


def _check_key(key: bytes) -> bytes:
    if not isinstance(key, (bytes, bytearray)) or len(key) != KEY_BYTES:
        raise ValueError(f"a SipHash key is {KEY_BYTES} bytes, not {key!r:.40}")
    return bytes(key)


def siphash_tag(message: bytes, key: bytes = ZERO_KEY) -> bytes:
    """The 8-byte tag of ``message``: SipHash-2-4 under ``key``, little-endian."""
    return siphash24(bytes(message), key=_check_key(key)).digest()


def key_from_hex(text: str) -> bytes:
    """A key from its 32 hex digits (spaces, ``:`` and a ``0x`` prefix allowed); a
    ValueError that does not repeat the text (a key is a secret)."""
    digits = re.sub(r"[\s:]", "", str(text))
    if digits[:2].lower() == "0x":
        digits = digits[2:]
    if len(digits) != 2 * KEY_BYTES or not re.fullmatch(r"[0-9a-fA-F]+", digits):
        raise ValueError(f"a key is {2 * KEY_BYTES} hex digits (128 bits); this text has "
                         f"{len(digits)} characters that are not all hex digits"
                         if len(digits) != 2 * KEY_BYTES else
                         "a key is 32 hex digits; this text has a character that is not one")
    return bytes.fromhex(digits)


def key_from_int(value: int) -> bytes:
    """The key whose AUTH_KEY register value is ``value`` (``K[0]`` most significant)."""
    return int(value).to_bytes(KEY_BYTES, "big")


def key_to_int(key: bytes) -> int:
    """AUTH_KEY's 128-bit value for ``key``."""
    return int.from_bytes(_check_key(key), "big")


def read_key_file(path) -> bytes:
    """The key in a text file (32 hex digits, see :func:`key_from_hex`); OSError or
    ValueError naming the file, never the key."""
    text = Path(path).read_text(encoding="ascii", errors="replace")
    try:
        return key_from_hex(text.strip())
    except ValueError as e:
        raise ValueError(f"{path}: {e}") from None

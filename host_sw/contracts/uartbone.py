# SPDX-License-Identifier: BSD-2-Clause
"""The UARTBone byte protocol, host side: one definition for every transport.

In DESIGN.md's data flow this is the "bus bridge ◄── UART / byte stream ◄── host" edge: the
host's serial and simulation transports, and the cocotb testbenches, encode bus accesses
with these functions; ``hw.bus.uartbone.UARTBoneBridge`` is the gateware end. The protocol is
LiteX's UARTBone (``litex/soc/cores/uart.py`` ``Stream2Wishbone``, host
``litex/tools/remote/comm_uart.py``), so LiteX's ``litex_server --uart`` can talk to our
devices too.

A command is::

    cmd (1 byte) | length (1 byte, 1..255 words) | word address (4 bytes, big-endian)
    [ length × data word (4 bytes each, big-endian) ]      (writes only)

``cmd`` is :data:`CMD_WRITE_INCR` (0x01), :data:`CMD_READ_INCR` (0x02),
:data:`CMD_WRITE_FIXED` (0x03) or :data:`CMD_READ_FIXED` (0x04): incrementing commands access
``address, address + 1, ...``, fixed ones access ``address`` ``length`` times. A read answers
exactly ``length × 4`` bytes (each word big-endian, in access order); a write answers
nothing. Addresses here are **word** addresses (LiteX's host divides its byte addresses by
4 before sending; ``csr.csv`` lists byte addresses).

The bridge drops a command that stops arriving part-way (a timeout in clocks), and drops
unknown command bytes, so a host resynchronises by pausing longer than the timeout.

**Checked framing** (the host's default, ``docs/SPEC.md`` §7): three more command codes,
:data:`CMD_CHECKED_READ_INCR` (0x65), :data:`CMD_CHECKED_READ_FIXED` (0x3C) and
:data:`CMD_CHECKED_WRITE` (0x5A), each at Hamming distance ≥ 3 from the plain codes and
from each other (a single or double bit error cannot turn one command into another)::

    request: cmd | length | word address (4, big-endian) | tag (1)
             [ length × data word (4, big-endian) ]        (writes only; length must be 1)
             | CRC (4, least significant byte first) over every byte before it
    read reply:  tag | length × data word (4, big-endian) | CRC over tag and words
    write ack:   tag | CRC over the tag                     (after the write is done)

The CRC is :data:`CRC_NAME` (zlib's ``crc32``: reflected polynomial 0xEDB88320, initial value
and final XOR 0xFFFFFFFF, the CRC of :mod:`host_sw.contracts.check_value`), appended least
significant byte first so that the CRC over a message and its CRC is the constant
:data:`CRC_RESIDUE` (the bridge checks a request that way). The bridge executes a checked
request only when its CRC is right (and a checked write only when ``length`` is 1: one word
fits the bridge's data register); a bad one is consumed by its length and ignored, with
no reply. The host picks a new tag for every request and takes a reply only when it is
exactly ``1 + 4 × length + 4`` bytes with its request's tag and a right CRC. Checked
commands address the core's low :data:`ROUTER_SELECT_BIT` address bits (the bridge ignores
the bits above, which the board's router uses to select the core, so the CRC covers the
address as the host sent it).

Several cores behind one link: ``boards.bus_router.UARTBoneRouter`` picks the core of a
command from word-address bit :data:`ROUTER_SELECT_BIT` (and up), so core ``k`` sits at word
base ``k × ROUTER_CORE_STRIDE`` (byte base ``k << (ROUTER_SELECT_BIT + 2)`` in ``csr.csv``);
the host's ``host_sw.device.core_select`` adds that base to every address.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

__all__ = ["CMD_WRITE_INCR", "CMD_READ_INCR", "CMD_WRITE_FIXED", "CMD_READ_FIXED",
           "MAX_BURST", "WRITE_COMMANDS", "READ_COMMANDS", "COMMAND_HEADER_BYTES",
           "ROUTER_SELECT_BIT", "ROUTER_CORE_STRIDE", "ROUTER_MAX_CORES", "Command",
           "take_command", "encode_read", "encode_write", "decode_read_reply",
           "read_reply_length", "CMD_CHECKED_READ_INCR", "CMD_CHECKED_READ_FIXED",
           "CMD_CHECKED_WRITE", "CHECKED_COMMANDS", "CHECKED_READ_COMMANDS", "CRC_NAME",
           "CRC_RESIDUE", "CRC_BYTES", "TAG_BITS", "FRAMINGS", "BadReply", "crc32",
           "crc_bytes", "encode_checked_read", "encode_checked_write", "encode_checked_reply",
           "encode_checked_ack", "checked_reply_length", "decode_checked_reply",
           "decode_checked_ack", "command_extent", "ADDRESS_MASK_CHECKED"]

CMD_WRITE_INCR = 0x01
CMD_READ_INCR = 0x02
CMD_WRITE_FIXED = 0x03
CMD_READ_FIXED = 0x04
#: Most words one command carries (the length byte).
MAX_BURST = 255
#: Commands followed by ``length`` data words.
WRITE_COMMANDS = (CMD_WRITE_INCR, CMD_WRITE_FIXED)
#: Commands answered with ``length`` data words.
READ_COMMANDS = (CMD_READ_INCR, CMD_READ_FIXED)
#: Bytes of a command before its data: command, length, 4-byte word address.
COMMAND_HEADER_BYTES = 6

#: Checked framing (see the module docstring): read incrementing / fixed, one-word write.
CMD_CHECKED_READ_INCR = 0x65
CMD_CHECKED_READ_FIXED = 0x3C
CMD_CHECKED_WRITE = 0x5A
CHECKED_READ_COMMANDS = (CMD_CHECKED_READ_INCR, CMD_CHECKED_READ_FIXED)
CHECKED_COMMANDS = CHECKED_READ_COMMANDS + (CMD_CHECKED_WRITE,)
#: The CRC of checked requests and replies, by its catalogue name.
CRC_NAME = "CRC-32/ISO-HDLC"
#: Bytes of the CRC (least significant first).
CRC_BYTES = 4
#: ``crc32(message + crc_bytes(message))`` for every message.
CRC_RESIDUE = 0x2144DF1C
#: Width of the request tag the reply echoes.
TAG_BITS = 8
#: The host's framings (URL option ``framing``); the first is the default.
FRAMINGS = ("checked", "plain")

#: Lowest word-address bit that selects the core behind a ``UARTBoneRouter`` on a board.
ROUTER_SELECT_BIT = 20
#: Word-address stride of the cores behind the router: core ``k`` at word ``k << 20``.
ROUTER_CORE_STRIDE = 1 << ROUTER_SELECT_BIT
#: The router serves 2 or 4 cores.
ROUTER_MAX_CORES = 4


#: The address bits a checked command accesses (those below :data:`ROUTER_SELECT_BIT`).
ADDRESS_MASK_CHECKED = ROUTER_CORE_STRIDE - 1


class BadReply(ValueError):
    """A checked reply that is not its request's: wrong tag, wrong CRC or wrong length."""


def crc32(data: bytes) -> int:
    """:data:`CRC_NAME` of ``data`` (``zlib.crc32``)."""
    return zlib.crc32(bytes(data)) & 0xFFFFFFFF


def crc_bytes(data: bytes) -> bytes:
    """The CRC as it follows ``data`` on the line (least significant byte first)."""
    return crc32(data).to_bytes(CRC_BYTES, "little")


def _check_tag(tag: int):
    if not 0 <= tag < (1 << TAG_BITS):
        raise ValueError(f"a tag is {TAG_BITS} bits, not {tag}")


def _check_address(address: int):
    if not 0 <= address < (1 << 32):
        raise ValueError(f"word address must be a 32-bit unsigned integer, not {address}")


def _check_burst(max_burst: int):
    if not 1 <= max_burst <= MAX_BURST:
        raise ValueError(f"max_burst must be 1..{MAX_BURST}, not {max_burst}")


def encode_read(address: int, n: int = 1, *, incrementing: bool = True,
                max_burst: int = MAX_BURST) -> bytes:
    """Bytes of the command(s) reading ``n`` words from word ``address``.

    More than ``max_burst`` words become several commands (incrementing: consecutive
    address ranges; fixed: the same address); the replies, concatenated, are still
    ``n × 4`` bytes in access order (:func:`decode_read_reply`).
    """
    _check_address(address)
    _check_burst(max_burst)
    if n < 1:
        raise ValueError(f"a read needs at least one word, not {n}")
    if incrementing and address + n > (1 << 32):
        raise ValueError(f"reading {n} words from {address:#x} passes the end of the "
                         f"32-bit address space")
    cmd = CMD_READ_INCR if incrementing else CMD_READ_FIXED
    out = bytearray()
    done = 0
    while done < n:
        size = min(max_burst, n - done)
        a = address + done if incrementing else address
        out += bytes((cmd, size)) + a.to_bytes(4, "big")
        done += size
    return bytes(out)


def encode_write(address: int, words, *, incrementing: bool = True,
                 max_burst: int = MAX_BURST) -> bytes:
    """Bytes of the command(s) writing 32-bit ``words`` from word ``address`` (split in
    commands of at most ``max_burst`` words)."""
    _check_address(address)
    _check_burst(max_burst)
    words = [int(w) for w in words]
    if not words:
        raise ValueError("a write needs at least one word")
    for w in words:
        if not 0 <= w < (1 << 32):
            raise ValueError(f"data words must be 32-bit unsigned integers, not {w}")
    if incrementing and address + len(words) > (1 << 32):
        raise ValueError(f"writing {len(words)} words from {address:#x} passes the end of "
                         f"the 32-bit address space")
    cmd = CMD_WRITE_INCR if incrementing else CMD_WRITE_FIXED
    out = bytearray()
    for done in range(0, len(words), max_burst):
        chunk = words[done:done + max_burst]
        a = address + done if incrementing else address
        out += bytes((cmd, len(chunk))) + a.to_bytes(4, "big")
        for w in chunk:
            out += w.to_bytes(4, "big")
    return bytes(out)


def encode_checked_read(address: int, n: int, tag: int, *, incrementing: bool = True) -> bytes:
    """One checked read command of ``n`` (1..255) words with ``tag``."""
    _check_address(address)
    _check_tag(tag)
    if not 1 <= n <= MAX_BURST:
        raise ValueError(f"a checked read is 1..{MAX_BURST} words, not {n}")
    cmd = CMD_CHECKED_READ_INCR if incrementing else CMD_CHECKED_READ_FIXED
    body = bytes((cmd, n)) + address.to_bytes(4, "big") + bytes((tag,))
    return body + crc_bytes(body)


def encode_checked_write(address: int, word: int, tag: int) -> bytes:
    """One checked write command of one word with ``tag``."""
    _check_address(address)
    _check_tag(tag)
    if not 0 <= word < (1 << 32):
        raise ValueError(f"data words must be 32-bit unsigned integers, not {word}")
    body = (bytes((CMD_CHECKED_WRITE, 1)) + address.to_bytes(4, "big") + bytes((tag,))
            + word.to_bytes(4, "big"))
    return body + crc_bytes(body)


def encode_checked_reply(tag: int, words) -> bytes:
    """The bridge's reply to a checked read: tag, words, CRC."""
    body = bytes((tag,)) + b"".join(int(w).to_bytes(4, "big") for w in words)
    return body + crc_bytes(body)


def encode_checked_ack(tag: int) -> bytes:
    """The bridge's acknowledgement of a checked write that was executed."""
    return bytes((tag,)) + crc_bytes(bytes((tag,)))


def checked_reply_length(n: int) -> int:
    """Bytes of the reply to a checked read of ``n`` words (0: a write's ack)."""
    return 1 + 4 * n + CRC_BYTES


def decode_checked_reply(data: bytes, tag: int, n: int) -> list[int]:
    """The words of a checked reply; :class:`BadReply` unless it is exactly ``n`` words
    with ``tag`` and a right CRC."""
    data = bytes(data)
    if len(data) != checked_reply_length(n):
        raise BadReply(f"a checked reply of {n} words is {checked_reply_length(n)} bytes, "
                       f"got {len(data)}")
    if crc32(data) != CRC_RESIDUE:
        raise BadReply(f"the reply's CRC is wrong ({len(data)} bytes)")
    if data[0] != tag:
        raise BadReply(f"the reply has tag {data[0]:#04x}, not its request's {tag:#04x}")
    return decode_read_reply(data[1:1 + 4 * n], n)


def decode_checked_ack(data: bytes, tag: int) -> None:
    """:class:`BadReply` unless ``data`` is the acknowledgement of the write with ``tag``."""
    decode_checked_reply(data, tag, 0)


def read_reply_length(n: int) -> int:
    """Bytes the bridge answers to a read of ``n`` words."""
    return 4 * n


def decode_read_reply(data: bytes, n: int | None = None) -> list[int]:
    """Words of a read reply (big-endian 4-byte words). ``n``, if given, must match."""
    data = bytes(data)
    if len(data) % 4:
        raise ValueError(f"a read reply is whole 4-byte words, got {len(data)} bytes")
    if n is not None and len(data) != 4 * n:
        raise ValueError(f"expected {4 * n} bytes for {n} words, got {len(data)}")
    return [int.from_bytes(data[k:k + 4], "big") for k in range(0, len(data), 4)]


@dataclass(frozen=True)
class Command:
    """One command as the bridge receives it.

    Attributes
    ----------
    cmd : int
        One of the four ``CMD_*`` codes.
    length : int
        Words (0..255; the bridge ignores a command of length 0).
    address : int
        Word address.
    data : bytes
        A write's ``length × 4`` data bytes (empty for a read).
    tag : int or None
        A checked command's tag (None for a plain one).
    crc_ok : bool
        A checked command's CRC is right (always True for a plain one).
    """
    cmd: int
    length: int
    address: int
    data: bytes = b""
    tag: int | None = None
    crc_ok: bool = True

    @property
    def writing(self) -> bool:
        return self.cmd in WRITE_COMMANDS or self.cmd == CMD_CHECKED_WRITE

    @property
    def checked(self) -> bool:
        return self.cmd in CHECKED_COMMANDS

    @property
    def executes(self) -> bool:
        """The bridge performs it: a length of 1..255, a right CRC, a checked write of one
        word."""
        if self.length == 0 or not self.crc_ok:
            return False
        return not (self.cmd == CMD_CHECKED_WRITE and self.length != 1)

    def reply(self, words) -> bytes:
        """The bytes the bridge answers after accessing: ``words`` read (empty for a
        write)."""
        if not self.checked:
            return b"".join(int(w).to_bytes(4, "big") for w in words)
        if self.writing:
            return encode_checked_ack(self.tag)
        return encode_checked_reply(self.tag, words)

    @property
    def addresses(self) -> list[int]:
        """The word addresses accessed, in order (a checked command's in the core's low
        :data:`ROUTER_SELECT_BIT` bits)."""
        if self.checked:
            base = self.address & ADDRESS_MASK_CHECKED
            if self.cmd == CMD_CHECKED_READ_FIXED:
                return [base] * self.length
            return [(base + k) & ADDRESS_MASK_CHECKED for k in range(self.length)]
        if self.cmd in (CMD_WRITE_INCR, CMD_READ_INCR):
            return [(self.address + k) & 0xFFFFFFFF for k in range(self.length)]
        return [self.address] * self.length

    @property
    def words(self) -> list[int]:
        """A write's data words."""
        return decode_read_reply(self.data)


def command_extent(buffer) -> tuple[int, int] | None:
    """``(bytes, reply bytes)`` of the command at the start of ``buffer`` (whose first byte
    is a command code), or None while its header is incomplete. ``reply bytes`` is what
    the bridge answers if it executes the command."""
    if len(buffer) < 2:
        return None
    cmd, length = buffer[0], buffer[1]
    if cmd in CHECKED_COMMANDS:
        data = 4 * length if cmd == CMD_CHECKED_WRITE else 0
        reply = checked_reply_length(0 if cmd == CMD_CHECKED_WRITE else length)
        return COMMAND_HEADER_BYTES + 1 + data + CRC_BYTES, reply
    if cmd in WRITE_COMMANDS:
        return COMMAND_HEADER_BYTES + 4 * length, 0
    return COMMAND_HEADER_BYTES, read_reply_length(length)


def take_command(buffer: bytearray) -> Command | None:
    """Remove the first complete command from ``buffer`` (received bytes) and return it;
    None while it is incomplete. Bytes that are not a command code are dropped first, as
    the bridge drops them. A checked command is returned whatever its CRC
    (:attr:`Command.crc_ok`, :attr:`Command.executes`)."""
    while buffer and buffer[0] not in WRITE_COMMANDS + READ_COMMANDS + CHECKED_COMMANDS:
        del buffer[0]
    extent = command_extent(buffer)
    if extent is None or len(buffer) < max(extent[0], COMMAND_HEADER_BYTES):
        return None
    need = extent[0]
    cmd, length = buffer[0], buffer[1]
    address = int.from_bytes(buffer[2:COMMAND_HEADER_BYTES], "big")
    if cmd not in CHECKED_COMMANDS:
        command = Command(cmd=cmd, length=length, address=address,
                          data=bytes(buffer[COMMAND_HEADER_BYTES:need]))
    else:
        command = Command(cmd=cmd, length=length, address=address,
                          data=bytes(buffer[COMMAND_HEADER_BYTES + 1:need - CRC_BYTES]),
                          tag=buffer[COMMAND_HEADER_BYTES],
                          crc_ok=crc32(buffer[:need]) == CRC_RESIDUE)
    del buffer[:need]
    return command

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

Several cores behind one link: ``boards.bus_router.UARTBoneRouter`` picks the core of a
command from word-address bit :data:`ROUTER_SELECT_BIT` (and up), so core ``k`` sits at word
base ``k × ROUTER_CORE_STRIDE`` (byte base ``k << (ROUTER_SELECT_BIT + 2)`` in ``csr.csv``);
the host's ``host_sw.device.core_select`` adds that base to every address.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["CMD_WRITE_INCR", "CMD_READ_INCR", "CMD_WRITE_FIXED", "CMD_READ_FIXED",
           "MAX_BURST", "WRITE_COMMANDS", "READ_COMMANDS", "COMMAND_HEADER_BYTES",
           "ROUTER_SELECT_BIT", "ROUTER_CORE_STRIDE", "ROUTER_MAX_CORES", "Command",
           "take_command", "encode_read", "encode_write", "decode_read_reply",
           "read_reply_length"]

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

#: Lowest word-address bit that selects the core behind a ``UARTBoneRouter`` on a board.
ROUTER_SELECT_BIT = 20
#: Word-address stride of the cores behind the router: core ``k`` at word ``k << 20``.
ROUTER_CORE_STRIDE = 1 << ROUTER_SELECT_BIT
#: The router serves 2 or 4 cores.
ROUTER_MAX_CORES = 4


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
    """
    cmd: int
    length: int
    address: int
    data: bytes = b""

    @property
    def writing(self) -> bool:
        return self.cmd in WRITE_COMMANDS

    @property
    def addresses(self) -> list[int]:
        """The word addresses accessed, in order."""
        if self.cmd in (CMD_WRITE_INCR, CMD_READ_INCR):
            return [(self.address + k) & 0xFFFFFFFF for k in range(self.length)]
        return [self.address] * self.length

    @property
    def words(self) -> list[int]:
        """A write's data words."""
        return decode_read_reply(self.data)


def take_command(buffer: bytearray) -> Command | None:
    """Remove the first complete command from ``buffer`` (received bytes) and return it;
    None while it is incomplete. Bytes that are not a command code are dropped first, as
    the bridge drops them."""
    while buffer and buffer[0] not in WRITE_COMMANDS + READ_COMMANDS:
        del buffer[0]
    if len(buffer) < COMMAND_HEADER_BYTES:
        return None
    cmd, length = buffer[0], buffer[1]
    need = COMMAND_HEADER_BYTES + (4 * length if cmd in WRITE_COMMANDS else 0)
    if len(buffer) < need:
        return None
    command = Command(cmd=cmd, length=length,
                      address=int.from_bytes(buffer[2:COMMAND_HEADER_BYTES], "big"),
                      data=bytes(buffer[COMMAND_HEADER_BYTES:need]))
    del buffer[:need]
    return command

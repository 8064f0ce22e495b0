# SPDX-License-Identifier: BSD-2-Clause
"""The host's transport into a simulated core: the same :class:`host_sw.device.driver.Device`
that talks to a board reads and writes the core's registers in a simulation.

Where it sits (``docs/DESIGN.md``, host data flow): "device driver ► transport ► byte
stream (simulation) ► bus bridge ► CSR bank". On a board the driver's transport moves
UARTBone bytes over a serial port; here :class:`SimulationTransport` moves them through
the core's ``bus_rx``/``bus_tx`` byte-stream ports, one whole command at a time, by
calling a *port* coroutine from the host's thread.

The driver is synchronous and the simulators are not, so the host code runs in a thread
in lockstep with the simulation — the pattern of cocotb's ``bridge``/``resume`` (and of
Glasgow's applets, whose host interface runs against ``SimulationAssembly``): a
simulator-side task starts the host function in a thread and waits for it; every bus
command the host sends is handed back to the simulator as a coroutine that drives the
byte ports, and the host thread blocks until that coroutine returns. No simulated time
passes while host code runs, so a run is deterministic. The simulator-specific halves are
:mod:`sim_tb.lib.uartbone_driver` (cocotb: ``cocotb.task.bridge``/``resume``) and
:mod:`sim_tb.lib.amaranth_host` (Amaranth: :class:`~sim_tb.lib.amaranth_host.HostThread`).

A port is anything with a coroutine ``transact(request, reply_bytes, timeout_cycles)``
that plays ``request`` into ``bus_rx`` and returns the bytes ``bus_tx`` gave back (fewer
than ``reply_bytes`` when the bridge fell silent for ``timeout_cycles`` clocks), and that
raises :class:`BusTimeout` when ``bus_rx`` does not take the request. Timeouts are counted
in simulated clocks, not in wall time.

Nothing here imports a simulator.
"""

from __future__ import annotations

from collections.abc import Callable

from host_sw.device.transport_base import ByteTransport, TransportTimeout
from sim_tb.lib.socket_bridge import CommandFramer

__all__ = ["BusTimeout", "SimulationTransport"]


class BusTimeout(AssertionError):
    """The bridge did not accept a command within the allowed clocks."""


class SimulationTransport(ByteTransport):
    """UARTBone over a simulated core's byte-stream ports.

    Parameters
    ----------
    transact : callable
        The port's ``transact`` made blocking for the host thread (``cocotb.task.resume
        (port.transact)`` or :meth:`sim_tb.lib.amaranth_host.HostThread.resume`): called as
        ``transact(request, reply_bytes, timeout_cycles)``, returns the reply bytes.
    timeout_cycles : int
        Clocks the bridge may stay silent (or not accept a byte) before a command fails.
    name : str
        Shown in error messages.

    A command is played whole and its reply collected at once (commands are framed with
    :class:`sim_tb.lib.socket_bridge.CommandFramer`, the framing of the socket bridge), so
    :meth:`_receive_some` only hands out collected bytes and a short reply is a
    :class:`~host_sw.device.transport_base.TransportTimeout` of the driver, as on a board.
    A failed command is not retried: in a simulation it is a bug to report.
    """

    def __init__(self, transact: Callable[[bytes, int, int], bytes], *,
                 timeout_cycles: int = 100_000, name: str = "simulation",
                 framing: str = "checked"):
        super().__init__(retries=0, resync_delay=0.0, name=name, framing=framing)
        if timeout_cycles < 1:
            raise ValueError(f"timeout_cycles must be positive, not {timeout_cycles}")
        self._transact = transact
        self.timeout_cycles = timeout_cycles
        self._framer = CommandFramer()
        self._replies = bytearray()

    def _send(self, data: bytes) -> None:
        self._framer.feed(data)
        while (command := self._framer.pop()) is not None:
            try:
                reply = self._transact(command.data, command.reply_bytes,
                                       self.timeout_cycles)
            except BusTimeout as e:
                raise TransportTimeout(f"{self.name}: {e}") from e
            self._replies += reply
        if self._framer.pending():
            raise ValueError(f"{self.name}: {self._framer.pending()} bytes are not a whole "
                             f"UARTBone command")

    def _receive_some(self, deadline: float) -> bytes:
        """The reply bytes the simulation has produced (the commands were played in
        :meth:`_send`, so nothing more can arrive while the host waits)."""
        out = bytes(self._replies)
        self._replies.clear()
        return out

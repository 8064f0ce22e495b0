# SPDX-License-Identifier: BSD-2-Clause
"""The host driver against a core on Amaranth's simulator: the same
:class:`host_sw.device.driver.Device` that talks to a board reads and writes the core's
registers through its UARTBone byte streams.

Where it sits (``docs/DESIGN.md``): the Amaranth half of :mod:`sim_tb.lib.sim_transport`.
:class:`HostThread` runs host code (a blocking function that uses a ``Device``) in a
thread while the calling testbench waits, and runs in the testbench, with its simulator
context, every coroutine the host code resumes (:meth:`~HostThread.resume`) — Amaranth's
counterpart of cocotb's ``bridge``/``resume`` pair, and of Glasgow's
``SimulationAssembly`` (whose pipes use the running testbench's context). The host never
runs while the simulation does, so a run is deterministic. :class:`StreamBytePort` plays
one command into the core's ``bus_rx`` and collects its reply from ``bus_tx``;
:class:`SimulatedHost` puts the three together for one core::

    host = SimulatedHost(core)

    async def main(ctx):
        device = await host.connect(ctx, config)      # Device(transport, config=…)
        await host.call(ctx, device.program)
        snapshot = await host.call(ctx, device.read_snapshot, release=False)

"""

from __future__ import annotations

import queue
import threading

from host_sw.device.driver import Device
from sim_tb.lib.sim_transport import BusTimeout, SimulationTransport

__all__ = ["HostThread", "StreamBytePort", "SimulatedHost"]


class HostThread:
    """Host code in a thread, in lockstep with the Amaranth testbench that calls it.

    :meth:`call` starts ``func`` in a thread and serves its requests until it returns;
    while a request's coroutine runs (simulated time passes) the host thread is blocked,
    and while the host thread runs the simulator is blocked. One call at a time.
    """

    def __init__(self, name: str = "host"):
        self.name = name
        self._requests: queue.SimpleQueue | None = None
        self._thread: threading.Thread | None = None

    async def call(self, ctx, func, *args, **kwargs):
        """``func(*args, **kwargs)`` run in the host thread; its result (or exception)."""
        if self._requests is not None:
            raise RuntimeError(f"{self.name}: a host call is already running")
        requests: queue.SimpleQueue = queue.SimpleQueue()

        def run():
            try:
                outcome = (True, func(*args, **kwargs))
            except BaseException as e:  # noqa: BLE001 - handed to the testbench
                outcome = (False, e)
            requests.put(("done", outcome))

        self._requests = requests
        self._thread = threading.Thread(target=run, name=f"{self.name}-thread", daemon=True)
        self._thread.start()
        try:
            while True:
                kind, item = requests.get()      # the simulator waits for the host here
                if kind == "done":
                    self._thread.join()
                    ok, value = item
                    if not ok:
                        raise value
                    return value
                coroutine_function, a, kw, reply = item
                try:
                    reply.put((True, await coroutine_function(ctx, *a, **kw)))
                except Exception as e:  # noqa: BLE001 - raised in the host thread
                    reply.put((False, e))
                except BaseException as e:
                    reply.put((False, e))
                    raise
        finally:
            self._requests = None
            self._thread = None

    def resume(self, coroutine_function):
        """``coroutine_function(ctx, *args)`` as a blocking function for the host thread:
        it runs in the calling testbench, with its context, and returns its result."""
        def blocking(*args, **kwargs):
            requests = self._requests
            if requests is None or threading.current_thread() is not self._thread:
                raise RuntimeError(f"{self.name}: resumed outside HostThread.call (call "
                                   f"the host code through HostThread.call)")
            reply: queue.SimpleQueue = queue.SimpleQueue()
            requests.put(("resume", (coroutine_function, args, kwargs, reply)))
            ok, value = reply.get()
            if not ok:
                raise value
            return value
        return blocking


class StreamBytePort:
    """A core's bus byte streams: ``rx`` (host → bridge) and ``tx`` (bridge → host).

    ``tx.ready`` is high only while a command's reply is collected (the bridge holds a
    reply byte until it is taken, as on a UART with flow control).
    """

    def __init__(self, rx, tx):
        self.rx, self.tx = rx, tx

    async def transact(self, ctx, request: bytes, reply_bytes: int,
                       timeout_cycles: int) -> bytes:
        """Play ``request`` into ``rx``; the reply bytes ``tx`` gave (fewer when it fell
        silent for ``timeout_cycles`` clocks). Raises :class:`BusTimeout` when ``rx``
        does not take a byte within ``timeout_cycles``."""
        rx, tx = self.rx, self.tx
        reply = bytearray()
        ctx.set(tx.ready, 1)
        try:
            for byte in request:
                ctx.set(rx.valid, 1)
                ctx.set(rx.payload, byte)
                for _ in range(timeout_cycles):
                    _, _, taken, valid, data = await ctx.tick().sample(
                        rx.ready, tx.valid, tx.payload)
                    if valid:
                        reply.append(data)
                    if taken:
                        break
                else:
                    raise BusTimeout(f"bus_rx not ready for {timeout_cycles} cycles")
            ctx.set(rx.valid, 0)
            idle = 0
            while len(reply) < reply_bytes and idle < timeout_cycles:
                _, _, valid, data = await ctx.tick().sample(tx.valid, tx.payload)
                if valid:
                    reply.append(data)
                    idle = 0
                else:
                    idle += 1
        finally:
            ctx.set(rx.valid, 0)
            ctx.set(tx.ready, 0)
        return bytes(reply)


class SimulatedHost:
    """The host side of one core (``bus_rx``/``bus_tx``) on Amaranth's simulator.

    Parameters
    ----------
    core :
        The component with the ``bus_rx`` and ``bus_tx`` byte streams (an
        :class:`hw.lda_pipeline.MeasurementCore`).
    timeout_cycles : int
        Clocks the bridge may stay silent before a command fails.
    name : str
        For messages.
    """

    def __init__(self, core, *, timeout_cycles: int = 2000, name: str = "core"):
        self.thread = HostThread(name)
        self.port = StreamBytePort(core.bus_rx, core.bus_tx)
        self.transport = SimulationTransport(self.thread.resume(self.port.transact),
                                             timeout_cycles=timeout_cycles, name=name)

    async def call(self, ctx, func, *args, **kwargs):
        """Host code ``func(*args, **kwargs)`` (see :meth:`HostThread.call`)."""
        return await self.thread.call(ctx, func, *args, **kwargs)

    async def connect(self, ctx, config, **options) -> Device:
        """The :class:`~host_sw.device.driver.Device` of the core: reads ID, VERSION and
        CONFIG and checks them against ``config``."""
        return await self.call(ctx, Device, self.transport, config=config, **options)

    async def wait_status(self, ctx, device: Device, field: str, value: int = 1, *,
                          polls: int = 200, gap_cycles: int = 0) -> dict:
        """Read STATUS (``gap_cycles`` clocks apart) until ``field`` is ``value``."""
        for _ in range(polls):
            status = await self.call(ctx, device.status)
            if status[field] == value:
                return status
            if gap_cycles:
                await ctx.tick().repeat(gap_cycles)
        raise AssertionError(f"STATUS.{field} never became {value}")


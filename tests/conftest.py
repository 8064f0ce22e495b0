# SPDX-License-Identifier: BSD-2-Clause
"""Fixtures shared by the tests in ``tests/`` (no test module imports another; see
``docs/DESIGN.md``, "Testing").

Gateware stream drivers for Amaranth's simulator are not fixtures but a module,
:mod:`sim_tb.lib.amaranth_streams`, because the tests subclass and instantiate them with
per-test parameters.
"""

import numpy as np
import pytest

from host_sw.device.fake_device import FakeDevice
from host_sw.model.pcap import write_pcap


class ScriptedDevice(FakeDevice):
    """A fake device whose intervals hold the given synopses, in order."""

    def __init__(self, config, synopses, **kw):
        super().__init__(config, **kw)
        self.queue = list(synopses)

    def swap(self, timestamp=None):
        if self.frozen is None and self.queue:
            self.set_active(self.queue.pop(0))
        super().swap(timestamp)


@pytest.fixture
def scripted_device():
    """The class of fake devices whose intervals hold given synopses, in order:
    ``scripted_device(config, synopses, **fake_device_options)``."""
    return ScriptedDevice


def write_capture_pair(directory, sim):
    """The two captures of a simulated run (:class:`host_sw.model.channel.Scenario`'s
    result) as ``directory/s.pcap`` (every frame the sender offered, at its send time)
    and ``directory/r.pcap`` (the frames the receiver got, in arrival order); returns the
    two paths."""
    tr = sim.trace
    s, r = directory / "s.pcap", directory / "r.pcap"
    write_pcap(s, tr.frames(), tr.timestamps)
    r_idx = np.concatenate([iv.receiver.indices for iv in sim.intervals])
    r_ts = np.concatenate([iv.receiver.timestamps for iv in sim.intervals])
    order = np.argsort(r_ts, kind="stable")
    write_pcap(r, tr.frames(r_idx[order]), r_ts[order])
    return s, r


@pytest.fixture(scope="session")
def capture_pair():
    """The function writing the sender's and the receiver's capture of a simulated run:
    ``capture_pair(directory, sim) -> (sender_pcap, receiver_pcap)``."""
    return write_capture_pair

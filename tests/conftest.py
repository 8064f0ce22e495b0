# SPDX-License-Identifier: BSD-2-Clause
"""Fixtures shared by the tests in ``tests/`` (no test module imports another; see
``docs/DESIGN.md``, "Testing").

Gateware stream drivers for Amaranth's simulator are not fixtures but a module,
:mod:`sim_tb.amaranth_streams`, because the tests subclass and instantiate them with
per-test parameters.
"""

import pytest

from host_sw.device.fake_device import FakeDevice


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

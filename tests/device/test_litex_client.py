# SPDX-License-Identifier: BSD-2-Clause
"""LiteX's own host tools read a device with the ``csr.csv`` the build writes, unmodified.

The device is the project's fake device (:class:`host_sw.device.fake_device.FakeDevice`)
served as UARTBone bytes over TCP (:class:`host_sw.device.fake_device.DeviceServer`);
pyserial's ``socket://`` URL lets LiteX's UART client (``CommUART``, what
``litex_server --uart`` uses) and ``litex_server --uart --uart-port socket://…`` with
``RemoteClient`` / ``litex_cli`` talk to it as to a serial port. Skipped without the
``litex`` package (``pip install -e .[test]``).
"""

import re
import socket
import subprocess
import sys
import time

import pytest

from host_sw.contracts.config import LdaConfig, RdaConfig
from host_sw.contracts.csr_export import LITEX_BUS_CONSTANTS
from host_sw.contracts.regmap import register_map
from host_sw.device.fake_device import DeviceServer, FakeDevice

litex_csr = pytest.importorskip("litex.tools.remote.csr_builder")
from litex.tools.litex_client import RemoteClient  # noqa: E402
from litex.tools.remote.comm_uart import CommUART  # noqa: E402

CONFIG = LdaConfig(banks=2, rows=64, thresholds=(0, 2))


@pytest.fixture
def device(tmp_path):
    """(csr.csv path as the build writes it, register map, fake device, its server)."""
    rmap = register_map(CONFIG, data_width=8)
    csv_path, _ = rmap.write_exports(tmp_path)
    fake = FakeDevice(CONFIG, data_width=8)
    server = DeviceServer(fake)
    yield csv_path, rmap, fake, server
    server.close()


def test_csv_has_every_constant_litex_needs(device):
    csv_path = device[0]
    items = litex_csr.CSRBuilder.get_csr_items(str(csv_path))
    constants = {name: value for kind, name, value, *_ in items if kind == "constant"}
    for name, value in LITEX_BUS_CONSTANTS.items():
        assert int(constants[name]) == value


def test_litex_uart_client_reads_the_device(device):
    csv_path, rmap, fake, server = device
    comm = CommUART(f"socket://127.0.0.1:{server.port}", csr_csv=str(csv_path))
    try:
        comm.open()
        assert comm.csr_data_width == 32 and comm.csr_bus_address_width == 32
        assert comm.regs.lda_id.read() == rmap.id_value
        assert comm.regs.lda_version.read() == rmap["version"].reset
        # a 5-word register, most significant word first as LiteX assembles it
        assert comm.regs.lda_config.read() == rmap["config"].reset
        comm.regs.lda_config_id.write(0x12345678)
        assert comm.regs.lda_config_id.read() == 0x12345678
        assert fake.get("config_id") == 0x12345678
        # the counter window: a memory region at the byte base of the csv
        window = comm.mems.lda_counters
        assert window.base == 4 * rmap.window.address
        assert window.size == 4 * rmap.window.words
    finally:
        comm.close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_for_port(port: int, proc, timeout: float = 30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"litex_server exited: {proc.communicate()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.5).close()
            return
        except OSError:
            time.sleep(0.2)
    raise AssertionError("litex_server did not open its port")


@pytest.fixture
def litex_server(device):
    """``litex_server --uart`` on the fake device; yields (its TCP port, device)."""
    csv_path, rmap, fake, server = device
    port = _free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "litex.tools.litex_server", "--uart",
         "--uart-port", f"socket://127.0.0.1:{server.port}", "--bind-ip", "127.0.0.1",
         "--bind-port", str(port)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        _wait_for_port(port, proc)
        yield port, device
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def test_litex_server_and_remote_client_read_the_device(litex_server):
    port, (csv_path, rmap, fake, _) = litex_server
    client = RemoteClient(host="127.0.0.1", port=port, csr_csv=str(csv_path))
    client.open()
    try:
        assert client.regs.lda_id.read() == rmap.id_value
        assert client.regs.lda_config.read() == rmap["config"].reset
        client.regs.lda_config_id.write(0xCAFEF00D)
        assert client.regs.lda_config_id.read() == 0xCAFEF00D
    finally:
        client.close()


def test_litex_cli_dumps_every_register(litex_server):
    """``litex_cli --regs`` (``litex.tools.litex_client``) reads every register of the
    csv; the values are the device's."""
    port, (csv_path, rmap, fake, _) = litex_server
    out = subprocess.run(
        [sys.executable, "-m", "litex.tools.litex_client", "--csr-csv", str(csv_path),
         "--host", "127.0.0.1", "--port", str(port), "--regs"],
        capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    values = {name: (int(addr, 16), int(value, 16)) for addr, value, name in
              re.findall(r"^(0x[0-9a-f]+) : (0x[0-9a-f]+) (\w+)$", out.stdout, re.M)}
    assert set(values) == {f"lda_{r.name}" for r in rmap}, out.stdout
    assert values["lda_id"] == (0, rmap.id_value)
    config = rmap["config"]
    assert values["lda_config"] == (config.byte_address, config.reset)


def test_device_map_of_two_cores_loads(tmp_path):
    """A device's merged map (per-core constants prefixed) still loads in LiteX."""
    from host_sw.contracts.csr_export import write_csr_files

    maps = {"a": register_map(CONFIG), "b": register_map(RdaConfig())}
    d = {"csr_bases": {}, "csr_registers": {}, "constants": {}, "memories": {}}
    for k, (name, rmap) in enumerate(maps.items()):
        base = k * 0x10000
        own = rmap.to_json_dict()
        d["csr_bases"][name] = base
        for key, reg in own["csr_registers"].items():
            d["csr_registers"][name + key[len(rmap.region):]] = \
                reg | {"addr": reg["addr"] + base}
        for key, value in own["constants"].items():
            d["constants"][f"{name}_{key}"] = value
    csv_path, _ = write_csr_files(tmp_path, d, "test")
    builder = litex_csr.CSRBuilder(comm=_NoBus(), csr_csv=str(csv_path))
    assert builder.csr_data_width == 32
    assert builder.regs.b_id.addr == 0x10000


class _NoBus:
    def read(self, addr, length=None):
        raise AssertionError("no bus")

    def write(self, addr, data):
        raise AssertionError("no bus")

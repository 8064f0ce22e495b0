# SPDX-License-Identifier: BSD-2-Clause
"""The options that reach a device (URL, core, csr.csv, expected configuration, bus
timeouts) and the :class:`~host_sw.device.driver.Device` objects they open.

In the host data flow (``docs/DESIGN.md``) this is where the CLI meets the device layer:
transport ► driver; ``info``, ``config``, ``read`` and ``watch`` open their devices here.
"""

from __future__ import annotations

from host_sw.cli.args import RUNTIME_ERRORS, RunFailure, int_in, load_config, real, seed64
from host_sw.device.driver import Device
from host_sw.device.transport import open_transports

__all__ = ["add_link_options", "open_devices", "open_device"]


def add_link_options(p, *, device: bool = True) -> None:
    """The device options; ``device`` false leaves out ``--device``/``--core`` (a command
    naming two devices declares its own)."""
    if device:
        p.add_argument("--device", "-d", required=True, metavar="URL",
                       help="device URL: /dev/ttyUSB0?baud=115200, loop://, "
                            "tcp://127.0.0.1:PORT, fake://NAME (docs/TRANSPORTS.md); "
                            "?core=N selects a core of a two-port board")
        p.add_argument("--core", default=None, metavar="N|NAME",
                       help="the core behind the board's shared UART: an index (word base "
                            "N × 0x100000) or, with --csr-csv, a csr_base name such as "
                            "port1_to_port0 (default: core 0, address 0)")
    p.add_argument("--csr-csv", default=None, metavar="FILE",
                   help="the board's csr.csv (build/<board>/csr.csv): core names and "
                        "bases from its csr_base rows")
    p.add_argument("--config", metavar="FILE", default=None,
                   help="expected configuration (JSON: a config dict or a snapshot); "
                        "default: discovered from the device")
    p.add_argument("--seed", type=seed64, default=None,
                   help="hash seed for discovery (not readable from the device)")
    p.add_argument("--tick-ns", type=real(minimum=0, open_min=True), default=None,
                   help="timebase tick in ns for discovery (default 1.0)")
    p.add_argument("--timeout", type=real(minimum=0, open_min=True, maximum=3600),
                   default=None, help="bus reply timeout, s")
    p.add_argument("--retries", type=int_in(0, 100), default=None, help="bus retries")
    p.add_argument("--no-id-check", action="store_true",
                   help="do not stop when the device ID differs from the configuration")


def open_devices(args, urls, cores) -> list[Device]:
    """A :class:`~host_sw.device.driver.Device` per URL (and core); URLs naming the same link
    (two cores of one board) share it (:func:`host_sw.device.transport.open_transports`)."""
    config = load_config(args.config) if args.config else None
    overrides = {"timeout": args.timeout, "retries": args.retries}
    try:
        transports = open_transports(urls, cores=cores, csr_csv=args.csr_csv, **overrides)
    except ValueError as e:
        shown = " and ".join(repr(u) for u in urls)
        raise RunFailure(f"bad device URL or core ({shown}): {e}") from None
    devices = []
    try:
        for transport in transports:
            devices.append(Device(transport, config=config, seed=args.seed,
                                  tick_ns=args.tick_ns, check_id=not args.no_id_check))
    except BaseException as e:
        for transport in transports:
            transport.close()
        if isinstance(e, ValueError) and not isinstance(e, RUNTIME_ERRORS):
            raise RunFailure(f"cannot use the device: {e}") from None
        raise
    return devices


def open_device(args, url) -> Device:
    """The one device of ``--device`` (and ``--core``)."""
    return open_devices(args, [url], [args.core])[0]
